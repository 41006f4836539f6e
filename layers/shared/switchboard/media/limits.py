"""Each media kind's limits, as WhatsApp enforces them (Meta's Cloud API media limits), for files
customers send and files switchboard sends alike."""

from __future__ import annotations

from switchboard.providers.content import MediaKind

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
# The most any file may hold (a document's limit): what an upload or a fetch reads at most before
# its kind is known.
LARGEST = max(MAX_BYTES.values())


def max_bytes(kind: MediaKind, *, animated: bool = False) -> int:
    """The most bytes a file of `kind` may hold (`animated`: an animated sticker)."""
    if kind == "sticker" and animated:
        return ANIMATED_STICKER_BYTES
    return MAX_BYTES[kind]
