"""Local stacks for tests: every port free, every table, queue and bus named for this stack alone
(embedded endpoints in one process share moto's state)."""

from __future__ import annotations

import uuid
from typing import Any, TypedDict

import httpx

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


def map_demo_downstream(stack: LocalStack, url: str, *, token: str, account_id: int, inbox_id: int) -> None:
    """The started stack's demo tenant sends its conversations to the helpdesk at `url` (a PUT of
    its downstream mapping, as its admin)."""
    assert stack.demo is not None
    mapping = {
        "downstreamBaseUrl": url,
        "downstreamApiToken": token,
        "downstreamAccountId": account_id,
        "downstreamInboxId": inbox_id,
    }
    with httpx.Client(base_url=stack.api_url, trust_env=False, timeout=30) as api:
        answer = api.put(
            f"/api/tenants/{stack.demo.owner_tag}",
            json=mapping,
            headers={"authorization": f"Bearer {stack.demo.admin_key}"},
        )
    assert answer.status_code == 200, answer.text
