"""The soak's verdicts, case by case, on a hand-made ledger and truth: what counts as lost,
doubled, stuck, ignored or merely failed, and what makes the soak fail."""

from __future__ import annotations

from collections import Counter
from typing import Any

from tools.soak.accounting import account, failing
from tools.soak.ledger import DialIntent, IncomingRecord, Ledger, ReplyRecord, SendIntent
from tools.soak.truth import Truth

T0 = "2026-12-01T10:00:00.000000001Z"
T1 = "2026-12-01T10:00:07.500000000Z"


def phone(body: str, at: str = T0, resends: int = 0) -> dict[str, Any]:
    return {"id": f"wa-{body}-{at}", "instance": "demo-4", "body": body, "time": at, "resends": resends}


def view(message_id: str, status: str, reason: str | None = None) -> dict[str, Any]:
    return {"id": message_id, "status": status, "failureReason": reason}


def send(ledger: Ledger, text: str, *ids: str) -> SendIntent:
    intent = SendIntent(ledger.serial(), "default-wuzapi", "5521999990000", text, None, 0, set(ids), [202])
    ledger.add_send(intent)
    return intent


def quiet_line() -> dict[str, Any]:
    return {"occupancy": 0, "calls": [], "reservations": []}


def truth(**fields: Any) -> Truth:
    made = Truth(line=quiet_line(), sim_line={"occupancy": 0, "calls": []})
    for name, value in fields.items():
        setattr(made, name, value)
    return made


def test_sends_are_delivered_failed_with_a_reason_lost_doubled_or_stuck() -> None:
    ledger = Ledger()
    send(ledger, "delivered", "m1")
    send(ledger, "failed with a reason", "m2")
    send(ledger, "failed but on the phone", "m3")
    send(ledger, "sent on no phone", "m4")
    send(ledger, "failed without a reason", "m5")
    send(ledger, "unknown to the api", "m6")
    send(ledger, "still waiting", "m7")
    send(ledger, "twice on the phone", "m8")
    send(ledger, "two ids for one key", "m9", "m10")
    send(ledger, "never accepted")
    seen = truth(
        sim_sent=[
            phone("delivered"),
            phone("failed but on the phone"),
            phone("twice on the phone"),
            phone("twice on the phone", T1),
            phone("two ids for one key"),
            phone("delivered", resends=1) | {"body": "resent"},
        ],
        messages={
            "m1": view("m1", "DELIVERED"),
            "m2": view("m2", "FAILED", "no_number_available"),
            "m3": view("m3", "FAILED", "ambiguous_outcome"),
            "m4": view("m4", "SENT"),
            "m5": view("m5", "FAILED"),
            "m6": None,
            "m7": view("m7", "WAITING"),
            "m8": view("m8", "SENT"),
            "m10": view("m10", "SENT"),
        },
    )

    sends = account(ledger, seen)["sends"]

    assert (sends["accepted"], sends["neverAccepted"]) == (9, 1)
    assert (sends["delivered"], sends["failed"], sends["failedButReceived"]) == (3, 2, 1)
    assert sends["failures"] == {"no_number_available": 1, "ambiguous_outcome": 1}
    assert (sends["lost"], sends["doubled"], sends["stuck"], sends["resent"]) == (3, 2, 1, 1)
    assert sends["examples"]["doubled"][0].startswith(
        "s8 (default-wuzapi): 2 copies on the phone, the last 7.5 s after"
    )


