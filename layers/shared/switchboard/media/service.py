"""The media capability over S3: the ingest's claim check, the forwarder's resolver, the reader.

Every file is typed by its bytes (`sniff`), held to its kind's limit (`limits`) and to what the
provider announced (size, sha256), then stored under its message's prefix (`keys`). A message's
file is found again by that prefix before anything is fetched: a retried forward after a crash
downloads nothing twice. Every refusal is a `MediaUnavailable` and one metric, whose dimensions
are bounded (the reason and the provider kind, never an instance or a tenant).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, get_args

from switchboard.core.clock import Deadline
from switchboard.core.errors import DeadlinePassed, ProviderError, ProviderRejected, ProviderUnavailable
from switchboard.core.observability import logger
from switchboard.media import keys, limits, sniff
from switchboard.media.metrics import count_unavailable
from switchboard.media.ports import MediaUnavailable, UnavailableReason
from switchboard.providers.base import DownloadedMedia, MediaDownloads, MediaNotFetched, ProviderClient, ProviderTarget
from switchboard.providers.content import Media, MediaKind, MediaRef, MediaSource

DEFAULT_TYPE = "application/octet-stream"
_SHA256_META = "sha256"
_TYPE_META = "media-type"

# The instance's provider client and its target, by instance key (the catalog and the secrets).
TargetOf = Callable[[str], tuple[ProviderClient, ProviderTarget]]


def checked_type(media: Media, data: bytes, *, allowed: dict[MediaKind, frozenset[str]] = sniff.ALLOWED) -> str:
    """The media type of `data` as its bytes say, if `media`'s kind allows it (`allowed`: what a
    customer's file may be, or `sniff.SENDABLE`, what switchboard sends) and its size fits: the one
    check of every file, whichever way it travels.

    Raises `MediaUnavailable` (not retryable): `too_large`, `bad_type` or `mismatch`."""
    most = limits.max_bytes(media.kind, animated=sniff.is_animated_webp(data))
    if len(data) > most:
        raise MediaUnavailable("too_large", f"{len(data)} bytes, over the {most} bytes of a {media.kind}")
    if media.size is not None and media.size != len(data):
        raise MediaUnavailable("mismatch", "the size differs from the announced one")
    if media.sha256 is not None and media.sha256 != hashlib.sha256(data).hexdigest():
        raise MediaUnavailable("mismatch", "the sha256 differs from the announced one")
    if sniff.is_executable(data):
        raise MediaUnavailable("bad_type", "an executable")
    found = sniff.sniff(data)
    kinds_types = allowed.get(media.kind)
    if kinds_types is None:  # a document: any file but an executable
        return found or _announced(media) or DEFAULT_TYPE
    if found not in kinds_types:
        raise MediaUnavailable("bad_type", f"{found or 'unknown bytes'} is not a {media.kind} WhatsApp takes")
    return found


def _announced(media: Media) -> str | None:
    """A document's announced type where the bytes say nothing more precise (a CSV is text)."""
    mime = (media.mime_type or "").split(";")[0].strip().lower()
    return mime if mime.startswith(("text/", "application/")) and "/" in mime and len(mime) < 128 else None


