"""An Evolution API v2 message's file: its `mediaUrl` (S3/MinIO storage) or the base64 route.

`POST /chat/getBase64FromMediaMessage/{instance}` (header `apikey`, the instance's token) with
`{"message": {"key": {"id"}}, "convertToMp4": false}` answers 201 `{"mediaType", "fileName",
"caption", "size", "mimetype", "base64"}` (the chat controller and the Baileys channel's
`getBase64FromMediaMessage`, which finds the stored message by its key id). A `mediaUrl` (the
instance stores media in S3/MinIO) is fetched from the server's own host or Amazon S3's.
"""

from __future__ import annotations

import binascii
from base64 import b64decode
from typing import Any

from pydantic import Field

from switchboard.core.clock import Deadline
from switchboard.core.model import Model
from switchboard.providers.base import DownloadedMedia, MediaNotFetched, ProviderTarget
from switchboard.providers.content import MediaSource
from switchboard.providers.http import ProviderHttp, base64_answer_bytes, path_segment
from switchboard.providers.media_fetch import fetch_storage_url

BASE64_ROUTE = "/chat/getBase64FromMediaMessage/{instance}"


class _Base64Answer(Model):
    base64: str = Field(min_length=1)
    mimetype: str | None = None
    fileName: str | None = None


def download(
    http: ProviderHttp, target: ProviderTarget, source: MediaSource, max_bytes: int, deadline: Deadline | None = None
) -> DownloadedMedia:
    headers = {"apikey": target.instance_token or target.admin_token or ""}
    if source.via == "url" and source.url:
        return DownloadedMedia(data=fetch_storage_url(http, target, source.url, max_bytes, deadline))
    if source.via != "provider_download":
        raise MediaNotFetched("no_source", "an Evolution file is fetched by its URL or its message key")
    # The webhook mapping names the message as the route's own body does (`{"message": {"key"}}`).
    wrapped = source.fields.get("message")
    key: Any = (
        (wrapped.get("key") if isinstance(wrapped, dict) else None)
        or source.fields.get("key")
        or ({"id": source.fields["id"]} if source.fields.get("id") else None)
    )
    if not isinstance(key, dict) or not key.get("id"):
        raise MediaNotFetched("no_source", "no message key to ask the server for")
    label = http.label("POST", BASE64_ROUTE)
    response = http.request(
        "POST",
        target.base_url,
        f"/chat/getBase64FromMediaMessage/{path_segment(target.provider_instance_id)}",
        route=BASE64_ROUTE,
        headers=headers,
        body={"message": {"key": key}, "convertToMp4": False},
        max_answer_bytes=base64_answer_bytes(max_bytes),
        deadline=deadline,
    )
    if response.status_code in (400, 404):  # "Message not found": the server no longer has it
        raise MediaNotFetched("not_found", f"the server answered {response.status_code}")
    answer = http.answer(response, _Base64Answer, label)
    if len(answer.base64) > max_bytes * 4 // 3 + 4:
        raise MediaNotFetched("too_large", "the server's base64 is over the kind's limit")
    try:
        data = b64decode(answer.base64, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise MediaNotFetched("provider_error", "the server's base64 does not decode") from exc
    return DownloadedMedia(data=data, mime_type=answer.mimetype, file_name=answer.fileName)
