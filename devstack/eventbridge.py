"""EventBridge rules, locally: events put on a local bus reach the functions whose rules match
them, as Lambda async invocations, and the queues, as SQS messages, with the event EventBridge
delivers.

The rules come from template.yaml: SAM `EventBridgeRule` (and `CloudWatchEvent`) events of the
functions, and plain `AWS::Events::Rule` resources whose targets are functions or queues of the
template.
A rule's `Pattern`/`EventPattern` is matched by `matches` (EventBridge content filtering: exact
values, `prefix`, `suffix`, `equals-ignore-case`, `anything-but`, `exists`, `numeric`,
`wildcard`, `cidr`, `$or`, nested objects, arrays matching when any element does); `Input` and a
plain `InputPath` replace the delivered event as EventBridge does.

Where the events are seen: `AwsEndpoint` hands every `AWSEvents.PutEvents` request and moto's
answer to `EventRouter.observe`, inside the endpoint's one-request-at-a-time lock. That was
chosen over rules and targets created in moto (moto delivers to SQS targets that a poller would
then read) because: the accepted entries and their event ids are read from moto's own answer, so
an entry moto refused is never delivered; the matching is ours, the same code the unit tests
check, rather than moto's partial implementation of patterns; delivery starts without a polling
delay; and since the observer runs under the endpoint's lock, events are queued in exactly the
order the bus accepted them. The cost: with an external AWS endpoint (`AWS_ENDPOINT_URL`) the
local stack does not see PutEvents, and rules are not run (the stack says so in its notes).

Delivery is an async invocation: `PutEvents` answers without waiting for the targets. Each
target function has one delivery thread taking events in the order they were accepted; a failed
invocation is retried after `retry_delays` (Lambda's async invocation: two retries, about one
and two minutes later, or the function's `EventInvokeConfig.MaximumRetryAttempts`) without
holding back the events queued behind it, then logged and dropped. Lambda runs async
invocations of one function concurrently and without order; one thread per function is the
simpler, stricter local choice.

A queue target gets the event (or what `Input`/`InputPath` make of it) as the body of one
SendMessage, sent by the `send` the router is given (the local stack's: through its AWS endpoint,
where its SQS pollers find it). A failed send is retried after the same delays, then the event
goes to the target's `DeadLetterConfig` queue when it has one (EventBridge retries for up to a
day first; locally the retries are the async invocation's), else it is logged and dropped.
"""

from __future__ import annotations

import fnmatch
import heapq
import ipaddress
import itertools
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from devstack import template
from devstack.background import Background
from devstack.lambdas import Functions, FunctionsStopped
from devstack.template import Intrinsic, LocalNames, Unresolvable

log = logging.getLogger("devstack.eventbridge")

PUT_EVENTS_TARGET = "AWSEvents.PutEvents"
DEFAULT_BUS = "default"
RETRY_DELAYS = (60.0, 120.0)  # Lambda async invocation: two retries, about 1 and 2 minutes apart
ACCOUNT = "000000000000"
RULE_EVENT_TYPES = ("EventBridgeRule", "CloudWatchEvent")


class PatternError(ValueError):
    """An event pattern EventBridge would refuse."""


# --- the rules of the template ----------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    name: str
    function: str  # the target function's logical id; "" for a queue target
    bus: str  # the local bus name
    pattern: dict[str, Any]
    input: Any = None  # the constant event `Input` replaces the event with
    input_path: str | None = None
    retries: int = 2
    queue: str | None = None  # the target queue's logical id
    dead_letter: str | None = None  # the queue an event the target never took goes to

    @property
    def target(self) -> str:
        """What one delivery thread serves: a function, or a queue (`queue:<logical id>`)."""
        return f"queue:{self.queue}" if self.queue else self.function


def _resolve(value: Any, refs: dict[str, str], names: LocalNames) -> Any:
    """Template values in a pattern or bus name: `!Ref` of parameters and buses, `!Sub` of pseudo parameters."""
    if isinstance(value, Intrinsic):
        if value.name == "Ref" and str(value.value) in refs:
            return refs[str(value.value)]
        if value.name == "GetAtt":
            target = template.ref_target(value)
            if target in refs:
                return refs[target]
        if value.name == "Sub":
            return template.substitute(value, names)
        raise Unresolvable(f"cannot resolve {value!r} locally")
    if isinstance(value, dict):
        return {key: _resolve(item, refs, names) for key, item in value.items()}
    if isinstance(value, list):
        return [_resolve(item, refs, names) for item in value]
    return value


def _retries(properties: dict[str, Any]) -> int:
    config = properties.get("EventInvokeConfig") or {}
    return int(config.get("MaximumRetryAttempts", 2))


