"""A local stack for the stack's own tests (separate from the e2e one: these tests poke at the
API with generated requests, so they get a stack of their own). Module scope: it is gone before
the next module's tests change the process environment the in-process functions read."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from devstack.stack import LocalStack


def unique_prefix() -> str:
    """Embedded endpoints in one process share moto's state: each stack gets its own names."""
    return f"stack-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def local_stack() -> Iterator[LocalStack]:
    # The ticket route hands out a WebSocket URL; these tests open no socket.
    environment = {"PROVIDER_TIMEOUT_SECONDS": "1", "LIVE_URL": "ws://127.0.0.1:9/live"}
    stack = LocalStack(port=0, aws_port=0, sim_port=0, prefix=unique_prefix(), environment=environment).start()
    yield stack
    stack.stop()
