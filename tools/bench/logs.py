"""What the operators' view writes: the DynamoDB requests and write units the message log adds per
message (both directions), the webhook delivery log per delivery, and the ignored events' index
per ignored event.

In-process moto, the template's functions run as Lambda runs them and the HTTP API as API Gateway
does (the `workloads` stage). Every write to the main table is watched with its item before and
after it, so each global secondary index's write is counted as DynamoDB bills it: an item that
enters, leaves or changes in an index costs a write of its projected image there (a change of the
index's key, a delete and a put), and a write that changes nothing an index projects costs that
index nothing (the message log's `MessageLog` projects listed attributes, `MessageContact` keys
only). A base write costs the larger of the item before and after, twice in a transaction.

The flows: messages sent through `POST /api/messages` (accepted, sent, then a delivered and a read
receipt); customer messages through the provider webhook and the forwarder to a Chatwoot-style
fake; client webhooks delivered at the first attempt, after one refusal, and after every attempt
failed then replayed; provider events the ingest ignores.

`python -m tools.bench logs`.
"""

from __future__ import annotations

import json
import os
import threading
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.client import BaseClient

from switchboard import bootstrap
from switchboard.core.observability import logger
from switchboard.routing.chatwoot import ChatwootClient
from tools.bench import cost
from tools.bench.measurements import Figures
from tools.bench.workloads import POOL_WEBHOOK_SECRET, CountingProvider, Stage, stage
from tools.support.aws import REGION
from tools.support.downstream import FakeDownstream
from tools.support.hooks import HookReceiver
from tools.support.pool import NUMBERS, build_world
from tools.support.provider_webhooks import envelope, message_data, signed_headers
from tools.support.sqs import received_record

MESSAGES = 10
WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})
# The item kinds (their partition key's prefix) each log writes.


@dataclass
class Writes:
    """Writes of one item kind: requests, base units, and each index's writes and units."""

    requests: int = 0
    base_units: int = 0
    index_writes: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    index_units: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def figures(self, per: int) -> Figures:
        return {
            "requests": self.requests / per,
            "base_units": self.base_units / per,
            "index_writes": {name: count / per for name, count in sorted(self.index_writes.items())},
            "index_units": {name: units / per for name, units in sorted(self.index_units.items())},
        }


class IndexWatch:
    """Every write to the table, by item kind, with the index writes DynamoDB makes for it."""

    def __init__(self, table: str) -> None:
        self._reader = boto3.client("dynamodb", region_name=REGION)
        described = self._reader.describe_table(TableName=table)["Table"]
        self._table = table
        self._keys = [part["AttributeName"] for part in described["KeySchema"]]
        self._indexes = [
            (
                index["IndexName"],
                [part["AttributeName"] for part in index["KeySchema"]],
                index["Projection"]["ProjectionType"],
                set(index["Projection"].get("NonKeyAttributes") or []),
            )
            for index in described.get("GlobalSecondaryIndexes", [])
        ]
        self.kinds: dict[str, Writes] = defaultdict(Writes)
        self._lock = threading.Lock()

    @contextmanager
    def on(self) -> Iterator[None]:
        original = BaseClient._make_api_call
        watch = self

        def call(client: Any, operation: str, params: dict[str, Any]) -> Any:
            if (
                client is watch._reader
                or operation not in WRITES
                or client.meta.service_model.service_name != "dynamodb"
            ):
                return original(client, operation, params)
            keys = watch._written_keys(operation, params)
            before = {index: watch._get(key) for index, (key, _) in enumerate(keys)}
            answer = original(client, operation, params)
            for index, (key, transactional) in enumerate(keys):
                watch._count(before[index], watch._get(key), transactional=transactional)
            return answer

        BaseClient._make_api_call = call  # watched for the run only
        try:
            yield
        finally:
            BaseClient._make_api_call = original

    def clear(self) -> None:
        self.kinds.clear()

    def _written_keys(self, operation: str, params: dict[str, Any]) -> list[tuple[dict[str, Any], bool]]:
        if operation in ("PutItem", "UpdateItem", "DeleteItem") and params.get("TableName") == self._table:
            source = params.get("Item") or params["Key"]
            return [({name: source[name] for name in self._keys}, False)]
        found: list[tuple[dict[str, Any], bool]] = []
        if operation == "TransactWriteItems":
            for entry in params["TransactItems"]:
                (kind, body), *_ = entry.items()
                if kind != "ConditionCheck" and body.get("TableName") == self._table:
                    source = body.get("Item") or body["Key"]
                    found.append(({name: source[name] for name in self._keys}, True))
        elif operation == "BatchWriteItem":
            for request in params["RequestItems"].get(self._table, []):
                source = request.get("PutRequest", {}).get("Item") or request["DeleteRequest"]["Key"]
                found.append(({name: source[name] for name in self._keys}, False))
        return found

    def _get(self, key: dict[str, Any]) -> dict[str, Any] | None:
        found = self._reader.get_item(TableName=self._table, Key=key, ConsistentRead=True).get("Item")
        return dict(found) if found else None

    def _count(self, before: dict[str, Any] | None, after: dict[str, Any] | None, *, transactional: bool) -> None:
        item = after or before or {}
        kind = str(item.get("pk", {}).get("S", "?")).split("#", 1)[0]
        size = max(cost.item_bytes(before or {}), cost.item_bytes(after or {}))
        with self._lock:
            writes = self.kinds[kind]
            writes.requests += 1
            writes.base_units += cost.write_units(size, transactional=transactional)
            for name, index_keys, projection, included in self._indexes:
                old, new = (self._projected(image, index_keys, projection, included) for image in (before, after))
                if old == new:
                    continue
                moved = old is not None and new is not None and any(old[k] != new[k] for k in index_keys)
                for image in [old, new] if moved else [new if new is not None else old]:
                    writes.index_writes[name] += 1
                    writes.index_units[name] += cost.write_units(cost.item_bytes(image or {}))

    def _projected(
        self, image: dict[str, Any] | None, index_keys: list[str], projection: str, included: set[str]
    ) -> dict[str, Any] | None:
        if image is None or not all(name in image for name in index_keys):
            return None
        if projection == "ALL":
            return image
        kept = {*self._keys, *index_keys, *(included if projection == "INCLUDE" else ())}
        return {name: value for name, value in image.items() if name in kept}


