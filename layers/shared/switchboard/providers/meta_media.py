"""A Cloud API message's file: its media id, then the short-lived URL the Graph API answers.

`GET /{version}/{media-id}` with the bearer answers `{"url", "mime_type", "sha256", "file_size",
"id", "messaging_product"}`; the URL is valid for about five minutes and is fetched at once, with
the same bearer (it is refused without). Only Meta's media host (`lookaside.fbsbx.com`) or the
provider's own base URL host is fetched. A media id lives about 30 days at most: Meta then
answers 404, or 400 with error code 100 (the object does not exist): `expired`.
"""

from __future__ import annotations

import hashlib

from pydantic import Field

from switchboard.core.clock import Deadline
from switchboard.core.model import Model
from switchboard.providers.base import DownloadedMedia, MediaNotFetched, ProviderTarget
from switchboard.providers.content import MediaSource
from switchboard.providers.http import ProviderHttp, error_code, path_segment
from switchboard.providers.media_fetch import base_host, fetch_url

MEDIA_HOSTS = frozenset({"lookaside.fbsbx.com"})
MEDIA_ROUTE = "/{version}/{media-id}"
_GONE_CODE = "100"


class _MediaAnswer(Model):
    url: str = Field(min_length=1, max_length=4096)
    mime_type: str | None = None
    sha256: str | None = None
    file_size: int | None = None


def download(
    http: ProviderHttp,
    api_version: str,
    target: ProviderTarget,
    source: MediaSource,
    max_bytes: int,
    *,
    deadline: Deadline | None = None,
) -> DownloadedMedia:
    if source.via != "meta_media_id" or not source.media_id:
        raise MediaNotFetched("no_source", "a Cloud API file is fetched by its media id")
    token = target.instance_token or target.admin_token
    if not token:
        raise MediaNotFetched("no_source", "the target has no Cloud API access token")
    bearer = {"Authorization": f"Bearer {token}"}
    label = http.label("GET", MEDIA_ROUTE)
    response = http.request(
        "GET",
        target.base_url,
        f"/{path_segment(api_version)}/{path_segment(source.media_id)}",
        route=MEDIA_ROUTE,
        headers=bearer,
        deadline=deadline,
    )
    if response.status_code == 404 or (response.status_code == 400 and error_code(response) == _GONE_CODE):
        raise MediaNotFetched("expired", "the media id is no longer known to the Graph API")
    answer = http.answer(response, _MediaAnswer, label)
    if answer.file_size is not None and answer.file_size > max_bytes:
        raise MediaNotFetched("too_large", f"announced {answer.file_size} bytes")
    hosts = MEDIA_HOSTS | {base_host(target)}
    data = fetch_url(http, answer.url, hosts=hosts, headers=bearer, max_bytes=max_bytes, deadline=deadline)
    if answer.sha256 and answer.sha256.lower() != hashlib.sha256(data).hexdigest():
        raise MediaNotFetched("mismatch", "the bytes differ from the Graph API's sha256")
    if answer.file_size is not None and answer.file_size != len(data):
        raise MediaNotFetched("mismatch", "the size differs from the Graph API's file_size")
    return DownloadedMedia(data=data, mime_type=answer.mime_type)