def rules(functions: Functions, buses: dict[str, str], names: LocalNames, notes: list[str] | None = None) -> list[Rule]:
    """Every enabled rule of the template that targets one of its functions.

    `buses` maps bus logical ids to local bus names. A rule the local stack cannot resolve is
    left out, and said in `notes`.
    """
    refs = {**{name: str(value) for name, value in template.parameter_defaults(functions.path).items()}, **buses}
    skipped: list[str] = []
    found = _function_rules(functions, refs, names, skipped) + _rule_resources(
        functions.path, functions, refs, names, skipped
    )
    for rule in found:
        check_pattern(rule.pattern)
    if notes is not None:
        notes.extend(f"event rule not run locally: {reason}" for reason in skipped)
    return found


def _function_rules(functions: Functions, refs: dict[str, str], names: LocalNames, skipped: list[str]) -> list[Rule]:
    """SAM `EventBridgeRule` / `CloudWatchEvent` events of the functions."""
    found = []
    for function in functions.names():
        properties = functions.definition(function)
        for event_name, event in (properties.get("Events") or {}).items():
            rule = event.get("Properties") or {}
            if event.get("Type") not in RULE_EVENT_TYPES or rule.get("Enabled") is False:
                continue
            if rule.get("State") == "DISABLED":
                continue
            try:
                found.append(
                    Rule(
                        name=f"{function}-{event_name}",
                        function=function,
                        bus=str(_resolve(rule.get("EventBusName", DEFAULT_BUS), refs, names)),
                        pattern=_resolve(rule["Pattern"], refs, names),
                        input=json.loads(rule["Input"]) if "Input" in rule else None,
                        input_path=rule.get("InputPath"),
                        retries=_retries(properties),
                    )
                )
            except (Unresolvable, KeyError, ValueError) as error:
                skipped.append(f"{function}.{event_name}: {error}")
    return found


def queue_rules(buses: dict[str, str], names: LocalNames, path: Path = template.TEMPLATE) -> list[Rule]:
    """The template's rules whose targets are its queues (what an in-process run without the
    functions' rules needs, as in tests/support/bus.py)."""
    refs = {**{name: str(value) for name, value in template.parameter_defaults(path).items()}, **buses}
    found = _rule_resources(path, None, refs, names, [])
    for rule in found:
        check_pattern(rule.pattern)
    return found


def _rule_resources(
    path: Path, functions: Functions | None, refs: dict[str, str], names: LocalNames, skipped: list[str]
) -> list[Rule]:
    """Plain `AWS::Events::Rule` resources, for their targets that are functions (when `functions`
    is given) or queues of the template."""
    found = []
    targets = set(functions.names()) if functions is not None else set()
    queues = set(template.resources("AWS::SQS::Queue", path))
    for rule_id, rule in template.resources("AWS::Events::Rule", path).items():
        if rule.get("State") == "DISABLED" or "EventPattern" not in rule:
            continue
        for target in rule.get("Targets") or []:
            try:
                resource = template.ref_target(target.get("Arn"))
            except Unresolvable:
                continue
            if resource not in targets and resource not in queues:
                continue
            is_queue = resource in queues
            try:
                found.append(
                    Rule(
                        name=f"{rule_id}-{target.get('Id', resource)}",
                        function="" if is_queue else resource,
                        bus=str(_resolve(rule.get("EventBusName", DEFAULT_BUS), refs, names)),
                        pattern=_resolve(rule["EventPattern"], refs, names),
                        input=json.loads(target["Input"]) if "Input" in target else None,
                        input_path=target.get("InputPath"),
                        retries=_target_retries(target)
                        if is_queue or functions is None
                        else _retries(functions.definition(resource)),
                        queue=resource if is_queue else None,
                        dead_letter=_dead_letter(target),
                    )
                )
            except (Unresolvable, ValueError) as error:
                skipped.append(f"{rule_id}: {error}")
    return found


def _target_retries(target: dict[str, Any]) -> int:
    """A queue target's retries: its `RetryPolicy` (EventBridge's default is 185)."""
    return int((target.get("RetryPolicy") or {}).get("MaximumRetryAttempts", 185))


def _dead_letter(target: dict[str, Any]) -> str | None:
    """The logical id of a target's `DeadLetterConfig` queue (`!GetAtt <queue>.Arn`)."""
    config = target.get("DeadLetterConfig") or {}
    if "Arn" not in config:
        return None
    return template.ref_target(config["Arn"])


# --- content filtering ------------------------------------------------------------------------

