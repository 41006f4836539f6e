"""A file is typed by its bytes and held to its kind's limits, whatever its sender announced."""

from __future__ import annotations

import hashlib

import pytest

from devstack.simulator import files
from switchboard.media import keys, sniff
from switchboard.media.limits import MB, max_bytes
from switchboard.media.ports import MediaUnavailable
from switchboard.media.service import checked_type
from switchboard.providers.content import Media

JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00"
WEBP = b"RIFF\x24\x00\x00\x00WEBPVP8 "


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (files.png(), "image/png"),
        (JPEG, "image/jpeg"),
        (WEBP, "image/webp"),
        (b"GIF89a\x01\x00", "image/gif"),
        (b"\x00\x00\x00\x18ftypmp42", "video/mp4"),
        (b"\x00\x00\x00\x18ftyp3gp4", "video/3gpp"),
        (b"\x00\x00\x00\x14ftypqt  ", "video/quicktime"),
        (b"\x00\x00\x00\x20ftypM4A ", "audio/mp4"),
        (files.ogg_opus(), "audio/ogg"),
        (b"ID3\x04\x00", "audio/mpeg"),
        (b"\xff\xfb\x90\x00", "audio/mpeg"),
        (b"\xff\xf1\x50\x80", "audio/aac"),
        (b"#!AMR\n", "audio/amr"),
        (files.pdf(), "application/pdf"),
        (b"PK\x03\x04" + b"\x00" * 26 + b"word/document.xml", sniff._OFFICE_PARTS[b"word/"]),
        (b"name,phone\nAna,5511\n", "text/plain"),
        (b"BEGIN:VCARD\nVERSION:3.0\nFN:Ana\nEND:VCARD\n", "text/vcard"),
        (b"\x00\x01\x02\x03", None),
    ],
)
def test_bytes_name_their_type(data: bytes, expected: str | None) -> None:
    assert sniff.sniff(data) == expected


@pytest.mark.parametrize("data", [b"MZ\x90\x00", b"\x7fELF\x02", b"\xcf\xfa\xed\xfe", b"#!/bin/sh\nrm -rf /\n"])
def test_executables_are_refused_whatever_the_kind_claims(data: bytes) -> None:
    for kind in ("document", "image"):
        with pytest.raises(MediaUnavailable) as refused:
            checked_type(Media(kind=kind, mime_type="application/pdf"), data)
        assert refused.value.reason == "bad_type"


def test_bytes_of_another_type_than_the_kind_are_refused() -> None:
    with pytest.raises(MediaUnavailable) as refused:
        checked_type(Media(kind="image", mime_type="image/jpeg"), files.pdf())
    assert refused.value.reason == "bad_type"


def test_the_type_is_the_bytes_not_the_announced_one() -> None:
    assert checked_type(Media(kind="image", mime_type="image/jpeg"), files.png()) == "image/png"
    assert checked_type(Media(kind="voice", mime_type="audio/ogg; codecs=opus"), files.ogg_opus()) == "audio/ogg"
    assert checked_type(Media(kind="document", mime_type="text/csv"), b"a,b\n1,2\n") == "text/plain"


def test_limits_per_kind() -> None:
    assert max_bytes("image") == 5 * MB
    assert max_bytes("voice") == 16 * MB
    assert max_bytes("video") == 16 * MB
    assert max_bytes("document") == 100 * MB
    assert max_bytes("sticker") == 100 * 1024
    assert max_bytes("sticker", animated=True) == 500 * 1024
    with pytest.raises(MediaUnavailable) as refused:
        checked_type(Media(kind="sticker"), WEBP + b"\x00" * (100 * 1024))
    assert refused.value.reason == "too_large"


def test_a_sticker_is_animated_by_its_bytes_not_by_what_its_sender_said() -> None:
    animated = b"RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x02" + b"\x00" * (200 * 1024)

    assert checked_type(Media(kind="sticker"), animated) == "image/webp"
    with pytest.raises(MediaUnavailable) as refused:
        checked_type(Media(kind="sticker", animated=True), WEBP + b"\x00" * (200 * 1024))
    assert refused.value.reason == "too_large"


def test_what_switchboard_sends_is_held_to_what_every_kind_sends() -> None:
    """The same check with the types switchboard sends: a GIF arrives as an image but leaves only
    as a document; an AMR voice note starts like a script and is none."""
    gif = b"GIF89a\x01\x00\x01\x00"
    assert checked_type(Media(kind="image"), gif) == "image/gif"
    with pytest.raises(MediaUnavailable) as refused:
        checked_type(Media(kind="image"), gif, allowed=sniff.SENDABLE)
    assert refused.value.reason == "bad_type"
    assert checked_type(Media(kind="document"), gif, allowed=sniff.SENDABLE) == "image/gif"
    assert checked_type(Media(kind="voice"), b"#!AMR\n" + bytes(32), allowed=sniff.SENDABLE) == "audio/amr"


def test_announced_size_or_digest_that_differ_are_a_mismatch() -> None:
    data = files.png()
    with pytest.raises(MediaUnavailable) as wrong_size:
        checked_type(Media(kind="image", size=len(data) + 1), data)
    with pytest.raises(MediaUnavailable) as wrong_digest:
        checked_type(Media(kind="image", sha256="0" * 64), data)
    assert wrong_size.value.reason == wrong_digest.value.reason == "mismatch"
    assert checked_type(Media(kind="image", size=len(data), sha256=hashlib.sha256(data).hexdigest()), data)


def test_keys_hold_the_tenant_prefix_and_no_message_id_in_clear() -> None:
    key = keys.media_key("acme", "t#acme#line-1", "3EB0C7A1+5511999/secret", "a" * 64)
    owner, instance, message, digest = key.split("/")
    assert owner == "acme"
    assert instance == "t_acme_line-1"
    assert message == hashlib.sha256(b"3EB0C7A1+5511999/secret").hexdigest()
    assert digest == "a" * 64
    assert keys.media_key(None, "x", "m", "b" * 64).startswith("_platform/x/")
