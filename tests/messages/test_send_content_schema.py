"""The send API's body: exactly one content, each with its limits, refused with a 422 naming why."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from switchboard.messages.schemas import SendMessage, is_one_grapheme
from switchboard.providers.content import Contacts, Location, MediaMessage, Reaction

TO = "+5511988880001"
ONE_OF_EACH: dict[str, Any] = {
    "text": "hello",
    "media": {"mediaId": "med_0123456789abcdef", "type": "image", "caption": "a photo"},
    "location": {"latitude": -23.55, "longitude": -46.63, "name": "Office"},
    "contacts": [{"name": "Ana", "phones": ["+5511977776666"]}],
    "reaction": {"messageId": "msg_abc", "emoji": "👍"},
}


@given(st.sets(st.sampled_from(sorted(ONE_OF_EACH))))
def test_a_body_is_valid_exactly_when_it_has_one_content(fields: set[str]) -> None:
    body = {"to": TO, **{name: ONE_OF_EACH[name] for name in fields}}
    if len(fields) == 1:
        SendMessage.model_validate(body)
    else:
        with pytest.raises(ValidationError, match="exactly one of"):
            SendMessage.model_validate(body)


@pytest.mark.parametrize(
    "content",
    [
        {"media": {"type": "image"}},  # neither mediaId nor url
        {"media": {"mediaId": "med_0123456789abcdef", "url": "https://x.test/a.png", "type": "image"}},
        {"media": {"url": "http://x.test/a.png", "type": "image"}},  # not https
        {"media": {"mediaId": "med_0123456789abcdef", "type": "image", "caption": "x" * 1025}},
        {"media": {"mediaId": "med_0123456789abcdef", "type": "voice", "caption": "no"}},
        {"media": {"mediaId": "med_0123456789abcdef", "type": "sticker", "caption": "no"}},
        {"media": {"mediaId": "med_0123456789abcdef", "type": "image", "fileName": "a.png"}},
        {"media": {"mediaId": "med_0123456789abcdef", "type": "gif"}},
        {"media": {"mediaId": "not-an-id", "type": "image"}},
        {"location": {"latitude": 91, "longitude": 0}},
        {"location": {"latitude": 0, "longitude": -180.5}},
        {"contacts": []},
        {"contacts": [{"name": "Ana", "phones": []}]},
        {"contacts": [{"name": "Ana", "phones": ["12"]}]},
        {"contacts": [{"name": "A", "phones": ["+5511977776666"]}] * 11},
        {"reaction": {"messageId": "msg_abc", "emoji": "👍👍"}},
        {"reaction": {"messageId": "msg_abc", "emoji": "ok"}},
        {"reaction": {"messageId": "msg_abc", "emoji": "👍"}, "replyTo": "msg_abd"},
        {"text": "   "},
    ],
)
def test_each_wrong_content_is_refused(content: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        SendMessage.model_validate({"to": TO, **content})


@pytest.mark.parametrize("emoji", ["👍", "❤️", "👍🏽", "👨‍👩‍👧", "🇧🇷", "1️⃣", "🏴󠁧󠁢󠁳󠁣󠁴󠁿"])
def test_a_single_emoji_with_its_modifiers_is_one_grapheme(emoji: str) -> None:
    assert is_one_grapheme(emoji)


@pytest.mark.parametrize("value", ["", "ab", "👍👍", "🇧🇷🇵🇹", "👍 "])
def test_two_characters_are_not_one_grapheme(value: str) -> None:
    assert not is_one_grapheme(value)


def test_each_field_becomes_its_content() -> None:
    def content_of(name: str) -> object:
        content, _ = SendMessage.model_validate({"to": TO, name: ONE_OF_EACH[name]}).content()
        return content

    media = content_of("media")
    assert isinstance(media, MediaMessage)
    assert (media.media.kind, media.media.caption) == ("image", "a photo")
    assert isinstance(content_of("location"), Location)
    contacts = content_of("contacts")
    assert isinstance(contacts, Contacts)
    assert contacts.cards[0].phones == ["5511977776666"]
    assert contacts.cards[0].vcard is not None and "waid=5511977776666" in contacts.cards[0].vcard
    assert content_of("reaction") == Reaction(target_id="msg_abc", emoji="👍")
    assert content_of("text") is None  # a plain text stays a text message
    removal = SendMessage.model_validate({"to": TO, "reaction": {"messageId": "m", "emoji": ""}}).content()[0]
    assert removal == Reaction(target_id="m", emoji="")
