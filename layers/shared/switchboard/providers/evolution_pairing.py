"""Pairing a phone with an Evolution API v2 instance: `GET /instance/connect/{instance}` and
`DELETE /instance/logout/{instance}` (header `apikey`).

As Evolution 2.3's `InstanceController` answers them:

- connect, by the instance's connection state: `open` answers `connectionState`'s
  `{"instance": {"instanceName", "state": "open"}}`; `connecting` answers the current code
  `{"pairingCode", "code", "base64", "count"}` (`base64` a `data:image/png;base64,...` image,
  `pairingCode` only when the instance was connected with a `number`, `count` the codes drawn so
  far); `close` starts Baileys (`connectToWhatsapp`), waits 2 s and answers the same shape (its
  fields may still be empty). A failure answers **200** `{"error": true, "message"}`. Baileys
  draws a new code every 45 s (`qrTimeout: 45_000`); at `QRCODE_LIMIT` codes (30 by default)
  Evolution gives up (`qrcode.updated` with "QR code limit reached", `connection.update`
  `refused`) and the instance is back to `close`;
- logout: `{"status": "SUCCESS", "error": false, "response": {"message": "Instance logged out"}}`;
  400 `The "<name>" instance is not connected` when its state is `close`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import ConfigDict, Field, StrictBool, StrictInt, StrictStr

from switchboard.core.errors import ProviderDisconnected, ProviderError, ProviderRejected, ProviderUnavailable
from switchboard.core.model import Model
from switchboard.providers.base import MAX_QR_CHARS, Pairing, ProviderTarget, drawn_code
from switchboard.providers.http import ProviderHttp, path_segment

if TYPE_CHECKING:
    import httpx

CONNECT_ROUTE = "/instance/connect/{instance}"
LOGOUT_ROUTE = "/instance/logout/{instance}"


class _State(Model):
    model_config = ConfigDict(extra="ignore")

    state: StrictStr | None = None


class _ConnectAnswer(Model):
    """Either shape of the connect route's 200, or its `{error: true}`."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    instance: _State | None = None
    pairing_code: StrictStr | None = Field(default=None, alias="pairingCode", max_length=64)
    base64: StrictStr | None = Field(default=None, max_length=MAX_QR_CHARS)
    count: StrictInt | None = None
    error: StrictBool = False


def connect(http: ProviderHttp, target: ProviderTarget, headers: dict[str, str]) -> Pairing:
    """The connect route both starts a closed instance and shows a connecting one's code."""
    path = f"/instance/connect/{path_segment(target.provider_instance_id)}"
    response = http.request("GET", target.base_url, path, route=CONNECT_ROUTE, headers=headers)
    label = http.label("GET", CONNECT_ROUTE)
    if not response.is_success:
        raise _refused(response, label)
    answer = http.answer(response, _ConnectAnswer, label)
    if answer.error:
        raise ProviderUnavailable(f"{label}: the server could not start the session")
    if answer.instance is not None and answer.instance.state == "open":
        return Pairing(state="paired")
    if not answer.base64:
        return Pairing(state="starting", count=answer.count)
    code = drawn_code(answer.base64, label)
    return Pairing(state="code", qr_code=code, pairing_code=answer.pairing_code or None, count=answer.count)


def log_out(http: ProviderHttp, target: ProviderTarget, headers: dict[str, str]) -> None:
    path = f"/instance/logout/{path_segment(target.provider_instance_id)}"
    response = http.request("DELETE", target.base_url, path, route=LOGOUT_ROUTE, headers=headers)
    label = http.label("DELETE", LOGOUT_ROUTE)
    if response.status_code == 400:
        raise ProviderDisconnected(f"{label}: the instance is not connected (400)", status=400)
    if not response.is_success:
        raise _refused(response, label)


def _refused(response: httpx.Response, label: str) -> ProviderError:
    if response.status_code == 404:
        return ProviderRejected(f"{label}: unknown instance (404)", status=404, provider_code="instance_not_found")
    return ProviderHttp.error_for(response, label)
