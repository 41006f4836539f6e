"""The gates between the plan and each attempt: which routes may send this message now.

- the ban watch (`health/`): an instance paused, or paused for new contacts while the recipient
  is a new contact of its number (neither attached to it nor heard by it within the last 24 h),
  is passed over unasked, the reason in the trace;
- the spam guard (`spam_guard.py`): an instance whose guard refuses the text is passed over like
  a refusal;
- pacing (`health/pacing.py`): a number over its pacing is passed over; the hold that frees up
  soonest is kept, for the message to come back then;
- the customer-service window (`messages/window.py`): a Cloud API route is passed over for
  free-form content when the recipient has not written to its number within 24 h (no request to
  the provider); the routes so passed over are kept, for a fallback template to leave through.

Each skip is traced when its route comes up, so the trace keeps the order of the attempts. The
gates open before the message is claimed (`first_open` names the route the claim marks in flight);
the spam guard, which needs the stored text, and pacing, which spends a number's budget, are asked
after it, as each route comes up.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from switchboard.core.clock import utcnow
from switchboard.core.observability import logger
from switchboard.messages.sending.trace import at, skip
from switchboard.messages.spam_guard import SPAM_GUARD, SpamCheck, SpamGuard
from switchboard.messages.window import OUTSIDE_SERVICE_WINDOW, WindowGate, has_window
from switchboard.pool.domain import known_to
from switchboard.providers.content import Template

if TYPE_CHECKING:
    from switchboard.messages.domain import Message, PendingRoute, TraceEvent
    from switchboard.messages.ports import Hold, InstanceHealth, Pacing, Watch
    from switchboard.messages.sending.plan import Draft, Plan
    from switchboard.messages.spam_guard import KeptTexts
    from switchboard.pool.domain import Affinity, NumberRoutes, Route, SendingConfig


TEMPLATE_NEEDS_CLOUD_API = "template_needs_cloud_api"


class Gates:
    def __init__(
        self,
        *,
        spam_guard: SpamGuard | None = None,
        health: Watch | None = None,
        pacer: Pacing | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._spam_guard = spam_guard
        self._health = health
        self._pacer = pacer
        self._clock = clock

    def open(self, plan: Draft | Plan) -> MessageGates:
        """The gates of one message: the health of every instance its plan may use, read once."""
        health = self._health_gate(plan.config, plan.selection.numbers, plan.affinity)
        now = self._clock()
        pace = PaceRecord(plan.config, plan.affinity, now)
        window = WindowGate(plan.affinity, now)
        return MessageGates(health, pace, spam_guard=self._spam_guard, pacer=self._pacer, window=window)

    def _health_gate(
        self, config: SendingConfig, numbers: list[NumberRoutes], affinity: Affinity | None
    ) -> HealthGate | None:
        """The health of every instance the plan may use (read once per message, from the ban
        watch's per-container copy), and which numbers the recipient is no new contact of."""
        if self._health is None:
            return None
        keys = [route.source.key for number in numbers for route in number.routes if route.source is not None]
        if not keys:
            return None
        try:
            health = self._health.health_of(keys)
        except Exception:  # the ban watch unreadable: send as if every number were healthy
            logger.exception("instance health unreadable")
            return None
        now = self._health.now
        pool_mode = config.mode == "pool" and bool(config.pool)
        return HealthGate(health, now, known_to(config, affinity, now), pool_mode=pool_mode)


class MessageGates:
    """The gates as one message meets them, number after number."""

    def __init__(
        self,
        health: HealthGate | None,
        pace: PaceRecord,
        *,
        spam_guard: SpamGuard | None,
        pacer: Pacing | None,
        window: WindowGate | None = None,
    ) -> None:
        self._health = health
        self._pace = pace
        self._spam_guard = spam_guard
        self._pacer = pacer
        self._window = window
        self._checks: dict[str, SpamCheck] = {}  # this message's spam guard reads, by instance key
        # The routes a closed window kept the message from (or whose provider said so), in order.
        self.window_closed: list[tuple[NumberRoutes, Route]] = []

    @property
    def held(self) -> Hold | None:
        """The pacing hold that frees up soonest among the numbers pacing passed over."""
        return self._pace.held

    def first_open(self, numbers: list[NumberRoutes], *, free_form: bool = True) -> tuple[NumberRoutes, Route] | None:
        """The route a message with no route pending tries first, as far as the ban watch decides
        (nothing traced, nothing spent): the one its claim records in flight. None when no route
        is open (nothing is marked)."""
        for number in numbers:
            if not number.connected:
                continue
            for route in number.routes:
                # The claim reads the content: only the job says whether it is a template. A route
                # whose window is closed on the recipient is not marked for free-form content.
                if free_form and self._window is not None and self._window.closed(number.number_id, route.kind, None):
                    continue
                if self._health is None or self._health.holds(number, route) is None:
                    return number, route
        return None

    def note_window_closed(self, number: NumberRoutes, route: Route) -> None:
        """The provider refused a send through `route` for the window (Meta's 131047)."""
        if (number, route) not in self.window_closed:
            self.window_closed.append((number, route))

    def routes(self, number: NumberRoutes, message: Message, events: list[TraceEvent]) -> Iterator[Route]:
        """The number's routes in order (the pending route first) that may send `message`."""
        return self._paced(self._unguarded_routes(number, message, events), number, events)

    def passed_over(self, number: NumberRoutes) -> list[TraceEvent]:
        """The trace entry of a number none of whose routes sent (pacing already traced its own)."""
        return self._pace.passed_over(number)

    def kept_after(self, route: Route) -> KeptTexts | None:
        """The spam guard's history of the route's instance once it has sent the message, built
        from the read that let the text through (no second read, no request of its own)."""
        check = self._checks.get(route.source.key) if route.source is not None else None
        if self._spam_guard is None or check is None:
            return None
        return self._spam_guard.kept_after(check)

    def _unguarded_routes(self, number: NumberRoutes, message: Message, events: list[TraceEvent]) -> Iterator[Route]:
        """The number's routes in order, less those the ban watch holds back for this recipient and
        those whose spam guard refuses the text."""
        for route in _routes_in_order(number, message.pending):
            held = self._health.holds(number, route) if self._health is not None else None
            closed = self._window.closed(number.number_id, route.kind, message.content) if self._window else None
            if closed is not None:
                events.append(
                    skip("pool.instance.skipped", number, route, OUTSIDE_SERVICE_WINDOW, **closed.trace_data())
                )
                self.note_window_closed(number, route)
            elif isinstance(message.content, Template) and not has_window(route.kind):
                # Only a Cloud API number sends templates (its business account approved them).
                events.append(skip("pool.instance.skipped", number, route, TEMPLATE_NEEDS_CLOUD_API))
            elif held is not None:
                reason, codes = held
                events.append(skip("pool.instance.skipped", number, route, reason, healthReasons=codes))
            elif self._spam_refuses(route, message):
                events.append(skip("pool.instance.skipped", number, route, SPAM_GUARD))
            else:
                opened = (
                    self._window.open_window(number.number_id, route.kind, message.content) if self._window else None
                )
                if opened is not None:
                    events.append(at("pool.window.open", number, route, **opened.trace_data()))
                yield route

    def _spam_refuses(self, route: Route, message: Message) -> bool:
        """Whether the route's instance's spam guard refuses the text; its history is read once per
        message and instance (a pending route met again reuses the read)."""
        instance = route.source
        if self._spam_guard is None or instance is None:
            return False
        check = self._checks.get(instance.key)
        if check is None:
            check = self._spam_guard.check(instance, message.to, message.text)
            if check is None:
                return False
            self._checks[instance.key] = check
        return check.refused

    def _paced(self, routes: Iterator[Route], number: NumberRoutes, events: list[TraceEvent]) -> Iterator[Route]:
        """`routes`, once the number's pacing admits this message (asked when its first usable
        route comes up, so a number passed over for other reasons spends nothing)."""
        for index, route in enumerate(routes):
            if index == 0 and self._pacer is not None:
                held = self._pacer.admit(number, new_contact=self._pace.new_contact(number))
                if held is not None:
                    events.append(
                        skip("pool.number.skipped", number, None, held.reason, retryAfterSeconds=held.wait_seconds)
                    )
                    self._pace.hold(number, held)
                    return
            yield route


class PaceRecord:
    """Which numbers are new to the recipient (pacing's new-contact budget), and the hold that
    frees up soonest among the numbers pacing passed over.

    A number is no new contact of the recipient when it is the one attached to them (the
    pool's affinity) or when they wrote to it within the last 24 h (`HEARD_WINDOW`)."""

    def __init__(self, config: SendingConfig, affinity: Affinity | None, now: datetime) -> None:
        # Only the pool knows who a number's contacts are; a default number has nowhere else to go.
        self._pool_mode = config.mode == "pool" and bool(config.pool)
        self._known = known_to(config, affinity, now) if self._pool_mode else frozenset()
        self.held: Hold | None = None
        self.held_number: str | None = None

    def new_contact(self, number: NumberRoutes) -> bool:
        return self._pool_mode and number.number_id not in self._known

    def passed_over(self, number: NumberRoutes) -> list[TraceEvent]:
        """The trace entry of a number none of whose routes sent (pacing already traced its own)."""
        if self.held_number == number.number_id:
            return []
        return [skip("pool.number.skipped", number, None, "no_instance_could_send")]

    def hold(self, number: NumberRoutes, held: Hold) -> None:
        self.held_number = number.number_id
        if self.held is None or held.wait_seconds < self.held.wait_seconds:
            self.held = held


class HealthGate:
    """Which routes the ban watch holds back for one message.

    A paused instance sends nothing; one paused for new contacts still sends to a recipient
    who is no new contact of its number: attached to it (the pool's affinity: an existing
    conversation) or who wrote to it within the last 24 h (WhatsApp's reach-out timelock spares
    them too). In default mode there is no other number to go to, so only a full pause holds
    the default number back.
    """

    def __init__(
        self,
        health: Mapping[str, InstanceHealth],
        now: datetime,
        known: Collection[str],
        *,
        pool_mode: bool,
    ) -> None:
        self._health = health
        self._now = now
        self._known = known
        self._pool_mode = pool_mode

    def holds(self, number: NumberRoutes, route: Route) -> tuple[str, list[str]] | None:
        """(`health_<state>`, the active reasons' codes) when `route` must not send, else None."""
        health = self._health.get(route.source.key) if route.source is not None else None
        if health is None:
            return None
        new_contact = self._pool_mode and number.number_id not in self._known
        state = health.blocks(self._now, new_contact=new_contact)
        if state is None:
            return None
        return f"health_{state}", [reason.code for reason in health.active_reasons(self._now)]


def _routes_in_order(number: NumberRoutes, pending: PendingRoute | None) -> list[Route]:
    routes = list(number.routes)
    if pending is not None and pending.number_id == number.number_id:
        routes.sort(key=lambda route: (route.instance, route.provider_id) != (pending.instance, pending.provider_id))
    return routes
