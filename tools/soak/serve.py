"""The soak's local stack, in a process of its own: `python -m tools.soak.serve <handshake.json>`.

It starts the same `LocalStack` as `make local` (every port free, the demo tenant seeded), then
writes the handshake file the soak reads (URLs, keys, queues, tables: it holds secrets, so it goes
in a private directory the soak removes) and serves a small control API on loopback for what only
this process can do:

- `POST /kill {"function", "afterOperations"}` crashes a container of that function in the middle
  of an invocation (`Functions.kill`): `{"killed": bool}` (false: none was running one);
- `GET /functions`: `{name: {"containers", "running"}}`;
- `GET /store`: `{"items", "bytes", "expired"}`, what moto's DynamoDB holds (items in every table,
  and the Python objects they take, summed with `sys.getsizeof`: what a data store, not the stack,
  uses), and how many items past their Time to Live the stack has deleted so far;
- `GET /memory`: with `SOAK_TRACEMALLOC=<frames>` set, where the memory allocated since the stack
  was ready went (tracemalloc's top 20 tracebacks; slow: for finding a growth, not for measuring).

Its embedded AWS endpoint backs a DynamoDB transaction up item by item, as every embedded endpoint
does (`devstack.moto_transactions`: moto deep-copies the whole table per transaction), unless
`SOAK_MOTO_TABLE_COPIES=1` puts moto's own backup back.

SIGTERM or SIGINT stops the stack, and so does the death of the soak that started it. Settings
come from the environment the soak sets:
`SOAK_VISIBILITY_TIMEOUT` (every queue's, empty: the template's), `SOAK_SCHEDULE_SECONDS`,
`SOAK_FAULT_DELAY_SECONDS` (how long the simulator's `timeout` fault sleeps) and
`PROVIDER_TIMEOUT_SECONDS` for the functions.
"""

from __future__ import annotations

import ctypes
import gc
import json
import logging
import os
import signal
import sys
import tempfile
import threading
import time
import tracemalloc
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from devstack import moto_transactions
from devstack.stack import LocalStack

log = logging.getLogger("soak.serve")


def _optional_number(name: str) -> float | None:
    value = os.environ.get(name)
    return float(value) if value else None


def build_stack() -> LocalStack:
    visibility = _optional_number("SOAK_VISIBILITY_TIMEOUT")
    return LocalStack(
        port=0,
        aws_port=0,
        sim_port=0,
        live_port=0,
        live_management_port=0,
        prefix="soak",
        schedule_seconds=_optional_number("SOAK_SCHEDULE_SECONDS"),
        visibility_timeout=int(visibility) if visibility else None,
        simulator_settings={"fault_delay_seconds": _optional_number("SOAK_FAULT_DELAY_SECONDS") or 3.0},
        environment={"PROVIDER_TIMEOUT_SECONDS": os.environ.get("PROVIDER_TIMEOUT_SECONDS", "2")},
    )


