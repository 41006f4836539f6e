"""Bodies are parsed within limits: size, strict UTF-8, nesting depth, strict JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest

from switchboard.core.api.body import MAX_DEPTH, InvalidBody, nesting_depth, parse_json
from switchboard.core.errors import PayloadTooLarge


def nested(depth: int) -> str:
    return '{"a":' * (depth - 1) + "[]" + "}" * (depth - 1)


def test_a_document_as_deep_as_the_limit_is_parsed_one_level_deeper_is_invalid_json() -> None:
    assert nesting_depth(nested(MAX_DEPTH)) == MAX_DEPTH
    assert parse_json(nested(MAX_DEPTH)) is not None

    with pytest.raises(InvalidBody) as refused:
        parse_json(nested(MAX_DEPTH + 1))
    assert refused.value.code == "invalid_json"


def test_brackets_inside_strings_and_escaped_quotes_do_not_count() -> None:
    text = json.dumps({"text": '[[[[{{{{ \\" ]]]] " [[[', "list": [1, [2]]})

    assert nesting_depth(text) == 3
    assert parse_json(text)["list"] == [1, [2]]


@pytest.mark.parametrize("text", ["[" * 100_000, '{"a":' * 100_000, "[" * 50_000 + "]" * 50_000])
def test_thousands_deep_never_reaches_the_json_parser(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def parser_must_not_run(*_: Any, **__: Any) -> Any:
        raise AssertionError("json.loads saw a document over the depth limit")

    monkeypatch.setattr(json, "loads", parser_must_not_run)  # the module body.py parses with

    with pytest.raises(InvalidBody) as refused:
        parse_json(text, limit=1024 * 1024)
    assert refused.value.code == "invalid_json"


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b'{"name": "\xff"}', "invalid_encoding"),
        (b'{"name": "\xed\xa0\x80"}', "invalid_encoding"),  # a surrogate encoded as UTF-8
        ('{"name": "\\ud800"}', "invalid_encoding"),  # a lone surrogate escape
        ("NaN", "invalid_json"),
        ('{"limit": Infinity}', "invalid_json"),
        ('{"name": "a\x01b"}', "invalid_json"),  # a raw control character inside a string
        ("{nope", "invalid_json"),
        ("1" * 5000, "invalid_json"),  # over Python's integer digit limit
    ],
)
def test_what_is_not_strict_utf8_json_is_refused(raw: bytes | str, code: str) -> None:
    with pytest.raises(InvalidBody) as refused:
        parse_json(raw)
    assert refused.value.code == code
    assert isinstance(refused.value, ValueError)  # providers keep their own code for malformed bodies


def test_a_pair_of_surrogate_escapes_is_one_character_and_accepted() -> None:
    assert parse_json('{"text": "\\ud83d\\ude00"}') == {"text": "😀"}


def test_a_body_over_the_limit_is_payload_too_large_before_parsing() -> None:
    with pytest.raises(PayloadTooLarge):
        parse_json(b"[" + b"1," * 200_000 + b"1]", limit=256 * 1024)
