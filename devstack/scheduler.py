"""EventBridge schedules, locally: every `Schedule`/`ScheduleV2` event of template.yaml invokes
its function once per `rate(...)` period with the event EventBridge sends (or the event's
`Input`). `LOCAL_SCHEDULE_SECONDS` (the `period_override` here) replaces every period, for demos.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from devstack.background import Background
from devstack.lambdas import Functions, FunctionsStopped
from devstack.template import Intrinsic, parameter_defaults

log = logging.getLogger("devstack.scheduler")

RATE = re.compile(r"^rate\(\s*(\d+)\s+(minute|minutes|hour|hours|day|days)\s*\)$")
UNIT_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}


@dataclass(frozen=True)
class Schedule:
    function: str
    name: str
    expression: str
    period: float
    input: str | None
    source: str


def rate_seconds(expression: str) -> float:
    """Seconds of a `rate(N unit)` expression; a cron needs `period_override` locally."""
    found = RATE.match(expression.strip())
    if not found:
        raise ValueError(f"the local scheduler runs rate(...) expressions only, not {expression!r}")
    return int(found.group(1)) * UNIT_SECONDS[found.group(2).rstrip("s")]


def schedules(functions: Functions, period_override: float | None = None) -> list[Schedule]:
    """Every enabled schedule event of the template's functions."""
    defaults = parameter_defaults(functions.path)
    found = []
    for function in functions.names():
        for name, event in (functions.definition(function).get("Events") or {}).items():
            kind = event.get("Type")
            properties = event.get("Properties") or {}
            if kind not in ("Schedule", "ScheduleV2"):
                continue
            if properties.get("Enabled") is False or properties.get("State") == "DISABLED":
                continue
            expression = properties.get("Schedule" if kind == "Schedule" else "ScheduleExpression")
            if isinstance(expression, Intrinsic) and expression.name == "Ref":
                expression = defaults[expression.value]
            found.append(
                Schedule(
                    function=function,
                    name=name,
                    expression=str(expression),
                    period=period_override if period_override else rate_seconds(str(expression)),
                    input=properties.get("Input"),
                    source="aws.scheduler" if kind == "ScheduleV2" else "aws.events",
                )
            )
    return found


def scheduled_event(schedule: Schedule, region: str = "us-east-1", account: str = "000000000000") -> Any:
    """What EventBridge delivers: the rule's `Input` if set, else the Scheduled Event."""
    if schedule.input is not None:
        return json.loads(schedule.input)
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": schedule.source,
        "account": account,
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [f"arn:aws:events:{region}:{account}:rule/{schedule.function}-{schedule.name}"],
        "detail": {},
    }


class Scheduler:
    """One thread per schedule: wait a period, invoke, repeat, until `stop()`."""

    def __init__(self, functions: Functions, *, period_override: float | None = None, region: str = "us-east-1"):
        self._functions = functions
        self._region = region
        self.schedules = schedules(functions, period_override)
        self._threads = Background()
        self._stopping = self._threads.stopping
        for schedule in self.schedules:
            self._threads.add(self._run, schedule, name=f"schedule-{schedule.function}")

    def start(self) -> Scheduler:
        self._threads.start()
        return self

    def request_stop(self) -> None:
        """No new scheduled invocation from now on."""
        self._threads.request_stop()

    def stop(self, timeout: float = 60) -> None:
        """Stop the schedules; waits up to `timeout` seconds for an invocation in flight."""
        self._threads.stop(timeout)

    def _run(self, schedule: Schedule) -> None:
        while not self._stopping.wait(schedule.period):
            try:
                self._functions.invoke(schedule.function, scheduled_event(schedule, self._region))
            except FunctionsStopped:
                return
            except Exception:
                log.exception("scheduled invocation failed", extra={"function": schedule.function})
