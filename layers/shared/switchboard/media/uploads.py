"""Files a client sends with a message: uploaded straight to the media bucket, or fetched once.

`POST /api/media` answers a presigned S3 PUT for one object: a short expiry, and the client's
whole declaration signed in as the object's own headers: its type and length (`Content-Type`,
`Content-Length`) and, when given, its sha256 and file name as user metadata (`x-amz-meta-sha256`,
`x-amz-meta-file-name`, in `X-Amz-SignedHeaders`). S3 refuses a PUT whose signed headers differ
or are missing, and any `x-amz-*` header not signed, so the object carries exactly what the client
declared, and the one GET that checks the object on its first use reads the declaration with it:
its size, its sha256 when one was declared, its type by its bytes, and its kind's limit. Nothing is
written at `POST /api/media`. The bucket's lifecycle expires the object; a `mediaId` whose object
is gone is `media_not_found`.

A client's `https` URL is fetched once, under the outbound URL policy, into the same bucket.

A file is checked as every file is (`media.service.checked_type`: its type by its bytes, its kind's
limit from `media.limits`), held to what switchboard sends as its kind (`sniff.SENDABLE`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import httpx

from switchboard.core.clock import Deadline, utcnow
from switchboard.core.errors import InvalidInput, PayloadTooLarge, UnknownReference
from switchboard.core.outbound import UNCOMPRESSED, PinnedTransport, read_bounded
from switchboard.core.urls import OutboundPolicy, check_outbound_url
from switchboard.media import limits, sniff
from switchboard.media.ports import MediaUnavailable
from switchboard.media.service import checked_type
from switchboard.providers.content import Media, MediaKind, MediaRef

UPLOAD_SECONDS = 300  # long enough for a phone on a slow link, short enough not to linger
PREVIEW_SECONDS = 300  # an image's thumbnail in the console: the page shows it at once
# The declaration's user metadata (S3 keeps the names lowercased, without `x-amz-meta-`).
SHA256_META = "sha256"
FILE_NAME_META = "file-name"


def check_bytes(
    kind: MediaKind, data: bytes, declared: str, *, size: int | None = None, sha256: str | None = None
) -> str:
    """The type `data` is, if it may be sent as `kind` (`media.service.checked_type` with what
    switchboard sends, `sniff.SENDABLE`), against the client's `declared` type, `size` and
    `sha256`. Raises `PayloadTooLarge` (`too_large`) or `UnknownReference` (`bad_type`,
    `mismatch`): the client's mistake, its 4xx."""
    mime = declared.split(";", maxsplit=1)[0].strip().lower()[:255] or None
    media = Media(kind=kind, mime_type=mime, size=size, sha256=sha256.lower() if sha256 else None)
    try:
        return checked_type(media, data, allowed=sniff.SENDABLE)
    except MediaUnavailable as refused:
        if refused.reason == "too_large":
            raise PayloadTooLarge(f"the file is over a {kind}'s limit ({refused.message})", code="too_large") from None
        if refused.reason == "mismatch":
            raise UnknownReference(
                "the uploaded file is not the one declared (size or sha256)", code="mismatch"
            ) from None
        raise UnknownReference(
            f"the file is not a {kind} WhatsApp sends ({refused.message})", code="bad_type"
        ) from None


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
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        """`s3`: a client signing with SigV4 (`signature_version="s3v4"`): only SigV4 signs the
        Content-Type and Content-Length into a presigned PUT. `fetch(url, max_bytes)`: the bytes and
        Content-Type of an https URL, fetched under the outbound URL policy (raises `InvalidInput`
        for a refused URL)."""
        self._s3 = s3
        self._bucket = bucket
        self._fetch = fetch
        self._clock = clock

    @staticmethod
    def _key(tenant: str, media_id: str) -> str:
        return f"{tenant}/outgoing/{media_id}"

    def presign(
        self, tenant: str, mime_type: str, size: int, *, file_name: str | None = None, sha256: str | None = None
    ) -> UploadTicket:
        if size > limits.LARGEST:
            raise PayloadTooLarge(f"a file is at most {limits.LARGEST} bytes", code="too_large")
        media_id = f"med_{secrets.token_hex(16)}"
        metadata: dict[str, str] = {}
        if sha256:
            metadata[SHA256_META] = sha256.lower()
        if file_name:
            metadata[FILE_NAME_META] = _header_safe(file_name)
        params: dict[str, Any] = {
            "Bucket": self._bucket,
            "Key": self._key(tenant, media_id),
            "ContentType": mime_type,
            "ContentLength": size,
        }
        if metadata:
            params["Metadata"] = metadata
        # Signing costs no request: SigV4 puts every header named here in the signature.
        url = self._s3.generate_presigned_url("put_object", Params=params, ExpiresIn=UPLOAD_SECONDS)
        headers = {"Content-Type": mime_type, "Content-Length": str(size)}
        headers |= {f"x-amz-meta-{name}": value for name, value in metadata.items()}
        return UploadTicket(media_id, url, headers, self._clock() + timedelta(seconds=UPLOAD_SECONDS))

    def claim(self, tenant: str, media_id: str, kind: MediaKind) -> MediaRef:
        """The uploaded file as a reference, once checked. Raises `UnknownReference`
        (`media_not_found`, `mismatch`, `bad_type`) or `PayloadTooLarge`."""
        key = self._key(tenant, media_id)
        try:
            stored = self._s3.get_object(Bucket=self._bucket, Key=key)
        except self._s3.exceptions.NoSuchKey:
            raise UnknownReference(
                "no uploaded file has this mediaId (never uploaded, or expired)", code="media_not_found"
            ) from None
        data = stored["Body"].read()
        # The declaration, as the signed PUT stored it with the bytes.
        metadata = stored.get("Metadata") or {}
        declared_type, declared_size = stored.get("ContentType") or "", stored.get("ContentLength")
        mime = check_bytes(kind, data, declared_type, size=declared_size, sha256=metadata.get(SHA256_META))
        digest = hashlib.sha256(data).hexdigest()
        file_name = _from_header(metadata.get(FILE_NAME_META))
        return MediaRef(key=key, sha256=digest, mime_type=mime, size=len(data), file_name=file_name)

    def fetch_url(self, tenant: str, url: str, kind: MediaKind, file_name: str | None = None) -> MediaRef:
        """The file at `url`, fetched once into the bucket. Raises `InvalidInput` (a URL the policy
        refuses, or one that cannot be fetched), `UnknownReference` or `PayloadTooLarge`."""
        if self._fetch is None:
            raise InvalidInput("this deployment does not fetch media URLs", code="media_url_unsupported")
        data, content_type = self._fetch(url, limits.max_bytes(kind, animated=True))
        return self.store_bytes(tenant, data, kind, content_type, file_name)

    def store_bytes(
        self, tenant: str, data: bytes, kind: MediaKind, declared: str, file_name: str | None = None
    ) -> MediaRef:
        """`data` checked as `kind` (its type by its bytes, its kind's limit) and stored under the
        tenant's prefix, keyed by its digest (the same bytes, the same object, written again: the
        bucket's retention counts from then). Raises `UnknownReference` or `PayloadTooLarge`."""
        mime = check_bytes(kind, data, declared)
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
    dialled, no redirects, no proxy), asked for uncompressed and read no further than `max_bytes`
    and for no longer than `FETCH_DEADLINE_SECONDS` (`clock`'s seconds). `transport`: the pinned
    one unless a test gives its own."""
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
            deadline = Deadline.after(FETCH_DEADLINE_SECONDS, clock)
            with client.stream("GET", checked, headers=UNCOMPRESSED) as response:
                if response.status_code != 200:
                    raise InvalidInput(f"the media URL answered {response.status_code}", code="media_url_failed")
                data, over = read_bounded(response, max_bytes, deadline)
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


def _header_safe(file_name: str) -> str:
    """A file name as an S3 metadata value: base64url of its UTF-8, ASCII as an HTTP header must be
    (S3 would rewrite other characters) and within S3's 2 KB of user metadata for the longest name
    the API takes (240 characters of 4 bytes: 1,280 characters)."""
    return base64.urlsafe_b64encode(file_name.encode()).decode().rstrip("=")


def _from_header(value: str | None) -> str | None:
    if not value:
        return None
    try:
        return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).decode()[:255] or None
    except (binascii.Error, UnicodeDecodeError):
        return None
