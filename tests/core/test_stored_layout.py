"""The items the audit, usage, quota and live repositories write, read raw: the stored names and
types are those of the items already in the table, so stored data keeps working."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from switchboard import bootstrap
from switchboard.audit.dynamo import AuditLog
from switchboard.catalog.domain import Instance
from switchboard.core.buckets import Claim
from switchboard.core.identity import Principal, Scope
from switchboard.live.domain import Connection
from switchboard.live.dynamo import LiveRepository
from switchboard.quotas.domain import QuotaOverrides
from switchboard.quotas.dynamo import DynamoBuckets, DynamoQuotaStore
from switchboard.usage.dynamo import UsageRepository
from tests.support.quotas import counted_one
from tools.support.aws import AwsResources

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)


@pytest.fixture
def table(aws: AwsResources) -> Any:
    return bootstrap.table()


def raw(table: Any, pk: str, sk: str = "#META") -> dict[str, Any]:
    item: dict[str, Any] = table.get_item(Key={"pk": pk, "sk": sk})["Item"]
    return item


def test_usage_counts_and_marks(table: Any) -> None:
    instance = Instance(
        tenant="acme",
        name="main",
        provider_id="prv_1",
        provider_instance_id="p1",
        number_id="num_1",
        owner_tag="acme",
        token_hint="abcd",
    )
    usage = UsageRepository(table)
    assert usage.add(instance, date(2026, 3, 1), "out", "msg_1", NOW)
    assert not usage.add(instance, date(2026, 3, 1), "out", "msg_1", NOW)
    assert raw(table, f"USAGE#{instance.key}", "DAY#2026-03-01#acme") == {
        "pk": f"USAGE#{instance.key}",
        "sk": "DAY#2026-03-01#acme",
        "instance": "main",
        "owner_tag": "acme",
        "tenant": "acme",
        "day": "2026-03-01",
        "gsi1pk": "USAGE#acme#2026-03",
        "gsi1sk": f"{instance.key}#2026-03-01",
        "messages_out": 1,
    }
    mark = raw(table, "USAGEMARK#out#msg_1")
    assert mark["expiresAt"] == int((NOW + timedelta(days=8)).timestamp())
    assert [day.messages_out for day in usage.month("acme", "2026-03")] == [1]


def test_quota_overrides_buckets_and_days(table: Any) -> None:
    quotas = DynamoQuotaStore(table)
    quotas.put_overrides("acme", QuotaOverrides(requests_per_second=2.5, burst=10))
    assert raw(table, "QUOTA#acme") == {
        "pk": "QUOTA#acme",
        "sk": "#META",
        "tenant": "acme",
        "requests_per_second": Decimal("2.5"),
        "burst": 10,
    }
    assert quotas.get_overrides("acme") == QuotaOverrides(requests_per_second=2.5, burst=10)
    assert counted_one(quotas, "acme", date(2026, 3, 1), 1)
    assert not counted_one(quotas, "acme", date(2026, 3, 1), 1)
    assert raw(table, "QUOTA#acme", "DAY#2026-03-01")["sent"] == 1
    tat = 2**53 + 1  # microseconds since the epoch run past a float's exact integers
    taken = DynamoBuckets(table).take("acme", "tenant", Claim(count=1, now=tat, idle=True, add=1, limit=0), 99)
    assert taken == tat + 1
    assert raw(table, "QUOTA#acme", "BUCKET#tenant") == {
        "pk": "QUOTA#acme",
        "sk": "BUCKET#tenant",
        "tat": tat + 1,
        "expiresAt": 99,
        "tenant": "acme",
    }


def test_audit_entries(table: Any) -> None:
    log = AuditLog(table)
    principal = Principal(tenant="acme", key_id="key_1", scopes=frozenset({Scope.ADMIN}))
    log.record(principal, "number.update", "num_1", before={"tenant": "acme", "token": "x", "n": 1.5, "gone": None})
    [entry] = log.list("acme")
    stored = raw(table, "AUDIT#acme", f"{entry.at.isoformat()}#{entry.id}")
    assert stored["before"] == {"tenant": "acme", "n": Decimal("1.5")}
    assert stored["at"] == entry.at.isoformat() and stored["actor_key_id"] == "key_1"
    assert entry.before == {"tenant": "acme", "n": Decimal("1.5")}


def test_live_connections(table: Any) -> None:
    live = LiveRepository(table)
    connection = Connection(
        tenant="acme",
        principal="key:key_1",
        key_id="key_1",
        scope="admin",
        connection_id="c1",
        connected_at=NOW,
        expires_at=NOW + timedelta(hours=2),
    )
    live.put_connection(connection)
    expires = int((NOW + timedelta(hours=2)).timestamp())
    stored = raw(table, "LIVE#acme", "CONNECTION#c1")
    assert stored["expires_at"] == (NOW + timedelta(hours=2)).isoformat() and stored["expiresAt"] == expires
    assert raw(table, "LIVEPRINCIPAL#acme#key:key_1", "CONNECTION#c1")["connection_id"] == "c1"
    assert raw(table, "LIVECONNECTION#c1") == {
        "pk": "LIVECONNECTION#c1",
        "sk": "#META",
        "tenant": "acme",
        "principal": "key:key_1",
        "expiresAt": expires,
    }
    assert live.connections_of("acme", NOW) == [connection]
    live.delete_connection("acme", "c1", "key:key_1")
    assert live.owner_of("c1") is None and live.connections_of_principal("acme", "key:key_1", NOW) == []
