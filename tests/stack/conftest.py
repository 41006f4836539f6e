"""A local stack for the stack's own tests (separate from the e2e one: these tests poke at the
API with generated requests, so they get a stack of their own). Module scope: it is gone before
the next module's tests change the process environment the in-process functions read."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from devstack.stack import LocalStack
from tests.support.stacks import stack_on_free_ports


@pytest.fixture(scope="module")
def local_stack() -> Iterator[LocalStack]:
    stack = stack_on_free_ports(
        "stack",
        environment={"PROVIDER_TIMEOUT_SECONDS": "1"},
    ).start()
    yield stack
    stack.stop()
