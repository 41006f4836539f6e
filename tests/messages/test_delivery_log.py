"""The webhook delivery log on moto, through the template's functions: every attempt of a client
webhook recorded (status code, latency, error, next retry), the dead-letter view of deliveries whose
every attempt failed, and replays (same webhook-id, signed anew, audited, refused while the
delivery still retries); from indexes only, and no other tenant's."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

import boto3
import pytest
from standardwebhooks import Webhook

from switchboard import bootstrap
from tools.support.api import Client
from tools.support.aws import REGION, AwsResources
from tools.support.fakes import FakeProvider
from tools.support.hooks import RecordingReceiver
from tools.support.pool import NUMBERS, PoolWorld, build_world

Drain = Callable[[str, str], list[Any]]
RECIPIENTS = ("5511988880001", "5511988880002")


@pytest.fixture
def receiver() -> Iterator[RecordingReceiver]:
    endpoint = RecordingReceiver()
    yield endpoint
    endpoint.stop()


@pytest.fixture
def attempts_at_once(aws: AwsResources, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two attempts per delivery, the retry visible at once (the template's are 8, from 30 s)."""
    monkeypatch.setenv("CLIENT_WEBHOOK_MAX_ATTEMPTS", "2")
    monkeypatch.setenv("CLIENT_WEBHOOK_RETRY_SECONDS", "0")
    bootstrap.reset()


@pytest.fixture
def world(
    client: Client, make_tenant: Any, provider: FakeProvider, receiver: RecordingReceiver, attempts_at_once: None
) -> PoolWorld:
    world = build_world(client, make_tenant("acme"), *NUMBERS)
    world.create_send_key(default_number=NUMBERS[0], webhook_url=receiver.url)
    return world


def signing_secret(world: PoolWorld) -> str:
    answer = world.client.post(f"/api/api-keys/{world.send_key_id}/webhook-secret", key=world.tenant.admin)
    assert answer.status == 201, answer.body
    return str(answer.json()["secret"])


def deliveries(world: PoolWorld, query: str = "", key: str | None = None) -> dict[str, Any]:
    answer = world.client.get(f"/api/webhook-deliveries{query}", key=key or world.tenant.admin)
    assert answer.status == 200, answer.body
    return dict(answer.json())


def send(world: PoolWorld, run_worker: Callable[[], list[Any]], recipient: str = RECIPIENTS[0]) -> str:
    message_id = world.send(recipient)
    run_worker()
    return message_id


def deliver(drain: Drain) -> None:
    drain("ClientWebhookQueue", "ClientWebhooksFunction")


def replay(world: PoolWorld, delivery_id: str, key: str | None = None) -> Any:
    return world.client.post(f"/api/webhook-deliveries/{delivery_id}/replay", key=key or world.tenant.admin)


def in_queues(aws: AwsResources) -> int:
    sqs = boto3.client("sqs", region_name=REGION)
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    total = 0
    for queue in ("ClientWebhookQueue", "ClientWebhookDLQ"):
        attributes = sqs.get_queue_attributes(QueueUrl=aws.queues[queue], AttributeNames=names)["Attributes"]
        total += sum(int(attributes[name]) for name in names)
    return total


