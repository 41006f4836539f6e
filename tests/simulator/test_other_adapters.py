"""Evolution API and Meta Cloud API adapters against httpx's MockTransport."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest

from switchboard.core.errors import (
    InvalidInput,
    ProviderRejected,
    ProviderTimeout,
    ProviderUnavailable,
    UnsupportedByProvider,
)
from switchboard.providers.base import ProviderTarget
from switchboard.providers.evolution import EvolutionClient
from switchboard.providers.meta import DEFAULT_API_VERSION, MetaCloudClient
from switchboard.providers.registry import provider_client_for
from switchboard.providers.wuzapi import WuzapiClient

TOKEN = "secret-provider-token"
Responder = Callable[[httpx.Request], httpx.Response]


class Recorder:
    """A MockTransport that records requests and answers with `respond`."""

    def __init__(self, respond: Responder) -> None:
        self.requests: list[httpx.Request] = []
        self._respond = respond
        self.transport = httpx.MockTransport(self._handle)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self._respond(request)


def _wuzapi_target() -> ProviderTarget:
    return ProviderTarget(
        kind="wuzapi", base_url="http://127.0.0.1:3100", provider_instance_id="i-1", instance_token=TOKEN
    )


def _evolution_target(base_url: str = "http://127.0.0.1:8080") -> ProviderTarget:
    return ProviderTarget(kind="evolution", base_url=base_url, provider_instance_id="sales/team", instance_token=TOKEN)


def _meta_target(base_url: str = "http://127.0.0.1:8081") -> ProviderTarget:
    return ProviderTarget(
        kind="meta",
        base_url=base_url,
        provider_instance_id="unused",
        meta_phone_id="106540352242922",
        instance_token=TOKEN,
    )


def test_evolution_sends_text_with_the_apikey_header() -> None:
    recorder = Recorder(lambda _: httpx.Response(201, json={"key": {"id": "BAE5F5A632EAE722"}, "status": "PENDING"}))
    client = EvolutionClient(local_mode=True, transport=recorder.transport)

    sent = client.send_text(_evolution_target(), "5511988887777", "hello", "key-1")

    [request] = recorder.requests
    assert sent.provider_message_id == "BAE5F5A632EAE722"
    assert (request.method, request.url.raw_path) == ("POST", b"/message/sendText/sales%2Fteam")
    assert request.headers["apikey"] == TOKEN
    assert json.loads(request.content) == {"number": "5511988887777", "text": "hello"}


@pytest.mark.parametrize(("state", "connected"), [("open", True), ("connecting", False), ("close", False)])
def test_evolution_connection_state(state: str, connected: bool) -> None:
    recorder = Recorder(lambda _: httpx.Response(200, json={"instance": {"instanceName": "x", "state": state}}))
    client = EvolutionClient(local_mode=True, transport=recorder.transport)

    status = client.instance_status(_evolution_target())

    assert status.connected is connected
    assert recorder.requests[0].url.raw_path == b"/instance/connectionState/sales%2Fteam"


def test_evolution_has_no_calls() -> None:
    client = EvolutionClient(local_mode=True, transport=Recorder(lambda _: httpx.Response(500)).transport)
    target = _evolution_target()

    assert client.capabilities(target).calls is False
    with pytest.raises(UnsupportedByProvider):
        client.dial(target, "5511988887777", False, "key-1")
    with pytest.raises(UnsupportedByProvider):
        client.set_call_settings(target, 2)


def test_meta_sends_text_to_the_phone_number_id_with_a_bearer_token() -> None:
    answer = {"messaging_product": "whatsapp", "messages": [{"id": "wamid.HBgLNTUxMTk4ODg4Nzc3NxUCABEYEjA"}]}
    recorder = Recorder(lambda _: httpx.Response(200, json=answer))
    client = MetaCloudClient(local_mode=True, transport=recorder.transport)

    sent = client.send_text(_meta_target(), "5511988887777", "hello", "key-1")

    [request] = recorder.requests
    assert sent.provider_message_id == "wamid.HBgLNTUxMTk4ODg4Nzc3NxUCABEYEjA"
    assert request.url.path == f"/{DEFAULT_API_VERSION}/106540352242922/messages"
    assert request.headers["Authorization"] == f"Bearer {TOKEN}"
    assert json.loads(request.content) == {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": "5511988887777",
        "type": "text",
        "text": {"body": "hello", "preview_url": False},
    }


def test_meta_api_version_is_configurable() -> None:
    recorder = Recorder(lambda _: httpx.Response(200, json={"messages": [{"id": "wamid.1"}]}))
    client = MetaCloudClient(local_mode=True, transport=recorder.transport, api_version="v22.0")

    client.send_text(_meta_target(), "5511988887777", "hello", "key-1")

    assert recorder.requests[0].url.path.startswith("/v22.0/")


def test_meta_numbers_are_always_connected_and_have_no_calls() -> None:
    node = {"status": "FLAGGED", "quality_rating": "YELLOW", "id": "106540352242922"}
    recorder = Recorder(lambda _: httpx.Response(200, json=node))
    client = MetaCloudClient(local_mode=True, transport=recorder.transport)

    status = client.instance_status(_meta_target())

    assert status.connected is True
    assert status.number is not None and (status.number.status, status.number.quality_rating) == ("FLAGGED", "YELLOW")
    with pytest.raises(UnsupportedByProvider):
        client.active_calls(_meta_target())


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (httpx.Response(400, json={"error": {"message": "bad", "code": 131030}}), ProviderRejected),
        (httpx.Response(401, json={"error": {"message": "token expired", "code": 190}}), ProviderRejected),
        (httpx.Response(429, json={"error": {"code": 130429}}), ProviderUnavailable),
        (httpx.Response(503, text="upstream down"), ProviderUnavailable),
        (httpx.Response(200, text="<html>not json</html>"), ProviderTimeout),
        (httpx.Response(200, json={"messages": []}), ProviderTimeout),
    ],
)
def test_meta_answers_map_to_provider_errors(answer: httpx.Response, error: type[Exception]) -> None:
    client = MetaCloudClient(local_mode=True, transport=Recorder(lambda _: answer).transport)

    with pytest.raises(error) as raised:
        client.send_text(_meta_target(), "5511988887777", "hello", "key-1")
    assert TOKEN not in str(raised.value)
    assert "127.0.0.1" not in str(raised.value)


@pytest.mark.parametrize(
    ("failure", "error"),
    [
        (httpx.ConnectError("refused"), ProviderUnavailable),
        (httpx.ConnectTimeout("slow connect"), ProviderUnavailable),
        (httpx.ReadTimeout("slow answer"), ProviderTimeout),
        (httpx.RemoteProtocolError("dropped"), ProviderTimeout),
    ],
)
def test_transport_failures_say_whether_the_request_left(failure: Exception, error: type[Exception]) -> None:
    def fail(_: httpx.Request) -> httpx.Response:
        raise failure

    client = EvolutionClient(local_mode=True, transport=Recorder(fail).transport)

    with pytest.raises(error):
        client.send_text(_evolution_target(), "5511988887777", "hello", "key-1")


@pytest.mark.parametrize(
    "base_url",
    ["http://169.254.169.254", "http://10.0.0.5:8080", "http://127.0.0.1:8080", "ftp://provider.example"],
)
def test_the_outbound_policy_is_checked_before_any_request(base_url: str) -> None:
    recorder = Recorder(lambda _: httpx.Response(200, json={"messages": [{"id": "wamid.1"}]}))
    client = MetaCloudClient(local_mode=False, transport=recorder.transport)

    with pytest.raises(InvalidInput):
        client.send_text(_meta_target(base_url), "5511988887777", "hello", "key-1")
    assert recorder.requests == []


def test_redirects_are_not_followed() -> None:
    recorder = Recorder(lambda _: httpx.Response(302, headers={"Location": "http://169.254.169.254/"}))
    client = EvolutionClient(local_mode=True, transport=recorder.transport)

    with pytest.raises(ProviderRejected):
        client.send_text(_evolution_target(), "5511988887777", "hello", "key-1")
    assert len(recorder.requests) == 1


@pytest.mark.parametrize(
    ("kind", "expected"),
    [("wuzapi", "WuzapiClient"), ("evolution", "EvolutionClient"), ("meta", "MetaCloudClient")],
)
def test_provider_client_for_each_kind(kind: str, expected: str) -> None:
    client = provider_client_for(kind, local_mode=True)

    assert type(client).__name__ == expected


@pytest.mark.parametrize("version", [3.0, True, "3", -1, 2**63, 1e20])
def test_wuzapi_refuses_a_version_that_is_not_a_64_bit_integer(version: object) -> None:
    answer = {
        "instance": {
            "connected": True,
            "kind": "calls",
            "callsMaxConcurrent": 2,
            "callsConfigVersion": version,
        }
    }
    client = WuzapiClient(local_mode=True, transport=Recorder(lambda _: httpx.Response(200, json=answer)).transport)

    with pytest.raises(ProviderTimeout):
        client.instance_status(_wuzapi_target())


def test_wuzapi_keeps_an_absent_version_absent() -> None:
    answer = {"instance": {"connected": True, "kind": "calls"}}
    client = WuzapiClient(local_mode=True, transport=Recorder(lambda _: httpx.Response(200, json=answer)).transport)

    assert client.instance_status(_wuzapi_target()).calls_config_version is None


def test_wuzapi_server_without_capabilities_route_announces_nothing() -> None:
    answer = httpx.Response(404, json={"error": "not_found"})
    client = WuzapiClient(local_mode=True, transport=Recorder(lambda _: answer).transport)

    assert client.capabilities(_wuzapi_target()).calls is False
