"""Ground truth at the end of a soak, read from outside the code under test where it exists:

- the simulator: what each recipient's phone got (`/_sim/sent`: one entry per WhatsApp message,
  its resends counted), the calls it saw (`/call/history`) and its line (`/_sim/instances/{id}`);
- the fake downstream: every message Chatwoot received (`source_id` = the provider's message id)
  and every private note;
- the API: each accepted message's status and failure reason, the calls connection's line;
- the stack's own records where nothing outside can say (read, never written): an incoming
  event recorded `ignored` with its reason, a reply's outcome and what is left in the outbox;
  and every queue's depth, DLQs included.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import boto3
import httpx
from boto3.dynamodb.conditions import Attr

from devstack.simulator import SimulatorControl
from tools.soak.world import World

QUEUE_ATTRIBUTES = (
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
)
READ_THREADS = 4
# The embedded endpoint's (moto's) own fake credentials: it checks none.
LOCAL_CREDENTIALS = {"aws_access_key_id": "local", "aws_secret_access_key": "local", "aws_session_token": "local"}


@dataclass
class Truth:
    sim_sent: list[dict[str, Any]] = field(default_factory=list)
    messages: dict[str, dict[str, Any] | None] = field(default_factory=dict)  # id -> API view (None: 404)
    forwarded: Counter[str] = field(default_factory=Counter)  # provider message id -> incoming posts
    arrivals: dict[str, list[float]] = field(default_factory=dict)  # provider message id -> when (monotonic)
    private_notes: int = 0
    events: dict[str, dict[str, Any]] = field(default_factory=dict)  # provider event id -> record
    reply_outcomes: dict[str, dict[str, Any]] = field(default_factory=dict)  # chatwoot id -> outcome
    outbox_left: int = 0
    queues: dict[str, dict[str, int]] = field(default_factory=dict)
    line: dict[str, Any] = field(default_factory=dict)  # the API's view of the calls connection
    sim_line: dict[str, Any] = field(default_factory=dict)
    call_history: list[dict[str, Any]] = field(default_factory=list)
    posted: dict[str, bool] = field(default_factory=dict)  # simulator event id -> did the provider post it


class TruthReader:
    def __init__(self, world: World, info: dict[str, Any]) -> None:
        self.world = world
        session = boto3.session.Session(**LOCAL_CREDENTIALS, region_name="us-east-1")
        self._dynamodb = session.resource("dynamodb", endpoint_url=info["awsUrl"])
        self._table = self._dynamodb.Table(info["tables"]["MainTable"])
        self._sqs = session.client("sqs", endpoint_url=info["awsUrl"])
        self._queues: dict[str, str] = {name: queue["url"] for name, queue in info["queues"].items()}
        self._views: dict[str, dict[str, Any] | None] = {}  # terminal views, never read again

    def close(self) -> None:
        self._sqs.close()

    # --- cheap reads, also while draining --------------------------------------------------

    def queue_depths(self) -> dict[str, dict[str, int]]:
        depths = {}
        for name, url in sorted(self._queues.items()):
            attributes = self._sqs.get_queue_attributes(QueueUrl=url, AttributeNames=list(QUEUE_ATTRIBUTES))
            values = attributes["Attributes"]
            depths[name] = {
                "visible": int(values.get("ApproximateNumberOfMessages", 0)),
                "inFlight": int(values.get("ApproximateNumberOfMessagesNotVisible", 0)),
                "delayed": int(values.get("ApproximateNumberOfMessagesDelayed", 0)),
            }
        return depths

    def outbox_left(self) -> int:
        answer = self._table.query(
            IndexName="GSI1",
            KeyConditionExpression=boto3.dynamodb.conditions.Key("gsi1pk").eq("OUTBOX#WAITING"),
            Select="COUNT",
        )
        count: int = answer["Count"]
        return count

    def message_views(self, ids: list[str]) -> dict[str, dict[str, Any] | None]:
        """Each message as the API shows it (its admin reads it); terminal ones are read once."""
        wanted = [message_id for message_id in ids if message_id not in self._views]
        found: dict[str, dict[str, Any] | None] = {}
        lock = threading.Lock()

        def read(chunk: list[str]) -> None:
            with httpx.Client(base_url=self.world.api_url, timeout=30.0, trust_env=False) as http:
                for message_id in chunk:
                    answer = http.get(
                        f"/api/messages/{message_id}", headers={"authorization": f"Bearer {self.world.admin_key}"}
                    )
                    view = answer.json() if answer.status_code == 200 else None
                    if answer.status_code not in (200, 404):
                        continue  # no verdict from this read; read again later
                    with lock:
                        found[message_id] = view
                        if view is None or view["status"] in ("SENT", "DELIVERED", "READ", "FAILED"):
                            self._views[message_id] = view

        chunks = [wanted[index::READ_THREADS] for index in range(READ_THREADS)]
        threads = [threading.Thread(target=read, args=(chunk,)) for chunk in chunks if chunk]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return {message_id: self._views.get(message_id, found.get(message_id)) for message_id in ids}

    def forwarded(self) -> tuple[Counter[str], int]:
        """Chatwoot's incoming messages by source id, and its private notes (what a person was told)."""
        counts: Counter[str] = Counter()
        notes = 0
        for request in self.world.downstream.messages():
            body = request.body or {}
            if body.get("private"):
                notes += 1
            elif body.get("message_type") == "incoming":
                counts[str(body.get("source_id"))] += 1
        return counts, notes

    # --- the final reading -----------------------------------------------------------------

    def read(self, message_ids: list[str]) -> Truth:
        truth = Truth()
        sim = SimulatorControl(self.world.sim_url, timeout=30.0)
        try:
            truth.sim_sent = sim.sent()
            truth.sim_line = sim.instance(self.world.calls_instance.name)
            truth.posted = {str(event["eventId"]): bool(event["delivered"]) for event in sim.events()}
        finally:
            sim.close()
        calls = self.world.calls_instance
        with httpx.Client(base_url=self.world.sim_url, timeout=30.0, trust_env=False) as provider:
            truth.call_history = provider.get("/call/history", headers={"token": calls.token}).json()["calls"]
        with httpx.Client(base_url=self.world.api_url, timeout=30.0, trust_env=False) as http:
            answer = http.get(
                f"/api/connections/{calls.name}/calls", headers={"authorization": f"Bearer {self.world.admin_key}"}
            )
            truth.line = answer.json() if answer.status_code == 200 else {"error": answer.status_code}
        truth.messages = self.message_views(message_ids)
        truth.forwarded, truth.private_notes = self.forwarded()
        truth.arrivals = dict(self.world.downstream.arrivals)
        self._scan(truth)
        truth.outbox_left = self.outbox_left()
        truth.queues = self.queue_depths()
        return truth

    def _scan(self, truth: Truth) -> None:
        """The webhook event records and the reply outcomes: one pass over the table."""
        condition = Attr("pk").begins_with("WHEVENT#") | Attr("pk").begins_with("OUTBOXMSG#")
        request: dict[str, Any] = {
            "FilterExpression": condition,
            "ProjectionExpression": "pk, #status, reason, eventId, #name",
            "ExpressionAttributeNames": {"#status": "status", "#name": "name"},
        }
        while True:
            page = self._table.scan(**request)
            for item in page.get("Items", []):
                pk = str(item["pk"])
                if pk.startswith("WHEVENT#"):
                    truth.events[str(item.get("eventId"))] = {
                        "status": item.get("status"),
                        "reason": item.get("reason"),
                        "name": item.get("name"),
                    }
                else:
                    message_id = pk.rpartition("#")[2]
                    truth.reply_outcomes[message_id] = {"status": item.get("status"), "reason": item.get("reason")}
            if "LastEvaluatedKey" not in page:
                return
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
