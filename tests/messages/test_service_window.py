"""The customer-service window in the send worker: a Cloud API number sends free-form content only
within 24 h of the recipient's last message to it (the heard marks on the affinity item), the pool
moves on to a number that may send it, a fallback template leaves through the Cloud API number
instead, a template leaves whatever the window, and Meta's 131047 ends the message the same way,
never retried. Each through the kinds' real clients over a recording transport."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from switchboard.core.clock import utcnow
from switchboard.messages.domain import Message, MessageStatus, PendingRoute, SendJob, SentAs
from switchboard.messages.window import SERVICE_WINDOW, WindowGate, window_of
from switchboard.pool.domain import Affinity
from switchboard.providers.content import Interactive, Option, Template, TemplateComponent, TemplateParameter, Text
from tests.messages.test_send_content import NUMBERS, RECIPIENT, World

WUZAPI, META = NUMBERS[0], NUMBERS[2]
HELLO = Template(name="hello_world", language="en_US")
NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)
CONTENTS = st.sampled_from(
    [
        None,
        Text(body="oi"),
        Interactive(kind="buttons", body="ok?", buttons=[Option(id="y", title="Sim")]),
        HELLO,
    ]
)


@given(
    age=st.one_of(st.none(), st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=3))),
    kind=st.sampled_from(["wuzapi", "evolution", "meta"]),
    content=CONTENTS,
)
def test_only_free_form_content_on_a_cloud_number_meets_a_window_and_it_is_open_for_24_hours(
    age: timedelta | None, kind: str, content: Text | Interactive | Template | None
) -> None:
    affinity = Affinity(heard={} if age is None else {"num_1": NOW - age})
    gate = WindowGate(affinity, NOW)

    closed = gate.closed("num_1", kind, content)

    bound = kind == "meta" and not isinstance(content, Template)
    open_ = age is not None and age < SERVICE_WINDOW
    assert (closed is not None) == (bound and not open_)
    assert (gate.open_window("num_1", kind, content) is not None) == (bound and open_)
    if closed is not None:
        assert closed.last_heard_at == (None if age is None else NOW - age)


def test_a_window_is_the_numbers_own() -> None:
    affinity = Affinity(heard={"num_a": NOW})

    assert window_of(affinity, "num_a").open_until == NOW + timedelta(hours=24)
    assert window_of(affinity, "num_b").last_heard_at is None
    assert window_of(None, "num_a").is_open(NOW) is False


def never_wrote(world: World) -> None:
    world.messages.affinities.pop(("acme", RECIPIENT), None)


def test_free_form_to_a_contact_who_never_wrote_skips_the_cloud_number_and_nothing_reaches_meta() -> None:
    world = World()
    never_wrote(world)
    world.config = world.config.model_copy(update={"pool": [WUZAPI, META]})
    world.recorder.down = {"wuzapi.example.test"}

    sent = world.send(Text(body="sua fatura"))

    assert (sent.status, sent.failure_reason) == (MessageStatus.FAILED, "outside_service_window")
    assert world.bodies("meta") == []
    [skipped] = [e.data for e in sent.trace if e.stage == "pool.instance.skipped" and e.data["number"] == META.digits]
    assert (skipped["number"], skipped["lastHeardAt"], skipped["windowOpenUntil"]) == (META.digits, None, None)


def test_outside_the_window_the_next_number_that_may_send_it_does() -> None:
    world = World()
    never_wrote(world)
    world.config = world.config.model_copy(update={"pool": [META, WUZAPI]})

    sent = world.send(Text(body="oi"))

    assert (sent.status, sent.source_number) == (MessageStatus.SENT, WUZAPI.digits)
    assert world.bodies("meta") == []


def test_a_fallback_template_leaves_through_the_cloud_number_and_is_traced() -> None:
    world = World()
    never_wrote(world)
    world.config = world.config.model_copy(update={"pool": [WUZAPI, META]})
    world.recorder.down = {"wuzapi.example.test"}

    sent = world.send(Text(body="sua fatura"), fallback_template=HELLO)

    assert (sent.status, sent.source_number) == (MessageStatus.SENT, META.digits)
    [(path, body)] = world.bodies("meta")
    assert path.endswith("/messages")
    assert json.loads(body)["template"] == {"name": "hello_world", "language": {"code": "en_US"}}
    [traced] = [e.data for e in sent.trace if e.stage == "message.fallback_template"]
    assert (traced["template"], traced["reason"]) == ("hello_world", "outside_service_window")
    assert sent.content == Text(body="sua fatura")  # the message is still what was asked


def test_a_template_leaves_whatever_the_window_and_never_through_an_unofficial_number() -> None:
    world = World()
    never_wrote(world)
    world.config = world.config.model_copy(update={"pool": [WUZAPI, META]})
    template = Template(
        name="2023_april_promo",
        language="en_US",
        components=[
            TemplateComponent(
                type="body",
                parameters=[TemplateParameter(type="text", text="Mark"), TemplateParameter(type="text", text="FALL25")],
            )
        ],
    )

    sent = world.send(template)

    assert (sent.status, sent.source_number) == (MessageStatus.SENT, META.digits)
    assert world.bodies("wuzapi") == []
    assert any(e.data.get("reason") == "template_needs_cloud_api" for e in sent.trace)


def test_within_the_window_free_form_leaves_through_the_cloud_number_and_the_trace_says_until_when() -> None:
    world = World()
    heard = utcnow() - timedelta(hours=23)
    world.messages.affinities[("acme", RECIPIENT)] = Affinity(heard={META.number_id: heard})
    world.config = world.config.model_copy(update={"pool": [META]})

    sent = world.send(Text(body="oi de novo"))

    assert (sent.status, sent.source_number) == (MessageStatus.SENT, META.digits)
    [opened] = [e.data for e in sent.trace if e.stage == "pool.window.open"]
    assert opened["windowOpenUntil"] == (heard + timedelta(hours=24)).isoformat()


REENGAGEMENT = {"error": {"message": "(#131047) Re-engagement message", "type": "OAuthException", "code": 131047}}


@pytest.mark.parametrize("fallback", [None, HELLO])
def test_metas_131047_ends_the_message_outside_the_window_never_retried_unless_a_fallback_takes_over(
    fallback: Template | None,
) -> None:
    world = World()  # the heard marks say the window is open; Meta knows better
    world.config = world.config.model_copy(update={"pool": [META]})
    answered = world.recorder

    def recorder(request: httpx.Request) -> httpx.Response:
        if b'"type":"template"' not in request.content:
            answered.requests.append((request.url.host, request.url.path, request.content))
            return httpx.Response(400, json=REENGAGEMENT)
        return answered(request)

    world.use(recorder)

    sent = world.send(Text(body="oi"), fallback_template=fallback)

    if fallback is None:
        assert (sent.status, sent.failure_reason) == (MessageStatus.FAILED, "outside_service_window")
        [refused] = [e.data for e in sent.trace if e.stage == "pool.instance.skipped"]
        assert (refused["reason"], refused["providerCode"]) == ("outside_service_window", "131047")
        assert len(world.bodies("meta")) == 1  # never retried
    else:
        assert sent.status is MessageStatus.SENT
        assert [json.loads(body)["type"] for _, body in world.bodies("meta")] == ["text", "template"]


def refused_later(world: World, sent: Message) -> SendJob:
    """What the receipt of Meta's late 131047 leaves: the message QUEUED for its fallback, and its job."""
    assert sent.number_id is not None and sent.provider_id is not None
    world.messages.items[sent.id] = sent.model_copy(
        update={"status": MessageStatus.QUEUED, "window_refused_at": utcnow(), "in_flight": None}
    )
    route = PendingRoute(number_id=sent.number_id, instance=sent.instance, provider_id=sent.provider_id)
    return SendJob(message_id=sent.id, tenant="acme", api_key_id="key_1", to=RECIPIENT, template=True, fallback=route)


