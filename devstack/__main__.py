"""`python -m devstack` (what `make local` runs): the whole of switchboard on this machine.

Ports: PORT (API, 3000), AWS_PORT (embedded AWS endpoint, 4566), SIM_PORT (provider
simulator, 3100), LIVE_PORT (the WebSocket API, 3001), LIVE_MANAGEMENT_PORT (its @connections
API, 3002); 0 picks a free port. AWS_ENDPOINT_URL replaces the embedded endpoint.
LOCAL_PLATFORM_KEY fixes the platform key; LOCAL_SCHEDULE_SECONDS every schedule's period;
LOCAL_MAX_CONTAINERS the containers per function (see devstack/lambdas.py).
Ctrl-C (or SIGTERM) stops everything; the process is gone within STOP_DEADLINE seconds even if
an invocation is still running then, and a second Ctrl-C ends it at once.
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
import threading
import time
from typing import Any

from devstack.lambdas import mount_layers
from devstack.stack import LocalStack

STOP_DEADLINE = 8.0


def _number(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value else default


def _banner(stack: LocalStack, seconds: float) -> str:
    demo = stack.demo
    lines = [
        f"  started in     {seconds:.1f} s",
        f"  API            {stack.api_url}   (OpenAPI: {stack.api_url}/api/openapi.json, docs: /api/docs)",
        f"  console        {stack.api_url}/console/" + ("   (sign in with the admin key below)" if demo else ""),
        f"  AWS endpoint   {stack.aws_url}",
        f"  simulator      {stack.sim_url}",
        *([f"  live           {stack.live_url}   (@connections: {stack.live_management_url})"] * bool(stack.live_url)),
        f"  platform key   {stack.platform_key}",
        *(f"  note           {note}" for note in stack.notes),
    ]
    if demo is not None:
        body = '{"to": "5511988887777", "text": "hello from switchboard"}'
        curl = shlex.join(
            [
                "curl",
                "-sS",
                "-X",
                "POST",
                f"{stack.api_url}/api/messages",
                "-H",
                f"Authorization: Bearer {demo.send_key}",
                "-H",
                "Content-Type: application/json",
                "-d",
                body,
            ]
        )
        lines += [
            f"  tenant         {demo.owner_tag}",
            f"  admin key      {demo.admin_key}",
            f"  send key       {demo.send_key}   ({'pool of 3 numbers' if demo.pool_mode else 'default number'})",
            f"  agent key      {demo.agent_key}   (attendant {demo.attendant_id})",
            "  numbers        "
            + ", ".join(f"{i.number} ({i.name}, {i.kind})" for i in demo.instances)
            + (" connected" if demo.connected else ""),
            *(f"  note           {note}" for note in demo.notes),
            *(f"  {person.role + ' user':<14} {person.email}   password {person.password}" for person in stack.people),
            "",
            "Send a message:",
            f"  {curl}",
            "Then see its status, source number and trace:",
            f"  curl -sS {stack.api_url}/api/messages/<id> -H {shlex.quote(f'Authorization: Bearer {demo.send_key}')}",
        ]
        if demo.instances:
            photo = shlex.join(
                [
                    "curl",
                    "-sS",
                    "-X",
                    "POST",
                    f"{stack.sim_url}/_sim/instances/{demo.instances[0].sim_id}/incoming-message",
                    "-H",
                    "Content-Type: application/json",
                    "-d",
                    '{"from": "5511988887777", "type": "image", "text": "olha a foto"}',
                ]
            )
            lines += [
                "A customer sends a photo (type also audio, video, document, sticker, location, reaction):",
                f"  {photo}",
            ]
    return "\n".join(lines)


def main() -> int:
    mount_layers()  # the log format comes from the shared layer, as every function's does
    from devstack.logs import configure as configure_logs  # noqa: PLC0415 - on the layers' path only now

    configure_logs()
    schedule = os.environ.get("LOCAL_SCHEDULE_SECONDS")
    stack = LocalStack(
        port=_number("PORT", 3000),
        aws_port=_number("AWS_PORT", 4566),
        sim_port=_number("SIM_PORT", 3100),
        live_port=_number("LIVE_PORT", 3001),
        live_management_port=_number("LIVE_MANAGEMENT_PORT", 3002),
        aws_endpoint_url=os.environ.get("AWS_ENDPOINT_URL") or None,
        platform_key=os.environ.get("LOCAL_PLATFORM_KEY") or None,
        schedule_seconds=float(schedule) if schedule else None,
    )
    stopping = threading.Event()
    serving = threading.Event()

    def request_stop(signum: int, frame: Any) -> None:
        if stopping.is_set():
            os._exit(128 + signum)  # a second Ctrl-C: now
        stopping.set()
        if not serving.is_set():
            raise KeyboardInterrupt  # still starting: abandon the start

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    code = 0
    try:
        started = time.monotonic()
        stack.start()  # a port in use: werkzeug says which, and the exit status is 1
        serving.set()
        print(_banner(stack, time.monotonic() - started), flush=True)
        print(f"switchboard local: ready on {stack.api_url}", flush=True)
        # Every thread of the stack blocks SIGINT and SIGTERM (devstack.background), so the kernel
        # hands them to this one and interrupts its wait. Waking now and then all the same keeps a
        # thread some library started unblocked from taking a Ctrl-C that would never be handled.
        while not stopping.wait(timeout=0.5):
            pass
    except KeyboardInterrupt:
        code = 128 + signal.SIGINT
    finally:
        print("switchboard local: stopping", file=sys.stderr, flush=True)
        _exit_if_still_running_after(STOP_DEADLINE)
        stack.stop()
    return code


def _exit_if_still_running_after(seconds: float) -> None:
    """The process ends within `seconds`, whatever an invocation in flight still does then."""

    def leave() -> None:
        print(f"switchboard local: not stopped within {seconds:.0f} s, exiting", file=sys.stderr, flush=True)
        os._exit(1)

    watchdog = threading.Timer(seconds, leave)
    watchdog.daemon = True
    watchdog.start()


if __name__ == "__main__":
    status = main()
    # Everything is stopped and closed by now. The interpreter's own teardown of a process this
    # size (every function's modules, moto's state) takes seconds more, measured 2 to 12 s on a
    # busy machine: skip it, as the process has nothing left to flush.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
