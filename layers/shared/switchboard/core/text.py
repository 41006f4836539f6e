"""Texts compared as people read them: trimmed, inner whitespace collapsed, casefolded, and kept
only as a SHA-256 hash of that form (the spam guard's history, the health of what a number sent)."""

from __future__ import annotations

import hashlib


def normalised(text: str) -> str:
    return " ".join(text.split()).casefold()


def text_hash(text: str) -> str:
    return hashlib.sha256(normalised(text).encode()).hexdigest()
