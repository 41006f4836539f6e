"""A status change reaches the client webhook through the bus: the template's rule takes exactly
the changes that have a client webhook, the queue lets only that rule send, and the
client-webhooks function turns the EventBridge envelope into the same signed webhook as before,
one `webhook-id` per (message, status) so a second delivery of the event is recognisable."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from devstack import eventbridge, template
from switchboard.core.bus import MESSAGE_STATUS_CHANGED, SOURCE
from switchboard.messages.client_webhooks import (
    EVENT_FOR_STATUS,
    ClientWebhookDeliverer,
    ClientWebhookWorker,
    status_webhook_id,
)
from switchboard.messages.domain import ClientWebhookJob, Message, MessageStatus, client_event_data
from switchboard.messages.status_events import StatusChanges, status_detail
from tools.support.fakes import FakeAudit, FakeKeys, FakeSecrets

AT = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
URL = "https://hooks.example/switchboard"


def message(status: MessageStatus = MessageStatus.SENT, **changes: Any) -> Message:
    fields: dict[str, Any] = {
        "tenant": "acme",
        "id": "msg_1",
        "api_key_id": "key_1",
        "to": "5521900000001",
        "text": "hi",
        "body_hash": "h",
        "status": status,
        "source_number": "5511977770001",
        "sent_at": AT if status in (MessageStatus.SENT, MessageStatus.DELIVERED, MessageStatus.READ) else None,
        "updated_at": AT + timedelta(seconds=1),
        **changes,
    }
    return Message(**fields)


def envelope(detail: dict[str, Any], event_id: str = "ev-1") -> str:
    """What EventBridge puts on the queue (devstack's envelope, the one the local stack sends)."""
    entry = {"Source": SOURCE, "DetailType": MESSAGE_STATUS_CHANGED, "Detail": json.dumps(detail)}
    event = eventbridge.event_envelope(entry, event_id, "us-east-1", account="123456789012")
    return json.dumps(event)


class Poster:
    def __init__(self) -> None:
        self.posts: list[tuple[str, dict[str, Any], dict[str, str]]] = []

    def post(self, url: str, body: bytes, headers: dict[str, str]) -> int:
        self.posts.append((url, json.loads(body), headers))
        return 204


class Backoff:
    def delay(self, receipt_handle: str, seconds: int) -> None:
        raise AssertionError("no retry expected")


def worker(poster: Poster) -> ClientWebhookWorker:
    secrets = FakeSecrets(default=lambda name: "whsec_" + "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE=")
    deliverer = ClientWebhookDeliverer(FakeKeys(URL), secrets, poster, FakeAudit(), local_mode=False)
    return ClientWebhookWorker(deliverer, Backoff())


# --- the rule of the template ------------------------------------------------------------------


def rule() -> eventbridge.Rule:
    (found,) = [r for r in eventbridge.queue_rules({"EventBus": "bus"}, template.LocalNames()) if r.queue]
    return found


def test_the_rule_takes_the_statuses_with_a_client_event_only_when_the_key_has_a_webhook() -> None:
    found = rule()
    assert (found.queue, found.dead_letter, found.bus) == ("ClientWebhookQueue", "ClientWebhookDLQ", "bus")
    assert set(found.pattern["detail"]["status"]) == {status.value for status in EVENT_FOR_STATUS}

    def routed(change: Message, *, client_webhook: bool) -> bool:
        entry = {
            "Source": SOURCE,
            "DetailType": MESSAGE_STATUS_CHANGED,
            "Detail": json.dumps(status_detail(change, client_webhook=client_webhook)),
        }
        event = eventbridge.event_envelope(entry, "ev", "us-east-1")
        assert event is not None
        return bool(eventbridge.routed([found], "bus", event))

    for status in MessageStatus:
        assert routed(message(status), client_webhook=True) is (status in EVENT_FOR_STATUS), status
        assert routed(message(status), client_webhook=False) is False, status


def test_only_the_rule_may_send_to_the_queue_and_its_dead_letter_queue() -> None:
    (policy,) = template.resources("AWS::SQS::QueuePolicy").values()
    assert [template.ref_target(queue) for queue in policy["Queues"]] == ["ClientWebhookQueue", "ClientWebhookDLQ"]
    statements = policy["PolicyDocument"]["Statement"]
    assert {template.ref_target(s["Resource"]) for s in statements} == {"ClientWebhookQueue", "ClientWebhookDLQ"}
    for statement in statements:
        assert (statement["Effect"], statement["Principal"], statement["Action"]) == (
            "Allow",
            {"Service": "events.amazonaws.com"},
            "sqs:SendMessage",
        )
        source = statement["Condition"]["ArnEquals"]["aws:SourceArn"]
        assert template.ref_target(source) == "ClientWebhookStatusRule"


def test_the_writers_publish_once_and_never_the_url() -> None:
    published: list[tuple[str, dict[str, Any]]] = []

    class Publisher:
        def publish(self, detail_type: str, detail: dict[str, Any]) -> bool:
            published.append((detail_type, detail))
            return True

    StatusChanges(Publisher()).message_changed(message(), URL)
    StatusChanges(Publisher()).message_changed(message(), None)

    assert [(kind, detail["clientWebhook"]) for kind, detail in published] == [
        (MESSAGE_STATUS_CHANGED, True),
        (MESSAGE_STATUS_CHANGED, False),
    ]
    assert URL not in json.dumps(published)


# --- the client-webhooks function ----------------------------------------------------------------


def test_an_envelope_becomes_the_webhook_the_queued_job_was() -> None:
    sent = message()
    poster = Poster()

    assert worker(poster).handle(envelope(status_detail(sent, client_webhook=True)), "rh", 1) is True

    [(url, body, headers)] = poster.posts
    assert url == URL
    assert body == {"event": "message.sent", "timestamp": sent.updated_at.isoformat(), "data": client_event_data(sent)}
    assert headers["webhook-id"] == status_webhook_id(sent.id, MessageStatus.SENT)


def test_a_second_delivery_of_the_event_carries_the_same_webhook_id_and_another_status_another() -> None:
    sent = message()
    delivered = message(MessageStatus.DELIVERED)
    poster = Poster()
    handler = worker(poster)

    for event_id in ("ev-1", "ev-1", "ev-2"):  # at least once: the same event twice, then the next change
        detail = status_detail(sent if event_id != "ev-2" else delivered, client_webhook=True)
        handler.handle(envelope(detail, event_id), "rh", 1)

    ids = [headers["webhook-id"] for _, _, headers in poster.posts]
    assert ids[0] == ids[1] != ids[2]
    assert ids[0].startswith("whk_") and len(ids[0]) == len("whk_") + 20


@pytest.mark.parametrize(
    "change",
    [
        message(MessageStatus.WAITING, expires_at=AT + timedelta(minutes=10)),
        message(MessageStatus.FAILED, failure_reason="no_number", source_number=None),
        message(MessageStatus.READ),
    ],
)
def test_the_body_is_the_one_the_message_as_changed_gives_and_nothing_is_read_but_the_key(change: Message) -> None:
    poster = Poster()

    worker(poster).handle(envelope(status_detail(change, client_webhook=True)), "rh", 1)

    [(_, body, _)] = poster.posts
    assert body == {
        "event": EVENT_FOR_STATUS[change.status],
        "timestamp": change.updated_at.isoformat(),
        "data": client_event_data(change),
    }


@pytest.mark.parametrize(
    "body",
    [
        envelope(status_detail(message(MessageStatus.QUEUED), client_webhook=True)),  # no client event
        envelope({"tenant": "acme"}),  # not a status change
        "not json",
    ],
)
def test_what_has_no_webhook_is_dropped_without_a_post(body: str) -> None:
    poster = Poster()
    assert worker(poster).handle(body, "rh", 1) is False
    assert poster.posts == []


def test_a_queued_job_is_still_delivered_as_it_was() -> None:
    job = ClientWebhookJob(
        id="whk_1", tenant="acme", api_key_id="key_1", event="message.sent", timestamp=AT, data={"messageId": "msg_1"}
    )
    poster = Poster()

    assert worker(poster).handle(job.model_dump_json(), "rh", 1) is True
    assert [headers["webhook-id"] for _, _, headers in poster.posts] == ["whk_1"]
