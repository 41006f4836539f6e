"""The soak's figures as a short table (stdout) and as JSON (a file a note can quote)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MB = 1024 * 1024


def table(report: dict[str, Any]) -> str:
    figures = report["figures"]
    sends, incoming, replies, calls = (figures[part] for part in ("sends", "incoming", "replies", "calls"))
    memory = report["memory"]
    totals = figures["totals"]
    rows = [
        ("messages lost", totals["lost"], _split(sends["lost"], incoming["lost"], replies["lost"])),
        (
            "messages doubled",
            totals["doubled"],
            _split(sends["doubled"], incoming["doubled"], replies["doubled"]) + f", dials {calls['doubled']}",
        ),
        ("messages stuck", totals["stuck"], f"sends {sends['stuck']}, replies {replies['stuck']}"),
        (
            "slot drift",
            totals["slotDrift"],
            f"line {calls['lineOccupancy']} vs provider {calls['providerOccupancy']} after the drain",
        ),
        ("outbox left", figures["outboxLeft"], "replies waiting for their instance"),
        ("DLQ depth", sum(figures["dlq"].values()), _pairs(figures["dlq"])),
        (
            "queues left",
            sum(depth for name, depth in figures["queuesLeft"].items() if name != "ReconcileQueue"),
            f"{_pairs(figures['queuesLeft'])}: the reconcile queue refills every period and is not counted",
        ),
        (
            "stack RSS MB",
            f"{memory['readyMb']:.0f} / {memory['warmMb']:.0f} / {memory['endMb']:.0f}",
            f"ready / after warm-up / end (peak {memory['peakMb']:.0f}; end vs warm-up "
            f"{memory['endVsWarmPercent']:+.1f} %; function containers {memory['containers']['ready']} / "
            f"{memory['containers']['warm']} / {memory['containers']['end']})",
        ),
        (
            "store MB",
            f"{memory['store']['mb']['warm']:.0f} / {memory['store']['mb']['end']:.0f}",
            f"moto's DynamoDB objects after warm-up / end ({memory['store']['items']['warm']} / "
            f"{memory['store']['items']['end']} items; {memory['store'].get('expired', 0)} expired and deleted); "
            f"the rest of the stack end vs warm-up "
            f"{memory['endVsWarmWithoutStorePercent']:+.1f} % (transaction backup: {memory['transactionBackup']})",
        ),
        (
            "heap MB",
            f"{memory['heap']['warm']['liveMb']:.0f} / {memory['heap']['end']['liveMb']:.0f}",
            f"live objects after warm-up / end (Python's and the C libraries'; end vs warm-up "
            f"{memory['heap']['endVsWarmLivePercent']:+.1f} %, the store's objects included); the allocators "
            f"held {memory['heap']['warm']['slackMb']:.0f} / {memory['heap']['end']['slackMb']:.0f} more",
        ),
    ]
    width = max(len(name) for name, _, _ in rows)
    lines = [
        f"soak: {report['minutes']:g} min of traffic, drain {report['drain']['seconds']:.0f} s"
        f" ({'settled' if report['drain']['settled'] else 'not settled'})"
    ]
    lines += [f"  {name:<{width}}  {value!s:>9}  {detail}" for name, value, detail in rows]
    lines += [
        "  traffic:",
        f"    sends     {sends['intents']} intents, {sends['accepted']} accepted: {sends['delivered']} delivered, "
        f"{sends['failed']} failed {_pairs(sends['failures'])}, {sends['neverAccepted']} never accepted, "
        f"{sends['failedButReceived']} failed but received, {sends['resent']} resent under the same id",
        f"    incoming  {incoming['posted']} posted: {incoming['forwarded']} forwarded, {incoming['ignored']} ignored"
        f" {_pairs(incoming['ignoredReasons'])}, {incoming['redelivered']} redelivered;"
        f" refused by the provider {_pairs(incoming['refusedByProvider'])}",
        f"    replies   {replies['replies']}: {replies['sent']} sent, {replies['failed']} failed"
        f" {_pairs(replies['failures'])}, {replies['refused']} refused",
        f"    calls     {calls['dials']} dials {_pairs(calls['outcomes'])}, {calls['replayed']} with replays",
        f"    faults    {_pairs(report['chaos'])}",
    ]
    shown = [
        f"    {part} {kind}: {example}"
        for part in ("sends", "incoming", "replies", "calls")
        for kind in ("lost", "doubled", "stuck", "drifting")
        for example in figures[part]["examples"].get(kind, [])[:2]
    ]
    if shown:
        lines += ["  examples (all in the JSON):", *shown]
    return "\n".join(lines)


def _split(sends: int, incoming: int, replies: int) -> str:
    return f"sends {sends}, incoming {incoming}, replies {replies}"


def _pairs(values: dict[str, Any]) -> str:
    shown = ", ".join(f"{name} {value}" for name, value in sorted(values.items()) if value)
    return f"({shown})" if shown else "(none)"


def write_json(report: dict[str, Any], path: Path, secrets: set[str]) -> None:
    """The figures as JSON; a secret that slipped into them (an answer's text) is cut out first."""
    text = json.dumps(report, indent=2, sort_keys=True, default=str)
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "<secret>")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def megabytes(value: int) -> float:
    return value / MB