_MISSING = object()
_OPERATORS: dict[str, Callable[[float, float], bool]] = {
    "=": lambda a, b: a == b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}
_MATCHERS = {"prefix", "suffix", "equals-ignore-case", "anything-but", "exists", "numeric", "wildcard", "cidr"}


def check_pattern(pattern: Any) -> None:
    """Raise `PatternError` for what EventBridge refuses: leaves must be arrays, objects nest."""
    if not isinstance(pattern, dict) or not pattern:
        raise PatternError(f"an event pattern is a non-empty object, not {pattern!r}")
    for key, value in pattern.items():
        if key == "$or":
            if not isinstance(value, list) or len(value) < 2:
                raise PatternError("$or takes a list of at least two patterns")
            for alternative in value:
                check_pattern(alternative)
        elif isinstance(value, dict):
            check_pattern(value)
        elif isinstance(value, list):
            for matcher in value:
                if isinstance(matcher, dict) and (len(matcher) != 1 or next(iter(matcher)) not in _MATCHERS):
                    raise PatternError(f"unknown matcher {matcher!r} for {key!r}")
        else:
            raise PatternError(f"{key!r}: a pattern leaf is an array of matchers, not {value!r}")


def matches(pattern: dict[str, Any], event: Any) -> bool:
    """Whether `event` (an EventBridge event, or a part of one) matches `pattern`: every field
    of the pattern matches (a field with an array of matchers: any of them)."""
    for key, expected in pattern.items():
        if key == "$or":
            if not any(matches(alternative, event) for alternative in expected):
                return False
            continue
        value = event.get(key, _MISSING) if isinstance(event, dict) else _MISSING
        if isinstance(expected, dict):
            if value is _MISSING:
                value = {}
            candidates = value if isinstance(value, list) else [value]
            if not any(isinstance(candidate, dict) and matches(expected, candidate) for candidate in candidates):
                return False
        elif not _field_matches(expected, value):
            return False
    return True


def _field_matches(matchers: list[Any], value: Any) -> bool:
    values = [] if value is _MISSING else (value if isinstance(value, list) else [value])
    leaves = [item for item in values if not isinstance(item, dict | list)]
    return any(_matcher_matches(matcher, value is not _MISSING and bool(leaves), leaves) for matcher in matchers)


def _matcher_matches(matcher: Any, present: bool, values: list[Any]) -> bool:
    if not isinstance(matcher, dict):
        return any(_equal(matcher, value) for value in values)
    (kind, argument), *_ = matcher.items()
    if kind == "exists":
        return present == bool(argument)
    if not present:
        return False
    if kind == "anything-but":
        return any(not _anything_but_excludes(argument, value) for value in values)
    return any(_test(kind, argument, value) for value in values)


def _equal(expected: Any, value: Any) -> bool:
    if expected is None or value is None:
        return expected is None and value is None
    if isinstance(expected, bool) or isinstance(value, bool):
        return isinstance(expected, bool) and isinstance(value, bool) and expected == value
    if _is_number(expected) and _is_number(value):
        return float(expected) == float(value)
    return type(expected) is type(value) and expected == value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _string_test(kind: str, argument: Any, value: Any) -> bool:
    if not isinstance(value, str):
        return False
    ignore_case = isinstance(argument, dict) and "equals-ignore-case" in argument
    text = argument["equals-ignore-case"] if ignore_case else argument
    if not isinstance(text, str):
        return False
    subject, wanted = (value.lower(), text.lower()) if ignore_case else (value, text)
    return subject.startswith(wanted) if kind == "prefix" else subject.endswith(wanted)


def _test(kind: str, argument: Any, value: Any) -> bool:
    if kind in ("prefix", "suffix"):
        return _string_test(kind, argument, value)
    if kind == "equals-ignore-case":
        return isinstance(value, str) and isinstance(argument, str) and value.lower() == argument.lower()
    if kind == "wildcard":
        return isinstance(value, str) and _wildcard(str(argument), value)
    if kind == "numeric":
        return _is_number(value) and _numeric(argument, float(value))
    if kind == "cidr":
        try:
            return ipaddress.ip_address(str(value)) in ipaddress.ip_network(str(argument), strict=False)
        except ValueError:
            return False
    raise PatternError(f"unknown matcher {kind!r}")


def _wildcard(pattern: str, value: str) -> bool:
    """`*` matches any run of characters; nothing else is special (unlike fnmatch's `?` and `[`)."""
    escaped = "*".join(part.replace("[", "[[]").replace("?", "[?]") for part in pattern.split("*"))
    return fnmatch.fnmatchcase(value, escaped)