class Endpoint(HookReceiver):
    """A client's webhook endpoint: `refuse` is `never` (204), `first` (503 to a webhook-id's first
    request, then 204) or `always` (503)."""

    def __init__(self) -> None:
        self.refuse = "never"
        self.seen: set[str] = set()
        super().__init__(self._answer)

    def _answer(self, headers: dict[str, str], body: bytes) -> int:
        webhook_id = headers["webhook-id"]
        first = webhook_id not in self.seen
        self.seen.add(webhook_id)
        refused = self.refuse == "always" or (self.refuse == "first" and first)
        return 503 if refused else 204


def _drain(run: Stage, queue: str, function: str) -> None:
    """Every message of the queue through the function until it is empty, as the event source
    mapping does, with SQS's own receive counts: a refused delivery is visible again at once (the
    retry delay is 0 here) and its next attempt is its last (2 attempts here)."""
    sqs = run.sqs
    url = run.aws.queues[queue]
    arn = f"arn:aws:sqs:{REGION}:000000000000:{queue}"
    while True:
        batch = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"]).get("Messages", [])
        if not batch:
            return
        records = [received_record(message, arn) for message in batch]
        answer = run.api.functions.invoke(function, {"Records": records}) or {}
        kept = {failure["itemIdentifier"] for failure in answer.get("batchItemFailures", [])}
        for message in batch:
            if message["MessageId"] not in kept:
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])


def measure() -> Figures:
    logger.setLevel("WARNING")
    os.environ.update({"CLIENT_WEBHOOK_MAX_ATTEMPTS": "2", "CLIENT_WEBHOOK_RETRY_SECONDS": "0"})
    try:
        with stage() as run:
            bootstrap.reset()
            return _measure(run)
    finally:
        for name in ("CLIENT_WEBHOOK_MAX_ATTEMPTS", "CLIENT_WEBHOOK_RETRY_SECONDS"):
            os.environ.pop(name, None)


