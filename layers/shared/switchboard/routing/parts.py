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
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


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
    (its last bit may still share a part with the pieces after it). Lengths are kept as counts,
    never measured again, so a cut is linear in the reply's length."""
    if utf16_length(text) <= limit:
        return [text]
    if level == len(_LEVELS):
        return _hard_cut(text, limit)
    parts: list[str] = []
    current: list[str] = []  # the fragments of the part being filled
    current_units = 0
    between, between_units = "", 0
    position = 0
    for cut in [*_LEVELS[level].finditer(text), None]:
        piece = text[position : cut.start() if cut else len(text)]
        if cut is not None:
            position = cut.end()
        if piece:
            units = utf16_length(piece)
            if units > limit:
                if current:
                    parts.append("".join(current))
                *whole, last = _split(piece, limit, level + 1)
                parts += whole
                current, current_units = [last], utf16_length(last)
            elif current and current_units + between_units + units <= limit:
                current += [between, piece]
                current_units += between_units + units
            else:
                if current:
                    parts.append("".join(current))
                current, current_units = [piece], units
        between = cut.group() if cut else ""
        between_units = utf16_length(between)
    if current:
        parts.append("".join(current))
    return parts


def _hard_cut(text: str, limit: int) -> list[str]:
    """A word longer than a part, cut at the limit: never inside a surrogate pair (Python strings
    hold code points), nor before a combining mark, a joiner or a variation selector."""
    parts: list[str] = []
    start = 0
    while start < len(text):
        # The longest run from `start` within the limit: at most `limit` characters, fewer where
        # some take two code units (found by bisection: the length only grows with the run).
        low, high = start + 1, min(len(text), start + limit)
        while low < high:
            middle = (low + high + 1) // 2
            low, high = (middle, high) if utf16_length(text[start:middle]) <= limit else (low, middle - 1)
        end = low
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
