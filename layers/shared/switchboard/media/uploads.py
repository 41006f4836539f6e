"""Files a client sends with a message: uploaded straight to the media bucket, or fetched once.

`POST /api/media` answers a presigned S3 PUT for one object: a short expiry, and the exact
`Content-Type` and `Content-Length` signed in (S3 refuses any other). What the client declared
(type, size, sha256, file name) is kept beside it (`<key>.json`), and the object is checked on
its first use by a message: its size, its sha256 when one was declared, its type by its bytes,
and its kind's limit. The bucket's lifecycle expires both; a `mediaId` whose object is gone is
`expired`.

A client's `https` URL is fetched once, under the outbound URL policy, into the same bucket.

Typing by bytes is a small magic-number check here (`sniff`), behind `Sniffer`, until the media
capability's own typing replaces it.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

import httpx

from switchboard.core.clock import utcnow
from switchboard.core.errors import InvalidInput, PayloadTooLarge, UnknownReference
from switchboard.core.outbound import UNCOMPRESSED, PinnedTransport, read_bounded
from switchboard.core.urls import OutboundPolicy, check_outbound_url
from switchboard.media.sniff import is_executable
from switchboard.providers.content import MediaKind, MediaRef

UPLOAD_SECONDS = 300  # long enough for a phone on a slow link, short enough not to linger
PREVIEW_SECONDS = 300  # an image's thumbnail in the console: the page shows it at once
MB = 1024 * 1024
# WhatsApp's limits per kind (what every provider kind accepts).
LIMITS: dict[MediaKind, int] = {
    "image": 5 * MB,
    "video": 16 * MB,
    "audio": 16 * MB,
    "voice": 16 * MB,
    "document": 100 * MB,
    "sticker": 500 * 1024,  # an animated one; a static sticker is at most 100 KB
}
STATIC_STICKER_BYTES = 100 * 1024
_MIME_PREFIX: dict[MediaKind, tuple[str, ...]] = {
    "image": ("image/jpeg", "image/png"),
    "video": ("video/mp4", "video/3gpp"),
    "audio": ("audio/",),
    "voice": ("audio/ogg", "audio/mpeg", "audio/mp4", "audio/aac", "audio/amr"),
    "document": ("",),
    "sticker": ("image/webp",),
}


def sniff(data: bytes) -> str | None:
    """The type the first bytes say, for the types WhatsApp sends; None when they say none."""
    head = data[:16]
    signatures: list[tuple[bool, str]] = [
        (head.startswith(b"\xff\xd8\xff"), "image/jpeg"),
        (head.startswith(b"\x89PNG\r\n\x1a\n"), "image/png"),
        (head[:4] == b"RIFF" and head[8:12] == b"WEBP", "image/webp"),
        (head.startswith(b"%PDF-"), "application/pdf"),
        (head.startswith(b"OggS"), "audio/ogg"),
        (head.startswith(b"ID3") or head[:2] in (b"\xff\xfb", b"\xff\xf3", b"\xff\xf2"), "audio/mpeg"),
        (head.startswith(b"#!AMR"), "audio/amr"),
        (head[4:8] == b"ftyp" and head[8:11] in (b"M4A", b"M4B"), "audio/mp4"),
        (head[4:8] == b"ftyp" and head[8:11] == b"3gp", "video/3gpp"),
        (head[4:8] == b"ftyp", "video/mp4"),
    ]
    return next((mime for matched, mime in signatures if matched), None)


class Sniffer(Protocol):
    def __call__(self, data: bytes) -> str | None: ...


def base_mime(mime: str) -> str:
    return mime.split(";", maxsplit=1)[0].strip().lower()


def check_bytes(kind: MediaKind, data: bytes, declared: str, sniffer: Sniffer = sniff) -> str:
    """The type `data` is, if it may be sent as `kind`; raises `UnknownReference` otherwise."""
    if len(data) > LIMITS[kind]:
        raise PayloadTooLarge(f"a {kind} is at most {LIMITS[kind]} bytes", code="too_large")
    if is_executable(data):
        raise UnknownReference("executables are not sent", code="bad_type")
    typed = sniffer(data)
    if kind == "document":
        # Any document type may be sent; what the bytes say wins over the claim when they say it.
        return typed or base_mime(declared) or "application/octet-stream"
    if typed is None or not typed.startswith(_MIME_PREFIX[kind]):
        raise UnknownReference(f"the file is not a {kind} WhatsApp sends ({typed or 'unknown type'})", code="bad_type")
    return typed


@dataclass(frozen=True)
class UploadTicket:
    media_id: str
    url: str
    headers: dict[str, str]
    expires_at: datetime


class MediaUploads:
    """Presigned uploads into the media bucket, their check on first use, and URL fetches."""

    def __init__(
        self,
        s3: Any,
        bucket: str,
        *,
        fetch: Callable[[str, int], tuple[bytes, str]] | None = None,
        sniffer: Sniffer = sniff,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        """`s3`: a client signing with SigV4 (`signature_version="s3v4"`): only SigV4 signs the
        Content-Type and Content-Length into a presigned PUT. `fetch(url, max_bytes)`: the bytes and
        Content-Type of an https URL, fetched under the outbound URL policy (raises `InvalidInput`
        for a refused URL)."""
        self._s3 = s3
        self._bucket = bucket
        self._fetch = fetch
        self._sniffer = sniffer
        self._clock = clock

    @staticmethod
    def _key(tenant: str, media_id: str) -> str:
        return f"{tenant}/outgoing/{media_id}"

    def presign(
        self, tenant: str, mime_type: str, size: int, *, file_name: str | None = None, sha256: str | None = None
    ) -> UploadTicket:
        if size > max(LIMITS.values()):
            raise PayloadTooLarge(f"a file is at most {max(LIMITS.values())} bytes", code="too_large")
        media_id = f"med_{secrets.token_hex(16)}"
        key = self._key(tenant, media_id)
        declared = {"mimeType": mime_type, "size": size, "fileName": file_name, "sha256": sha256}
        self._s3.put_object(
            Bucket=self._bucket, Key=f"{key}.json", Body=json.dumps(declared).encode(), ContentType="application/json"
        )
        url = self._s3.generate_presigned_url(
            "put_object",
            Params={"Bucket": self._bucket, "Key": key, "ContentType": mime_type, "ContentLength": size},
            ExpiresIn=UPLOAD_SECONDS,
        )
        headers = {"Content-Type": mime_type, "Content-Length": str(size)}
        return UploadTicket(media_id, url, headers, self._clock() + timedelta(seconds=UPLOAD_SECONDS))

    def claim(self, tenant: str, media_id: str, kind: MediaKind) -> MediaRef:
        """The uploaded file as a reference, once checked. Raises `UnknownReference`
        (`media_not_found`, `mismatch`, `bad_type`) or `PayloadTooLarge`."""
        key = self._key(tenant, media_id)
        try:
            declared = json.loads(self._s3.get_object(Bucket=self._bucket, Key=f"{key}.json")["Body"].read())
            data = self._s3.get_object(Bucket=self._bucket, Key=key)["Body"].read()
        except self._s3.exceptions.NoSuchKey:
            raise UnknownReference(
                "no uploaded file has this mediaId (never uploaded, or expired)", code="media_not_found"
            ) from None
        digest = hashlib.sha256(data).hexdigest()
        if len(data) != declared["size"] or (declared.get("sha256") and declared["sha256"].lower() != digest):
            raise UnknownReference("the uploaded file is not the one declared (size or sha256)", code="mismatch")
        mime = check_bytes(kind, data, declared["mimeType"], self._sniffer)
        if kind == "sticker" and len(data) > STATIC_STICKER_BYTES and not _animated_webp(data):
            raise PayloadTooLarge("a static sticker is at most 100 KB", code="too_large")
        return MediaRef(key=key, sha256=digest, mime_type=mime, size=len(data), file_name=declared.get("fileName"))

    def fetch_url(self, tenant: str, url: str, kind: MediaKind, file_name: str | None = None) -> MediaRef:
        """The file at `url`, fetched once into the bucket. Raises `InvalidInput` (a URL the policy
        refuses, or one that cannot be fetched), `UnknownReference` or `PayloadTooLarge`."""
        if self._fetch is None:
            raise InvalidInput("this deployment does not fetch media URLs", code="media_url_unsupported")
        data, content_type = self._fetch(url, LIMITS[kind])
        return self.store_bytes(tenant, data, kind, content_type, file_name)

    def store_bytes(
        self, tenant: str, data: bytes, kind: MediaKind, declared: str, file_name: str | None = None
    ) -> MediaRef:
        """`data` checked as `kind` (its type by its bytes, its kind's limit) and stored under the
        tenant's prefix, keyed by its digest (the same bytes, the same object, written again: the
        bucket's retention counts from then). Raises `UnknownReference` or `PayloadTooLarge`."""
        mime = check_bytes(kind, data, declared, self._sniffer)
        if kind == "sticker" and len(data) > STATIC_STICKER_BYTES and not _animated_webp(data):
            raise PayloadTooLarge("a static sticker is at most 100 KB", code="too_large")
        digest = hashlib.sha256(data).hexdigest()
        key = self._key(tenant, f"url_{digest}")
        self._s3.put_object(Bucket=self._bucket, Key=key, Body=data, ContentType=mime)
        return MediaRef(key=key, sha256=digest, mime_type=mime, size=len(data), file_name=file_name)

    def preview_url(self, ref: MediaRef) -> str:
        """A presigned GET of a stored file, valid `PREVIEW_SECONDS`, answered with its checked
        type (never the client's claim) and inline: the console's thumbnail of an image. Signing
        costs no request; the console's CSP allows the bucket's origin for images only."""
        url: str = self._s3.generate_presigned_url(
            "get_object",
            Params={
                "Bucket": self._bucket,
                "Key": ref.key,
                "ResponseContentType": ref.mime_type,
                "ResponseContentDisposition": "inline",
            },
            ExpiresIn=PREVIEW_SECONDS,
        )
        return url

    def read(self, ref: MediaRef) -> bytes:
        """The stored bytes of `ref`, checked against its sha256 (the `MediaReader` port). Raises
        `UnknownReference` (`expired`: the bucket's retention removed it; `mismatch`)."""
        try:
            data: bytes = self._s3.get_object(Bucket=self._bucket, Key=ref.key)["Body"].read()
        except self._s3.exceptions.NoSuchKey:
            raise UnknownReference("the stored file is gone (the bucket's retention)", code="expired") from None
        if hashlib.sha256(data).hexdigest() != ref.sha256:
            raise UnknownReference("the stored file changed since it was checked", code="mismatch")
        return data


# The send API fetches a client's URL inside its request (its function has 10 s): the connection,
# each read and the whole body are bounded within that, so a slow or silent URL is a 400 to its
# client, never the function's timeout (a 5xx, and its Idempotency-Key left in progress).
FETCH_TIMEOUT_SECONDS = 3.0
FETCH_DEADLINE_SECONDS = 6.0


def fetch_under_policy(
    *,
    local_mode: bool = False,
    transport: httpx.BaseTransport | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Callable[[str, int], tuple[bytes, str]]:
    """`MediaUploads`' `fetch`: one GET under the outbound URL policy (the address checked as it is
    dialled, no redirects, no proxy), read no further than `max_bytes` and for no longer than
    `FETCH_DEADLINE_SECONDS` (`clock`'s seconds). `transport`: the pinned one unless a test gives its own."""
    policy = OutboundPolicy.configured(local_mode=local_mode)
    client = httpx.Client(
        timeout=FETCH_TIMEOUT_SECONDS,
        follow_redirects=False,
        trust_env=False,
        transport=transport or PinnedTransport(policy),
    )

    def fetch(url: str, max_bytes: int) -> tuple[bytes, str]:
        checked = check_outbound_url(url, resolve=False, policy=policy)
        try:
            deadline = clock() + FETCH_DEADLINE_SECONDS
            with client.stream("GET", checked, headers=UNCOMPRESSED) as response:
                if response.status_code != 200:
                    raise InvalidInput(f"the media URL answered {response.status_code}", code="media_url_failed")
                data, over = read_bounded(response, max_bytes, deadline, clock)
                if over:
                    raise PayloadTooLarge(f"the file is over {max_bytes} bytes", code="too_large")
                return data, response.headers.get("content-type", "")
        except httpx.TimeoutException as exc:
            raise InvalidInput(
                f"the media URL did not hand the file over within {FETCH_DEADLINE_SECONDS:g} s; upload it instead",
                code="media_url_failed",
            ) from exc
        except httpx.HTTPError as exc:
            raise InvalidInput("the media URL could not be fetched", code="media_url_failed") from exc

    return fetch


def _animated_webp(data: bytes) -> bool:
    return data[12:16] == b"VP8X" and bool(data[20] & 0x02) if len(data) > 20 else False
