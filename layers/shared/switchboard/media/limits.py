"""Each media kind's limits, as WhatsApp enforces them (Meta's Cloud API media limits)."""

from __future__ import annotations

from switchboard.providers.content import Media, MediaKind

MB = 1024 * 1024
KB = 1024

MAX_BYTES: dict[MediaKind, int] = {
    "image": 5 * MB,
    "video": 16 * MB,
    "audio": 16 * MB,
    "voice": 16 * MB,
    "document": 100 * MB,
    "sticker": 100 * KB,  # a static sticker; an animated one may be larger
}
ANIMATED_STICKER_BYTES = 500 * KB


def max_bytes(media: Media) -> int:
    """The most bytes a file of `media`'s kind may hold."""
    if media.kind == "sticker" and media.animated:
        return ANIMATED_STICKER_BYTES
    return MAX_BYTES[media.kind]