def test_after_meta_failed_a_text_for_the_window_its_fallback_template_leaves_through_the_same_number() -> None:
    world = World()  # the heard marks say the window is open: the text leaves, Meta fails it later
    world.config = world.config.model_copy(update={"pool": [WUZAPI, META]})
    world.recorder.down = {"wuzapi.example.test"}
    sent = world.send(Text(body="oi"), fallback_template=HELLO)
    assert (sent.status, sent.source_number, sent.sent_as) == (MessageStatus.SENT, META.digits, None)

    world.service.process(refused_later(world, sent), 1)

    after = world.messages.items[sent.id]
    assert (after.status, after.source_number) == (MessageStatus.SENT, META.digits)
    assert after.sent_as == SentAs(name="hello_world", language="en_US")
    assert after.content == Text(body="oi")  # the message stays what was asked
    assert [json.loads(body)["type"] for _, body in world.bodies("meta")] == ["text", "template"]
    [traced] = [e.data for e in after.trace if e.stage == "message.fallback_template"]
    assert (traced["template"], traced["number"], traced["after"]) == ("hello_world", META.digits, "receipt.failed")


def test_a_late_refusal_whose_number_left_the_pool_ends_the_message_outside_the_window() -> None:
    world = World()
    world.config = world.config.model_copy(update={"pool": [META]})
    sent = world.send(Text(body="oi"), fallback_template=HELLO)
    world.config = world.config.model_copy(update={"pool": [WUZAPI]})

    world.service.process(refused_later(world, sent), 1)

    after = world.messages.items[sent.id]
    assert (after.status, after.failure_reason, after.sent_as) == (MessageStatus.FAILED, "outside_service_window", None)
    assert [json.loads(body)["type"] for _, body in world.bodies("meta")] == ["text"]
    assert world.bodies("wuzapi") == []