class S3Media:
    """`MediaIntake`, `MediaResolver` and `MediaReader` over one private bucket.

    `s3` is a boto3 S3 client; `target_of` gives an instance's provider client and target (only
    the resolver needs it)."""

    def __init__(self, s3: Any, bucket: str, target_of: TargetOf | None = None) -> None:
        self._s3 = s3
        self._bucket = bucket
        self._target_of = target_of

    # --- MediaIntake ------------------------------------------------------------------------

    def put_inline(self, owner_tag: str | None, instance: str, message_id: str, media: Media, data: bytes) -> Media:
        """The caller counts a refusal (`metrics.count_unavailable`): it knows the provider kind."""
        ref = self._store(owner_tag, instance, message_id, media, data)
        return media.model_copy(update={"stored": ref, "inline": True})

    # --- MediaResolver ----------------------------------------------------------------------

    def resolve(
        self, owner_tag: str | None, instance: str, message_id: str, media: Media, *, deadline: Deadline | None = None
    ) -> MediaRef:
        if media.stored is not None:
            return media.stored
        kinds: list[str] = []
        try:
            return self._fetched(owner_tag, instance, message_id, media, kinds, deadline=deadline)
        except MediaUnavailable as refused:
            count_unavailable(refused.reason, kinds[0] if kinds else "unknown")
            logger.info(
                "media unavailable",
                extra={"instance": instance, "reason": refused.reason, "retryable": refused.retryable},
            )
            raise

    def _fetched(
        self,
        owner_tag: str | None,
        instance: str,
        message_id: str,
        media: Media,
        kinds: list[str],
        *,
        deadline: Deadline | None,
    ) -> MediaRef:
        """The message's file found in the bucket, else fetched and stored; `kinds` gets the
        provider kind once known (the metric's dimension)."""
        found = self._find(owner_tag, instance, message_id, media)
        if found is not None:
            return found
        if media.unavailable:
            raise MediaUnavailable(_reason(media.unavailable), "refused at the ingest")
        if media.size is not None and media.size > limits.max_bytes(media.kind, animated=media.animated):
            raise MediaUnavailable("too_large", f"announced {media.size} bytes, over the {media.kind} limit")
        if media.source is None or self._target_of is None:
            raise MediaUnavailable("no_source", "the provider gave no way to fetch the file")
        client, target = self._target_of(instance)
        kinds.append(target.kind)
        if not isinstance(client, MediaDownloads):
            raise MediaUnavailable("no_source", f"{target.kind} has no media download")
        # Read no further than the kind's largest file (an animated sticker's, for a sticker): the
        # bytes themselves are then held to their own limit.
        most = limits.max_bytes(media.kind, animated=True)
        downloaded = _downloaded(client, target, media.source, most, deadline)
        return self._store(owner_tag, instance, message_id, _with_file_name(media, downloaded), downloaded.data)

    # --- MediaReader ------------------------------------------------------------------------

    def read(self, ref: MediaRef) -> bytes:
        try:
            data = self._s3.get_object(Bucket=self._bucket, Key=ref.key)["Body"].read()
        except self._s3.exceptions.NoSuchKey:
            raise MediaUnavailable("expired", "the stored file is gone (the bucket's retention)") from None
        if hashlib.sha256(data).hexdigest() != ref.sha256:
            raise MediaUnavailable("mismatch", "the stored bytes differ from their reference")
        return bytes(data)

    # --- steps ------------------------------------------------------------------------------

    def _store(self, owner_tag: str | None, instance: str, message_id: str, media: Media, data: bytes) -> MediaRef:
        mime = checked_type(media, data)
        digest = hashlib.sha256(data).hexdigest()
        key = keys.media_key(owner_tag, instance, message_id, digest)
        # Same message, same bytes, same key: a redelivery writes the very object again.
        self._s3.put_object(
            Bucket=self._bucket,
            Key=key,
            Body=data,
            ContentType=mime,
            Metadata={_SHA256_META: digest, _TYPE_META: mime},
        )
        return MediaRef(key=key, sha256=digest, mime_type=mime, size=len(data), file_name=media.file_name)

    def _find(self, owner_tag: str | None, instance: str, message_id: str, media: Media) -> MediaRef | None:
        """The message's file if an earlier try stored it: a HEAD when its digest was announced,
        else a listing of the message's prefix."""
        if media.sha256 is not None:
            key = keys.media_key(owner_tag, instance, message_id, media.sha256)
        else:
            listed = self._s3.list_objects_v2(
                Bucket=self._bucket, Prefix=keys.message_prefix(owner_tag, instance, message_id), MaxKeys=1
            )
            contents = listed.get("Contents") or []
            if not contents:
                return None
            key = contents[0]["Key"]
        try:
            head: dict[str, Any] = dict(self._s3.head_object(Bucket=self._bucket, Key=key))
        except self._s3.exceptions.ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise
        metadata = head.get("Metadata") or {}
        return MediaRef(
            key=key,
            sha256=metadata.get(_SHA256_META) or key.rsplit("/", 1)[-1],
            mime_type=metadata.get(_TYPE_META) or head.get("ContentType") or DEFAULT_TYPE,
            size=int(head.get("ContentLength") or 0),
            file_name=media.file_name,
        )


def _reason(value: str) -> UnavailableReason:
    known: tuple[UnavailableReason, ...] = get_args(UnavailableReason)
    for reason in known:
        if reason == value:
            return reason
    return "bad_type"


def _downloaded(
    client: MediaDownloads, target: ProviderTarget, source: MediaSource, most: int, deadline: Deadline | None
) -> DownloadedMedia:
    """The file's bytes from its provider; provider failures become `MediaUnavailable`."""
    try:
        return client.download_media(target, source, max_bytes=most, deadline=deadline)
    except MediaNotFetched as refused:
        raise MediaUnavailable(_reason(refused.reason), refused.message) from refused
    except DeadlinePassed as exc:  # slow now, perhaps not on a later try
        raise MediaUnavailable("too_slow", str(exc), retryable=True) from exc
    except ProviderUnavailable as exc:
        raise MediaUnavailable("provider_error", str(exc), retryable=True) from exc
    except ProviderRejected as exc:
        status = exc.details.get("status")
        reason: UnavailableReason = "not_found" if status in (404, 410) else "provider_error"
        raise MediaUnavailable(reason, str(exc)) from exc
    except ProviderError as exc:  # a timeout: a later try may have it
        raise MediaUnavailable("provider_error", str(exc), retryable=True) from exc


def _with_file_name(media: Media, downloaded: DownloadedMedia) -> Media:
    if media.file_name or not downloaded.file_name:
        return media
    return media.model_copy(update={"file_name": downloaded.file_name[:255]})
