"""A wuzapi message's file: its S3 URL (S3 media delivery) or its download routes.

`POST /chat/download{image,video,audio,document}` (header `token`, the instance's token) with
the message's media fields `{"Url", "DirectPath", "MediaKey", "Mimetype", "FileEncSHA256",
"FileSHA256", "FileLength"}` answers `{"code": 200, "data": {"Mimetype", "Data": "data:<type>;
base64,<bytes>"}, "success": true}` (wuzapi's handlers.go). A sticker is an image message's
fields. An S3 URL (`s3.url` in the event) is fetched from the server's host or Amazon S3's.
"""

from __future__ import annotations

import binascii
from base64 import b64decode

from pydantic import Field

from switchboard.core.clock import Deadline
from switchboard.core.model import Model
from switchboard.providers.base import DownloadedMedia, MediaNotFetched, ProviderTarget
from switchboard.providers.content import MediaSource
from switchboard.providers.http import ProviderHttp, base64_answer_bytes
from switchboard.providers.media_fetch import fetch_storage_url

ROUTES = {"image": "image", "sticker": "image", "video": "video", "audio": "audio", "voice": "audio"}
FIELDS = ("Url", "DirectPath", "MediaKey", "Mimetype", "FileEncSHA256", "FileSHA256", "FileLength")


class _Downloaded(Model):
    Mimetype: str | None = None
    Data: str = Field(min_length=1)


class _Answer(Model):
    data: _Downloaded


def download(
    http: ProviderHttp, target: ProviderTarget, source: MediaSource, max_bytes: int, deadline: Deadline | None = None
) -> DownloadedMedia:
    if source.via == "url" and source.url:
        return DownloadedMedia(data=fetch_storage_url(http, target, source.url, max_bytes, deadline))
    if source.via != "provider_download":
        raise MediaNotFetched("no_source", "a wuzapi file is fetched by its URL or its download route")
    kind = str(source.fields.get("kind") or "document")
    route = f"/chat/download{ROUTES.get(kind, 'document')}"
    body = {name: source.fields[name] for name in FIELDS if source.fields.get(name) is not None}
    if not body.get("DirectPath") and not body.get("Url"):
        raise MediaNotFetched("no_source", "no media path to ask the server for")
    response = http.request(
        "POST",
        target.base_url,
        route,
        route=route,
        headers={"token": target.instance_token or ""},
        body=body,
        max_answer_bytes=base64_answer_bytes(max_bytes),
        deadline=deadline,
    )
    answer = http.answer(response, _Answer, http.label("POST", route))
    encoded = answer.data.Data.split(",", 1)[1] if answer.data.Data.startswith("data:") else answer.data.Data
    if len(encoded) > max_bytes * 4 // 3 + 4:
        raise MediaNotFetched("too_large", "the server's file is over the kind's limit")
    try:
        data = b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise MediaNotFetched("provider_error", "the server's base64 does not decode") from exc
    return DownloadedMedia(data=data, mime_type=answer.data.Mimetype)