class Flows:
    """The tenant's world on the stage and the flows the figures come from."""

    def __init__(self, run: Stage) -> None:
        self.run = run
        self.provider = CountingProvider(run.meter)
        run.override(send_provider_client=lambda kind: self.provider)
        run.override(downstream_client=ChatwootClient(local_mode=True, transport=FakeDownstream().transport()))
        self.endpoint = Endpoint()
        self.world = build_world(run.client, run.tenant, *NUMBERS)
        self.world.create_send_key(default_number=NUMBERS[0], webhook_url=self.endpoint.url)
        self.instance = self.world.instances[NUMBERS[0]]
        self.admin = self.world.tenant.admin

    def webhook(self, name: str, data: dict[str, Any]) -> None:
        body = envelope(name, self.instance, data)
        headers = signed_headers(body, POOL_WEBHOOK_SECRET)
        answer = self.run.client.post(f"/webhooks/{self.world.provider_id}", body=body, headers=headers)
        assert answer.status == 200, answer.body

    def send(self, count: int) -> None:
        """`count` messages sent, then each one's delivered and read receipts."""
        already = len(self.provider.sent)
        for n in range(count):
            body = {"to": f"55219{n:08d}", "text": "oi"}
            answer = self.run.client.post("/api/messages", key=self.world.send_key, json_body=body)
            assert answer.status == 202, answer.body
        _drain(self.run, "SendQueue", "SendWorkerFunction")
        for index in range(already + 1, len(self.provider.sent) + 1):
            for status in ("delivered", "read"):
                self.webhook("receipt", {"id": f"wamid-{index}", "status": status, "timestamp": "2026-11-30T08:00:00Z"})

    def deliveries(self, refuse: str = "never") -> None:
        """The queued client webhooks, to the endpoint refusing as `refuse` says."""
        self.endpoint.refuse = refuse
        _drain(self.run, "ClientWebhookQueue", "ClientWebhooksFunction")

    def replay_dead_letters(self) -> int:
        dead = self.run.client.get("/api/webhook-deliveries?status=failed&limit=100", key=self.admin).json()["items"]
        for item in dead:
            assert self.run.client.post(f"/api/webhook-deliveries/{item['id']}/replay", key=self.admin).status == 202
        return len(dead)

    def connect_helpdesk(self) -> None:
        mapping = {
            "downstreamBaseUrl": "http://127.0.0.1:9101",
            "downstreamApiToken": "cw-token-bench-very-secret-1",
            "downstreamAccountId": 7,
            "downstreamInboxId": 12,
        }
        put = self.run.client.put(f"/api/tenants/{self.run.tenant.owner_tag}", key=self.admin, json_body=mapping)
        assert put.status == 200, put.body

    def incoming(self, count: int) -> None:
        for n in range(count):
            self.webhook("message", message_data("olá", f"55119888{n:05d}"))
        _drain(self.run, "ForwardQueue", "ForwarderFunction")


def _measure(run: Stage) -> Figures:
    flows = Flows(run)
    watch = IndexWatch(run.aws.tables["MainTable"])
    figures: Figures = {"messages": MESSAGES}
    deliveries_per_batch = 3 * MESSAGES  # each message's sent, delivered and read
    with watch.on():
        flows.send(1)  # warm: every function loaded, the configuration cached
        flows.deliveries()
        watch.clear()
        flows.send(MESSAGES)
        figures["outgoing"] = watch.kinds["MESSAGE"].figures(MESSAGES)
        watch.clear()
        flows.deliveries()
        figures["delivered_first"] = watch.kinds["WHDELIVERY"].figures(deliveries_per_batch)
        flows.send(MESSAGES)
        watch.clear()
        flows.deliveries("first")  # refused once, delivered at the second attempt
        figures["delivered_second"] = watch.kinds["WHDELIVERY"].figures(deliveries_per_batch)
        flows.send(MESSAGES)
        watch.clear()
        flows.deliveries("always")  # both attempts refused: a dead letter
        failed = watch.kinds["WHDELIVERY"].figures(deliveries_per_batch)
        watch.clear()
        replayed = flows.replay_dead_letters()
        flows.deliveries()
        figures["failed_then_replayed"] = {"failed": failed, "replayed": watch.kinds["WHDELIVERY"].figures(replayed)}
        flows.connect_helpdesk()
        watch.clear()
        flows.incoming(MESSAGES)
        figures["incoming"] = watch.kinds["INCOMING"].figures(MESSAGES)
        watch.clear()
        for n in range(MESSAGES):
            flows.webhook(f"typing_{n}", {})
        figures["ignored"] = watch.kinds["WHEVENT"].figures(MESSAGES)
    flows.endpoint.stop()
    _print(figures)
    return figures


def _print(figures: Figures) -> None:
    for name in ("outgoing", "delivered_first", "delivered_second", "incoming", "ignored"):
        print(f"{name}: {json.dumps(figures[name])}")
    print(f"failed_then_replayed: {json.dumps(figures['failed_then_replayed'])}")
