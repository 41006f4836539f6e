"""An agent's attachments, fetched from the helpdesk into the media bucket as soon as they arrive.

Chatwoot's webhook names each file by `data_url`, a URL on Chatwoot's own host
(`Attachment#file_url`: ActiveStorage's redirect route, `/rails/active_storage/blobs/redirect/
<signed id>/<file name>`), which answers a redirect to the storage service: with S3, a presigned
URL valid for five minutes (`ActiveStorage.service_urls_expire_in`). So a file is fetched while
the webhook is handled, never later:

- the first URL must be on the tenant's configured downstream (its scheme, host and port): the
  webhook is authenticated, but a URL in it never makes switchboard fetch from elsewhere;
- each redirect (at most `MAX_REDIRECTS`) is followed under the outbound URL policy, the
  address checked as it is dialled, no proxy from the environment;
- the bytes are read no further than the largest kind's limit, within a deadline (a body that
  trickles in is refused, told to the agent), typed by their bytes and stored
  under the tenant's prefix; the reply carries the reference, never the bytes.

Which WhatsApp kind a file leaves as is decided by its bytes: an image WhatsApp shows (JPEG or
PNG within 5 MB) as an image, a video it plays (MP4 or 3GPP within 16 MB) as a video, an audio (an
agent's recording: Chatwoot records OGG/Opus for a WhatsApp inbox, MP3 for an API inbox) as a
voice note, and everything else, or what is too large for its kind, as a document with its file
name. A voice note that is not OGG/Opus leaves as one only through a kind whose server converts
it (Evolution); elsewhere as an audio file (`routing.outbox`): nothing here transcodes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol
from urllib.parse import urljoin, urlsplit

import httpx

from switchboard.core.clock import Deadline
from switchboard.core.errors import InvalidInput, PayloadTooLarge, SwitchboardError, UnknownReference
from switchboard.core.outbound import UNCOMPRESSED, PinnedTransport, read_bounded
from switchboard.core.urls import OutboundPolicy, check_outbound_url
from switchboard.media import limits
from switchboard.providers.content import Content, Location, Media, MediaKind, MediaMessage, MediaRef
from switchboard.routing.domain import DownstreamTarget
from switchboard.routing.outbox import Attachment, AttachmentUnavailable

MAX_REDIRECTS = 3
FETCH_TIMEOUT_SECONDS = 10.0
# A file's whole fetch, redirects included: the webhook's function has 29 s, and a file still
# trickling in then would end it with the reply neither queued nor told to the agent.
FETCH_DEADLINE_SECONDS = 15.0
_FILE_TYPES: dict[str, MediaKind] = {"image": "image", "video": "video", "audio": "audio", "file": "document"}


class FileStore(Protocol):
    """The media bucket as the reply path uses it (`media.uploads.MediaUploads`)."""

    def store_bytes(
        self, tenant: str, data: bytes, kind: MediaKind, declared: str, file_name: str | None = None
    ) -> MediaRef:
        """`data` checked as `kind` and stored; raises `UnknownReference` (`bad_type`) or
        `PayloadTooLarge` when it may not be sent as `kind`."""
        ...


# `fetch(url, allowed_origin, max_bytes)`: the bytes and announced type of `url`.
Fetch = Callable[[str, str, int], tuple[bytes, str]]


class FetchRefused(SwitchboardError):
    """A helpdesk URL that was not fetched, with the reason the agent is told."""


class HelpdeskAttachments:
    """`routing.outbox.AttachmentStore`: each attachment as the content that sends it."""

    def __init__(self, files: FileStore, fetch: Fetch) -> None:
        self._files = files
        self._fetch = fetch

    def content_of(self, tenant: str, downstream: DownstreamTarget, attachment: Attachment) -> Content:
        if attachment.file_type == "location":
            if attachment.latitude is None or attachment.longitude is None:
                raise AttachmentUnavailable("a location attachment without coordinates")
            title = (attachment.title or "").strip() or None
            return Location(latitude=attachment.latitude, longitude=attachment.longitude, name=title)
        kind = _FILE_TYPES.get(attachment.file_type)
        if kind is None:
            what = (
                "an attachment of no type"
                if attachment.file_type == "unknown"
                else f"a {attachment.file_type} attachment"
            )
            raise AttachmentUnavailable(f"{what} has no WhatsApp form")
        if not attachment.data_url:
            raise AttachmentUnavailable(f"the {attachment.file_type} attachment has no file URL")
        try:
            data, declared = self._fetch(attachment.data_url, downstream.base_url, limits.LARGEST)
        except FetchRefused as exc:
            raise AttachmentUnavailable(exc.message) from exc
        name = attachment.file_name
        for candidate in _kinds(kind):
            try:
                ref = self._files.store_bytes(tenant, data, candidate, declared, name)
            except (UnknownReference, PayloadTooLarge):
                continue
            media = Media(
                kind=candidate,
                mime_type=ref.mime_type,
                file_name=name if candidate == "document" else None,
                size=ref.size,
                sha256=ref.sha256,
                stored=ref,
            )
            return MediaMessage(media=media)
        raise AttachmentUnavailable(f"the file ({len(data)} bytes) is not one WhatsApp sends")


def _kinds(kind: MediaKind) -> list[MediaKind]:
    """The kinds to try the file as, in order: what its attachment type says (an audio, a
    recording: a voice note), then a document."""
    if kind == "audio":
        return ["voice", "document"]
    return [kind] if kind == "document" else [kind, "document"]


def fetch_from_helpdesk(
    *,
    local_mode: bool = False,
    transport: httpx.BaseTransport | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Fetch:
    """A `Fetch` under the outbound URL policy: the first URL on the downstream's origin, each
    redirect checked again, no proxy, read no further than `max_bytes` and for no longer than
    `FETCH_DEADLINE_SECONDS` in all (`clock`'s seconds). Raises `FetchRefused`.
    `transport`: the pinned transport unless a test gives its own."""
    policy = OutboundPolicy.configured(local_mode=local_mode)
    client = httpx.Client(
        timeout=FETCH_TIMEOUT_SECONDS,
        follow_redirects=False,
        trust_env=False,
        transport=transport or PinnedTransport(policy),
    )

    def fetch(url: str, allowed_origin: str, max_bytes: int) -> tuple[bytes, str]:
        if _origin(url) != _origin(allowed_origin):
            raise FetchRefused("its URL is not on the helpdesk's own host")
        deadline = Deadline.after(FETCH_DEADLINE_SECONDS, clock)
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            try:
                check_outbound_url(current, resolve=False, policy=policy)
            except InvalidInput as exc:
                raise FetchRefused("its URL is refused by the outbound URL policy") from exc
            try:
                with client.stream("GET", current, headers=UNCOMPRESSED) as response:
                    if response.is_redirect and "location" in response.headers:
                        current = urljoin(current, response.headers["location"])
                        continue
                    if response.status_code != 200:
                        raise FetchRefused(f"the helpdesk answered {response.status_code}")
                    data, over = read_bounded(response, max_bytes, deadline)
                    if over:
                        raise FetchRefused(f"the file is over {max_bytes} bytes")
                    return data, response.headers.get("content-type", "")
            except InvalidInput as exc:  # an address the policy refuses, found as it was dialled
                raise FetchRefused("its URL is refused by the outbound URL policy") from exc
            except httpx.HTTPError as exc:
                raise FetchRefused(f"the helpdesk did not hand it over ({type(exc).__name__})") from exc
        raise FetchRefused(f"more than {MAX_REDIRECTS} redirects")

    return fetch


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    default = {"https": 443, "http": 80}.get(parts.scheme)
    try:
        port = parts.port or default
    except ValueError:
        port = None
    return parts.scheme, (parts.hostname or "").lower(), port
