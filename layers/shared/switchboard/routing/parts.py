"""A reply longer than one WhatsApp message can carry, cut into the parts that leave one by one.

A cut falls where a reader expects a pause: between paragraphs, else between lines, else after a
sentence, else between words; only a single word longer than a whole part (a long link) is cut
inside, and then never inside a character or between a letter and its accents. Parts are as long
as the limit lets them be, so a reply leaves in as few messages as it can; the whitespace at a
cut is dropped, everything else is kept as written.

Lengths are counted in UTF-16 code units, as the WhatsApp clients and the Cloud API count them:
an emoji outside the Basic Multilingual Plane is two, so a part never exceeds the limit of a
server that counts that way. The cut is deterministic: the same reply and limit always give the
same parts, so a part is known by its position alone.
"""

from __future__ import annotations

import re
import unicodedata

# Each level's cuts, tried in order: a level is used only for the pieces the previous one left
# too long.
_LEVELS = (
    re.compile(r"\n[ \t\r]*\n\s*"),  # paragraphs: a blank line
    re.compile(r"\r?\n\s*"),  # lines
    # sentences: after an end mark (and up to two closing quotes or brackets), a space; CJK end
    # marks need none
    re.compile(
        "(?<=[.!?\u2026])\\s+|(?<=[.!?\u2026][\"'\u201d\u2019)\\]])\\s+"
        "|(?<=[.!?\u2026][\"'\u201d\u2019)\\]]{2})\\s+|(?<=[\u3002\uff01\uff1f])\\s*"
    ),
    re.compile(r"\s+"),  # words
)
_JOINERS = frozenset({"\u200d", "\u034f"})  # zero width joiner, combining grapheme joiner


def utf16_length(text: str) -> int:
    """How many UTF-16 code units `text` takes (a character beyond U+FFFF takes two)."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def split_text(text: str, limit: int) -> list[str]:
    """`text` in parts of at most `limit` UTF-16 code units (one part when it fits), none empty."""
    if limit < 2:
        raise ValueError("a part holds at least two code units (one character beyond U+FFFF)")
    stripped = text.strip()
    if not stripped:
        return []
    if utf16_length(stripped) <= limit:
        return [stripped]
    return [part.strip() for part in _split(stripped, limit, 0) if part.strip()]


def _split(text: str, limit: int, level: int) -> list[str]:
    """Whole pieces of this level packed into parts; a piece too long for one is cut a level down
    (its last bit may still share a part with the pieces after it)."""
    if utf16_length(text) <= limit:
        return [text]
    if level == len(_LEVELS):
        return _hard_cut(text, limit)
    parts: list[str] = []
    current, between = "", ""
    position = 0
    for cut in [*_LEVELS[level].finditer(text), None]:
        piece = text[position : cut.start() if cut else len(text)]
        if cut is not None:
            position = cut.end()
        if piece:
            if utf16_length(piece) > limit:
                if current:
                    parts.append(current)
                *whole, current = _split(piece, limit, level + 1)
                parts += whole
            elif current and utf16_length(current) + utf16_length(between) + utf16_length(piece) <= limit:
                current = f"{current}{between}{piece}"
            else:
                if current:
                    parts.append(current)
                current = piece
        between = cut.group() if cut else ""
    if current:
        parts.append(current)
    return parts


def _hard_cut(text: str, limit: int) -> list[str]:
    """A word longer than a part, cut at the limit: never inside a surrogate pair (Python strings
    hold code points), nor before a combining mark, a joiner or a variation selector."""
    parts: list[str] = []
    start = 0
    while start < len(text):
        end, units = start, 0
        while end < len(text) and units + (width := 2 if ord(text[end]) > 0xFFFF else 1) <= limit:
            units += width
            end += 1
        if end < len(text):
            backed = end
            while backed > start + 1 and _attached(text[backed]):
                backed -= 1
            end = backed if backed > start + 1 else end
        parts.append(text[start:end])
        start = end
    return parts


def _attached(ch: str) -> bool:
    """True for a character that belongs to the one before it."""
    return bool(unicodedata.combining(ch)) or ch in _JOINERS or "\ufe00" <= ch <= "\ufe0f"
