"""The local stack under soak, seen from the soak: a child process (`tools.soak.serve`) it starts,
measures (RSS of the process tree) and stops, and whose control API kills containers."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
READY_TIMEOUT = 180.0  # seconds: the stack starts in ~10 s alone, far slower on a loaded machine
STOP_TIMEOUT = 20.0


class StackFailed(RuntimeError):
    """The stack did not start, or died while the soak ran."""


@dataclass(frozen=True)
class StackSettings:
    visibility_timeout: int | None = None  # None: the template's own visibility timeouts
    schedule_seconds: float = 60.0
    fault_delay_seconds: float = 3.0
    provider_timeout_seconds: float = 2.0
    moto_table_copies: bool = False  # True: moto's own whole-table copy per transaction


def rss_bytes(pid: int) -> int:
    """Resident memory of a process and all its descendants (Linux /proc)."""
    total = 0
    for member in _tree(pid):
        try:
            status = Path(f"/proc/{member}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1]) * 1024
    return total


def _tree(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rpartition(")")[2].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        pending.extend(children.get(current, []))
    return found


class SoakStack:
    """`start()` returns once the child wrote its handshake; `stop()` leaves no process behind."""

    def __init__(self, settings: StackSettings, log_path: Path) -> None:
        self.settings = settings
        self.log_path = log_path
        self._private = Path(tempfile.mkdtemp(prefix="soak-"))
        self._private.chmod(0o700)
        self._process: subprocess.Popen[bytes] | None = None
        self.info: dict[str, Any] = {}
        self._control: httpx.Client | None = None

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    def start(self) -> SoakStack:
        handshake = self._private / "handshake.json"
        environment = {
            **os.environ,
            "POWERTOOLS_LOG_LEVEL": os.environ.get("POWERTOOLS_LOG_LEVEL", "WARNING"),
            "SOAK_SCHEDULE_SECONDS": str(self.settings.schedule_seconds),
            "SOAK_FAULT_DELAY_SECONDS": str(self.settings.fault_delay_seconds),
            "SOAK_VISIBILITY_TIMEOUT": str(self.settings.visibility_timeout or ""),
            "PROVIDER_TIMEOUT_SECONDS": str(self.settings.provider_timeout_seconds),
            "SOAK_MOTO_TABLE_COPIES": "1" if self.settings.moto_table_copies else "",
            # glibc gives each thread that allocates at once an arena of its own (up to 8 per
            # core) and keeps what is freed in it: the stack's threads left ~180 MB free in them
            # at ready (~35 MB with two arenas), 40 MB more resident, none of it the stack's data.
            "MALLOC_ARENA_MAX": os.environ.get("MALLOC_ARENA_MAX", "2"),
        }
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        self._process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", "tools.soak.serve", str(handshake)],
            cwd=ROOT,
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopped as one, never by our Ctrl-C
        )
        log.close()
        deadline = time.monotonic() + READY_TIMEOUT
        while not handshake.exists():
            if self._process.poll() is not None:
                raise StackFailed(f"the stack exited with {self._process.returncode}: see {self.log_path}")
            if time.monotonic() > deadline:
                self.stop()
                raise StackFailed(f"the stack was not ready within {READY_TIMEOUT:.0f} s: see {self.log_path}")
            time.sleep(0.2)
        self.info = json.loads(handshake.read_text())
        handshake.unlink()
        self._control = httpx.Client(base_url=self.info["controlUrl"], timeout=10.0, trust_env=False)
        return self

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def rss(self) -> int:
        return rss_bytes(self.pid) if self.alive() else 0

    def kill_container(self, function: str, after_operations: int = 0) -> bool:
        assert self._control is not None
        answer = self._control.post("/kill", json={"function": function, "afterOperations": after_operations})
        answer.raise_for_status()
        killed: bool = answer.json()["killed"]
        return killed

    def store(self) -> dict[str, int]:
        """What moto's DynamoDB holds: `{items, bytes}`."""
        assert self._control is not None
        answer = self._control.get("/store", timeout=120.0)
        answer.raise_for_status()
        found: dict[str, int] = answer.json()
        return found

    def heap(self) -> dict[str, float]:
        """The stack's allocators' account of its heap (`tools.soak.serve.malloc_info`), in MB."""
        assert self._control is not None
        answer = self._control.get("/memory", timeout=60.0)
        answer.raise_for_status()
        found: dict[str, float] = answer.json()["malloc"]
        return found

    def functions(self) -> dict[str, dict[str, int]]:
        assert self._control is not None
        answer = self._control.get("/functions")
        answer.raise_for_status()
        found: dict[str, dict[str, int]] = answer.json()
        return found

    def stop(self, *, graceful: bool = True) -> None:
        """SIGTERM and up to 20 s to stop (then SIGKILL); `graceful=False`: SIGKILL at once, when
        nothing in the stack is worth keeping (its figures are read)."""
        if self._control is not None:
            self._control.close()
            self._control = None
        process, self._process = self._process, None
        if process is not None and process.poll() is None and not graceful:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=STOP_TIMEOUT)
        elif process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=STOP_TIMEOUT)
        shutil.rmtree(self._private, ignore_errors=True)
