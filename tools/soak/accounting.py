"""What was lost, doubled or stuck: the ledger (what the soak asked for and was told) against the
truth (what the phones, the helpdesk and the API say at the end). Pure functions.

Sends (one intent = one unique text, maybe retried under one Idempotency-Key):
- doubled: the recipients' phones show the text as more than one WhatsApp message, or one intent
  got two message ids;
- lost: accepted (202), then unknown to the API, or SENT/DELIVERED/READ while no phone got it, or
  FAILED without a reason;
- stuck: still QUEUED, SENDING or WAITING after the drain;
- failed (with its reason) is an outcome the client was told, not a loss; `failedButReceived`
  counts those a phone got all the same (an ambiguous provider answer: the price of no copies).

Incoming (one per message the provider posted; redeliveries are the same message):
- doubled: Chatwoot got it more than once; lost: never forwarded and not recorded ignored;
  ignored: recorded ignored with its reason (media, locations and reactions today).

Replies (one per Chatwoot message id, maybe posted twice):
- doubled: the phone shows it more than once; stuck: still in the outbox; lost: accepted and
  neither sent nor FAILED with a reason.

Calls: a dial intent the provider saw as two calls is doubled; slot drift is the difference
between the line's occupancy in switchboard and the live calls plus reservations at the provider.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

from tools.soak.ledger import Ledger
from tools.soak.truth import Truth

NOT_TERMINAL = frozenset({"QUEUED", "SENDING", "WAITING"})
DELIVERED = frozenset({"SENT", "DELIVERED", "READ"})
EXAMPLES = 5


def account(ledger: Ledger, truth: Truth) -> dict[str, Any]:
    copies = Counter(message["body"] for message in truth.sim_sent)
    sent_at: dict[str, list[float]] = {}
    for message in truth.sim_sent:
        sent_at.setdefault(message["body"], []).append(_seconds(message["time"]))
    figures: dict[str, Any] = {
        "sends": _sends(ledger, truth, copies, sent_at),
        "incoming": _incoming(ledger, truth),
        "replies": _replies(ledger, truth, copies, sent_at),
        "calls": _calls(ledger, truth),
    }
    figures["outboxLeft"] = truth.outbox_left
    figures["dlq"] = {name: sum(depth.values()) for name, depth in truth.queues.items() if name.endswith("DLQ")}
    figures["queuesLeft"] = {
        name: sum(depth.values()) for name, depth in truth.queues.items() if not name.endswith("DLQ")
    }
    figures["totals"] = {
        "lost": sum(figures[part]["lost"] for part in ("sends", "incoming", "replies")),
        "doubled": sum(figures[part]["doubled"] for part in ("sends", "incoming", "replies", "calls")),
        "stuck": figures["sends"]["stuck"] + figures["replies"]["stuck"],
        "slotDrift": figures["calls"]["slotDrift"],
    }
    return figures


def failing(figures: dict[str, Any]) -> bool:
    """Anything lost, doubled, stuck or drifting: the soak fails."""
    return any(figures["totals"][name] for name in ("lost", "doubled", "stuck", "slotDrift"))


def _seconds(rfc3339: str) -> float:
    """The simulator's RFC 3339 time (nanoseconds) as epoch seconds (microseconds kept)."""
    whole, _, rest = rfc3339.rstrip("Z").partition(".")
    return datetime.fromisoformat(f"{whole}.{(rest or '0')[:6]:0<6}+00:00").timestamp()


def _gap(moments: list[float]) -> str:
    """How long after the first copy the last one came."""
    if len(moments) < 2:
        return ""
    return f", the last {max(moments) - min(moments):.1f} s after the first"