class Control:
    """The control API's server, bound to the running stack."""

    def __init__(self, stack: LocalStack) -> None:
        functions = stack.functions
        assert functions is not None
        self._functions = functions

        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/store":
                    expiring = stack.expiring
                    self._answer(200, {**store(), "expired": expiring.expired if expiring else 0})
                    return
                url = urlsplit(self.path)
                if url.path == "/memory":
                    self._answer(200, outer.memory(parse_qs(url.query)))
                    return
                if self.path != "/functions":
                    self._answer(404, {"error": "not_found"})
                    return
                self._answer(200, outer.functions())

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                if self.path == "/memory/mark":
                    outer.mark()
                    self._answer(200, {"ok": True})
                    return
                if self.path == "/memory/collect":
                    self._answer(200, collect())
                    return
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                    name = str(body["function"])
                    after = int(body.get("afterOperations", 0))
                except (ValueError, KeyError, TypeError):
                    self._answer(400, {"error": "invalid_request", "message": "{function, afterOperations?}"})
                    return
                if self.path != "/kill" or name not in outer._functions.names():
                    self._answer(404, {"error": "not_found", "message": "POST /kill with a template function"})
                    return
                self._answer(200, {"killed": outer._functions.kill(name, after_operations=after)})

            def _answer(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="soak-control", daemon=True)
        self._ready: tracemalloc.Snapshot | None = None
        self._mark: tracemalloc.Snapshot | None = None
        self._census: dict[str, int] = {}

    def functions(self) -> dict[str, dict[str, int]]:
        return {
            name: {"containers": self._functions.containers(name), "running": self._functions.running(name)}
            for name in self._functions.names()
        }

    def memory(self, query: dict[str, list[str]]) -> dict[str, Any]:
        """Where the heap went since the stack was ready (tracemalloc, with `SOAK_TRACEMALLOC`), the
        live threads by name and the allocators' account. `?group=filename|lineno|traceback`
        (default `filename`) groups the allocations; `?since=mark` compares with the snapshot
        `POST /memory/mark` took instead of the one taken when the stack was ready, so two marks
        bracket a stretch of the run; `?census=1` counts objects by type instead (no tracing)."""
        threads: dict[str, int] = {}
        for thread in threading.enumerate():
            name = thread.name.split(" ")[0].rstrip("0123456789-_")
            threads[name] = threads.get(name, 0) + 1
        if (query.get("census") or [""])[0]:
            return {"census": self.census()}
        if kind := (query.get("held") or [""])[0]:
            return {"held": held_by(kind)}
        answer: dict[str, Any] = {
            "threads": dict(sorted(threads.items(), key=lambda pair: -pair[1])),
            "malloc": malloc_info(),
            "rssMb": round(_own_rss() / 2**20, 1),
        }
        if not tracemalloc.is_tracing():
            return {**answer, "error": "set SOAK_TRACEMALLOC=<frames> to trace allocations"}
        group = (query.get("group") or ["filename"])[0]
        if group not in ("filename", "lineno", "traceback"):
            return {**answer, "error": "group is one of filename, lineno, traceback"}
        baseline = self._mark if (query.get("since") or [""])[0] == "mark" and self._mark else self._ready
        snapshot = _snapshot()
        stats = snapshot.compare_to(baseline, group) if baseline is not None else snapshot.statistics(group)
        return {
            **answer,
            "tracedMb": round(tracemalloc.get_traced_memory()[0] / 2**20, 1),
            "grownMb": round(sum(stat.size_diff for stat in stats if hasattr(stat, "size_diff")) / 2**20, 1),
            "top": [
                {
                    "kb": round(stat.size / 1024),
                    "grownKb": round(getattr(stat, "size_diff", stat.size) / 1024),
                    "count": stat.count,
                    # file:line only: formatting source lines would fill linecache, itself a growth
                    "where": [f"{frame.filename}:{frame.lineno}" for frame in stat.traceback],
                }
                for stat in stats[:25]
            ],
        }

    def census(self) -> list[dict[str, Any]]:
        """The objects the garbage collector tracks, counted by type, against the last census
        (`?census=1`; the first one compares with nothing): what kind of object accumulates,
        without tracemalloc's cost, so at the stack's own pace."""
        counts: dict[str, int] = {}
        for value in gc.get_objects():
            kind = type(value)
            name = f"{kind.__module__}.{kind.__qualname__}"
            counts[name] = counts.get(name, 0) + 1
        previous, self._census = self._census, counts
        grown = sorted(counts, key=lambda name: previous.get(name, 0) - counts[name])
        return [
            {"type": name, "count": counts[name], "grown": counts[name] - previous.get(name, 0)} for name in grown[:30]
        ]

    def mark(self) -> None:
        if tracemalloc.is_tracing():
            self._mark = _snapshot()

    def start(self) -> Control:
        if tracemalloc.is_tracing():
            self._ready = _snapshot()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def malloc_info() -> dict[str, float]:
    """The allocators' own account of the heap, in MB. Python's (pymalloc, objects up to 512
    bytes, in 1 MiB arenas of its own): `pyArenas` mapped, `pyInUse` in live objects. glibc's
    (everything larger, and C libraries): `cInUse` allocated now, `cFree` freed but kept by its
    arenas, not given back to the system. RSS beyond the in-use figures is the allocators' slack."""
    stats = _pymalloc_stats()
    answer: dict[str, float] = {
        "gcEnabled": float(gc.isenabled()),
        "gcFrozen": float(gc.get_freeze_count()),
        "pyArenasMb": float(stats.get("arenas allocated current", 0)),  # 1 MiB each
        "pyInUseMb": round(stats.get("bytes in allocated blocks", 0) / 2**20, 1),
    }
    try:
        mallinfo2 = ctypes.CDLL(None).mallinfo2
    except (OSError, AttributeError):  # not glibc
        return answer
    mallinfo2.restype = _MallInfo2
    info = mallinfo2()
    return {
        **answer,
        "cInUseMb": round((info.uordblks + info.hblkhd) / 2**20, 1),
        "cFreeMb": round(info.fordblks / 2**20, 1),
    }