def test_each_attempt_is_logged_and_a_retry_that_succeeds_ends_delivered(
    world: PoolWorld,
    run_worker: Callable[[], list[Any]],
    drain: Drain,
    receiver: RecordingReceiver,
    dynamo_calls: list[str],
) -> None:
    receiver.statuses = [503]
    message_id = send(world, run_worker)

    deliver(drain)

    (delivery,) = deliveries(world)["items"]
    assert (delivery["event"], delivery["status"], delivery["statusCode"], delivery["attempts"]) == (
        "message.sent",
        "retrying",
        503,
        1,
    )
    assert delivery["destination"] == {"type": "apiKey", "id": world.send_key_id}
    assert delivery["error"] == "answered 503" and delivery["nextRetryAt"] is not None
    assert delivery["payload"]["data"]["messageId"] == message_id
    refused = replay(world, delivery["id"])
    assert (refused.status, refused.json()["error"]) == (409, "delivery_in_progress")

    deliver(drain)

    after = world.client.get(f"/api/webhook-deliveries/{delivery['id']}", key=world.tenant.admin).json()
    last = (after["status"], after["attempts"], after["statusCode"], after["nextRetryAt"])
    assert last == ("delivered", 2, 204, None)
    history = [(each["outcome"], each["statusCode"]) for each in after["history"]]
    assert history == [("retrying", 503), ("delivered", 204)]
    assert all(each["latencyMs"] >= 0 for each in after["history"])
    assert {headers["webhook-id"] for headers, _ in receiver.requests} == {delivery["id"]}
    assert "scan" not in dynamo_calls


def test_a_delivery_whose_every_attempt_fails_is_a_dead_letter_and_its_replay_arrives_once_signed_anew(
    world: PoolWorld, run_worker: Callable[[], list[Any]], drain: Drain, receiver: RecordingReceiver, aws: AwsResources
) -> None:
    secret = signing_secret(world)
    receiver.statuses = [500, 500]
    send(world, run_worker)
    deliver(drain)
    deliver(drain)

    (dead,) = deliveries(world, "?status=failed")["items"]
    assert (dead["status"], dead["attempts"], dead["error"]) == ("failed", 2, "answered 500")
    assert in_queues(aws) == 0  # the log holds it, not the queue's DLQ
    first_timestamps = [headers["webhook-timestamp"] for headers, _ in receiver.requests]

    answer = replay(world, dead["id"])

    assert answer.status == 202, answer.body
    assert (answer.json()["status"], answer.json()["replays"]) == ("replaying", 1)
    assert deliveries(world, "?status=failed")["items"] == []
    again = replay(world, dead["id"])
    assert (again.status, again.json()["error"]) == (409, "delivery_in_progress")

    deliver(drain)

    assert len(receiver.requests) == 3
    headers, body = receiver.requests[-1]
    assert headers["webhook-id"] == dead["id"]
    Webhook(secret).verify(body, headers)  # raises unless signed with the key's secret
    assert int(headers["webhook-timestamp"]) >= max(int(stamp) for stamp in first_timestamps)
    replayed = world.client.get(f"/api/webhook-deliveries/{dead['id']}", key=world.tenant.admin).json()
    assert (replayed["status"], replayed["attempts"], replayed["replays"]) == ("delivered", 3, 1)
    audit = world.client.get("/api/audit", key=world.tenant.admin).json()
    assert [entry["target"] for entry in audit if entry["action"] == "webhook_delivery.replayed"] == [dead["id"]]


def test_the_dead_letters_of_a_time_range_are_replayed_together(
    world: PoolWorld, run_worker: Callable[[], list[Any]], drain: Drain, receiver: RecordingReceiver
) -> None:
    receiver.statuses = [500] * 4
    for recipient in RECIPIENTS:
        send(world, run_worker, recipient)
    deliver(drain)
    deliver(drain)
    dead = [item["id"] for item in deliveries(world, "?status=failed")["items"]]
    assert len(dead) == 2
    now = datetime.now(UTC)

    future = {"since": (now + timedelta(hours=1)).isoformat(), "until": (now + timedelta(hours=2)).isoformat()}
    nothing = world.client.post("/api/webhook-deliveries/replay", key=world.tenant.admin, json_body=future)
    assert (nothing.status, nothing.json()["replayed"]) == (202, [])
    window = {"since": (now - timedelta(hours=1)).isoformat(), "until": now.isoformat()}
    answer = world.client.post("/api/webhook-deliveries/replay", key=world.tenant.admin, json_body=window)

    assert answer.status == 202, answer.body
    assert sorted(answer.json()["replayed"]) == sorted(dead)
    assert answer.json()["cursor"] is None
    deliver(drain)
    assert sorted(headers["webhook-id"] for headers, _ in receiver.requests[4:]) == sorted(dead)
    assert {item["status"] for item in deliveries(world)["items"]} == {"delivered"}