def _sends(ledger: Ledger, truth: Truth, copies: Counter[str], sent_at: dict[str, list[float]]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "intents": len(ledger.sends),
        "accepted": 0,
        "delivered": 0,
        "failed": 0,
        "lost": 0,
        "doubled": 0,
        "stuck": 0,
        "neverAccepted": 0,
        "failedButReceived": 0,
        "resent": sum(1 for message in truth.sim_sent if message.get("resends")),
        "failures": Counter[str](),
        "statuses": Counter[str](),
        "examples": {"lost": [], "doubled": [], "stuck": []},
    }
    for intent in ledger.sends:
        on_phones = copies.get(intent.text, 0)
        if on_phones > 1 or len(intent.ids) > 1:
            _example(
                result,
                "doubled",
                f"s{intent.serial} ({intent.key}): {on_phones} copies on the phone{_gap(sent_at.get(intent.text, []))}"
                f", ids {sorted(intent.ids)}, answers {intent.answers}",
            )
        if not intent.ids:
            result["neverAccepted"] += 1  # the client was told no (or nothing): not ours to deliver
            continue
        result["accepted"] += 1
        view = truth.messages.get(sorted(intent.ids)[0])
        if view is None:
            _example(result, "lost", f"s{intent.serial}: accepted, unknown to the API")
            continue
        status = view["status"]
        result["statuses"][status] += 1
        if status in NOT_TERMINAL:
            _example(result, "stuck", f"s{intent.serial} {view['id']}: {status} ({intent.key})")
        elif status in DELIVERED:
            if on_phones:
                result["delivered"] += 1
            else:
                _example(result, "lost", f"s{intent.serial} {view['id']}: {status}, on no phone")
        elif not view.get("failureReason"):
            _example(result, "lost", f"s{intent.serial} {view['id']}: FAILED without a reason")
        else:
            result["failed"] += 1
            result["failures"][view["failureReason"]] += 1
            result["failedButReceived"] += bool(on_phones)
    return result


def _incoming(ledger: Ledger, truth: Truth) -> dict[str, Any]:
    result: dict[str, Any] = {
        "posted": 0,
        "refusedByProvider": Counter[str](),
        "notPostedByProvider": 0,
        "forwarded": 0,
        "ignored": 0,
        "lost": 0,
        "doubled": 0,
        "redelivered": 0,
        "byKind": {},
        "ignoredReasons": Counter[str](),
        "examples": {"lost": [], "doubled": [], "textIgnored": []},
    }
    for record in ledger.incoming:
        if record.message_id is None:
            result["refusedByProvider"][record.refused or "?"] += 1
            continue
        if truth.posted.get(str(record.event_id)) is False:
            result["notPostedByProvider"] += 1  # no webhook subscribed to it: nothing reached us
            continue
        result["posted"] += 1
        result["redelivered"] += record.redelivered
        kind = result["byKind"].setdefault(record.kind, Counter())
        kind["posted"] += 1
        times = truth.forwarded.get(record.message_id, 0)
        # The calls server's envelope names the event by its eventId; the others by the message id.
        event = truth.events.get(str(record.event_id if record.flavour == "calls" else record.message_id))
        label = f"i{record.serial} {record.kind} via {record.instance} ({record.flavour})"
        if times > 1:
            gap = _gap(truth.arrivals.get(record.message_id, []))
            _example(result, "doubled", f"{label}: forwarded {times} times{gap}, redelivered {record.redelivered}")
            kind["doubled"] += 1
        elif times == 1:
            result["forwarded"] += 1
            kind["forwarded"] += 1
        elif event is not None and event.get("status") == "ignored":
            result["ignored"] += 1
            kind["ignored"] += 1
            result["ignoredReasons"][str(event.get("reason"))] += 1
            if record.kind == "text":
                result["examples"]["textIgnored"].append(f"{label}: {event.get('reason')}")
        else:
            state = "never accepted" if event is None else f"recorded {event.get('status')}, never forwarded"
            _example(result, "lost", f"{label}: {state}")
            kind["lost"] += 1
    return result


