"""Pairing a phone with a plain wuzapi's session: `/session/connect`, `/session/qr`, `/session/logout`.

As asternic/wuzapi's handlers.go answers them (header `token`, the envelope
`{"code", "data"|"error", "success"}`; state problems are 500 with a text):

- `POST /session/connect {"Subscribe": [...], "Immediate": true}` starts the user's whatsmeow
  client and answers at once (`Immediate: false` would hold the request 10 s); 500 `already
  connected` when a client is connected. It replaces the user's event list with `Subscribe`,
  which is why the list sent is the one switchboard maps (and why the webhook is set up again
  after it: its HMAC key may be missing from the server's cache);
- `GET /session/qr` answers `{"QRCode": "data:image/png;base64,..."}`, the code the client
  stored last (`""` until the first one); 500 `no session` (no client: never started, logged out,
  or its codes ran out), `not connected` (the client's socket is not up), `already logged in`
  (paired). whatsmeow draws a new code 60 s after the first, then every 20 s, six in all, then
  the client is dropped (`QRTimeout`): a console reads the route again until `already logged in`;
- `POST /session/logout` unlinks the phone: `{"Details": "Logged out"}`; 500 `no session`,
  `could not logout as it was not logged in`, `could not disconnect as it was not connected`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import ConfigDict, Field, StrictStr

from switchboard.core.errors import ProviderDisconnected, UnsupportedByProvider
from switchboard.core.model import Model
from switchboard.providers.base import MAX_QR_CHARS, Pairing, ProviderTarget, drawn_code

if TYPE_CHECKING:
    import httpx

    from switchboard.providers.wuzapi import WuzapiClient

CONNECT_ROUTE = "/session/connect"
QR_ROUTE = "/session/qr"
LOGOUT_ROUTE = "/session/logout"


class _Qr(Model):
    model_config = ConfigDict(extra="ignore")

    qr_code: StrictStr = Field(alias="QRCode", max_length=MAX_QR_CHARS)


class _QrAnswer(Model):
    model_config = ConfigDict(extra="ignore")

    data: _Qr


def start_session(client: WuzapiClient, target: ProviderTarget, events: list[str]) -> Pairing:
    response = _request(client, target, "POST", CONNECT_ROUTE, {"Subscribe": events, "Immediate": True})
    if response.status_code >= 500 and "already connected" in client.error_text(response):
        return pairing(client, target)
    client.http.expect_success(response, client.http.label("POST", CONNECT_ROUTE))
    return pairing(client, target)


def pairing(client: WuzapiClient, target: ProviderTarget) -> Pairing:
    response = _request(client, target, "GET", QR_ROUTE, None)
    if response.status_code >= 500:
        text = client.error_text(response)
        if "already logged in" in text:
            return Pairing(state="paired")
        if "no session" in text:
            return Pairing(state="not_started")
        if "not connected" in text:
            return Pairing(state="starting")
    answer = client.http.answer(response, _QrAnswer, client.http.label("GET", QR_ROUTE))
    code = answer.data.qr_code
    if not code:
        return Pairing(state="starting")
    # wuzapi draws it with `qrcode.Encode` and sends it base64 in a data URL
    return Pairing(state="code", qr_code=drawn_code(code, client.http.label("GET", QR_ROUTE)))


def log_out(client: WuzapiClient, target: ProviderTarget) -> None:
    response = _request(client, target, "POST", LOGOUT_ROUTE, None)
    if response.status_code >= 500:
        text = client.error_text(response)
        if any(fragment in text for fragment in ("no session", "not logged in", "not connected")):
            raise ProviderDisconnected(f"{client.http.label('POST', LOGOUT_ROUTE)}: no session is logged in")
    client.http.expect_success(response, client.http.label("POST", LOGOUT_ROUTE))


def _request(
    client: WuzapiClient, target: ProviderTarget, method: str, route: str, body: dict[str, object] | None
) -> httpx.Response:
    response = client.instance_request(target, method, route, body)
    if response.status_code in (404, 405):
        # A server without wuzapi's session routes (the calls-capable server pairs on its own side).
        raise UnsupportedByProvider("this provider server does not pair numbers through its API", code="not_supported")
    return response
