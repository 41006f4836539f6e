"""A file's type as its bytes say (magic numbers), never as its sender announced it.

Only the types WhatsApp carries are named; executables and scripts are recognised so that they
are refused whatever kind the sender claims. A table of our own rather than a dependency: a few
dozen bytes read, nothing imported at cold start.
"""

from __future__ import annotations

from switchboard.providers.content import MediaKind

_EXECUTABLE_MAGIC = (
    b"MZ",  # Windows PE
    b"\x7fELF",
    b"\xfe\xed\xfa\xce",  # Mach-O, 32 and 64 bit, both byte orders, and fat binaries
    b"\xfe\xed\xfa\xcf",
    b"\xce\xfa\xed\xfe",
    b"\xcf\xfa\xed\xfe",
    b"\xca\xfe\xba\xbe",
    b"#!",  # a script with its interpreter
)
_ZIP = b"PK\x03\x04"
_OFFICE_PARTS = {
    b"word/": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    b"xl/": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    b"ppt/": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
}
_MP4_AUDIO_BRANDS = (b"M4A ", b"M4B ", b"F4A ")
_3GP_BRANDS = (b"3gp", b"3g2")

# What the bytes of each kind may be when a customer sends them: WhatsApp's own media types per
# kind, as its clients deliver them (a GIF arrives as an image, an audio may come in an MP4 box).
# A document may be any file but an executable: it has no entry.
ALLOWED: dict[MediaKind, frozenset[str]] = {
    "image": frozenset({"image/jpeg", "image/png", "image/webp", "image/gif"}),
    "sticker": frozenset({"image/webp", "image/png"}),
    "video": frozenset({"video/mp4", "video/3gpp", "video/quicktime"}),
    "audio": frozenset({"audio/ogg", "audio/mpeg", "audio/aac", "audio/mp4", "audio/amr", "video/mp4"}),
    "voice": frozenset({"audio/ogg", "audio/mpeg", "audio/aac", "audio/mp4", "audio/amr", "video/mp4"}),
}
# What switchboard sends as each kind: the types every provider kind sends as it (the Cloud API's
# supported media types, the strictest: an image is JPEG or PNG, a sticker WebP, a video MP4 or
# 3GPP, an audio one of its five audio types). Anything else may still leave as a document.
SENDABLE: dict[MediaKind, frozenset[str]] = {
    "image": frozenset({"image/jpeg", "image/png"}),
    "sticker": frozenset({"image/webp"}),
    "video": frozenset({"video/mp4", "video/3gpp"}),
    "audio": frozenset({"audio/ogg", "audio/mpeg", "audio/aac", "audio/mp4", "audio/amr"}),
    "voice": frozenset({"audio/ogg", "audio/mpeg", "audio/aac", "audio/mp4", "audio/amr"}),
}


def is_executable(data: bytes) -> bool:
    return data.startswith(_EXECUTABLE_MAGIC) and not data.startswith(b"#!AMR")


def is_animated_webp(data: bytes) -> bool:
    """An extended WebP (`VP8X`) whose header flags animation: an animated sticker."""
    return len(data) > 20 and data[:4] == b"RIFF" and data[8:16] == b"WEBPVP8X" and bool(data[20] & 0x02)


_PREFIXES: tuple[tuple[bytes, str], ...] = (
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"OggS", "audio/ogg"),
    (b"ID3", "audio/mpeg"),
    (b"#!AMR", "audio/amr"),
    (b"%PDF-", "application/pdf"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "application/msword"),  # the older Office formats' OLE
)


def sniff(data: bytes) -> str | None:
    """The media type `data` starts like, or None when it is none we know."""
    head = data[:64]
    for prefix, mime in _PREFIXES:
        if head.startswith(prefix):
            return mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head[4:8] == b"ftyp":
        return _iso_media(head[8:12])
    if len(head) > 1 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0:
        # An MPEG audio frame: layer bits set for MP3, zero for AAC's ADTS.
        return "audio/mpeg" if head[1] & 0x06 else "audio/aac"
    if head.startswith(_ZIP):
        window = data[:4096]
        for part, mime in _OFFICE_PARTS.items():
            if part in window:
                return mime
        return "application/zip"
    return _text_type(data[:4096])


def _iso_media(brand: bytes) -> str:
    """An ISO base media file (MP4, M4A, 3GP, MOV) by its major brand."""
    if brand in _MP4_AUDIO_BRANDS:
        return "audio/mp4"
    if brand[:3] in _3GP_BRANDS:
        return "video/3gpp"
    if brand == b"qt  ":
        return "video/quicktime"
    return "video/mp4"


def _text_type(window: bytes) -> str | None:
    try:
        text = window.decode("utf-8")
    except UnicodeDecodeError as cut:
        # A multi-byte character cut by the window's end is still text.
        if cut.start < len(window) - 3:
            return None
        text = window[: cut.start].decode("utf-8")
    if any(ch < " " and ch not in "\t\r\n\f" for ch in text):
        return None
    if text.lstrip("\ufeff").upper().startswith("BEGIN:VCARD"):
        return "text/vcard"
    return "text/plain"
