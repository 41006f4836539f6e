"""The calls' items and the line as PynamoDB models keep today's stored names and types, and an
occupant stored the way earlier writes stored it (nulls included) still reads."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from switchboard import bootstrap
from switchboard.calls.domain import Attachment, DialAttempt, StaleRecord, new_record
from switchboard.calls.dynamo import AttachmentRepository, CallRepository, ReconcileGate, call_key
from switchboard.lines.domain import Snapshot
from switchboard.lines.dynamo import LineRepository, line_key
from tools.support.aws import AwsResources

ATTEMPT = DialAttempt(
    id="res_1", tenant="acme", instance="acme-main", attendant="ana", to="5511977776666", created_at="2026-12-01"
)


def raw(key: dict[str, str]) -> dict[str, Any]:
    item: dict[str, Any] = bootstrap.table().get_item(Key=key, ConsistentRead=True)["Item"]
    return item


def test_the_line_an_attempt_and_a_call_are_stored_under_todays_names(aws: AwsResources) -> None:
    calls = CallRepository(bootstrap.table())
    LineRepository(bootstrap.table()).apply_snapshot(
        "acme", "acme-main", Snapshot(limit=2, version=7, updated_at="2026-12-01T09:00:00Z", source="status")
    )
    assert calls.create_attempt(ATTEMPT) is None
    assert calls.create_attempt(ATTEMPT) == ATTEMPT  # a retry: the stored one
    assert calls.reserve(ATTEMPT)
    assert not calls.reserve(ATTEMPT)  # a replay: admitted already

    line = raw(line_key("acme", "acme-main"))
    assert {name: line[name] for name in ("tenant", "limit", "version", "updatedAt", "conflict", "source")} == {
        "tenant": "acme",
        "limit": 2,
        "version": 7,
        "updatedAt": "2026-12-01T09:00:00Z",
        "conflict": False,
        "source": "status",
    }
    assert line["occupants"] == {
        "res_1": {
            "kind": "reservation",
            "id": "res_1",
            "direction": "outgoing",
            "video": False,
            "state": "reserved",
            "owner": "ana",
            "since": "2026-12-01",
            "to": "5511977776666",
        }
    }
    attempt = raw({"pk": "LINE#acme:acme-main", "sk": "DIAL#res_1"})
    assert attempt.pop("expiresAt") > 0
    assert attempt == {
        "pk": "LINE#acme:acme-main",
        "sk": "DIAL#res_1",
        "id": "res_1",
        "tenant": "acme",
        "instance": "acme-main",
        "attendant": "ana",
        "to": "5511977776666",
        "video": False,
        "state": "pending",
        "created_at": "2026-12-01",
    }

    record = new_record("acme", "acme-main", "wuzapi", "i1", "c1").model_copy(
        update={"state": "ringing", "direction": "outgoing", "holds_slot": True, "last_seq": 3, "first_seen": "t0"}
    )
    stored = calls.save(None, record, ATTEMPT)
    assert stored.rev == 1
    item = raw(call_key("acme", "acme-main", "wuzapi", "i1", "c1"))
    assert item == {
        "pk": "LINE#acme:acme-main",
        "sk": "CALL#wuzapi#i1#c1",
        "tenant": "acme",
        "instance": "acme-main",
        "provider_id": "wuzapi",
        "provider_instance_id": "i1",
        "call_id": "c1",
        "state": "ringing",
        "direction": "outgoing",
        "video": False,
        "last_seq": 3,
        "holds_slot": True,
        "first_seen": "t0",
        "rev": 1,
        "gsi2pk": "LINE#acme:acme-main#LIVECALL",
        "gsi2sk": "c1",
    }
    assert set(raw(line_key("acme", "acme-main"))["occupants"]) == {"call#wuzapi#i1#c1"}
    assert raw({"pk": "LINE#acme:acme-main", "sk": "DIAL#res_1"})["state"] == "connected"
    assert calls.live_calls("acme", "acme-main") == [stored]

    with pytest.raises(StaleRecord):  # written from the revision before: refused
        calls.save(None, record)
    ended = calls.save(stored, stored.model_copy(update={"state": "ended"}))
    assert ended.rev == 2 and raw(call_key("acme", "acme-main", "wuzapi", "i1", "c1"))["rev"] == 2
    assert calls.live_calls("acme", "acme-main") == []
    assert raw(line_key("acme", "acme-main"))["occupants"] == {}


def test_an_occupant_stored_with_nulls_reads_as_before(aws: AwsResources) -> None:
    occupant = {
        "kind": "call",
        "id": "call#p#i#c1",
        "callId": "c1",
        "direction": "incoming",
        "video": False,
        "state": "active",
        "owner": None,
        "since": "t0",
    }
    bootstrap.table().put_item(
        Item={**line_key("acme", "old"), "tenant": "acme", "limit": Decimal(2), "occupants": {"call#p#i#c1": occupant}}
    )
    line = CallRepository(bootstrap.table()).line("acme", "old")
    assert line is not None and line.limit == 2
    assert line.occupants["call#p#i#c1"].owner is None and line.occupants["call#p#i#c1"].call_id == "c1"


def test_an_attachment_and_the_reconcile_gate_are_stored_under_todays_names(aws: AwsResources) -> None:
    attachment = Attachment(
        tenant="acme",
        instance="acme-main",
        provider_id="wuzapi",
        provider_instance_id="i1",
        call_id="c1",
        attendant="ana",
        session_id="s1",
        attached_at="t1",
    )
    attachments = AttachmentRepository(bootstrap.table())
    attachments.put_attachment(attachment)
    stored = raw({"pk": "LINE#acme:acme-main", "sk": "MEDIA#wuzapi#i1#c1"})
    assert stored.pop("expiresAt") > 0
    assert stored == {"pk": "LINE#acme:acme-main", "sk": "MEDIA#wuzapi#i1#c1", **attachment.model_dump()}
    record = new_record("acme", "acme-main", "wuzapi", "i1", "c1")
    assert attachments.get_attachment(record) == attachment

    gate = ReconcileGate(bootstrap.table())
    assert gate.enter("acme", "acme-main", 1000.5, 10) is None
    assert gate.enter("acme", "acme-main", 1004.5, 10) == 6.0  # the window is open: refused
    assert raw({"pk": "LINE#acme:acme-main", "sk": "RECONCILE#GATE"}) == {
        "pk": "LINE#acme:acme-main",
        "sk": "RECONCILE#GATE",
        "until": Decimal("1010.5"),
        "tenant": "acme",
        "expiresAt": 1010 + 3600,
    }