def _numeric(conditions: list[Any], value: float) -> bool:
    if len(conditions) % 2:
        raise PatternError(f"numeric takes operator/number pairs, not {conditions!r}")
    for operator, bound in zip(conditions[::2], conditions[1::2], strict=True):
        if operator not in _OPERATORS or not _is_number(bound):
            raise PatternError(f"numeric: bad condition {operator!r} {bound!r}")
        if not _OPERATORS[operator](value, float(bound)):
            return False
    return True


def _anything_but_excludes(argument: Any, value: Any) -> bool:
    """Whether `value` is one of the values `anything-but` excludes."""
    if isinstance(argument, dict):
        (kind, inner), *_ = argument.items()
        if kind == "equals-ignore-case":
            options = inner if isinstance(inner, list) else [inner]
            return isinstance(value, str) and value.lower() in [str(option).lower() for option in options]
        if kind in ("prefix", "suffix", "wildcard"):
            options = inner if isinstance(inner, list) else [inner]
            return any(_test(kind, option, value) for option in options)
        raise PatternError(f"anything-but does not take {kind!r}")
    options = argument if isinstance(argument, list) else [argument]
    return any(_equal(option, value) for option in options)


# --- delivery ---------------------------------------------------------------------------------


def event_envelope(entry: dict[str, Any], event_id: str, region: str, account: str = ACCOUNT) -> dict[str, Any] | None:
    """The event EventBridge delivers for one accepted PutEvents entry (None: no JSON object detail)."""
    try:
        detail = json.loads(entry.get("Detail") or "{}")
    except ValueError:
        return None
    if not isinstance(detail, dict):
        return None
    when = entry.get("Time")
    moment = datetime.fromtimestamp(float(when), UTC) if isinstance(when, int | float) else datetime.now(UTC)
    return {
        "version": "0",
        "id": event_id,
        "detail-type": entry.get("DetailType", ""),
        "source": entry.get("Source", ""),
        "account": account,
        "time": moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": list(entry.get("Resources") or []),
        "detail": detail,
    }


def bus_name(value: Any) -> str:
    """`EventBusName` as a name or an ARN (`arn:aws:events:...:event-bus/<name>`)."""
    text = str(value or DEFAULT_BUS)
    return text.rsplit("event-bus/", 1)[1] if text.startswith("arn:") and "event-bus/" in text else text


def _input_path(event: dict[str, Any], path: str) -> Any:
    """A plain JSONPath (`$`, `$.a.b`): the part of the event a rule's `InputPath` delivers."""
    if path == "$":
        return event
    if not path.startswith("$."):
        raise PatternError(f"InputPath {path!r} is not a plain path")
    value: Any = event
    for part in path[2:].split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


@dataclass(order=True)
class _Delivery:
    due: float
    serial: int
    rule: Rule = field(compare=False)
    event: Any = field(compare=False)
    event_id: str = field(compare=False)
    attempt: int = field(compare=False, default=1)


def routed(rules: list[Rule], bus: str, event: dict[str, Any]) -> list[tuple[Rule, Any]]:
    """The rules of `bus` an event matches, each with what its target gets of it."""
    return [(rule, delivered_event(rule, event)) for rule in rules if rule.bus == bus and matches(rule.pattern, event)]


def delivered_event(rule: Rule, event: dict[str, Any]) -> Any:
    """What `rule`'s target gets of a matching event: the event, its `Input`, or its `InputPath`."""
    if rule.input is not None:
        return rule.input
    if rule.input_path:
        return _input_path(event, rule.input_path)
    return event


QueueSend = Callable[[str, str], None]  # (queue logical id, message body)