def test_another_tenant_sees_no_delivery_and_cannot_replay_or_read_one(
    world: PoolWorld, run_worker: Callable[[], list[Any]], drain: Drain, make_tenant: Any
) -> None:
    send(world, run_worker)
    deliver(drain)
    (delivery,) = deliveries(world)["items"]
    cursor_page = deliveries(world, "?limit=1")
    other = make_tenant("globex")

    assert deliveries(world, key=other.admin)["items"] == []
    assert world.client.get(f"/api/webhook-deliveries/{delivery['id']}", key=other.admin).status == 404
    assert replay(world, delivery["id"], key=other.admin).status == 404
    if cursor_page["cursor"]:
        foreign = world.client.get(f"/api/webhook-deliveries?cursor={cursor_page['cursor']}", key=other.admin)
        assert foreign.status == 400
    assert world.client.get("/api/webhook-deliveries", key=world.send_key).status == 403


@pytest.mark.parametrize("query", ["?status=lost", "?cursor=not-a-cursor", "?limit=0", "?limit=101"])
def test_bad_filters_are_a_4xx(world: PoolWorld, query: str) -> None:
    answer = world.client.get(f"/api/webhook-deliveries{query}", key=world.tenant.admin)

    assert answer.status in (400, 422), answer.body


@pytest.mark.parametrize(
    ("times", "statuses"),
    [
        # A time without its offset is UTC, as everywhere in the API, beside one with it.
        ({"since": "2026-01-01T00:00:00", "until": "2026-01-02T00:00:00Z"}, (202, 200, 200)),
        # Times whose UTC falls before year 1 or after year 9999: the client's mistake.
        ({"since": "0001-01-01T00:00:00+01:00", "until": "2026-01-02T00:00:00Z"}, (422, 422, 422)),
        ({"since": "2026-01-01T00:00:00Z", "until": "9999-12-31T23:59:59-01:00"}, (422, 422, 422)),
    ],
)
def test_times_without_an_offset_or_out_of_range_are_never_a_server_error(
    world: PoolWorld, times: dict[str, str], statuses: tuple[int, int, int]
) -> None:
    replayed = world.client.post("/api/webhook-deliveries/replay", key=world.tenant.admin, json_body=times)
    query = "?" + urlencode(times)
    listed = world.client.get(f"/api/webhook-deliveries{query}", key=world.tenant.admin)
    logged = world.client.get(f"/api/messages{query}", key=world.tenant.admin)

    assert (replayed.status, listed.status, logged.status) == statuses, replayed.body


def test_the_delivery_item_keeps_its_stored_names(
    world: PoolWorld, run_worker: Callable[[], list[Any]], drain: Drain
) -> None:
    send(world, run_worker)
    deliver(drain)
    (delivery,) = deliveries(world)["items"]

    item = bootstrap.table().get_item(Key={"pk": f"WHDELIVERY#acme#{delivery['id']}", "sk": "#META"})["Item"]

    assert {name for name in item if not name.startswith("gsi")} >= {
        "tenant",
        "id",
        "event",
        "api_key_id",
        "job",
        "status",
        "attempts",
        "status_code",
        "latency_ms",
        "created_at",
        "updated_at",
        "delivered_at",
        "history",
        "expiresAt",
    }
    assert (item["gsi1pk"], item["gsi1sk"].endswith(f"#{delivery['id']}")) == ("WHDELIVERIES#acme", True)
    assert "gsi2pk" not in item
    assert int(item["expiresAt"]) > int((datetime.now(UTC) + timedelta(days=29)).timestamp())
