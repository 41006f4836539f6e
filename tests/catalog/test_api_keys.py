"""API key generation and hashing, and the hint shown instead of a secret."""

from __future__ import annotations

import pytest

from switchboard.catalog.domain import generate_key, hash_key, looks_like_key, secret_hint


def test_generated_keys_are_high_entropy_and_stored_only_as_a_hash() -> None:
    first, second = generate_key("LIVE"), generate_key("LIVE")

    assert first.plaintext != second.plaintext
    assert looks_like_key(first.plaintext)
    assert len(first.plaintext) >= 40
    assert first.digest == hash_key(first.plaintext)
    assert first.plaintext not in first.digest
    assert first.prefix == first.plaintext[:12]


def test_test_keys_are_recognisable() -> None:
    assert generate_key("TEST").plaintext.startswith("sb_test_")


@pytest.mark.parametrize("value", ["", "Bearer", "sb_live_short", "x" * 60, "sb_live_" + "a" * 40 + "!"])
def test_malformed_keys_are_not_looked_up(value: str) -> None:
    assert not looks_like_key(value)


def test_a_hint_never_reveals_a_short_secret() -> None:
    assert secret_hint("short") == "…"
    assert secret_hint("a-long-secret-value-1234") == "…1234"
