"""Starting and stopping the local stack: `python -m devstack` reaches its ready line, serves the
API, and Ctrl-C ends it cleanly, within 10 s and without its memory growing, even with requests in
flight; `LocalStack.stop()` leaves no thread, connection or port."""

from __future__ import annotations

import os
import queue
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from devstack.aws_endpoint import AwsEndpoint
from devstack.stack import LocalStack
from tests.support.stacks import stack_on_free_ports, unique_prefix

ROOT = Path(__file__).resolve().parents[2]
READY = "switchboard local: ready on "
SEND_KEY = re.compile(r"^\s*send key\s+(sb_live_\S+)")
EXIT_SECONDS = 10.0  # Ctrl-C -> the process is gone
MEMORY_GROWTH_MB = 512  # while stopping, over what it had when Ctrl-C came
IN_FLIGHT = 100


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def port_is_free(port: int) -> bool:
    """Nothing listens on it and a new server can bind it (as servers do, with SO_REUSEADDR:
    connections the stopped server closed may still be in TIME_WAIT, which is not a leak)."""
    with socket.socket() as client:
        if client.connect_ex(("127.0.0.1", port)) == 0:
            return False
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def resident_mb(pid: int) -> int | None:
    """The process's resident memory (Linux), None once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    found = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
    return int(found.group(1)) // 1024 if found else None


def blocked_signals(pid: int, thread: int) -> set[int] | None:
    """The signals a thread of a process blocks (Linux: its SigBlk mask); None once it is gone."""
    try:
        status = Path(f"/proc/{pid}/task/{thread}/status").read_text()
    except OSError:
        return None
    found = re.search(r"^SigBlk:\s+([0-9a-f]+)", status, re.MULTILINE)
    assert found is not None
    mask = int(found.group(1), 16)
    return {number for number in range(1, 65) if mask >> (number - 1) & 1}


def takes(pid: int, thread: int, signals: set[int]) -> bool:
    """Whether the kernel may hand one of `signals`, sent to the process, to that thread."""
    blocked = blocked_signals(pid, thread)
    return blocked is not None and bool(signals - blocked)


def threads_taking(pid: int, signals: set[int]) -> list[int]:
    return [int(task.name) for task in Path(f"/proc/{pid}/task").iterdir() if takes(pid, int(task.name), signals)]


STOP_SIGNALS = {int(signal.SIGINT), int(signal.SIGTERM)}


def send_in_background(api_url: str, send_key: str, count: int) -> list[threading.Thread]:
    """`count` sends at once, left running: Ctrl-C comes while they are in flight."""

    def send(index: int) -> None:
        try:
            httpx.post(
                f"{api_url}/api/messages",
                json={"to": f"55119{index:08d}", "text": "in flight at Ctrl-C"},
                headers={"authorization": f"Bearer {send_key}", "idempotency-key": f"flight-{index}"},
                timeout=30,
                trust_env=False,
            )
        except httpx.HTTPError:
            return  # the stack went away under it: expected

    threads = [threading.Thread(target=send, args=(index,), daemon=True) for index in range(count)]
    for thread in threads:
        thread.start()
    return threads


def stop_and_watch(process: subprocess.Popen[str], timeout: float = 60) -> tuple[float, int | None, int | None]:
    """SIGINT, then sample the process's memory until it exits: (seconds to exit, MB before, peak MB)."""
    before = resident_mb(process.pid)
    peak = before
    process.send_signal(signal.SIGINT)
    signalled = time.monotonic()
    while process.poll() is None and time.monotonic() - signalled < timeout:
        sample = resident_mb(process.pid)
        if sample is not None:
            peak = max(peak or 0, sample)
        time.sleep(0.05)
    elapsed = time.monotonic() - signalled
    if process.poll() is None:
        process.kill()
    process.wait(timeout=10)
    return elapsed, before, peak


def settle(condition: Callable[[], object], timeout: float = 10.0) -> bool:
    """Threads that serve a closed connection end asynchronously: give them a bounded moment."""
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return bool(condition())


