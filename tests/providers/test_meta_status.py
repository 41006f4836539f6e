"""The Meta client's status read (the phone number node) and its Graph API version, against the
contract fixtures in tests/contracts/meta (`phone_number_*.json`) and the composition root's setting."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from switchboard import bootstrap
from switchboard.bootstrap import reset
from switchboard.core.errors import InvalidInput, ProviderRejected, ProviderTimeout, ProviderUnavailable
from switchboard.core.settings import get_settings
from switchboard.providers import registry
from switchboard.providers.base import NumberStanding, ProviderTarget
from switchboard.providers.meta import DEFAULT_API_VERSION, NUMBER_FIELDS, MetaCloudClient
from switchboard.providers.registry import provider_client_for

CONTRACTS = Path(__file__).resolve().parents[1] / "contracts" / "meta"
TOKEN = "EAAG-meta-access-token-for-tests"
PHONE_ID = "106540352242922"


class Recorder:
    def __init__(self, status: int, body: bytes) -> None:
        self.requests: list[httpx.Request] = []
        self.transport = httpx.MockTransport(self._answer)
        self._status, self._body = status, body

    def _answer(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(self._status, content=self._body, headers={"content-type": "application/json"})


def fixture(name: str) -> bytes:
    return (CONTRACTS / name).read_bytes()


def target(**fields: str | None) -> ProviderTarget:
    values = {"instance_token": TOKEN, "meta_phone_id": PHONE_ID, **fields}
    return ProviderTarget(kind="meta", base_url="http://127.0.0.1:8081", provider_instance_id="inst-meta", **values)


def read(recorder: Recorder, to: ProviderTarget | None = None, version: str = DEFAULT_API_VERSION) -> NumberStanding:
    client = MetaCloudClient(local_mode=True, transport=recorder.transport, api_version=version)
    status = client.instance_status(to or target())
    assert status.connected is True  # a Cloud API number has no session: connected, whatever it says
    assert status.number is not None
    return status.number


def test_the_read_asks_the_phone_number_node_for_its_standing_with_the_access_token() -> None:
    recorder = Recorder(200, fixture("phone_number_connected.json"))

    standing = read(recorder)

    [request] = recorder.requests
    assert (request.method, request.url.path) == ("GET", f"/{DEFAULT_API_VERSION}/{PHONE_ID}")
    assert request.url.params["fields"] == NUMBER_FIELDS
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    assert standing == NumberStanding(
        status="CONNECTED",
        quality_rating="GREEN",
        messaging_limit="TIER_2K",
        throughput="STANDARD",
        code_verification_status="VERIFIED",
    )


def test_a_restricted_red_number_is_read_as_meta_says_it() -> None:
    standing = read(Recorder(200, fixture("phone_number_restricted.json")))

    assert (standing.status, standing.quality_rating, standing.messaging_limit) == ("RESTRICTED", "RED", "TIER_250")


def test_an_answer_without_the_status_field_reads_it_as_unknown() -> None:
    standing = read(Recorder(200, fixture("phone_number_default_fields.json")))

    assert (standing.status, standing.quality_rating, standing.code_verification_status) == (
        None,
        "GREEN",
        "NOT_VERIFIED",
    )


@pytest.mark.parametrize("value", ["restricted", "A" * 41, "RED; DROP", 7, None, ["RED"]])
def test_a_value_that_is_not_one_of_metas_words_is_unknown_never_copied(value: object) -> None:
    body = json.dumps({"id": PHONE_ID, "status": value, "quality_rating": value}).encode()

    standing = read(Recorder(200, body))

    assert (standing.status, standing.quality_rating) == (None, None)


def test_a_field_the_node_does_not_have_fails_the_read_as_a_refused_request() -> None:
    recorder = Recorder(400, fixture("phone_number_error_nonexisting_field.json"))
    client = MetaCloudClient(local_mode=True, transport=recorder.transport)

    with pytest.raises(ProviderRejected) as refused:
        client.instance_status(target())

    assert refused.value.details["provider_code"] == "100"
    assert "nonexisting" not in str(refused.value)  # Meta's text never reaches our errors


def test_an_unavailable_graph_api_is_unavailable() -> None:
    client = MetaCloudClient(local_mode=True, transport=Recorder(503, b"{}").transport)

    with pytest.raises(ProviderUnavailable):
        client.instance_status(target())


def test_without_an_access_token_the_providers_admin_token_reads_and_with_neither_nothing_is_sent() -> None:
    recorder = Recorder(200, fixture("phone_number_connected.json"))

    read(recorder, target(instance_token=None, admin_token="EAAG-system-user-token"))
    assert recorder.requests[0].headers["authorization"] == "Bearer EAAG-system-user-token"

    client = MetaCloudClient(local_mode=True, transport=recorder.transport)
    with pytest.raises(InvalidInput):
        client.instance_status(target(instance_token=None))
    assert len(recorder.requests) == 1


def test_without_a_meta_phone_id_the_instance_id_is_the_phone_number_id() -> None:
    recorder = Recorder(200, fixture("phone_number_connected.json"))

    read(recorder, target(meta_phone_id=None))

    assert recorder.requests[0].url.path == f"/{DEFAULT_API_VERSION}/inst-meta"


def test_the_default_graph_version_is_one_meta_keeps_through_2027() -> None:
    """v25.0: introduced 18 February 2026, available until 29 July 2028 (Meta's changelog)."""
    assert DEFAULT_API_VERSION == get_settings().meta_graph_version == "v25.0"


def test_both_meta_calls_name_the_clients_graph_version() -> None:
    recorder = Recorder(200, fixture("phone_number_connected.json"))
    client = provider_client_for("meta", local_mode=True, transport=recorder.transport, api_version="v26.0")

    client.instance_status(target())
    with pytest.raises(ProviderTimeout):  # the node's answer is no send answer: only the path matters here
        client.send_text(target(), "16505551234", "hi", "key-1")

    assert [request.url.path for request in recorder.requests] == [f"/v26.0/{PHONE_ID}", f"/v26.0/{PHONE_ID}/messages"]


def test_the_wired_client_speaks_the_configured_graph_version(monkeypatch: pytest.MonkeyPatch) -> None:
    built: dict[str, str | None] = {}

    def recording(kind: str, **options: object) -> object:
        built[kind] = options.get("api_version")  # type: ignore[assignment]  # the recorded option is the Graph version string the factory was given
        return object()

    monkeypatch.setenv("META_GRAPH_VERSION", "v26.0")
    monkeypatch.setattr(registry, "provider_client_for", recording)
    get_settings.cache_clear()
    reset()
    try:
        bootstrap.provider_client()("meta")
    finally:
        get_settings.cache_clear()
        reset()

    assert built == {"meta": "v26.0"}


def test_a_graph_version_that_is_not_a_version_is_refused_at_cold_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("META_GRAPH_VERSION", "latest")
    get_settings.cache_clear()
    try:
        with pytest.raises(ValueError, match="META_GRAPH_VERSION"):
            get_settings()
    finally:
        get_settings.cache_clear()
