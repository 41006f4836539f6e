"""Pairing a phone through the providers' own session routes: wuzapi's `/session/connect`,
`/session/qr`, `/session/logout` and Evolution's `/instance/connect/{instance}`,
`/instance/logout/{instance}`, read from their real answers (tests/contracts)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from switchboard.core.errors import ProviderDisconnected, ProviderRejected, ProviderUnavailable, UnsupportedByProvider
from switchboard.providers.base import PairingSessions, ProviderTarget
from switchboard.providers.evolution import EvolutionClient
from switchboard.providers.meta import MetaCloudClient
from switchboard.providers.wuzapi import WuzapiClient

CONTRACTS = Path(__file__).resolve().parents[1] / "contracts"
TOKEN = "b7e2c9a14f3d4e8a9c0d1e2f3a4b5c6d"


def answer(kind: str, name: str, status: int = 200) -> httpx.Response:
    return httpx.Response(status, content=(CONTRACTS / kind / name).read_bytes())


class Server:
    def __init__(self, routes: dict[tuple[str, str], httpx.Response]) -> None:
        self.routes = routes
        self.requests: list[httpx.Request] = []

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.routes.get((request.method, request.url.path), httpx.Response(404, content=b"404 page not found\n"))

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)


def wuzapi(routes: dict[tuple[str, str], httpx.Response]) -> tuple[Server, WuzapiClient, ProviderTarget]:
    server = Server(routes)
    target = ProviderTarget(
        kind="wuzapi", base_url="http://127.0.0.1:8080", provider_instance_id="atendimento-01", instance_token=TOKEN
    )
    return server, WuzapiClient(local_mode=True, transport=server.transport()), target


def evolution(routes: dict[tuple[str, str], httpx.Response]) -> tuple[Server, EvolutionClient, ProviderTarget]:
    server = Server(routes)
    target = ProviderTarget(
        kind="evolution",
        base_url="http://127.0.0.1:8081",
        provider_instance_id="switchboard-test",
        instance_token="B6A1E0F2-3C4D-4E5F-8A9B-0C1D2E3F4A5B",
    )
    return server, EvolutionClient(local_mode=True, transport=server.transport()), target


# --- wuzapi ------------------------------------------------------------------------------------


def test_a_wuzapi_session_starts_at_once_subscribing_the_mapped_events_and_shows_its_code() -> None:
    server, client, target = wuzapi(
        {
            ("POST", "/session/connect"): answer("wuzapi", "answer_session_connect.json"),
            ("GET", "/session/qr"): answer("wuzapi", "answer_session_qr_code.json"),
        }
    )

    pairing = client.start_session(target)

    assert pairing.state == "code"
    assert pairing.qr_code is not None and pairing.qr_code.startswith("data:image/png;base64,iVBOR")
    connect = server.requests[0]
    assert connect.headers["token"] == TOKEN
    assert json.loads(connect.content) == json.loads(
        (CONTRACTS / "wuzapi" / "request_session_connect.json").read_text()
    )
    assert TOKEN not in repr(pairing) and "base64" not in repr(pairing)


@pytest.mark.parametrize(
    ("fixture", "status", "state"),
    [
        ("answer_session_qr_already_logged_in.json", 500, "paired"),
        ("answer_session_qr_not_drawn.json", 200, "starting"),
        ("answer_session_qr_not_connected.json", 500, "starting"),
        ("answer_no_session.json", 500, "not_started"),
    ],
)
def test_wuzapis_qr_route_says_where_pairing_stands(fixture: str, status: int, state: str) -> None:
    _, client, target = wuzapi({("GET", "/session/qr"): answer("wuzapi", fixture, status)})

    pairing = client.pairing(target)

    assert pairing.state == state
    assert pairing.qr_code is None


def test_a_session_already_connected_is_not_an_error() -> None:
    _, client, target = wuzapi(
        {
            ("POST", "/session/connect"): answer("wuzapi", "answer_session_connect_already_connected.json", 500),
            ("GET", "/session/qr"): answer("wuzapi", "answer_session_qr_already_logged_in.json", 500),
        }
    )

    assert client.start_session(target).state == "paired"


def test_a_code_that_is_not_a_png_image_is_never_shown() -> None:
    _, client, target = wuzapi(
        {
            ("GET", "/session/qr"): httpx.Response(
                200, json={"code": 200, "data": {"QRCode": "javascript:alert(1)"}, "success": True}
            )
        }
    )

    with pytest.raises(ProviderUnavailable):
        client.pairing(target)


def test_a_wuzapi_logout_unlinks_the_phone_and_one_not_logged_in_is_disconnected() -> None:
    server, client, target = wuzapi({("POST", "/session/logout"): answer("wuzapi", "answer_session_logout.json")})
    client.log_out(target)
    assert [request.url.path for request in server.requests] == ["/session/logout"]

    _, client, target = wuzapi(
        {("POST", "/session/logout"): answer("wuzapi", "answer_session_logout_not_logged_in.json", 500)}
    )
    with pytest.raises(ProviderDisconnected) as refused:
        client.log_out(target)
    assert "could not logout" not in str(refused.value)  # the provider's own words stay out of ours


def test_a_server_without_the_session_routes_pairs_nothing_here() -> None:
    _, client, target = wuzapi({})

    with pytest.raises(UnsupportedByProvider) as unsupported:
        client.pairing(target)
    assert unsupported.value.code == "not_supported"


# --- Evolution ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fixture", "state"),
    [
        ("api_instance_connect_qrcode.json", "code"),
        ("api_instance_connect_starting.json", "starting"),
        ("api_instance_connect_open.json", "paired"),
    ],
)
def test_evolutions_connect_route_starts_or_shows_the_session(fixture: str, state: str) -> None:
    server, client, target = evolution({("GET", "/instance/connect/switchboard-test"): answer("evolution", fixture)})

    pairing = client.start_session(target)

    assert pairing.state == state
    assert (pairing.qr_code is not None) == (state == "code")
    assert server.requests[0].headers["apikey"] == target.instance_token
    if state == "code":
        assert pairing.count == 1 and pairing.pairing_code is None


def test_evolutions_error_answered_with_200_is_a_failure() -> None:
    _, client, target = evolution(
        {("GET", "/instance/connect/switchboard-test"): answer("evolution", "api_instance_connect_error.json")}
    )

    with pytest.raises(ProviderUnavailable):
        client.pairing(target)


def test_an_evolution_code_that_is_not_a_png_image_is_never_shown() -> None:
    qrcode = json.loads((CONTRACTS / "evolution" / "api_instance_connect_qrcode.json").read_text())
    _, client, target = evolution(
        {
            ("GET", "/instance/connect/switchboard-test"): httpx.Response(
                200, json={**qrcode, "base64": "data:text/html;base64,PHNjcmlwdD4="}
            )
        }
    )

    with pytest.raises(ProviderUnavailable, match="not a PNG image"):
        client.start_session(target)


def test_an_unknown_evolution_instance_is_refused() -> None:
    _, client, target = evolution(
        {
            ("GET", "/instance/connect/switchboard-test"): answer(
                "evolution", "api_send_text_404_instance_not_found.json", 404
            )
        }
    )

    with pytest.raises(ProviderRejected) as refused:
        client.pairing(target)
    assert refused.value.provider_code == "instance_not_found"


def test_an_evolution_logout_and_one_of_a_closed_instance() -> None:
    server, client, target = evolution(
        {("DELETE", "/instance/logout/switchboard-test"): answer("evolution", "api_instance_logout_200.json")}
    )
    client.log_out(target)
    assert [f"{r.method} {r.url.path}" for r in server.requests] == ["DELETE /instance/logout/switchboard-test"]

    _, client, target = evolution(
        {
            ("DELETE", "/instance/logout/switchboard-test"): answer(
                "evolution", "api_instance_logout_400_not_connected.json", 400
            )
        }
    )
    with pytest.raises(ProviderDisconnected):
        client.log_out(target)


def test_only_the_kinds_that_pair_by_a_code_offer_it() -> None:
    assert isinstance(WuzapiClient(local_mode=True), PairingSessions)
    assert isinstance(EvolutionClient(local_mode=True), PairingSessions)
    assert not isinstance(MetaCloudClient(local_mode=True), PairingSessions)
