"""One soak: start the stack, arrange the tenant, run the traffic and its faults, drain, read the
truth, account. The phases are methods so a test can run a tiny soak of its own."""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from devstack.simulator import SimulatorControl
from tools.soak.accounting import NOT_TERMINAL, account
from tools.soak.ledger import Ledger
from tools.soak.report import megabytes
from tools.soak.stack import SoakStack, StackSettings
from tools.soak.traffic import Load, Traffic
from tools.soak.truth import TruthReader
from tools.soak.world import World, arrange

WAITED_QUEUES = ("SendQueue", "ForwardQueue", "ClientWebhookQueue")  # the reconcile queue refills every period
RSS_PERIOD = 10.0
RECONCILE_GAP = 11.0  # the connection's reconcile window is 10 s
LINE = ("lineOccupancy", "providerOccupancy")
STAGES = ("ready", "warm", "end")


def _percent(now: int, then: int) -> float:
    return round(100.0 * (now - then) / then, 1) if then else 0.0


@dataclass
class SoakConfig:
    minutes: float = 30.0
    seed: int = 1
    load: Load = field(default_factory=Load)
    stack: StackSettings = field(default_factory=StackSettings)
    drain_seconds: float | None = None  # None: the longest visibility timeout waited for + 60 s
    log_path: Path = Path(".soak/stack.log")


