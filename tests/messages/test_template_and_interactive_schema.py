"""The send API's `template`, `interactive` and `fallbackTemplate`: Meta's limits for buttons and
lists, each template parameter with the fields of its type, one content at a time; a refusal is a
422 naming the rule, before anything else runs."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from switchboard.messages.schemas import SendMessage
from switchboard.providers.content import Interactive, Template, TemplateComponent, TemplateParameter

TO = "+5511988880001"
TEMPLATE = {"name": "2023_april_promo", "language": "en_US"}


def body(**content: Any) -> dict[str, Any]:
    return {"to": TO, **content}


def buttons(count: int, title_length: int = 5) -> dict[str, Any]:
    return {
        "type": "buttons",
        "body": "Confirma?",
        "buttons": [{"id": f"b{n}", "title": f"{n}" * title_length} for n in range(count)],
    }


@given(count=st.integers(min_value=0, max_value=6), length=st.integers(min_value=1, max_value=30))
def test_reply_buttons_are_one_to_three_with_titles_of_at_most_20_characters(count: int, length: int) -> None:
    valid = 1 <= count <= 3 and length <= 20
    if valid:
        content, _ = SendMessage.model_validate(body(interactive=buttons(count, length))).content()
        assert isinstance(content, Interactive) and [o.id for o in content.options()] == [f"b{n}" for n in range(count)]
    else:
        with pytest.raises(ValidationError):
            SendMessage.model_validate(body(interactive=buttons(count, length)))


@given(st.lists(st.integers(min_value=1, max_value=6), min_size=1, max_size=4))
def test_a_list_holds_at_most_ten_rows_in_all_its_sections(sizes: list[int]) -> None:
    sections = [
        {"title": f"S{s}", "rows": [{"id": f"{s}-{r}", "title": f"row {r}"} for r in range(size)]}
        for s, size in enumerate(sizes)
    ]
    listed = body(interactive={"type": "list", "body": "Qual?", "button": "Ver", "sections": sections})

    if sum(sizes) <= 10:
        content, _ = SendMessage.model_validate(listed).content()
        assert isinstance(content, Interactive) and len(content.options()) == sum(sizes)
    else:
        with pytest.raises(ValidationError, match="at most 10 rows"):
            SendMessage.model_validate(listed)


@pytest.mark.parametrize(
    ("interactive", "why"),
    [
        ({"type": "list", "body": "x", "sections": [{"rows": [{"id": "a", "title": "A"}]}]}, "button and sections"),
        ({"type": "buttons", "body": "x", "button": "Ver", "buttons": [{"id": "a", "title": "A"}]}, "no button or"),
        (
            {
                "type": "list",
                "body": "x",
                "button": "Ver",
                "sections": [{"rows": [{"id": "a", "title": "A"}]}, {"rows": [{"id": "b", "title": "B"}]}],
            },
            "takes a title",
        ),
        ({"type": "buttons", "body": "x", "buttons": [{"id": "a", "title": "A"}, {"id": "a", "title": "B"}]}, "unique"),
        ({"type": "buttons", "body": "x", "buttons": [{"id": "a", "title": "A"}, {"id": "b", "title": "A"}]}, "unique"),
        ({"type": "buttons", "body": "x" * 1025, "buttons": [{"id": "a", "title": "A"}]}, "1024"),
        ({"type": "buttons", "body": "x", "footer": "f" * 61, "buttons": [{"id": "a", "title": "A"}]}, "60"),
        (
            {
                "type": "list",
                "body": "x",
                "button": "Ver",
                "sections": [{"rows": [{"id": "a", "title": "A", "description": "d" * 73}]}],
            },
            "72",
        ),
    ],
)
def test_an_interactive_message_out_of_metas_limits_is_refused_naming_why(
    interactive: dict[str, Any], why: str
) -> None:
    with pytest.raises(ValidationError, match=why):
        SendMessage.model_validate(body(interactive=interactive))


@pytest.mark.parametrize(
    ("header", "why"),
    [
        ({"type": "image", "mediaId": "med_0123456789abcdef"}, None),
        ({"type": "video", "url": "https://x.test/v.mp4"}, None),
        ({"type": "document", "mediaId": "med_0123456789abcdef", "fileName": "menu.pdf"}, None),
        ({"type": "image", "mediaId": "med_0123456789abcdef", "url": "https://x.test/a.png"}, "exactly one"),
        ({"type": "image"}, "exactly one"),
        ({"type": "image", "url": "https://x.test/a.png", "fileName": "a.png"}, "only a document"),
        ({"type": "audio", "mediaId": "med_0123456789abcdef"}, "image"),
        ({"type": "image", "url": "http://x.test/a.png"}, "https"),
    ],
)
def test_reply_buttons_take_a_file_header_by_media_id_or_url(header: dict[str, Any], why: str | None) -> None:
    sent = body(interactive={**buttons(2), "header": header})
    if why is not None:
        with pytest.raises(ValidationError, match=why):
            SendMessage.model_validate(sent)
        return

    content, source = SendMessage.model_validate(sent).content()

    assert isinstance(content, Interactive) and content.header is None
    assert content.header_media is not None and content.header_media.kind == header["type"]
    assert content.header_media.file_name == header.get("fileName")
    assert source is not None and (source.media_id, source.url) == (header.get("mediaId"), header.get("url"))


def test_a_lists_header_is_text_only_and_a_text_header_has_no_file() -> None:
    listed = {
        "type": "list",
        "body": "Qual?",
        "button": "Ver",
        "header": {"type": "image", "mediaId": "med_0123456789abcdef"},
        "sections": [{"rows": [{"id": "a", "title": "A"}]}],
    }
    with pytest.raises(ValidationError, match="text only"):
        SendMessage.model_validate(body(interactive=listed))

    content, source = SendMessage.model_validate(body(interactive={**listed, "header": "Agenda"})).content()
    assert isinstance(content, Interactive) and (content.header, content.header_media, source) == ("Agenda", None, None)


@pytest.mark.parametrize(
    ("parameter", "valid"),
    [
        ({"type": "text", "text": "Mark"}, True),
        ({"type": "text", "text": "Ana", "parameterName": "first_name"}, True),
        ({"type": "text", "payload": "x"}, False),
        ({"type": "payload", "payload": "stop"}, True),
        ({"type": "couponCode", "couponCode": "x"}, False),
        ({"type": "coupon_code", "couponCode": "25OFF"}, True),
        ({"type": "image", "mediaId": "med_0123456789abcdef"}, True),
        ({"type": "document", "url": "https://x.test/r.pdf", "fileName": "r.pdf"}, True),
        ({"type": "image", "mediaId": "med_0123456789abcdef", "url": "https://x.test/a.png"}, False),
        ({"type": "image", "url": "https://x.test/a.png", "fileName": "a.png"}, False),
        ({"type": "payload", "payload": "x", "parameterName": "p"}, False),
    ],
)
def test_each_template_parameter_takes_the_fields_of_its_type(parameter: dict[str, Any], valid: bool) -> None:
    part = "header" if parameter["type"] in ("image", "document") else "body"
    template = {**TEMPLATE, "components": [{"type": part, "parameters": [parameter]}]}
    if valid:
        SendMessage.model_validate(body(template=template))
    else:
        with pytest.raises(ValidationError):
            SendMessage.model_validate(body(template=template))


def test_a_template_becomes_its_content_and_a_header_file_its_source() -> None:
    template = {
        **TEMPLATE,
        "components": [
            {
                "type": "header",
                "parameters": [{"type": "document", "mediaId": "med_0123456789abcdef", "fileName": "r.pdf"}],
            },
            {"type": "body", "parameters": [{"type": "text", "text": "Mark"}]},
            {
                "type": "button",
                "subType": "quick_reply",
                "index": 0,
                "parameters": [{"type": "payload", "payload": "stop"}],
            },
        ],
    }

    content, source = SendMessage.model_validate(body(template=template)).content()

    assert isinstance(content, Template) and source is not None and source.media_id == "med_0123456789abcdef"
    assert content.header_media() is not None and content.header_media().file_name == "r.pdf"  # type: ignore[union-attr]
    assert content.components[2] == TemplateComponent(
        type="button", sub_type="quick_reply", index=0, parameters=[TemplateParameter(type="payload", payload="stop")]
    )


@pytest.mark.parametrize(
    ("components", "why"),
    [
        ([{"type": "button", "parameters": []}], "subType and index"),
        ([{"type": "body", "subType": "url", "parameters": []}], "no subType"),
        ([{"type": "body"}, {"type": "body"}], "at most one body"),
        (
            [{"type": "button", "subType": "url", "index": 1}, {"type": "button", "subType": "url", "index": 1}],
            "given once",
        ),
        ([{"type": "body", "parameters": [{"type": "image", "mediaId": "med_0123456789abcdef"}]}], "header component"),
    ],
)
def test_template_components_follow_metas_shape(components: list[dict[str, Any]], why: str) -> None:
    with pytest.raises(ValidationError, match=why):
        SendMessage.model_validate(body(template={**TEMPLATE, "components": components}))


def test_a_fallback_template_goes_with_free_form_content_only_and_one_content_at_a_time() -> None:
    fallback = SendMessage.model_validate(
        body(text="oi", fallbackTemplate={"name": "hello_world", "language": "en_US"})
    )

    assert fallback.fallback() == (Template(name="hello_world", language="en_US"), None)
    with pytest.raises(ValidationError, match="fallbackTemplate replaces free-form content"):
        SendMessage.model_validate(body(template=TEMPLATE, fallbackTemplate=TEMPLATE))
    with pytest.raises(ValidationError, match="fallbackTemplate replaces free-form content"):
        SendMessage.model_validate(body(reaction={"messageId": "m", "emoji": "👍"}, fallbackTemplate=TEMPLATE))
    with pytest.raises(ValidationError, match="exactly one of"):
        SendMessage.model_validate(body(text="oi", interactive=buttons(1)))
