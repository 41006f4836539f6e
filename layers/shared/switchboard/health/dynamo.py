"""Health items: pk `HEALTH#<instance key>`, sk `#META`, one per instance (and the pacing
items, `DynamoPaceStore`).

Counters (`minute_sends`, `hour_sends`, `window_sent`, `window_delivered`, `fail_<code>`) are
only ever added to, so concurrent workers never conflict on them; the reasons and the state are
rewritten under the item's `version` (a conditional write). A send costs one UpdateItem (two at
a minute's turn, three at an hour's), which answers the counters the ban watch judges on.

The diversity sample rides in that same UpdateItem: the send's recipient and text fingerprints
go to the top-level attributes `dr_<slot>` and `dt_<slot>`, and `send_seq` counts the sends.
Top-level attributes, not a map: `SET sample.#slot` fails on an item (or an item without the
map) that does not exist yet, and creating the map first would cost a second request. The slot
is chosen by the caller before the write (`send_seq mod size` from the item it last saw, so one
worker writing in turn keeps exactly the last `size` sends; a worker that has not seen the item
picks a slot at random): the write cannot read `send_seq` before naming the attribute it sets.
Two workers with the same stale `send_seq` write the same slot, and the sample loses one send,
which a ratio over 50 sends can afford.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from botocore.exceptions import ClientError

from switchboard.core.buckets import Claim
from switchboard.core.dynamo import META, from_item, is_condition_failure
from switchboard.health.domain import Health, HealthChanged, HealthState, Reason, SampleEntry
from switchboard.quotas.dynamo import BucketItem, take_bucket

BATCH_GET_KEYS = 100
FAILURE_PREFIX = "fail_"
RECIPIENT_PREFIX = "dr_"
TEXT_PREFIX = "dt_"
_CODE = re.compile(r"^[A-Za-z0-9_.-]{1,40}$")
COUNT_ATTEMPTS = 4


def health_key(instance_key: str) -> dict[str, str]:
    return {"pk": f"HEALTH#{instance_key}", "sk": META}


class HealthRepository:
    def __init__(self, table: Any) -> None:
        self._table = table
        self._client = table.meta.client
        self._name = table.name

    def get(self, instance_key: str) -> Health:
        item = self._table.get_item(Key=health_key(instance_key), ConsistentRead=True).get("Item")
        return _health(instance_key, item)

    def get_many(self, instance_keys: Collection[str]) -> dict[str, Health]:
        """Every instance's health, a missing item read as healthy (one BatchGetItem per 100)."""
        wanted = list(dict.fromkeys(instance_keys))
        found = {key: Health(instance_key=key) for key in wanted}
        for start in range(0, len(wanted), BATCH_GET_KEYS):
            keys = [health_key(key) for key in wanted[start : start + BATCH_GET_KEYS]]
            request: dict[str, Any] = {self._name: {"Keys": keys}}
            while request:
                answer = self._client.batch_get_item(RequestItems=request)
                for item in answer.get("Responses", {}).get(self._name, []):
                    key = item["pk"].removeprefix("HEALTH#")
                    found[key] = _health(key, item)
                request = answer.get("UnprocessedKeys") or {}
        return found

    def count_send(self, instance_key: str, now: datetime, sample: SampleEntry | None = None) -> Health:
        """One more send this minute, this hour and in the delivery window, and (with `sample`:
        slot, recipient and text fingerprints) in the diversity sample; the item after it."""
        minute, hour = int(now.timestamp()) // 60, int(now.timestamp()) // 3600
        values: dict[str, Any] = {":m": minute, ":h": hour, ":one": 1}
        sets: list[str] = []
        if sample is not None:
            slot, recipient, text = sample
            sets = [f"{RECIPIENT_PREFIX}{int(slot)} = :dr", f"{TEXT_PREFIX}{int(slot)} = :dt"]
            values.update({":dr": recipient, ":dt": text})
        adds = ["window_sent :one", "send_seq :one"]
        same_minute = (
            _update(sets, ["minute_sends :one", "hour_sends :one", *adds]),
            "at_minute = :m",
        )
        new_minute = (
            _update(["at_minute = :m", "minute_sends = :one", *sets], ["hour_sends :one", *adds]),
            "(attribute_not_exists(at_minute) OR at_minute < :m) AND at_hour = :h",
        )
        new_hour = (
            _update(["at_minute = :m", "minute_sends = :one", "at_hour = :h", "hour_sends = :one", *sets], adds),
            "attribute_not_exists(at_hour) OR at_hour < :h",
        )
        for _ in range(COUNT_ATTEMPTS):
            for expression, condition in (same_minute, new_minute, new_hour):
                item = self._update_if(instance_key, expression, condition, values)
                if item is not None:
                    return _health(instance_key, item)
        # Every step lost a race against rollovers (clock skew between workers): count nothing.
        return self.get(instance_key)

    def count_failure(self, instance_key: str, provider_code: str) -> Health:
        code = provider_code if _CODE.match(provider_code) else "other"
        answer = self._table.update_item(
            Key=health_key(instance_key),
            UpdateExpression="ADD #failure :one",
            ExpressionAttributeNames={"#failure": FAILURE_PREFIX + code},
            ExpressionAttributeValues={":one": 1},
            ReturnValues="ALL_NEW",
        )
        return _health(instance_key, answer["Attributes"])

    def count_delivery(self, instance_key: str) -> None:
        self._table.update_item(
            Key=health_key(instance_key),
            UpdateExpression="ADD window_delivered :one",
            ExpressionAttributeValues={":one": 1},
        )

    def save_reasons(
        self,
        health: Health,
        reasons: dict[str, Reason],
        state: HealthState,
        since: datetime | None,
        *,
        close_window: tuple[int, int, float] | None = None,
    ) -> Health:
        """Write the reasons and the state if nobody did since `health` was read (else HealthChanged).

        `close_window` = (sent, delivered, ratio): the window judged is taken off the counters
        (sends counted meanwhile stay in the next window) and its ratio kept."""
        names = {"#reasons": "reasons", "#state": "state", "#since": "since", "#version": "version"}
        values: dict[str, Any] = {
            ":reasons": {code: _stored_reason(reason) for code, reason in reasons.items()},
            ":state": str(state),
            ":since": since.isoformat() if since else None,
            ":version": health.version + 1,
        }
        expression = "SET #reasons = :reasons, #state = :state, #since = :since, #version = :version"
        if close_window is not None:
            sent, delivered, ratio = close_window
            expression += ", delivery_ratio = :ratio ADD window_sent :sent, window_delivered :delivered"
            values.update({":ratio": Decimal(str(round(ratio, 4))), ":sent": -sent, ":delivered": -delivered})
        if health.version == 0:
            condition = "attribute_not_exists(#version)"
        else:
            condition = "#version = :expected"
            values[":expected"] = health.version
        try:
            answer = self._table.update_item(
                Key=health_key(health.instance_key),
                UpdateExpression=expression,
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            if is_condition_failure(error):
                raise HealthChanged(health.instance_key) from error
            raise
        return _health(health.instance_key, answer["Attributes"])

    def _update_if(
        self, instance_key: str, expression: str, condition: str, values: dict[str, Any]
    ) -> dict[str, Any] | None:
        used = {name: value for name, value in values.items() if name in expression or name in condition}
        try:
            answer = self._table.update_item(
                Key=health_key(instance_key),
                UpdateExpression=expression,
                ConditionExpression=condition,
                ExpressionAttributeValues=used,
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            if is_condition_failure(error):
                return None
            raise
        attributes: dict[str, Any] = answer["Attributes"]
        return attributes


def _update(sets: list[str], adds: list[str]) -> str:
    return " ".join(part for part in (f"SET {', '.join(sets)}" if sets else "", f"ADD {', '.join(adds)}") if part)


def _sample(item: dict[str, Any], prefix: str) -> dict[int, str]:
    return {
        int(slot): value
        for name, value in item.items()
        if name.startswith(prefix) and (slot := name.removeprefix(prefix)).isdigit() and isinstance(value, str)
    }


def _stored_reason(reason: Reason) -> dict[str, Any]:
    stored: dict[str, Any] = reason.model_dump(mode="json", exclude_none=True)
    return stored


def _health(instance_key: str, item: dict[str, Any] | None) -> Health:
    if not item:
        return Health(instance_key=instance_key)
    failures = {
        name.removeprefix(FAILURE_PREFIX): int(value)
        for name, value in item.items()
        if name.startswith(FAILURE_PREFIX) and isinstance(value, Decimal | int)
    }
    fields = {name: value for name, value in item.items() if name in Health.model_fields and value is not None}
    return from_item(
        Health,
        {
            **fields,
            "instance_key": instance_key,
            "failures": failures,
            "sample_recipients": _sample(item, RECIPIENT_PREFIX),
            "sample_texts": _sample(item, TEXT_PREFIX),
        },
    )


class PaceBucket(BucketItem):
    """A number's pacing bucket."""

    PREFIX = "PACE"
    SORT_PREFIX = "BUCKET"


class DynamoPaceStore:
    """pk `PACE#<number id>`: sk `BUCKET` (the bucket's `tat`, in us) and `NEW#<day>` (new
    contacts counted that UTC day), each with a TTL."""

    def __init__(self, table: Any) -> None:
        self._table = table

    def take(self, number_id: str, claim: Claim, expires_at: int) -> int:
        return take_bucket(PaceBucket(PaceBucket.pk_for(number_id), PaceBucket.sk_for()), claim, expires_at)

    def count_new_contact(self, number_id: str, day: date, budget: int) -> bool:
        expires = int(datetime.combine(day + timedelta(days=2), datetime.min.time(), tzinfo=UTC).timestamp())
        try:
            self._table.update_item(
                Key={"pk": f"PACE#{number_id}", "sk": f"NEW#{day.isoformat()}"},
                UpdateExpression="ADD contacts :one SET expiresAt = :expires",
                ConditionExpression="attribute_not_exists(contacts) OR contacts < :budget",
                ExpressionAttributeValues={":one": 1, ":budget": budget, ":expires": expires},
            )
        except ClientError as error:
            if is_condition_failure(error):
                return False
            raise
        return True

    def new_contacts_on(self, number_id: str, day: date) -> int:
        item = self._table.get_item(Key={"pk": f"PACE#{number_id}", "sk": f"NEW#{day.isoformat()}"}).get("Item")
        return int(item["contacts"]) if item else 0