def test_an_incoming_message_is_forwarded_ignored_lost_doubled_or_never_posted() -> None:
    ledger = Ledger()
    records = [
        IncomingRecord(1, "demo-4", "wuzapi", "text", "5531", message_id="w1", event_id="e1"),
        IncomingRecord(2, "demo-5", "evolution", "image", "5531", message_id="v1", event_id="e2"),
        IncomingRecord(3, "demo-1", "calls", "reaction", "5531", message_id="c1", event_id="e3"),
        IncomingRecord(4, "demo-6", "meta", "text", "5531", message_id="m1", event_id="e4"),
        IncomingRecord(5, "demo-4", "wuzapi", "text", "5531", message_id="w2", event_id="e5"),
        IncomingRecord(6, "demo-4", "wuzapi", "text", "5531", message_id="w3", event_id="e6"),
        IncomingRecord(7, "demo-2", "calls", "text", "5531", refused="not_connected"),
        IncomingRecord(8, "demo-3", "calls", "text", "5531", message_id="c2", event_id="e8"),
    ]
    for record in records:
        ledger.add_incoming(record)
    seen = truth(
        forwarded=Counter({"w1": 1, "m1": 2}),
        arrivals={"m1": [100.0, 281.5]},
        events={
            "v1": {"status": "ignored", "reason": "imageMessage message"},
            "e3": {"status": "ignored", "reason": "not a text message"},  # the calls envelope: by eventId
            "w3": {"status": "applied"},
        },
        posted={"e8": False},
    )

    incoming = account(ledger, seen)["incoming"]

    assert (incoming["posted"], incoming["forwarded"], incoming["ignored"]) == (6, 1, 2)
    assert (incoming["lost"], incoming["doubled"], incoming["notPostedByProvider"]) == (2, 1, 1)
    assert incoming["refusedByProvider"] == {"not_connected": 1}
    assert incoming["examples"]["lost"] == [
        "i5 text via demo-4 (wuzapi): never accepted",
        "i6 text via demo-4 (wuzapi): recorded applied, never forwarded",
    ]
    assert incoming["examples"]["doubled"] == [
        "i4 text via demo-6 (meta): forwarded 2 times, the last 181.5 s after the first, redelivered 0"
    ]


def test_a_reply_is_sent_failed_refused_stuck_lost_or_doubled() -> None:
    ledger = Ledger()
    answers = {
        "sent": ["200 SENT"],
        "failed": ["200 PENDING"],
        "refused": ["401"],
        "stuck": ["200 PENDING"],
        "lost": ["200 SENT"],
        "twice": ["200 SENT", "200 SENT"],
    }
    for index, (text, said) in enumerate(answers.items()):
        ledger.add_reply(ReplyRecord(index, "demo-5", "evolution", 9000 + index, "5531", text, said))
    seen = truth(
        sim_sent=[phone("sent"), phone("twice"), phone("twice", T1)],
        reply_outcomes={
            "9001": {"status": "FAILED", "reason": "expired"},
            "9003": {"status": "PENDING"},
            "9004": {"status": "SENT"},
        },
    )

    replies = account(ledger, seen)["replies"]

    assert (replies["sent"], replies["failed"], replies["refused"]) == (1, 1, 1)
    assert (replies["stuck"], replies["lost"], replies["doubled"]) == (1, 1, 1)
    assert replies["failures"] == {"expired": 1}


def test_slot_drift_is_the_gap_between_the_line_and_the_provider_and_fails_the_soak() -> None:
    ledger = Ledger()
    ledger.add_dial(DialIntent(1, "a1", "5541", "k1", [201], {"CALL1"}, {"res-1"}, copies=1, outcome="connected"))
    ledger.add_dial(DialIntent(2, "a2", "5542", "k2", [201, 201], {"CALL2"}, {"res-2"}, 2, "connected"))
    leaking = truth(
        line={"occupancy": 1, "calls": [], "reservations": [{"id": "res-2", "state": "reserved", "since": "t"}]},
        sim_line={"occupancy": 0, "calls": [{"callId": "CALL1", "state": "ended"}]},
        call_history=[{"to": "5542", "direction": "outgoing"}, {"to": "5542", "direction": "outgoing"}],
    )

    figures = account(ledger, leaking)

    assert figures["calls"]["slotDrift"] == 1 and figures["calls"]["lineReservations"] == 1
    assert figures["calls"]["examples"]["drifting"] == [
        "reserved res-2 (call None) since t, not at the provider: dial d2 (2 at once under one key, "
        "answers [201, 201], calls ['CALL2'])"
    ]
    assert figures["calls"]["doubled"] == 1 and figures["calls"]["replayed"] == 1
    assert figures["totals"] == {"lost": 0, "doubled": 1, "stuck": 0, "slotDrift": 1}
    assert failing(figures)


def test_nothing_lost_doubled_stuck_or_drifting_passes_even_with_failures_and_dead_letters() -> None:
    ledger = Ledger()
    send(ledger, "failed", "m1")
    seen = truth(
        messages={"m1": view("m1", "FAILED", "expired")},
        queues={"SendDLQ": {"visible": 1, "inFlight": 0, "delayed": 0}},
    )

    figures = account(ledger, seen)

    assert figures["dlq"] == {"SendDLQ": 1}
    assert not failing(figures)