def test_given_python_m_devstack_when_ready_then_the_api_answers_and_sigint_leaves_nothing_behind() -> None:
    """Ctrl-C with requests in flight: gone within EXIT_SECONDS, its memory not growing meanwhile."""
    names = ("PORT", "AWS_PORT", "SIM_PORT", "LIVE_PORT", "LIVE_MANAGEMENT_PORT")
    ports = {name: free_port() for name in names}
    platform_key = f"sb_live_{secrets.token_urlsafe(24)}"
    environment = {name: value for name, value in os.environ.items() if name != "AWS_ENDPOINT_URL"}
    environment.update({name: str(port) for name, port in ports.items()})
    environment.update({"LOCAL_PLATFORM_KEY": platform_key, "PYTHONUNBUFFERED": "1"})
    process = subprocess.Popen(
        [sys.executable, "-m", "devstack"],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    output: list[str] = []

    def read() -> None:
        for line in process.stdout or []:
            lines.put(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 90
        while not any(line.startswith(READY) for line in output):
            assert process.poll() is None, "".join(output)[-3000:]
            assert time.monotonic() < deadline, "no ready line:\n" + "".join(output)[-3000:]
            try:
                output.append(lines.get(timeout=1))
            except queue.Empty:
                continue
        api_url = next(line for line in output if line.startswith(READY))[len(READY) :].strip()

        created = httpx.post(
            f"{api_url}/api/tenants",
            json={"ownerTag": "smoke", "name": "Smoke"},
            headers={"authorization": f"Bearer {platform_key}"},
            trust_env=False,
        )
        page = httpx.get(f"{api_url}/console/", trust_env=False)

        assert api_url == f"http://127.0.0.1:{ports['PORT']}"
        assert created.status_code == 201, created.text
        # The banner's console URL serves the repository's console/ on the API's origin.
        assert f"  console        {api_url}/console/   (sign in with the admin key below)\n" in output
        assert page.status_code == 200
        assert page.headers["content-type"] == "text/html; charset=utf-8"
        assert page.text == (ROOT / "console" / "index.html").read_text(encoding="utf-8")
        assert any("curl" in line and "/api/messages" in line for line in output)
        send_key = next(found.group(1) for line in output if (found := SEND_KEY.match(line)))
        senders = send_in_background(api_url, send_key, IN_FLIGHT)
        time.sleep(0.5)
        # Only the main thread runs Python's handler: a Ctrl-C another thread took was lost.
        assert threads_taking(process.pid, STOP_SIGNALS) == [process.pid]
    finally:
        seconds, before, peak = stop_and_watch(process)
        reader.join(timeout=10)
    output += list(lines.queue)
    print(f"SIGINT with {IN_FLIGHT} sends in flight: exited in {seconds:.1f} s, resident {before} -> peak {peak} MB")
    assert process.returncode == 0, "".join(output)[-3000:]
    assert seconds < EXIT_SECONDS, "".join(output)[-3000:]
    if before is not None and peak is not None:
        assert peak - before < MEMORY_GROWTH_MB, (before, peak)
    for sender in senders:
        sender.join(timeout=30)
    with pytest.raises(ProcessLookupError):
        os.killpg(process.pid, 0)  # no process of its group (children included) is left
    assert all(port_is_free(port) for port in ports.values())


def test_given_a_started_stack_with_open_connections_when_stopped_then_no_thread_or_port_is_left() -> None:
    before = set(threading.enumerate())
    stack = stack_on_free_ports("stack").start()
    urls = [stack.api_url, stack.aws_url, stack.sim_url, stack.live_url, stack.live_management_url]
    ports = [int(url.split(":")[2].split("/")[0]) for url in urls if url]
    keep_alive = httpx.Client(trust_env=False)
    assert keep_alive.get(f"{stack.api_url}/api/openapi.json").status_code == 200
    assert keep_alive.get(f"{stack.sim_url}/v1/capabilities").status_code == 200
    started = [thread for thread in threading.enumerate() if thread not in before and thread.native_id is not None]
    takers = [thread.name for thread in started if takes(os.getpid(), int(thread.native_id or 0), STOP_SIGNALS)]

    stack.stop()

    assert started
    assert takers == []  # Ctrl-C reaches the test process's main thread, not one of the stack's
    assert settle(lambda: not (set(threading.enumerate()) - before)), set(threading.enumerate()) - before
    assert all(port_is_free(port) for port in ports)
    assert os.environ.get("TABLE_NAME") != stack.environment["TABLE_NAME"]
    keep_alive.close()


def test_given_an_external_endpoint_then_resources_are_created_there_once_and_a_rerun_reuses_them() -> None:
    endpoint = AwsEndpoint(port=0).start()
    platform_key = f"sb_live_{secrets.token_urlsafe(24)}"
    options: dict[str, Any] = {
        "port": 0,
        "sim_port": 0,
        "live_port": 0,
        "live_management_port": 0,
        "aws_endpoint_url": endpoint.url,
        "platform_key": platform_key,
        "prefix": unique_prefix(),
    }
    try:
        with LocalStack(**options) as first:
            assert first.aws_url == endpoint.url
            assert first.demo is not None
        with LocalStack(**options) as again:
            tenants = httpx.get(
                f"{again.api_url}/api/tenants", headers={"authorization": f"Bearer {platform_key}"}, trust_env=False
            )

            assert again.demo is None
            assert "tenant demo already exists: its keys were shown when it was seeded" in again.notes
            assert [tenant["ownerTag"] for tenant in tenants.json()] == ["demo"]
    finally:
        endpoint.stop()