def _pymalloc_stats() -> dict[str, int]:
    """The counters `sys._debugmallocstats()` writes to the C stderr, read back through a file."""
    with tempfile.TemporaryFile() as captured:
        saved = os.dup(2)
        os.dup2(captured.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        captured.seek(0)
        text = captured.read().decode(errors="replace")
    found: dict[str, int] = {}
    for line in text.splitlines():
        name, equals, value = line.partition("=")
        if equals and name.startswith("# "):
            found[name[2:].strip()] = int(value.strip().replace(",", "") or 0)
    return found


def collect() -> dict[str, Any]:
    """A full collection now (`POST /memory/collect`): what it freed and the heap before and after,
    to tell garbage the collector has not reached yet from objects something keeps."""
    before = malloc_info()
    started = time.monotonic()
    freed = gc.collect()
    return {
        "freedObjects": freed,
        "seconds": round(time.monotonic() - started, 2),
        "before": before,
        "after": malloc_info(),
    }


def held_by(kind: str, sample: int = 300) -> dict[str, int]:
    """What holds objects of one type (`?held=module.Type`): for a sample of them, the chain of
    the types of their referrers, two levels up (e.g. `dict <- Table`), counted."""
    objects = gc.get_objects()
    found = [value for value in objects if f"{type(value).__module__}.{type(value).__qualname__}" == kind][:sample]
    chains: dict[str, int] = {}
    ignored = {id(objects), id(found)}
    for value in found:
        for first in gc.get_referrers(value):
            if id(first) in ignored or first is sys._getframe():
                continue
            above = [
                _describe(second, first, ignored) for second in gc.get_referrers(first) if id(second) not in ignored
            ]
            chain = f"{type(first).__qualname__} <- {','.join(sorted(set(above))[:4]) or '-'}"
            chains[chain] = chains.get(chain, 0) + 1
    del objects, found
    return dict(sorted(chains.items(), key=lambda pair: -pair[1])[:20])


def _describe(holder: Any, held: Any, ignored: set[int]) -> str:
    """A holder's type; for a dict, the key it holds `held` under and the type of its owner."""
    if not isinstance(holder, dict):
        return type(holder).__qualname__
    key = next((str(name)[:40] for name, value in holder.items() if value is held), "?")
    owners = {type(owner).__qualname__ for owner in gc.get_referrers(holder) if id(owner) not in ignored}
    return f"dict[{key}] of {'/'.join(sorted(owners)[:3])}"


def _own_rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def _snapshot() -> tracemalloc.Snapshot:
    return tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])


def store() -> dict[str, int]:
    """Items in moto's DynamoDB tables and the bytes of their Python objects (deep `getsizeof`)."""
    from moto.dynamodb.models import dynamodb_backends  # noqa: PLC0415 - moto is loaded by the stack

    items = 0
    roots: list[Any] = []
    for account in list(dynamodb_backends.values()):
        for backend in list(account.values()):
            for table in list(backend.tables.values()):
                items += len(table)
                roots.append(table.items)
    return {"items": items, "bytes": _deep_size(roots)}


def _deep_size(root: Any) -> int:
    seen: set[int] = set()
    pending = [root]
    total = 0
    while pending:
        value = pending.pop()
        if id(value) in seen or isinstance(value, type):
            continue
        seen.add(id(value))
        total += sys.getsizeof(value)
        if isinstance(value, dict):
            pending.extend(value.keys())
            pending.extend(value.values())
        elif isinstance(value, (list, tuple, set, frozenset)):
            pending.extend(value)
        elif hasattr(value, "__dict__"):
            pending.append(vars(value))
    return total


def handshake(stack: LocalStack, control_url: str) -> dict[str, Any]:
    assert stack.demo is not None, "the soak needs the seeded demo tenant"
    return {
        "pid": os.getpid(),
        "apiUrl": stack.api_url,
        "simUrl": stack.sim_url,
        "awsUrl": stack.aws_url,
        "liveUrl": stack.live_url,
        "controlUrl": control_url,
        "platformKey": stack.platform_key,
        "simAdminToken": stack.sim_admin_token,
        "tables": stack.tables,
        "queues": {name: asdict(queue) for name, queue in stack.queues.items()},
        "demo": asdict(stack.demo),
        "transactionBackup": "table" if os.environ.get("SOAK_MOTO_TABLE_COPIES") else "item",
    }


def main(path: Path) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request would bury what matters
    parent = os.getppid()
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    stack = build_stack()
    control: Control | None = None
    try:
        stack.start()
        if os.environ.get("SOAK_MOTO_TABLE_COPIES"):
            moto_transactions.uninstall()  # the endpoint installed the item-level backup
        if frames := os.environ.get("SOAK_TRACEMALLOC"):
            tracemalloc.start(int(frames))  # from now on: what the traffic allocates, not the start
        control = Control(stack).start()
        partial = path.with_suffix(".partial")
        partial.write_text(json.dumps(handshake(stack, control.url)))
        partial.chmod(0o600)
        partial.rename(path)  # the soak sees the whole file or none of it
        print(f"soak stack ready: {stack.api_url} (control API: {control.url})", flush=True)
        # The soak that started it may die without stopping it (killed, or a crash before its
        # cleanup): an orphan is adopted by another process, and then stops too.
        while not stopping.wait(timeout=0.5) and os.getppid() == parent:
            pass
    finally:
        if control is not None:
            control.stop()
        stack.stop()
    return 0


if __name__ == "__main__":
    code = main(Path(sys.argv[1]))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # nothing left to flush; skip the interpreter's slow teardown of moto's state
