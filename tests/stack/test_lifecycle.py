"""Starting and stopping the local stack: `python -m devstack` reaches its ready line, serves the
API, and Ctrl-C ends it cleanly; `LocalStack.stop()` leaves no thread, connection or port."""

from __future__ import annotations

import os
import queue
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from devstack.aws_endpoint import AwsEndpoint
from devstack.stack import LocalStack
from tests.stack.conftest import unique_prefix

ROOT = Path(__file__).resolve().parents[2]
READY = "switchboard local: ready on "


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


def settle(condition, timeout: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    """Threads that serve a closed connection end asynchronously: give them a bounded moment."""
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return bool(condition())


def test_given_python_m_devstack_when_ready_then_the_api_answers_and_sigint_leaves_nothing_behind() -> None:
    ports = {"PORT": free_port(), "AWS_PORT": free_port(), "SIM_PORT": free_port()}
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
    reader = threading.Thread(target=lambda: [lines.put(line) for line in process.stdout or []], daemon=True)
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

        assert api_url == f"http://127.0.0.1:{ports['PORT']}"
        assert created.status_code == 201, created.text
        assert any("curl" in line and "/api/messages" in line for line in output)
    finally:
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=60)
        reader.join(timeout=10)
    assert code == 0, "".join(output)[-3000:]
    with pytest.raises(ProcessLookupError):
        os.killpg(process.pid, 0)  # no process of its group (children included) is left
    assert all(port_is_free(port) for port in ports.values())


def test_given_a_started_stack_with_open_connections_when_stopped_then_no_thread_or_port_is_left() -> None:
    before = set(threading.enumerate())
    stack = LocalStack(port=0, aws_port=0, sim_port=0, prefix=unique_prefix()).start()
    ports = [int(url.rsplit(":", 1)[1]) for url in (stack.api_url, stack.aws_url, stack.sim_url)]
    keep_alive = httpx.Client(trust_env=False)
    assert keep_alive.get(f"{stack.api_url}/api/openapi.json").status_code == 200
    assert keep_alive.get(f"{stack.sim_url}/v1/capabilities").status_code == 200

    stack.stop()

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
            assert again.notes == ["tenant demo already exists: its keys were shown when it was seeded"]
            assert [tenant["ownerTag"] for tenant in tenants.json()] == ["demo"]
    finally:
        endpoint.stop()
