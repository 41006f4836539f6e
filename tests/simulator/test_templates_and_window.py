"""The simulator's Meta server keeps each business account's templates and answers their list, and
enforces the customer-service window as Meta does (accepted, then a `failed` status with 131047);
a tap on a button or a row is posted as each server posts it; Evolution's `sendList` checks what
its schema requires. Through switchboard's own clients and webhook mapping."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from devstack.simulator import SimulatorControl
from switchboard.core.errors import ProviderRejected
from switchboard.providers import evolution, meta
from switchboard.providers.base import WebhookRequest
from switchboard.providers.content import (
    Choice,
    Interactive,
    Option,
    Section,
    Template,
    TemplateComponent,
    TemplateParameter,
    content_from,
)
from tests.simulator.conftest import FlavourFactory, WebhookReceiver

PEER = "5511988887777"
STRANGER = "5511955554444"
LIST = Interactive(
    kind="list", body="Qual?", button="Ver", sections=[Section(title="Hoje", rows=[Option(id="r1", title="Um")])]
)


def client() -> meta.MetaCloudClient:
    return meta.MetaCloudClient(local_mode=True)


def test_the_template_list_answers_the_accounts_templates_page_by_page_to_its_numbers_token(
    make_flavoured: FlavourFactory,
) -> None:
    number = make_flavoured("meta", subscribed=False, wabaId="102290129340398")
    other = make_flavoured("meta", subscribed=False, wabaId="999")

    templates = client().list_templates(number.target(), "102290129340398")

    assert {t["name"] for t in templates} >= {"hello_world", "2023_april_promo", "seasonal_promotion"}
    assert all(t["status"] == "APPROVED" and t["components"] for t in templates)
    paged = httpx.get(
        f"{number.base_url}/v25.0/102290129340398/message_templates",
        params={"limit": 1, "fields": "name"},
        headers={"Authorization": f"Bearer {number.token}"},
    ).json()
    assert len(paged["data"]) == 1 and set(paged["data"][0]) == {"name"} and "next" in paged["paging"]
    refused = httpx.get(
        f"{other.base_url}/v25.0/102290129340398/message_templates", headers={"Authorization": f"Bearer {other.token}"}
    )
    assert (refused.status_code, refused.json()["error"]["code"]) == (400, 100)


def test_outside_the_window_meta_accepts_then_fails_the_message_with_131047_but_a_template_is_delivered(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    number = make_flavoured("meta", window_with=())
    control.open_window(number.id, PEER, at=time.time() - 25 * 3600)

    text = client().send_text(number.target(), STRANGER, "oi", "k1")
    late = client().send_content(number.target(), PEER, LIST, "k2")
    template = client().send_content(number.target(), STRANGER, Template(name="hello_world", language="en_US"), "k3")

    assert [m["id"] for m in control.sent() if m["instance"] == number.id] == [template.provider_message_id]
    assert {m["id"] for m in control.refused()} == {text.provider_message_id, late.provider_message_id}
    failures = receiver.wait_for(number.id, 2)
    events = [event for item in failures for event in meta.map_events(item.body)]
    assert {(e.data["id"], e.data["status"], e.data.get("reason")) for e in events} == {
        (text.provider_message_id, "failed", "outside_service_window"),
        (late.provider_message_id, "failed", "outside_service_window"),
    }


def test_a_send_meta_accepted_within_its_window_can_still_fail_for_it_later_on_request(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    number = make_flavoured("meta", window_with=(PEER,))
    sent = client().send_text(number.target(), PEER, "oi", "k1")

    control.receipt(number.id, sent.provider_message_id, "failed", outside_window=True)

    [failure] = receiver.wait_for(number.id, 1)
    [event] = meta.map_events(failure.body)
    assert (event.data["id"], event.data["reason"]) == (sent.provider_message_id, "outside_service_window")
    assert event.data["errors"][0]["code"] == 131047


def test_a_template_is_refused_as_meta_refuses_it(make_flavoured: FlavourFactory, control: SimulatorControl) -> None:
    number = make_flavoured("meta", subscribed=False, wabaId="777")
    short = Template(
        name="2023_april_promo",
        language="en_US",
        components=[TemplateComponent(type="body", parameters=[TemplateParameter(type="text", text="Mark")])],
    )
    control.set_template("777", name="hello_world", language="en_US", status="PAUSED")

    codes = []
    for template in (short, Template(name="no_such", language="en_US"), Template(name="hello_world", language="en_US")):
        try:
            client().send_content(number.target(), PEER, template, "k")
        except ProviderRejected as refused:
            codes.append(refused.provider_code)

    assert codes == ["132000", "132001", "132015"]


def test_a_status_change_posts_the_accounts_template_webhook(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    number = make_flavoured("meta", wabaId="888")

    control.set_template("888", name="order_ready", language="pt_BR", status="APPROVED", category="UTILITY")

    [delivery] = receiver.wait_for(number.id, 1)
    [event] = meta.map_events(delivery.body)
    assert (event.name, event.binding, event.data["name"], event.data["status"]) == (
        "template_status",
        "888",
        "order_ready",
        "APPROVED",
    )


def test_a_tap_on_a_row_is_posted_as_meta_and_evolution_post_it(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    cloud = make_flavoured("meta")
    evo = make_flavoured("evolution")
    sent = client().send_content(cloud.target(), PEER, LIST, "k1")
    listed = evolution.EvolutionClient(local_mode=True).send_content(evo.target(), PEER, LIST, "k2")
    [evo_sent] = [m for m in control.sent() if m["instance"] == evo.id]
    assert json.loads(evo_sent["body"])["sections"] == [{"title": "Hoje", "rows": [{"title": "Um", "rowId": "r1"}]}]

    control.incoming_choice(cloud.id, PEER, "r1", "Um")
    control.incoming_choice(evo.id, PEER, "r1", "Um")

    [cloud_tap] = [i for i in receiver.wait_for(cloud.id, 1) if b"list_reply" in i.body]
    [message] = meta.map_events(cloud_tap.body)
    assert content_from(message.data) == Choice(source="list", id="r1", title="Um")
    assert message.data["replyTo"] == sent.provider_message_id
    [evo_tap] = [i for i in receiver.wait_for(evo.id, 1) if b"listResponseMessage" in i.body]
    request = WebhookRequest(headers={k.lower(): v for k, v in evo_tap.headers.items()}, body=evo_tap.body)
    [mapped] = evolution.KIND.events(request, "evolution-jwt")
    assert content_from(mapped.data) == Choice(source="list", id="r1", title="Um")
    assert mapped.data["replyTo"] == listed.provider_message_id
    wuzapi = make_flavoured("wuzapi")
    with pytest.raises(httpx.HTTPStatusError) as refused:  # its users answer a text menu by number
        control.incoming_choice(wuzapi.id, PEER, "r1", "Um")
    assert refused.value.response.json()["error"] == "not_native"
