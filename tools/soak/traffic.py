"""The soak's mixed traffic and its faults, each in its own thread until `stop()`:

- sends through the API (pool and default keys; some with an Idempotency-Key, replayed at once or
  retried after an error as a client would; some with `validFor`, so they wait for a number);
- customers' messages of every kind from every simulator server, and duplicate deliveries of them;
- agent replies posted to each instance's outgoing webhook (some posted twice, as Chatwoot retries);
- dials by several attendants on the calls connection (some replayed at once under one key),
  answered, hung up here or by the peer; incoming calls claimed by an attendant;
- live WebSocket connections that close and reconnect;
- delivery and read receipts for what the numbers sent;
- chaos: provider faults (timeouts, 5xx, lost answers), numbers disconnected and reconnected,
  redelivered connection events, and worker containers killed mid-invocation.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import random
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from devstack.simulator import SimulatorControl
from devstack.simulator.incoming import MEDIA_KINDS
from tools.soak.ledger import DialIntent, IncomingRecord, Ledger, ReplyRecord, SendIntent
from tools.soak.stack import SoakStack
from tools.soak.world import SoakInstance, World

CHATWOOT_REPLY = Path(__file__).resolve().parents[2] / "tests/contracts/chatwoot/webhook_message_created_outgoing.json"
FAULT_ROUTES = (
    "/chat/send/text",
    "/wuzapi/chat/send/text",
    "/evolution/message/sendText/{instance}",
    "/meta/{version}/{phone_number_id}/messages",
    "/call/dial",
    "/call/hangup",
    "/call/active",
)
FAULT_MODES = ("timeout", "error500", "drop_response")
KILL_TARGETS = ("SendWorkerFunction", "ForwarderFunction", "ClientWebhooksFunction", "ReconcileWorkerFunction")
TERMINAL = frozenset({"SENT", "DELIVERED", "READ", "FAILED"})
WORDS = ("bom dia", "pedido", "entrega", "boleto", "obrigado", "horário", "cadastro", "retorno", "orçamento")


@dataclass(frozen=True)
class Load:
    """How much of each kind of traffic, per second or as a mean interval in seconds."""

    sends_per_second: float = 1.0
    incoming_per_second: float = 1.0
    replies_per_second: float = 0.3
    attendants: int = 3
    dial_interval: float = 5.0  # per attendant
    incoming_call_interval: float = 30.0
    live_sockets: int = 3
    chaos_interval: float = 6.0
    receipts_interval: float = 5.0
    media_share: float = 0.3  # of incoming messages that are not text
    idempotent_share: float = 0.6  # of sends with an Idempotency-Key
    replay_share: float = 0.25  # of keyed sends, dials and replies sent more than once
    burst_share: float = 0.05  # of dials replayed 10 times at once
    valid_for_share: float = 0.3  # of sends that may wait for a number
    kills: bool = True
    faults: bool = True
    call_seconds: tuple[float, float] = (1.0, 6.0)  # how long a call lasts before one side hangs up


class Traffic:
    def __init__(self, world: World, stack: SoakStack | None, ledger: Ledger, load: Load, seed: int) -> None:
        self.world = world
        self.stack = stack
        self.ledger = ledger
        self.load = load
        self.seed = seed
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._down: dict[str, threading.Timer] = {}  # instances disconnected by chaos -> their reconnection
        self._down_lock = threading.Lock()
        self._reply_template = json.loads(CHATWOOT_REPLY.read_text())
        seeded = random.Random(seed)
        self.recipients = [f"5521{seeded.randrange(10**8, 10**9)}" for _ in range(40)]
        self.customers = [f"5531{seeded.randrange(10**8, 10**9)}" for _ in range(30)]
        self._chatwoot_ids = seeded.randrange(10**6, 10**7) * 10
        self._receipted: set[str] = set()
        self._local = threading.local()

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> Traffic:
        load = self.load
        self._spawn("sends", self._every(lambda: 1 / load.sends_per_second, self.send_one), load.sends_per_second)
        self._spawn(
            "incoming", self._every(lambda: 1 / load.incoming_per_second, self.incoming_one), load.incoming_per_second
        )
        self._spawn(
            "replies", self._every(lambda: 1 / load.replies_per_second, self.reply_one), load.replies_per_second
        )
        for attendant, key in list(self.world.attendants.items())[: load.attendants]:
            self._spawn(f"dials-{attendant}", self._every(lambda: load.dial_interval, self._dialer(attendant, key)), 1)
        self._spawn("incoming-calls", self._every(lambda: load.incoming_call_interval, self.incoming_call_one), 1)
        for index in range(load.live_sockets):
            self._spawn(f"live-{index}", functools.partial(self._live, index), 1)
        self._spawn("receipts", self._every(lambda: load.receipts_interval, self.receipts_once, jitter=False), 1)
        if load.faults or load.kills:
            self._spawn("chaos", self._every(lambda: load.chaos_interval, self.chaos_once), 1)
        return self

    def stop(self) -> None:
        """No new traffic; what is in flight ends (each thread finishes its current step)."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)

    def _spawn(self, name: str, target: Callable[[], None], enabled: float) -> None:
        if enabled <= 0:
            return
        thread = threading.Thread(target=target, name=f"soak-{name}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def _every(
        self, interval: Callable[[], float], step: Callable[[], object], *, jitter: bool = True
    ) -> Callable[[], None]:
        """Run `step` at random (exponential) intervals of mean `interval()` until stopped."""

        def loop() -> None:
            rng = self._rng()
            while not self._stop.wait(rng.expovariate(1 / interval()) if jitter else interval()):
                try:
                    step()
                except Exception as error:  # the soak goes on; what broke is reported
                    self.ledger.count(f"soak_errors.{type(error).__name__}")
                    self.ledger.note(f"{getattr(step, '__name__', 'step')}: {error!r}"[:300])

        return loop

    def _rng(self) -> random.Random:
        """The calling thread's own generator, seeded from the soak's seed and the thread's name:
        the mix of traffic follows the seed; the moments things happen do not."""
        rng: random.Random | None = getattr(self._local, "rng", None)
        if rng is None:
            rng = self._local.rng = random.Random(f"{self.seed}-{threading.current_thread().name}")
        return rng

    @staticmethod
    def _http(base_url: str, timeout: float = 30.0) -> httpx.Client:
        return httpx.Client(base_url=base_url, timeout=timeout, trust_env=False)

    def _post(self, http: httpx.Client, route: str, path: str, **request: Any) -> httpx.Response | None:
        """POST through the API; None when no answer came (a transport error), which is counted."""
        answer: httpx.Response | None = None
        with contextlib.suppress(httpx.HTTPError):
            answer = http.post(path, **request)
        self._api_answer(route, answer)
        return answer

    def _api_answer(self, route: str, answer: httpx.Response | None) -> None:
        if answer is None:
            self.ledger.count(f"api_no_answer.{route}")
        elif answer.status_code in (502, 504):
            self.ledger.count(f"api_provider_errors.{route}.{answer.status_code}")  # documented: the provider failed
        elif answer.status_code >= 500:
            self.ledger.count(f"api_5xx.{route}.{answer.status_code}")
            self.ledger.note(f"{route} answered {answer.status_code}: {answer.text[:200]}")

    # --- sends -----------------------------------------------------------------------------

    def send_one(self, key: str | None = None) -> SendIntent:
        rng = self._rng()
        load = self.load
        label = key or rng.choice(sorted(self.world.send_keys))
        serial = self.ledger.serial()
        keyed = rng.random() < load.idempotent_share
        intent = SendIntent(
            serial=serial,
            key=label,
            to=rng.choice(self.recipients),
            text=f"soak s{serial:06d} {rng.choice(WORDS)} {uuid.uuid4().hex[:6]}",
            idempotency_key=f"soak-{serial}-{uuid.uuid4().hex[:8]}" if keyed else None,
            valid_for=rng.randint(30, 120) if rng.random() < load.valid_for_share else 0,
        )
        self.ledger.add_send(intent)
        copies = 1 + (rng.randint(1, 2) if keyed and rng.random() < load.replay_share else 0)
        threads = [threading.Thread(target=self._post_send, args=(intent,)) for _ in range(copies)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return intent

    def _post_send(self, intent: SendIntent) -> None:
        """POST the message; keyed, retried after a 5xx, a lost answer or a 409 in flight."""
        body: dict[str, Any] = {"to": intent.to, "text": intent.text}
        if intent.valid_for:
            body["validFor"] = intent.valid_for
        headers = {"authorization": f"Bearer {self.world.send_keys[intent.key]}"}
        if intent.idempotency_key:
            headers["idempotency-key"] = intent.idempotency_key
        with self._http(self.world.api_url) as http:
            for attempt in range(4):
                answer = self._post(http, "POST /api/messages", "/api/messages", json=body, headers=headers)
                intent.answers.append(answer.status_code if answer is not None else 0)
                if answer is not None and answer.status_code == 202:
                    intent.ids.add(answer.json()["id"])
                    return
                retryable = answer is None or answer.status_code >= 500 or answer.status_code == 409
                if not intent.idempotency_key or not retryable or attempt == 3:
                    if answer is not None and answer.status_code not in (202, 409):
                        self.ledger.note(f"send {intent.serial} answered {answer.status_code}: {answer.text[:200]}")
                    return
                time.sleep(0.5 * (attempt + 1))

    # --- customers' messages ---------------------------------------------------------------

    def incoming_one(self, kind: str | None = None, instance: SoakInstance | None = None) -> IncomingRecord:
        rng = self._rng()
        # The calls connection subscribes to call events only: customers write to the messaging numbers.
        instance = instance or rng.choice([i for i in self.world.instances if i.kind == "messages"])
        if kind is None:
            kind = rng.choice(MEDIA_KINDS) if rng.random() < self.load.media_share else "text"
        serial = self.ledger.serial()
        record = IncomingRecord(serial, instance.name, instance.flavour, kind, rng.choice(self.customers))
        text = f"soak i{serial:06d} {rng.choice(WORDS)}" if kind == "text" else None
        sim = SimulatorControl(self.world.sim_url)
        try:
            sent = sim.incoming(instance.name, record.sender, kind=kind, text=text)
            record.message_id, record.event_id = sent["id"], sent["eventId"]
        except httpx.HTTPStatusError as refused:
            record.refused = str(refused.response.json().get("error"))
        finally:
            sim.close()
        self.ledger.add_incoming(record)
        return record

    # --- agent replies ---------------------------------------------------------------------

    def reply_one(self, instance: SoakInstance | None = None) -> ReplyRecord:
        rng = self._rng()
        instance = instance or rng.choice(self.world.instances)
        serial = self.ledger.serial()
        record = ReplyRecord(
            serial=serial,
            instance=instance.name,
            flavour=instance.flavour,
            chatwoot_id=self._chatwoot_ids + serial,
            phone=rng.choice(self.customers),
            text=f"soak r{serial:06d} {rng.choice(WORDS)}",
        )
        self.ledger.add_reply(record)
        body = copy.deepcopy(self._reply_template)
        body["id"], body["content"] = record.chatwoot_id, record.text
        body["conversation"]["id"] = 500 + self.customers.index(record.phone)
        body["conversation"]["meta"]["sender"]["phone_number"] = f"+{record.phone}"
        with self._http(self.world.api_url) as http:
            for _ in range(1 + (rng.random() < self.load.replay_share)):
                answer = self._post(http, "POST outgoing webhook", instance.reply_path, json=body)
                if answer is None:
                    record.answers.append("no answer")
                elif answer.status_code == 200:
                    record.answers.append(f"200 {answer.json().get('status')}")
                else:
                    record.answers.append(str(answer.status_code))
                time.sleep(rng.uniform(0, 1.5))
        return record

    # --- calls -----------------------------------------------------------------------------

    def _dialer(self, attendant: str, key: str) -> Callable[[], None]:
        def dial_once() -> None:
            self.dial_one(attendant, key)

        dial_once.__name__ = f"dial {attendant}"
        return dial_once

    def dial_one(self, attendant: str, key: str) -> DialIntent:
        rng = self._rng()
        serial = self.ledger.serial()
        intent = DialIntent(serial, attendant, f"5541{rng.randrange(10**8, 10**9)}", f"dial-{uuid.uuid4()}")
        self.ledger.add_dial(intent)
        calls = self.world.calls_instance
        headers = {"authorization": f"Bearer {key}", "idempotency-key": intent.idempotency_key}
        # Replays of one key at once, as a console retrying a lost answer; now and then a burst,
        # the kind of race that can leave a reservation behind.
        draw = rng.random()
        copies = 10 if draw < self.load.burst_share else rng.randint(2, 3) if draw < self.load.replay_share else 1
        intent.copies = copies
        outcomes: list[str] = []

        def post() -> None:
            with self._http(self.world.api_url) as http:
                path = f"/api/connections/{calls.name}/calls"
                answer = self._post(http, "POST dial", path, json={"to": intent.to}, headers=headers)
                outcomes.append(self._dial_answer(intent, answer))

        for attempt in range(6):
            threads = [threading.Thread(target=post) for _ in range(copies)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            if intent.call_ids or not {"pending", "error", "in_flight"} & set(outcomes):
                break
            outcomes.clear()
            copies = 1
            time.sleep(1.0 + attempt)  # the same key again: the console's retry of a lost answer
        intent.outcome = "connected" if intent.call_ids else (outcomes[-1] if outcomes else "error")
        if intent.call_ids:
            self._hold_and_end(sorted(intent.call_ids)[0], key, rng)
        return intent

    def _dial_answer(self, intent: DialIntent, answer: httpx.Response | None) -> str:
        intent.answers.append(answer.status_code if answer is not None else 0)
        if answer is None or answer.status_code >= 500:
            return "error"
        payload = answer.json()
        if answer.status_code in (201, 202) and payload.get("reservationId"):
            intent.reservations.add(str(payload["reservationId"]))
        if answer.status_code in (201, 202) and payload.get("call"):
            intent.call_ids.add(payload["call"]["callId"])
            return "connected"
        if answer.status_code == 202:
            return "pending"
        if answer.status_code == 409:
            code = str(payload.get("error"))
            return "in_flight" if "in_flight" in code else code
        self.ledger.note(f"dial {intent.serial} answered {answer.status_code}: {answer.text[:200]}")
        return str(answer.status_code)

    def _hold_and_end(self, call_id: str, key: str, rng: random.Random) -> None:
        """The peer may pick up; after a while one side hangs up (the phone's side if ours fails)."""
        calls = self.world.calls_instance
        sim = SimulatorControl(self.world.sim_url)
        try:
            if rng.random() < 0.5:
                self._quietly(lambda: sim.call_action(calls.name, call_id, "answer"))
                self._quietly(lambda: sim.call_action(calls.name, call_id, "active"))
            self._stop.wait(rng.uniform(*self.load.call_seconds))
            ended = False
            if rng.random() < 0.6:
                with self._http(self.world.api_url) as http:
                    for _ in range(3):
                        path = f"/api/calls/{calls.name}/{call_id}/hangup"
                        answer = self._post(http, "POST hangup", path, headers={"authorization": f"Bearer {key}"})
                        if answer is not None and answer.status_code < 500:
                            ended = answer.status_code == 200
                            break
                        time.sleep(1)
            if not ended:
                self._quietly(lambda: sim.call_action(calls.name, call_id, "end"))
        finally:
            sim.close()

    def incoming_call_one(self) -> None:
        rng = self._rng()
        calls = self.world.calls_instance
        sim = SimulatorControl(self.world.sim_url)
        try:
            call_id = sim.incoming_call(calls.name, f"5551{rng.randrange(10**8, 10**9)}")
        except httpx.HTTPStatusError as refused:
            self.ledger.count(f"incoming_calls.refused.{refused.response.json().get('error')}")
            sim.close()
            return
        try:
            self.ledger.count("incoming_calls.offered")
            key = rng.choice(sorted(self.world.attendants.values()))
            with self._http(self.world.api_url) as http:
                for _ in range(10):
                    path = f"/api/calls/{calls.name}/{call_id}/claim"
                    answer = self._post(http, "POST claim", path, headers={"authorization": f"Bearer {key}"})
                    if answer is not None and answer.status_code == 200:
                        self.ledger.count("incoming_calls.claimed")
                        break
                    time.sleep(0.5)  # the offer may not have reached us yet
            self._stop.wait(rng.uniform(*self.load.call_seconds))
        finally:
            self._quietly(lambda: sim.call_action(calls.name, call_id, "end"))
            sim.close()

    # --- live updates ----------------------------------------------------------------------

    def _live(self, index: int) -> None:
        rng = random.Random(f"{self.seed}-live-{index}")
        keys = [self.world.admin_key, *self.world.attendants.values()]
        key = keys[index % len(keys)]
        with self._http(self.world.api_url) as http:
            while not self._stop.is_set():
                try:
                    ticket = http.post("/api/live/tickets", headers={"authorization": f"Bearer {key}"})
                    self._api_answer("POST live ticket", ticket)
                    if ticket.status_code != 201:
                        self.ledger.count("live.ticket_refused")
                        self._stop.wait(2)
                        continue
                    issued = ticket.json()
                    with connect(f"{issued['url']}?ticket={issued['ticket']}", open_timeout=10) as socket:
                        self.ledger.count("live.connected")
                        until = time.monotonic() + rng.uniform(10, 60)
                        while not self._stop.is_set() and time.monotonic() < until:
                            try:
                                socket.recv(timeout=1)
                                self.ledger.count("live.frames")
                            except TimeoutError:
                                continue
                    self.ledger.count("live.closed_by_client")
                except InvalidStatus as refused:
                    self.ledger.count(f"live.handshake_refused.{refused.response.status_code}")
                    self._stop.wait(2)
                except (ConnectionClosed, OSError, httpx.HTTPError) as dropped:
                    self.ledger.count(f"live.dropped.{type(dropped).__name__}")
                    self._stop.wait(1)

    # --- receipts --------------------------------------------------------------------------

    def receipts_once(self) -> None:
        """What the recipients' phones say of what the numbers sent: delivered, some read."""
        rng = self._rng()
        sim = SimulatorControl(self.world.sim_url)
        try:
            for message in sim.sent():
                if message["id"] in self._receipted or rng.random() < 0.15:
                    continue
                self._receipted.add(message["id"])
                for status in ("delivered", "read") if rng.random() < 0.3 else ("delivered",):
                    try:
                        sim.receipt(message["instance"], message["id"], status)
                        self.ledger.count(f"receipts.{status}")
                    except httpx.HTTPStatusError:
                        self.ledger.count("receipts.refused")
        finally:
            sim.close()

    # --- chaos -----------------------------------------------------------------------------

    def chaos_once(self) -> None:
        rng = self._rng()
        actions: list[tuple[float, Callable[[random.Random], None]]] = []
        if self.load.faults:
            actions += [(0.35, self._fault), (0.15, self._duplicate), (0.05, self._replay_connection)]
            actions += [(0.2, self._disconnect)]
        if self.load.kills and self.stack is not None:
            actions.append((0.25, self._kill))
        total = sum(weight for weight, _ in actions)
        pick = rng.uniform(0, total)
        for weight, action in actions:
            pick -= weight
            if pick <= 0:
                action(rng)
                return

    def _fault(self, rng: random.Random) -> None:
        route, mode = rng.choice(FAULT_ROUTES), rng.choice(FAULT_MODES)
        sim = SimulatorControl(self.world.sim_url)
        try:
            sim.fault(route, mode)
        finally:
            sim.close()
        self.ledger.count(f"faults.{mode}")

    def _duplicate(self, rng: random.Random) -> None:
        """A provider delivering an incoming message's webhook again, byte for byte."""
        emitted = [record for record in self.ledger.snapshot_incoming()[-50:] if record.event_id]
        if not emitted:
            return
        record = rng.choice(emitted)
        sim = SimulatorControl(self.world.sim_url)
        try:
            sim.redeliver(str(record.event_id))
            record.redelivered += 1
            self.ledger.count("faults.duplicate_delivery")
        except httpx.HTTPStatusError:
            self.ledger.count("faults.duplicate_not_possible")
        finally:
            sim.close()

    def _replay_connection(self, rng: random.Random) -> None:
        """A connection event delivered again later (a provider's retry, or a replay)."""
        instance = rng.choice([i for i in self.world.instances if i.flavour != "meta"])
        sim = SimulatorControl(self.world.sim_url)
        try:
            events = [
                event
                for event in sim.events(instance.name)
                if event.get("delivered")
                and (
                    event.get("event") in ("connection", "Connected", "LoggedOut", "Disconnected", "connection.update")
                )
            ]
            if events:
                sim.redeliver(rng.choice(events[-6:])["eventId"])
                self.ledger.count("faults.connection_event_replayed")
        finally:
            sim.close()

    def _disconnect(self, rng: random.Random) -> None:
        with self._down_lock:
            candidates = [i for i in self.world.instances if i.flavour != "meta" and i.name not in self._down]
            if not candidates:
                return
            instance = rng.choice(candidates)
            reason = rng.choice(("logged_out", "disconnected"))
            sim = SimulatorControl(self.world.sim_url)
            try:
                sim.set_connection(instance.name, False, reason=reason)
            finally:
                sim.close()
            self.ledger.count(f"faults.disconnect.{reason}")
            timer = threading.Timer(rng.uniform(5, 25), self._reconnect, args=(instance.name,))
            timer.daemon = True
            self._down[instance.name] = timer
            timer.start()

    def _reconnect(self, name: str) -> None:
        with self._down_lock:
            self._down.pop(name, None)
            sim = SimulatorControl(self.world.sim_url)
            try:
                sim.set_connection(name, True)
                self.ledger.count("faults.reconnect")
            finally:
                sim.close()

    def _kill(self, rng: random.Random) -> None:
        """Crash a worker container in the middle of an invocation: one of the workers running
        one now, waiting up to 5 s for one to be."""
        assert self.stack is not None
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not self._stop.is_set():
            functions = self.stack.functions()
            running = [name for name in KILL_TARGETS if functions.get(name, {}).get("running")]
            if running:
                function = rng.choice(running)
                if self.stack.kill_container(function, after_operations=rng.randint(0, 6)):
                    self.ledger.count(f"kills.{function}")
                    return
            time.sleep(0.05)
        self.ledger.count("kills_missed")

    def heal(self) -> None:
        """Faults off, every number connected again (a `connection` event from each server, so a
        replayed disconnection is undone too)."""
        with self._down_lock:
            for timer in self._down.values():
                timer.cancel()
            self._down.clear()
        sim = SimulatorControl(self.world.sim_url)
        try:
            self.ledger.count("faults.left_pending_at_drain", sim.clear_faults())
            for instance in self.world.instances:
                if instance.flavour != "meta":
                    sim.set_connection(instance.name, True)
        finally:
            sim.close()

    def end_calls(self) -> int:
        """End every live call at the provider, as the people on the line would."""
        calls = self.world.calls_instance
        sim = SimulatorControl(self.world.sim_url)
        try:
            live = [call for call in sim.instance(calls.name)["calls"] if call["state"] != "ended"]
            for call in live:
                self._quietly(functools.partial(sim.call_action, calls.name, call["callId"], "end"))
            return len(live)
        finally:
            sim.close()

    @staticmethod
    def _quietly(action: Callable[[], Any]) -> None:
        with contextlib.suppress(httpx.HTTPError):
            action()
