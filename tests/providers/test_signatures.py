"""Webhook signature checks, against an independent HMAC implementation written here."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from switchboard.core.errors import PayloadTooLarge, Unauthenticated
from switchboard.providers import envelope as signatures

SECRET = "whsec-unit-test-secret"
NOW = 1_800_000_000
BODY = b'{"event":"message","eventId":"e-1","instanceId":"i-1","seq":1,"data":{}}'


def reference_signature(secret: str, timestamp: str, body: bytes) -> str:
    mac = hmac.HMAC(secret.encode("utf-8"), digestmod=hashlib.sha256)
    mac.update(timestamp.encode("ascii"))
    mac.update(b".")
    mac.update(body)
    return "v1=" + mac.hexdigest()


def verify(secret: str, timestamp: str | None, header: str | None, body: bytes, now: float = NOW) -> bool:
    stamp = signatures.check_timestamp(timestamp, now)
    return signatures.matches(secret, stamp, body, signatures.signature_entries(header))


def test_given_a_reference_signature_when_verified_then_it_matches() -> None:
    assert verify(SECRET, str(NOW), reference_signature(SECRET, str(NOW), BODY), BODY)


@pytest.mark.parametrize("position", [0, len(BODY) // 2, len(BODY) - 1])
def test_given_one_byte_changed_when_verified_then_it_does_not_match(position: int) -> None:
    header = reference_signature(SECRET, str(NOW), BODY)
    tampered = bytearray(BODY)
    tampered[position] ^= 0x01
    assert not verify(SECRET, str(NOW), header, bytes(tampered))


@pytest.mark.parametrize("timestamp", [str(NOW - 301), str(NOW + 301), "1700000000.0", "", None, " 1800000000", "-1"])
def test_given_a_timestamp_outside_the_window_or_not_digits_when_checked_then_refused(timestamp: str | None) -> None:
    header = reference_signature(SECRET, timestamp or "", BODY)
    with pytest.raises(Unauthenticated) as refused:
        verify(SECRET, timestamp, header, BODY)
    assert refused.value.code == "invalid_signature"


@pytest.mark.parametrize("offset", [-300, 0, 300])
def test_given_a_timestamp_at_the_edges_of_the_window_when_checked_then_accepted(offset: int) -> None:
    stamp = str(NOW + offset)
    assert verify(SECRET, stamp, reference_signature(SECRET, stamp, BODY), BODY)


def test_given_two_entries_while_rotating_when_either_secret_is_ours_then_it_matches() -> None:
    header = reference_signature("old-secret-value", str(NOW), BODY) + "," + reference_signature(SECRET, str(NOW), BODY)
    assert verify(SECRET, str(NOW), header, BODY)
    assert verify("old-secret-value", str(NOW), header, BODY)
    assert not verify("a-third-secret", str(NOW), header, BODY)


@pytest.mark.parametrize(
    "header",
    [
        "",
        None,
        "v1=",
        "v2=" + "a" * 64,
        "v1=" + "A" * 64,
        "v1=" + "a" * 63,
        "sha256=" + "a" * 64,
        ",".join(["v1=" + "a" * 64] * 9),
    ],
)
def test_given_a_malformed_signature_header_when_checked_then_refused_the_same_way(header: str | None) -> None:
    with pytest.raises(Unauthenticated) as refused:
        verify(SECRET, str(NOW), header, BODY)
    assert (refused.value.code, refused.value.message) == ("invalid_signature", "invalid webhook signature")


def test_given_an_empty_secret_when_matched_then_nothing_matches() -> None:
    assert not verify("", str(NOW), reference_signature("", str(NOW), BODY), BODY)


def test_given_a_body_over_one_megabyte_when_size_checked_then_payload_too_large() -> None:
    signatures.check_size(b"x" * signatures.MAX_BODY_BYTES)
    with pytest.raises(PayloadTooLarge):
        signatures.check_size(b"x" * (signatures.MAX_BODY_BYTES + 1))
