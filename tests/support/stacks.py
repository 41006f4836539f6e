"""Local stacks for tests: every port free, every table, queue and bus named for this stack alone
(embedded endpoints in one process share moto's state)."""

from __future__ import annotations

import uuid
from typing import Any, TypedDict

from devstack.stack import LocalStack


class FreePorts(TypedDict):
    port: int
    aws_port: int
    sim_port: int
    live_port: int
    live_management_port: int


FREE_PORTS: FreePorts = {"port": 0, "aws_port": 0, "sim_port": 0, "live_port": 0, "live_management_port": 0}


def unique_prefix(kind: str = "stack") -> str:
    return f"{kind}-{uuid.uuid4().hex[:8]}"


def stack_on_free_ports(kind: str, **settings: Any) -> LocalStack:
    """A `LocalStack` (not started) on free ports with a prefix of its own; `settings` are the
    other `LocalStack` arguments."""
    return LocalStack(**FREE_PORTS, prefix=unique_prefix(kind), **settings)
