"""Whether a send fits its template's definition, on the definitions as the Graph API lists them
(Meta's documented examples, tests/contracts/meta): every problem in words, before anything is
queued."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from switchboard.providers.content import Template, TemplateComponent, TemplateParameter
from switchboard.templates.domain import TemplateDefinition, placeholders, problems, summary

CONTRACTS = Path(__file__).parent.parent / "contracts" / "meta"
LISTED = {
    t["name"]: TemplateDefinition.model_validate(t)
    for t in json.loads((CONTRACTS / "templates_list.json").read_text())["data"]
}
GUIDES = {
    name: TemplateDefinition.model_validate({**t, "status": "APPROVED"})
    for name, t in json.loads((CONTRACTS / "templates_pywa_examples.json").read_text()).items()
}


def texts(*values: str, part: str = "body") -> TemplateComponent:
    return TemplateComponent(type=part, parameters=[TemplateParameter(type="text", text=v) for v in values])


def button(index: int, sub_type: str, kind: str, **value: Any) -> TemplateComponent:
    return TemplateComponent(
        type="button",
        sub_type=sub_type,
        index=index,
        parameters=[TemplateParameter(type=kind, **value)],
    )


def send(definition: TemplateDefinition, *components: TemplateComponent) -> list[str]:
    return problems(
        definition, Template(name=definition.name, language=definition.language, components=list(components))
    )


def test_hello_world_takes_nothing_and_refuses_a_parameter() -> None:
    hello = LISTED["hello_world"]

    assert send(hello) == []
    assert send(hello, texts("x")) == ["the body takes no parameters, got 1"]


@given(st.lists(st.text(min_size=1, max_size=20), max_size=6))
def test_april_promo_takes_exactly_its_two_body_placeholders(values: list[str]) -> None:
    found = send(LISTED["2023_april_promo"], texts(*values))

    assert found == ([] if len(values) == 2 else [f"the body takes 2 parameters, got {len(values)}"])


def test_a_quick_reply_payload_is_optional_and_fits_its_button() -> None:
    promo = LISTED["2023_april_promo"]
    body = texts("Mark", "FALL25")

    assert send(promo, body, button(0, "quick_reply", "payload", payload="stop")) == []
    assert send(promo, body, button(0, "url", "text", text="x")) == [
        "button 0 (QUICK_REPLY) takes subType quick_reply with one payload, got text"
    ]
    assert send(promo, body, button(3, "quick_reply", "payload", payload="x")) == ["the template has no button 3"]


def test_a_text_header_with_a_placeholder_takes_it_and_every_problem_is_told_at_once() -> None:
    seasonal = GUIDES["seasonal_promotion"]

    assert send(seasonal, texts("Summer Sale", part="header"), texts("August", "25OFF", "25%")) == []
    assert send(seasonal, texts("August")) == [
        "the header takes 1 parameter, got 0",
        "the body takes 3 parameters, got 1",
    ]


def test_a_document_header_takes_one_document_and_buttons_without_variables_take_nothing() -> None:
    order = GUIDES["order_confirmation"]
    document = TemplateComponent(type="header", parameters=[TemplateParameter(type="document")])

    assert send(order, document, texts("Pablo", "860198-230332")) == []
    assert send(order, texts("Pablo", "860198-230332")) == ["the header takes one document (mediaId or url), got none"]
    assert send(order, document, texts("Pablo", "1"), button(1, "url", "text", text="x")) == [
        "button 1 (URL) takes no parameters"
    ]


def test_a_copy_code_button_needs_its_code_and_unsupported_parts_are_named() -> None:
    coupon = GUIDES["coupon_code_fall2023_25off"]
    body = texts("25OFF", "25%")

    assert send(coupon, body, button(1, "copy_code", "coupon_code", coupon_code="25OFF")) == []
    assert send(coupon, body) == ["button 1 (COPY_CODE) takes one coupon_code (subType copy_code)"]
    assert send(GUIDES["order_delivery_update"], texts("Mark", "566701")) == [
        "a location header is not supported by switchboard"
    ]
    assert "button 0 (CATALOG) is not supported by switchboard" in send(
        GUIDES["intro_catalog_offer"], texts("1", "2", "3")
    )


def test_only_an_approved_template_is_sent() -> None:
    paused = LISTED["hello_world"].model_copy(update={"status": "PAUSED"})

    assert send(paused) == ["the template is PAUSED, not APPROVED"]


def test_named_parameters_are_given_by_name() -> None:
    named = TemplateDefinition(
        name="order_ready",
        language="pt_BR",
        status="APPROVED",
        parameter_format="NAMED",
        components=[{"type": "BODY", "text": "Olá {{first_name}}, seu pedido {{order}} está pronto."}],
    )
    given_names = TemplateComponent(
        type="body",
        parameters=[
            TemplateParameter(type="text", text="123", name="order"),
            TemplateParameter(type="text", text="Ana", name="first_name"),
        ],
    )

    assert send(named, given_names) == []
    assert send(named, texts("Ana", "123")) == [
        "the body's parameters are named first_name, order; give each once as parameterName"
    ]


def test_placeholders_are_read_once_in_order_and_the_summary_says_what_a_send_gives() -> None:
    assert placeholders("{{1}} e {{ 2 }} e de novo {{1}}") == ["1", "2"]
    assert summary(GUIDES["coupon_code_fall2023_25off"]) == {
        "header": {"format": "TEXT", "parameters": []},
        "body": ["1", "2"],
        "buttons": [
            {
                "index": 0,
                "type": "QUICK_REPLY",
                "text": "Unsubscribe",
                "subType": "quick_reply",
                "parameter": "payload",
            },
            {"index": 1, "type": "COPY_CODE", "text": None, "subType": "copy_code", "parameter": "coupon_code"},
        ],
    }
