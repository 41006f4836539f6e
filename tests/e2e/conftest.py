"""End-to-end fixtures: the whole local stack (the one `make local` runs), in this process.

`stack` (started once for the tests under tests/e2e, stopped after the last of them) is a
`Stack` with:

- `stack.api_url`, `stack.sim_url`, `stack.aws_url`: base URLs of the gateway (the HTTP API),
  the provider simulator and the embedded AWS endpoint (moto server, serialised);
- `stack.platform_key`: a `platform`-scope key;
- `stack.demo`: the seeded `demo` tenant, a `devstack.seed.SeededTenant`: `owner_tag`,
  `admin_key`, `send_key`/`send_key_id` (scope `send`, pool mode over the three numbers when
  the pool API exists: `demo.pool_mode`), `agent_key`/`agent_key_id` + `attendant_id`,
  `provider_id` + `webhook_secret` (the simulator signs its webhooks with it), `numbers`
  (the API's number views), `instances` (`SeededInstance`: `name` = simulator id,
  `token`, `kind` (`messages`, `messages`, `calls`), `number_id`, `number`), `connected`;
- `stack.api(method, path, key=..., json=..., headers=..., content=...)` -> `httpx.Response`,
  through the real gateway; like the in-process `client`, it fails the test if a secret (seeded
  keys, tokens, webhook secrets, or one a test sent) comes back in a response;
- `stack.sim`: a `SimulatorControl` for the `/_sim` control API (incoming messages and calls,
  connection changes, faults, `sent()`, `events()`);
- `stack.calls_view(tenant, name)`: the tenant admin's view of a calls instance's line (limit,
  occupancy, calls), and `calls_instance(tenant)` the name of the tenant's calls instance;
- `stack.in_queue("SendQueue")`: messages on a template queue, visible or in flight
  (`stack.wait_for(lambda: stack.in_queue("SendQueue") == 0)` waits for the worker);
- `stack.wait_for(probe, timeout=...)`: polls `probe()` until it returns a truthy value and
  returns it (asynchronous effects: SQS workers, webhooks); fails the test on timeout;
- `stack.local`: the `devstack.stack.LocalStack` itself (queues, tables, functions).

Tests that change state others could see (connections, limits, pools, keys) should use
`fresh_tenant`: a new tenant with its own provider, three connected numbers/instances
(`<owner_tag>-1..3`, the third of kind `calls`) and keys, on the same stack.

The stack runs in this process with test-friendly knobs: provider calls time out after 1 s and
the simulator's `timeout` fault sleeps 2 s; webhook retries start at 50 ms; a client webhook gets
two attempts a second apart. Queues keep the
template's visibility timeouts. Its scope is this package, so the stack (and the environment it
sets for the in-process functions) is gone before the tests of other packages run. Tests here
must not use the `aws`/`served_aws` fixtures: they reset moto's state, which the embedded
endpoint shares.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import boto3
import httpx
import pytest

from devstack.seed import SeededTenant
from devstack.simulator import SimulatorControl
from devstack.stack import LocalStack
from tests.support.stacks import stack_on_free_ports
from tools.support.api import SECRET_WATCH

T = TypeVar("T")


class Stack:
    def __init__(self, local: LocalStack) -> None:
        self.local = local
        self.api_url = local.api_url
        self.sim_url = local.sim_url
        self.aws_url = local.aws_url
        self.platform_key = local.platform_key
        assert local.demo is not None
        SECRET_WATCH.secrets.update({local.platform_key, local.sim_admin_token})
        self.demo: SeededTenant = _watched(local.demo)
        self.http = httpx.Client(base_url=local.api_url, timeout=30.0, trust_env=False)
        self.sim = SimulatorControl(local.sim_url)
        self._sqs = boto3.session.Session().client("sqs", endpoint_url=local.aws_url)

    def api(
        self,
        method: str,
        path: str,
        *,
        key: str | None = None,
        json: Any = None,
        headers: dict[str, str] | None = None,
        content: bytes | None = None,
    ) -> httpx.Response:
        all_headers = dict(headers or {})
        if key is not None:
            all_headers["authorization"] = f"Bearer {key}"
        SECRET_WATCH.learn(json)
        answer = self.http.request(method, path, json=json, content=content, headers=all_headers)
        SECRET_WATCH.assert_absent(answer.text, f"the response to {method} {path}")
        with contextlib.suppress(ValueError):
            SECRET_WATCH.learn_created_keys(answer.json())
        return answer

    def calls_view(self, tenant: SeededTenant, name: str) -> dict[str, Any]:
        """`GET /api/connections/{name}/calls` as the tenant's admin: the line, its limit and its calls."""
        answer = self.api("GET", f"/api/connections/{name}/calls", key=tenant.admin_key)
        assert answer.status_code == 200, answer.text
        body: dict[str, Any] = answer.json()
        return body

    def new_tenant(self) -> SeededTenant:
        """A tenant of its own: tag `t<hex>`, phone numbers unique on the simulator."""
        unique = uuid.uuid4()
        digits = "55" + str(unique.int % 10**10).zfill(10)
        return _watched(self.local.seed_tenant(f"t{unique.hex[:12]}", digits))

    def in_queue(self, logical_id: str) -> int:
        """Messages on a template queue (`SendQueue`, `SendDLQ`...), visible or in flight."""
        names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        attributes = self._sqs.get_queue_attributes(QueueUrl=self.local.queues[logical_id].url, AttributeNames=names)
        return sum(int(attributes["Attributes"][name]) for name in names)

    @staticmethod
    def wait_for(probe: Callable[[], T | None], timeout: float = 10.0, interval: float = 0.05) -> T:
        deadline = time.monotonic() + timeout
        while True:
            value = probe()
            if value:
                return value
            if time.monotonic() >= deadline:
                pytest.fail(f"condition not met within {timeout} s (last value: {value!r})")
            time.sleep(interval)

    def close(self) -> None:
        self._sqs.close()
        self.http.close()
        self.sim.close()


def calls_instance(tenant: SeededTenant) -> str:
    """The name of the tenant's instance of kind `calls`."""
    return next(instance.name for instance in tenant.instances if instance.kind == "calls")


def _watched(tenant: SeededTenant) -> SeededTenant:
    """Its keys, tokens and webhook secret must never appear in a response or a log line."""
    SECRET_WATCH.secrets.update(
        {tenant.admin_key, tenant.send_key, tenant.agent_key, tenant.webhook_secret}
        | {instance.token for instance in tenant.instances}
    )
    return tenant


@pytest.fixture(scope="package")
def stack() -> Iterator[Stack]:
    local = stack_on_free_ports(
        "e2e",
        simulator_settings={"fault_delay_seconds": 2.0, "webhook_retry_base_delay": 0.05},
        # One round-robin counter item: the scenarios count on the exact rotation to reach a
        # given pool number within a few new recipients.
        # A client webhook gets two attempts, a second apart: a delivery to an endpoint that is
        # down ends `failed` in the delivery log within seconds (8 attempts over 1 h 45 min on AWS).
        environment={
            "PROVIDER_TIMEOUT_SECONDS": "1",
            "CLIENT_WEBHOOK_MAX_ATTEMPTS": "2",
            "CLIENT_WEBHOOK_RETRY_SECONDS": "1",
        },
    ).start()
    shared = Stack(local)
    yield shared
    shared.close()
    local.stop()


@pytest.fixture
def fresh_tenant(stack: Stack) -> SeededTenant:
    return stack.new_tenant()