def _replies(ledger: Ledger, truth: Truth, copies: Counter[str], sent_at: dict[str, list[float]]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "replies": len(ledger.replies),
        "sent": 0,
        "failed": 0,
        "refused": 0,
        "lost": 0,
        "doubled": 0,
        "stuck": 0,
        "answers": Counter[str](),
        "failures": Counter[str](),
        "byFlavour": {},
        "examples": {"lost": [], "doubled": [], "stuck": []},
    }
    for record in ledger.replies:
        for answer in record.answers:
            result["answers"][answer] += 1
        flavour = result["byFlavour"].setdefault(record.flavour, Counter())
        on_phones = copies.get(record.text, 0)
        outcome = truth.reply_outcomes.get(str(record.chatwoot_id)) or {}
        label = f"r{record.serial} via {record.instance} ({record.flavour})"
        if on_phones > 1:
            gap = _gap(sent_at.get(record.text, []))
            _example(result, "doubled", f"{label}: {on_phones} copies on the phone{gap}, answers {record.answers}")
            flavour["doubled"] += 1
        elif on_phones == 1:
            result["sent"] += 1
            flavour["sent"] += 1
        elif not any(answer.startswith("200") for answer in record.answers):
            result["refused"] += 1  # the helpdesk was told no: Chatwoot keeps the reply as failed
            flavour["refused"] += 1
        elif outcome.get("status") == "FAILED" and outcome.get("reason"):
            result["failed"] += 1
            result["failures"][str(outcome["reason"])] += 1
            flavour["failed"] += 1
        elif outcome.get("status") in ("PENDING", "SENDING"):
            _example(result, "stuck", f"{label}: {outcome.get('status')} in the outbox")
            flavour["stuck"] += 1
        else:
            _example(result, "lost", f"{label}: answered {record.answers}, outcome {outcome or 'none'}, on no phone")
            flavour["lost"] += 1
    return result


def _calls(ledger: Ledger, truth: Truth) -> dict[str, Any]:
    outgoing = Counter(call["to"] for call in truth.call_history if call.get("direction") == "outgoing")
    result: dict[str, Any] = {
        "dials": len(ledger.dials),
        "outcomes": Counter(intent.outcome for intent in ledger.dials),
        "replayed": sum(1 for intent in ledger.dials if len(intent.answers) > 1),
        "doubled": 0,
        "drifting": 0,
        "examples": {"doubled": [], "drifting": []},
    }
    for intent in ledger.dials:
        if outgoing.get(intent.to, 0) > 1 or len(intent.call_ids) > 1:
            _example(result, "doubled", f"d{intent.serial}: {outgoing.get(intent.to, 0)} calls at the provider")
    live_at_provider = [call for call in truth.sim_line.get("calls", []) if call.get("state") != "ended"]
    provider_occupancy = int(truth.sim_line.get("occupancy", len(live_at_provider)))
    occupancy = truth.line.get("occupancy")
    result["lineOccupancy"] = occupancy
    result["providerOccupancy"] = provider_occupancy
    result["lineCalls"] = [call.get("callId") for call in truth.line.get("calls", [])]
    result["lineReservations"] = len(truth.line.get("reservations", []))
    result["providerLiveCalls"] = [call.get("callId") for call in live_at_provider]
    result["slotDrift"] = abs(int(occupancy) - provider_occupancy) if isinstance(occupancy, int) else 1
    live = {call.get("callId") for call in live_at_provider}
    by_reservation = {reservation: intent for intent in ledger.dials for reservation in intent.reservations}
    for occupant in [*truth.line.get("calls", []), *truth.line.get("reservations", [])]:
        if occupant.get("callId") in live:
            continue
        dial = by_reservation.get(str(occupant.get("id")))
        origin = (
            f"dial d{dial.serial} ({dial.copies} at once under one key, answers {dial.answers}, "
            f"calls {sorted(dial.call_ids)})"
            if dial
            else "no dial of the soak names it"
        )
        _example(
            result,
            "drifting",
            f"{occupant.get('state')} {occupant.get('id')} (call {occupant.get('callId')}) since "
            f"{occupant.get('since')}, not at the provider: {origin}",
        )
    return result


def _example(result: dict[str, Any], kind: str, text: str) -> None:
    result[kind] += 1
    if len(result["examples"][kind]) < EXAMPLES:
        result["examples"][kind].append(text)