class EventRouter:
    """Matches the events a bus accepted against the rules and delivers them to the targets
    asynchronously: a function's async invocation, or a queue's SendMessage through `send`."""

    def __init__(
        self,
        functions: Functions,
        rules: list[Rule],
        *,
        region: str = "us-east-1",
        retry_delays: tuple[float, ...] = RETRY_DELAYS,
        send: QueueSend | None = None,
    ) -> None:
        missing = [rule.name for rule in rules if rule.queue and send is None]
        if missing:
            raise ValueError(f"rules with a queue target need a send: {missing}")
        self.functions = functions
        self.rules = rules
        self._region = region
        self._retry_delays = retry_delays
        self._send = send
        self._serial = itertools.count()
        self._queues: dict[str, list[_Delivery]] = {rule.target: [] for rule in rules}
        self._changed = threading.Condition()
        self._threads = Background()
        self._stopping = self._threads.stopping
        for target in self._queues:
            self._threads.add(self._deliver, target, name=f"events-{target}")

    def start(self) -> EventRouter:
        self._threads.start()
        return self

    def request_stop(self) -> None:
        """No new delivery from now on (what is queued is dropped)."""
        with self._changed:
            self._threads.request_stop()
            self._changed.notify_all()

    def stop(self, timeout: float = 5) -> None:
        self.request_stop()
        self._threads.stop(timeout)
        with self._changed:
            dropped = sum(len(queue) for queue in self._queues.values())
            for queue in self._queues.values():
                queue.clear()
        if dropped:
            log.warning("%d event deliveries still queued were dropped at stop", dropped)

    def pending(self) -> int:
        """Deliveries queued or waiting for a retry."""
        with self._changed:
            return sum(len(queue) for queue in self._queues.values())

    # --- the endpoint's hook ---------------------------------------------------------------

    def observe(self, request: bytes, status: str, response: bytes) -> None:
        """A PutEvents request and moto's answer: queue each accepted entry for its rules."""
        if not status.startswith("200") or self._stopping.is_set():
            return
        try:
            entries = json.loads(request or b"{}").get("Entries") or []
            results = json.loads(response or b"{}").get("Entries") or []
        except (ValueError, AttributeError):
            return
        for entry, result in zip(entries, results, strict=False):
            event_id = result.get("EventId") if isinstance(result, dict) else None
            if event_id and isinstance(entry, dict):
                self.put(bus_name(entry.get("EventBusName")), entry, event_id)

    def put(self, bus: str, entry: dict[str, Any], event_id: str) -> int:
        """Queue one accepted entry of `bus` for every rule it matches; returns how many matched."""
        event = event_envelope(entry, event_id, self._region)
        if event is None:
            return 0
        matched = 0
        now = time.monotonic()
        with self._changed:
            for rule, delivered in routed(self.rules, bus, event):
                heapq.heappush(self._queues[rule.target], _Delivery(now, next(self._serial), rule, delivered, event_id))
                matched += 1
            if matched:
                self._changed.notify_all()
        return matched

    # --- delivery threads ------------------------------------------------------------------

    def _next(self, target: str) -> _Delivery | None:
        queue = self._queues[target]
        with self._changed:
            while not self._stopping.is_set():
                if queue and queue[0].due <= time.monotonic():
                    return heapq.heappop(queue)
                self._changed.wait(max(0.0, queue[0].due - time.monotonic()) if queue else None)
        return None

    def _deliver(self, target: str) -> None:
        while (delivery := self._next(target)) is not None:
            try:
                if delivery.rule.queue:
                    self._to_queue(delivery.rule.queue, delivery.event)
                else:
                    self.functions.invoke(delivery.rule.function, delivery.event)
            except FunctionsStopped:
                return
            except Exception:
                self._failed(delivery)

    def _to_queue(self, queue: str, event: Any) -> None:
        assert self._send is not None  # checked at construction
        self._send(queue, event if isinstance(event, str) else json.dumps(event))

    def _failed(self, delivery: _Delivery) -> None:
        retries = min(delivery.rule.retries, len(self._retry_delays))
        if delivery.attempt > retries:
            if delivery.rule.dead_letter and self._dead_lettered(delivery):
                return
            log.exception(
                "delivery failed %d times: event dropped",
                delivery.attempt,
                extra={"target": delivery.rule.target, "rule": delivery.rule.name, "event_id": delivery.event_id},
            )
            return
        log.warning(
            "delivery failed (attempt %d): retried in %s s",
            delivery.attempt,
            self._retry_delays[delivery.attempt - 1],
            exc_info=True,
            extra={"target": delivery.rule.target, "event_id": delivery.event_id},
        )
        retry = _Delivery(
            due=time.monotonic() + self._retry_delays[delivery.attempt - 1],
            serial=next(self._serial),
            rule=delivery.rule,
            event=delivery.event,
            event_id=delivery.event_id,
            attempt=delivery.attempt + 1,
        )
        with self._changed:
            heapq.heappush(self._queues[delivery.rule.target], retry)
            self._changed.notify_all()

    def _dead_lettered(self, delivery: _Delivery) -> bool:
        """The event to the target's dead-letter queue (True), as EventBridge does past its retries."""
        assert delivery.rule.dead_letter is not None and self._send is not None
        try:
            self._send(delivery.rule.dead_letter, json.dumps(delivery.event))
        except Exception:
            return False
        log.warning(
            "delivery failed %d times: event sent to %s",
            delivery.attempt,
            delivery.rule.dead_letter,
            extra={"target": delivery.rule.target, "rule": delivery.rule.name, "event_id": delivery.event_id},
        )
        return True
