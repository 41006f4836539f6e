"""The send worker's records on moto: the claim that also records the first route in flight, and
the SENT transaction that counts the message on its instance's usage (retried on a conflict)."""

from __future__ import annotations

from typing import Any

import boto3
from botocore.exceptions import ClientError

from switchboard import bootstrap
from switchboard.core import store
from switchboard.messages.domain import Message, MessageStatus, PendingRoute, body_hash
from switchboard.messages.dynamo import MessageRepository
from switchboard.usage.dynamo import UsageDay
from tools.support import builders
from tools.support.aws import REGION, AwsResources

TO = "5511988887777"
ROUTE = PendingRoute(number_id="num_1", instance="main", provider_id="prv_1", kind="evolution")
MAIN = builders.instance("main")


def repository() -> MessageRepository:
    """As the composition root builds it: the SENT record counts the message on its instance."""
    return MessageRepository(bootstrap.table(), usage=bootstrap.outgoing_usage())


def queued(messages: MessageRepository, message_id: str = "msg_1", **fields: Any) -> Message:
    message = Message(
        tenant="acme", id=message_id, api_key_id="key_1", to=TO, text="hi", body_hash=body_hash(TO, "hi"), **fields
    )
    messages.create(message)
    return message


def raw(aws: AwsResources, message: Message) -> dict[str, Any]:
    item: dict[str, Any] = boto3.client("dynamodb", region_name=REGION).get_item(
        TableName=aws.tables["MainTable"], Key={"pk": {"S": f"MESSAGE#{message.id}"}, "sk": {"S": "#META"}}
    )["Item"]
    return item


def test_a_claim_records_the_first_route_in_flight_in_the_same_write(aws: AwsResources) -> None:
    messages = repository()
    message = queued(messages)

    claim = messages.claim_in_flight(message.id, "acme", "lease-1", 60, route=ROUTE)

    assert claim is not None and claim.marked
    assert (claim.message.status, claim.message.lease_token, claim.message.in_flight) == (
        MessageStatus.SENDING,
        "lease-1",
        ROUTE,
    )
    assert raw(aws, message)["in_flight"]["M"]["instance"] == {"S": "main"}
    assert messages.claim_in_flight(message.id, "acme", "lease-2", 60, route=ROUTE) is None  # held


def test_a_message_left_in_flight_or_pending_is_claimed_unmarked_with_its_route_kept(aws: AwsResources) -> None:
    messages = repository()
    earlier = PendingRoute(number_id="num_2", instance="other", provider_id="prv_1", kind="wuzapi")
    interrupted = queued(messages, "msg_1", in_flight=earlier)
    timed_out = queued(messages, "msg_2", pending=earlier)

    claims = [messages.claim_in_flight(m.id, "acme", "lease-1", 60, route=ROUTE) for m in (interrupted, timed_out)]

    assert [(c.marked, c.message.status) if c else None for c in claims] == [(False, MessageStatus.SENDING)] * 2
    assert [c.message.in_flight if c else None for c in claims] == [earlier, None]
    assert [c.message.pending if c else None for c in claims] == [None, earlier]


def test_a_final_message_or_another_tenants_is_not_claimed(aws: AwsResources) -> None:
    messages = repository()
    message = queued(messages)
    claim = messages.claim_in_flight(message.id, "acme", "lease-1", 60, route=ROUTE)
    assert claim is not None
    messages.record_failed(claim.message, "no_number_available", [])

    assert messages.claim_in_flight(message.id, "acme", "lease-2", 60, route=ROUTE) is None
    assert messages.claim_in_flight("msg_absent", "acme", "lease-2", 60, route=ROUTE) is None
    assert messages.claim_in_flight(queued(messages, "msg_2").id, "other", "lease-2", 60, route=ROUTE) is None


class ConflictOnce:
    """A low-level client whose first transaction is cancelled as DynamoDB cancels one that met
    another on the same item (another send through the instance writing its usage counter); it
    keeps each transaction's request token."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.tokens: list[str | None] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def _make_api_call(self, operation: str, request: dict[str, Any]) -> Any:
        if operation == "TransactWriteItems":
            self.tokens.append(request.get("ClientRequestToken"))
            if len(self.tokens) == 1:
                reasons = [{"Code": "None"}] * (len(request["TransactItems"]) - 1) + [{"Code": "TransactionConflict"}]
                error = {"Code": "TransactionCanceledException", "Message": "Transaction cancelled"}
                raise ClientError({"Error": error, "CancellationReasons": reasons}, "TransactWriteItems")
        return self._client._make_api_call(operation, request)


def sent_usage(day: str) -> int | None:
    item = store.get(UsageDay, UsageDay.pk_for(MAIN.key), UsageDay.sk_for(day, MAIN.owner_tag or "_untagged"))
    return None if item is None else item.messages_out


def test_a_send_is_counted_by_its_sent_record_and_a_conflict_on_the_counter_is_tried_again(aws: AwsResources) -> None:
    messages = repository()
    message = queued(messages)
    claim = messages.claim_in_flight(message.id, "acme", "lease-1", 60, route=ROUTE)
    assert claim is not None
    conflicting = ConflictOnce(boto3.client("dynamodb", region_name=REGION))
    store.bind(aws.tables["MainTable"], conflicting)

    sent = messages.record_sent(
        claim.message,
        number_id="num_1",
        source_number="5511999990001",
        instance="main",
        provider_id="prv_1",
        provider_message_id="wamid-1",
        events=[],
        remember_affinity=False,
        counted_on=MAIN,
    )

    assert len(conflicting.tokens) == 2
    assert conflicting.tokens[0] is not None and conflicting.tokens[0] == conflicting.tokens[1]
    assert messages.get("acme", message.id).status is MessageStatus.SENT
    assert sent.sent_at is not None
    assert sent_usage(sent.sent_at.date().isoformat()) == 1
