"""A contact card as the vCard 3.0 WhatsApp's own apps send (`TEL;type=CELL;waid=<digits>`), for
the kinds whose send routes take a vCard rather than fields."""

from __future__ import annotations

from switchboard.providers.content import ContactCard


def _escaped(value: str) -> str:
    """A vCard text value (RFC 6350 3.4): backslash, comma, semicolon and newlines escaped."""
    return (
        value.replace("\\", "\\\\").replace(",", "\\,").replace(";", "\\;").replace("\r\n", "\\n").replace("\n", "\\n")
    )


def vcard_of(card: ContactCard) -> str:
    """`card` as a vCard: its own when it came with one, else built from its name and phones."""
    if card.vcard:
        return card.vcard
    name = card.name or (card.phones[0] if card.phones else "")
    lines = ["BEGIN:VCARD", "VERSION:3.0", f"N:;{_escaped(name)};;;", f"FN:{_escaped(name)}"]
    for phone in card.phones:
        digits = "".join(ch for ch in phone if ch.isdigit())
        lines.append(f"TEL;type=CELL;type=VOICE;waid={digits}:+{digits}")
    lines.append("END:VCARD")
    return "\n".join(lines)
