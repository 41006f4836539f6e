"""The health and pacing items keep the layout stored before they were PynamoDB models: an item
written in that layout reads back whole, and what the repository writes has the same names and
types."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

from switchboard import bootstrap
from switchboard.health.domain import LOW_DELIVERY, TIMELOCK, HealthState, Reason
from switchboard.health.dynamo import DynamoPaceStore, HealthRepository
from tests.health.test_ban_watch import T0
from tools.support.aws import AwsResources

KEY = "acme:a"


def test_an_item_in_the_stored_layout_reads_back_whole(aws: AwsResources) -> None:
    table = bootstrap.table()
    table.put_item(
        Item={
            "pk": f"HEALTH#{KEY}",
            "sk": "#META",
            "reasons": {
                TIMELOCK: {
                    "code": TIMELOCK,
                    "state": "paused_for_new_contacts",
                    "since": "2026-11-30T12:00:05+00:00",
                    "until": "2026-11-30T18:00:05+00:00",
                    "count": Decimal(2),
                }
            },
            "state": "paused_for_new_contacts",
            "since": None,  # written as NULL when the state had no date
            "version": Decimal(3),
            "at_minute": Decimal(29_899_440),
            "minute_sends": Decimal(4),
            "at_hour": Decimal(498_324),
            "hour_sends": Decimal(9),
            "window_sent": Decimal(7),
            "window_delivered": Decimal(5),
            "delivery_ratio": Decimal("0.4286"),
            "send_seq": Decimal(12),
            "fail_463": Decimal(2),
            "fail_other": Decimal(1),
            "dr_3": "ab12cd34",
            "dt_3": "0f0f0f0f",
            "dr_11": "ffff0000",
            "dt_11": "12345678",
        }
    )

    health = HealthRepository(table).get(KEY)

    assert health.reasons == {
        TIMELOCK: Reason(
            code=TIMELOCK,
            state=HealthState.PAUSED_FOR_NEW_CONTACTS,
            since=datetime(2026, 11, 30, 12, 0, 5, tzinfo=UTC),
            until=datetime(2026, 11, 30, 18, 0, 5, tzinfo=UTC),
            count=2,
        )
    }
    assert (health.state, health.since, health.version) == (HealthState.PAUSED_FOR_NEW_CONTACTS, None, 3)
    assert (health.at_minute, health.minute_sends, health.at_hour, health.hour_sends) == (29_899_440, 4, 498_324, 9)
    assert (health.window_sent, health.window_delivered, health.delivery_ratio) == (7, 5, 0.4286)
    assert (health.send_seq, health.failures) == (12, {"463": 2, "other": 1})
    assert health.sample_recipients == {3: "ab12cd34", 11: "ffff0000"}
    assert health.sample_texts == {3: "0f0f0f0f", 11: "12345678"}
    assert HealthRepository(table).get_many([KEY, "acme:none"]) == {
        KEY: health,
        "acme:none": type(health)(instance_key="acme:none"),
    }


def test_the_repository_stores_the_names_and_types_of_the_stored_layout(aws: AwsResources) -> None:
    table = bootstrap.table()
    health = HealthRepository(table)
    health.count_send(KEY, T0, [(3, "ab12cd34", "0f0f0f0f"), (4, "ffff0000", "0f0f0f0f")], sends=2)
    health.count_failure(KEY, "463")
    health.count_failure(KEY, "not a code!")
    health.count_delivery(KEY)
    reason = Reason(code=LOW_DELIVERY, state=HealthState.WARNING, since=T0)
    health.save_reasons(health.get(KEY), {LOW_DELIVERY: reason}, HealthState.WARNING, T0, close_window=(2, 1, 0.5))

    raw = bootstrap.current().client("dynamodb")  # the low-level client: the values as stored, typed
    item = raw.get_item(TableName=table.name, Key={"pk": {"S": f"HEALTH#{KEY}"}, "sk": {"S": "#META"}})["Item"]

    minute, hour = int(T0.timestamp()) // 60, int(T0.timestamp()) // 3600
    assert item == {
        "pk": {"S": f"HEALTH#{KEY}"},
        "sk": {"S": "#META"},
        "at_minute": {"N": str(minute)},
        "minute_sends": {"N": "2"},
        "at_hour": {"N": str(hour)},
        "hour_sends": {"N": "2"},
        "window_sent": {"N": "0"},
        "window_delivered": {"N": "0"},
        "send_seq": {"N": "2"},
        "dr_3": {"S": "ab12cd34"},
        "dt_3": {"S": "0f0f0f0f"},
        "dr_4": {"S": "ffff0000"},
        "dt_4": {"S": "0f0f0f0f"},
        "fail_463": {"N": "1"},
        "fail_other": {"N": "1"},
        "reasons": {
            "M": {
                LOW_DELIVERY: {
                    "M": {
                        "code": {"S": LOW_DELIVERY},
                        "state": {"S": "warning"},
                        "since": {"S": "2026-11-30T12:00:05Z"},  # a reason is stored as its JSON
                        "count": {"N": "1"},
                    }
                }
            }
        },
        "state": {"S": "warning"},
        "since": {"S": T0.isoformat()},
        "version": {"N": "1"},
        "delivery_ratio": {"N": "0.5"},
    }


def test_the_pace_items_keep_their_keys_and_ttl(aws: AwsResources) -> None:
    table = bootstrap.table()
    pace = DynamoPaceStore(table)
    day = date(2026, 11, 30)
    table.put_item(Item={"pk": "PACE#num_1", "sk": "NEW#2026-11-29", "contacts": Decimal(4), "expiresAt": Decimal(1)})

    assert pace.count_new_contact("num_1", day, budget=2)
    assert pace.count_new_contact("num_1", day, budget=2)
    assert not pace.count_new_contact("num_1", day, budget=2)

    item = table.get_item(Key={"pk": "PACE#num_1", "sk": "NEW#2026-11-30"})["Item"]
    assert item == {
        "pk": "PACE#num_1",
        "sk": "NEW#2026-11-30",
        "contacts": 2,
        "expiresAt": int(datetime(2026, 12, 2, tzinfo=UTC).timestamp()),
    }
    assert (pace.new_contacts_on("num_1", date(2026, 11, 29)), pace.new_contacts_on("num_1", date(2026, 11, 28))) == (
        4,
        0,
    )