class Soak:
    def __init__(self, config: SoakConfig) -> None:
        self.config = config
        self.ledger = Ledger()
        self.stack = SoakStack(config.stack, config.log_path)
        self.world: World | None = None
        self.traffic: Traffic | None = None
        self.reader: TruthReader | None = None
        self._served: Any = None
        self._samples: list[tuple[float, int]] = []
        self._sampling = threading.Event()
        self._sampler: threading.Thread | None = None
        self.started_at = 0.0
        self.memory: dict[str, Any] = {}
        self.drain_report: dict[str, Any] = {}

    # --- phases ----------------------------------------------------------------------------

    def start(self) -> Soak:
        """The stack started and the tenant arranged; on any failure, nothing left running."""
        try:
            self._start()
        except BaseException:
            self.stop(graceful=False)
            raise
        return self

    def _start(self) -> None:
        self.stack.start()
        self.world, self._served = arrange(self.stack.info, self.config.load.attendants)
        self.reader = TruthReader(self.world, self.stack.info)
        self.traffic = Traffic(self.world, self.stack, self.ledger, self.config.load, self.config.seed)
        self.memory["readyBytes"] = self.stack.rss()
        self.memory["readyHeap"] = self.stack.heap()
        self.memory["readyContainers"] = self._containers()
        self.memory["readyStore"] = self._store()
        self._sampler = threading.Thread(target=self._sample_rss, name="soak-rss", daemon=True)
        self._sampler.start()

    def run_traffic(self, seconds: float) -> None:
        """The mixed traffic and its faults for `seconds`. The RSS "after warm-up" is taken a quarter
        into the run (at most 5 minutes in): by then the functions have started their containers
        (up to 4 each, as concurrent invocations ask), which is most of the stack's growth."""
        assert self.traffic is not None
        self.started_at = time.monotonic()
        self.traffic.start()
        warm_at = self.started_at + min(300.0, 0.25 * seconds)
        end = self.started_at + seconds
        while (now := time.monotonic()) < end:
            if not self.stack.alive():
                raise RuntimeError(f"the stack died mid-soak: see {self.stack.log_path}")
            if "warmBytes" not in self.memory and now >= warm_at:
                self.memory["warmBytes"] = self.stack.rss()
                self.memory["warmHeap"] = self.stack.heap()
                self.memory["warmContainers"] = self._containers()
                self.memory["warmStore"] = self._store()
            time.sleep(min(1.0, end - now))
        if "warmBytes" not in self.memory:
            self.memory["warmBytes"] = self.stack.rss()
            self.memory["warmHeap"] = self.stack.heap()
        self.memory.setdefault("warmContainers", self._containers())
        self.memory.setdefault("warmStore", self._store())
        self.traffic.stop()

    def drain(self, max_seconds: float | None = None) -> dict[str, Any]:
        """Heal every fault, reconnect every number, end every call, then wait until the queues,
        the outbox and every accepted message, incoming text and reply have settled, or the bound."""
        assert self.traffic is not None and self.reader is not None and self.world is not None
        bound = max_seconds if max_seconds is not None else self._default_drain()
        started = time.monotonic()
        self.traffic.heal()
        ended_calls = self.traffic.end_calls()
        last_reconcile = 0.0
        settled = False
        while True:
            state = self._unsettled()
            drifting = state["lineOccupancy"] != state["providerOccupancy"]
            if drifting and time.monotonic() - last_reconcile > RECONCILE_GAP:
                self._reconcile_line()
                last_reconcile = time.monotonic()
            moving = [name for name, value in state.items() if value and name not in LINE]
            if not moving and not drifting:
                settled = True
                break
            if time.monotonic() - started > bound:
                break
            time.sleep(3)
        self.drain_report = {
            "seconds": round(time.monotonic() - started, 1),
            "bound": bound,
            "settled": settled,
            "callsEndedAtProvider": ended_calls,
            "left": state,
        }
        return self.drain_report

    def measure(self) -> dict[str, Any]:
        assert self.reader is not None and self.world is not None
        ids = sorted({message_id for intent in self.ledger.sends for message_id in intent.ids})
        truth = self.reader.read(ids)
        self.memory["endBytes"] = self.stack.rss()
        self.memory["endHeap"] = self.stack.heap()
        self.memory["endContainers"] = self._containers()
        self.memory["endStore"] = self._store()
        figures = account(self.ledger, truth)
        memory = self._memory_figures()
        return {
            "minutes": self.config.minutes,
            "seed": self.config.seed,
            "config": {"load": asdict(self.config.load), "stack": asdict(self.config.stack)},
            "figures": figures,
            "memory": memory,
            "drain": self.drain_report,
            "chaos": {
                name: value
                for name, value in self.ledger.counters.items()
                if name.split(".")[0] in ("faults", "kills", "kills_missed")
            },
            "counters": dict(self.ledger.counters),
            "clientWebhooks": {
                "deliveries": self.world.client_webhooks.deliveries,
                "distinctIds": len(self.world.client_webhooks.ids),
                "types": self.world.client_webhooks.types,
            },
            "downstreamPrivateNotes": truth.private_notes,
            "notes": self.ledger.notes[:50],
            "stackLog": str(self.stack.log_path),
        }

    def stop(self, *, graceful: bool = True) -> None:
        """Everything the soak started, stopped; a second call finds nothing left to stop."""
        self._sampling.set()
        if self.traffic is not None:
            self.traffic.stop()
        if self.reader is not None:
            self.reader.close()
            self.reader = None
        if self._served is not None:
            self._served.stop()
            self._served = None
            assert self.world is not None
            self.world.client_webhooks.stop()
        self.stack.stop(graceful=graceful)

    # --- internals -------------------------------------------------------------------------

    def _default_drain(self) -> float:
        visibility = self.config.stack.visibility_timeout or max(
            int(queue["visibility_timeout"])
            for name, queue in self.stack.info["queues"].items()
            if name in WAITED_QUEUES
        )
        return float(visibility) + 60.0

    def _unsettled(self) -> dict[str, Any]:
        """What still moves: queue messages, outbox entries, open sends, unforwarded texts, replies
        neither on a phone nor finished, and the two sides of the calls line."""
        assert self.reader is not None and self.world is not None
        depths = self.reader.queue_depths()
        ids = sorted({message_id for intent in self.ledger.sends for message_id in intent.ids})
        views = self.reader.message_views(ids)
        forwarded, _ = self.reader.forwarded()
        sim = SimulatorControl(self.world.sim_url, timeout=30.0)
        try:
            on_phones = {message["body"] for message in sim.sent()}
            provider = sim.instance(self.world.calls_instance.name)
        finally:
            sim.close()
        with httpx.Client(base_url=self.world.api_url, timeout=30.0, trust_env=False) as http:
            line = http.get(
                f"/api/connections/{self.world.calls_instance.name}/calls",
                headers={"authorization": f"Bearer {self.world.admin_key}"},
            ).json()
        return {
            "queued": sum(sum(depths[name].values()) for name in WAITED_QUEUES),
            "outbox": self.reader.outbox_left(),
            "openSends": sum(1 for view in views.values() if view is not None and view["status"] in NOT_TERMINAL),
            "unforwardedTexts": sum(
                1
                for record in self.ledger.incoming
                if record.kind == "text" and record.message_id and not forwarded.get(record.message_id)
            ),
            "unsentReplies": sum(
                1
                for record in self.ledger.replies
                if record.text not in on_phones
                and any(answer.startswith("200 SENT") or answer.startswith("200 PENDING") for answer in record.answers)
            ),
            "lineOccupancy": line.get("occupancy"),
            "providerOccupancy": provider.get("occupancy"),
        }

    def _reconcile_line(self) -> None:
        assert self.world is not None
        with httpx.Client(base_url=self.world.api_url, timeout=30.0, trust_env=False) as http:
            answer = http.post(
                f"/api/connections/{self.world.calls_instance.name}/reconcile",
                headers={"authorization": f"Bearer {self.world.admin_key}"},
            )
        self.ledger.count(f"drain.reconcile.{answer.status_code}")

    def _store(self) -> dict[str, int]:
        return self.stack.store()

    def _containers(self) -> int:
        """Function containers loaded in the stack (each a copy of its handler module)."""
        return sum(function["containers"] for function in self.stack.functions().values())

    def _sample_rss(self) -> None:
        while not self._sampling.wait(RSS_PERIOD):
            self._samples.append((time.monotonic(), self.stack.rss()))

    def _heap_figures(self) -> dict[str, Any]:
        """The allocators' account at each stage: `liveMb`, what live objects take (Python's and
        the C libraries'), and `slackMb`, what the allocators hold beyond it (pymalloc arenas not
        full, glibc's freed memory); RSS is roughly these plus code and thread stacks."""
        figures: dict[str, Any] = {}
        for stage in STAGES:
            heap = self.memory.get(f"{stage}Heap", {})
            live = heap.get("pyInUseMb", 0.0) + heap.get("cInUseMb", 0.0)
            slack = heap.get("pyArenasMb", 0.0) - heap.get("pyInUseMb", 0.0) + heap.get("cFreeMb", 0.0)
            figures[stage] = {"liveMb": round(live, 1), "slackMb": round(slack, 1), **heap}
        figures["endVsWarmLivePercent"] = _percent(
            round(10 * figures["end"]["liveMb"]), round(10 * figures["warm"]["liveMb"])
        )
        return figures

    def _memory_figures(self) -> dict[str, Any]:
        ready, warm, end = (self.memory.get(name, 0) for name in ("readyBytes", "warmBytes", "endBytes"))
        peak = max([ready, warm, end, *(rss for _, rss in self._samples)])
        return {
            "readyMb": round(megabytes(ready), 1),
            "warmMb": round(megabytes(warm), 1),
            "endMb": round(megabytes(end), 1),
            "peakMb": round(megabytes(peak), 1),
            "endVsWarmPercent": _percent(end, warm),
            "endVsReadyPercent": _percent(end, ready),
            "store": {
                "items": {stage: self.memory.get(f"{stage}Store", {}).get("items") for stage in STAGES},
                "expired": self.memory.get("endStore", {}).get("expired", 0),
                "mb": {
                    stage: round(megabytes(self.memory.get(f"{stage}Store", {}).get("bytes", 0)), 1) for stage in STAGES
                },
            },
            "endVsWarmWithoutStorePercent": _percent(
                end - self.memory.get("endStore", {}).get("bytes", 0),
                warm - self.memory.get("warmStore", {}).get("bytes", 0),
            ),
            "heap": self._heap_figures(),
            "transactionBackup": self.stack.info.get("transactionBackup"),
            "containers": {
                "ready": self.memory.get("readyContainers"),
                "warm": self.memory.get("warmContainers"),
                "end": self.memory.get("endContainers"),
            },
            "samplesMb": [round(megabytes(rss), 1) for _, rss in self._samples[:: max(1, len(self._samples) // 60)]],
        }
