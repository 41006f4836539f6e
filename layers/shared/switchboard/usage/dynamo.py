"""Usage counters: one item per (instance, owner tag, day) with atomic `ADD`s, listed per (owner_tag, month).

`USAGE#<instance key>` / `DAY#<yyyy-mm-dd>#<owner_tag>` holds `messages_in` and `messages_out`: a
count belongs to the owner tag in force when it was counted, so changing an instance's tag moves
nothing already counted (the next count starts the new tag's item). GSI1
`USAGE#<owner_tag>#<yyyy-mm>` lists a tenant's month (one partition per tenant and month, so
no single hot index key). A message received in a provider event is counted in the transaction
that accepts the event (`incoming_count`), so it commits exactly once with it; any other count
tied to an id (an outbox entry, a sent message) is written together with a marker in one
transaction, so a re-applied effect never counts twice.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

from boto3.dynamodb.conditions import Key
from botocore.exceptions import ClientError

from switchboard.catalog.domain import Instance
from switchboard.core.dynamo import META, cancellation_codes, query_all
from switchboard.usage.domain import DailyUsage, Direction

UNTAGGED = "_untagged"  # cannot collide with an owner tag (they start with [a-z0-9])
MARKER_DAYS = 8


class UsageRepository:
    def __init__(self, table: Any) -> None:
        self._table = table
        self._client = table.meta.client
        self._name = table.name

    def add(self, instance: Instance, day: date, direction: Direction, count_id: str | None, now: datetime) -> bool:
        """Add one message; with `count_id`, only the first time that id is counted. Returns whether it counted."""
        counter = self._counter(instance, day, direction)
        if count_id is None:
            self._client.update_item(**counter)
            return True
        marker = {
            "TableName": self._name,
            "Item": {
                "pk": f"USAGEMARK#{direction}#{count_id}",
                "sk": META,
                "expiresAt": int((now + timedelta(days=MARKER_DAYS)).timestamp()),
            },
            "ConditionExpression": "attribute_not_exists(pk)",
        }
        try:
            self._client.transact_write_items(TransactItems=[{"Put": marker}, {"Update": counter}])
        except ClientError as error:
            if "ConditionalCheckFailed" in cancellation_codes(error):
                return False
            raise
        return True

    def incoming_count(self, instance: Instance, day: date) -> dict[str, Any]:
        """One incoming message, as an entry of the transaction that accepts its provider event."""
        return {"Update": self._counter(instance, day, "in")}

    def _counter(self, instance: Instance, day: date, direction: Direction) -> dict[str, Any]:
        tag = instance.owner_tag or UNTAGGED
        month = day.strftime("%Y-%m")
        return {
            "TableName": self._name,
            "Key": {"pk": f"USAGE#{instance.key}", "sk": f"DAY#{day.isoformat()}#{tag}"},
            "UpdateExpression": (
                "SET instance = :instance, owner_tag = :tag, tenant = :tenant, #day = :day, "
                "gsi1pk = :index, gsi1sk = :sort ADD #counter :one"
            ),
            "ExpressionAttributeNames": {"#day": "day", "#counter": f"messages_{direction}"},
            "ExpressionAttributeValues": {
                ":instance": instance.name,
                ":tag": tag,
                ":tenant": instance.tenant,
                ":day": day.isoformat(),
                ":index": f"USAGE#{tag}#{month}",
                ":sort": f"{instance.key}#{day.isoformat()}",
                ":one": 1,
            },
        }

    def month(self, owner_tag: str | None, month: str) -> list[DailyUsage]:
        tag = owner_tag or UNTAGGED
        items = query_all(
            self._table, IndexName="GSI1", KeyConditionExpression=Key("gsi1pk").eq(f"USAGE#{tag}#{month}")
        )
        return [
            DailyUsage(
                tenant=item["tenant"],
                instance=item["instance"],
                owner_tag=owner_tag,
                day=date.fromisoformat(item["day"]),
                messages_in=int(item.get("messages_in", 0)),
                messages_out=int(item.get("messages_out", 0)),
            )
            for item in items
        ]
