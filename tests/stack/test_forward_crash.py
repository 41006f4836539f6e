"""A forwarder container killed after the helpdesk applied its POST, before the SQS job was
acknowledged: the job comes back to a new container, which finds the message in the helpdesk and
posts nothing, so the customer's message is there once. The whole local stack, a served helpdesk."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import httpx
import pytest

from devstack.simulator import SimulatorControl
from devstack.stack import LocalStack
from tests.support.stacks import stack_on_free_ports
from tools.support.downstream import FakeDownstream, ServedDownstream

CONTACT = "5511977770042"
# A redelivery waits for the dead invocation's idempotency record to expire (its Lambda timeout,
# shortened here from the template's): a few receives a visibility timeout apart, fewer than the
# dead-letter queue's 8.
VISIBILITY_SECONDS = 8
FUNCTION_SECONDS = 20


class KillingDownstream(FakeDownstream):
    """Kills the forwarder (`kill`) right after applying the first incoming message it takes:
    the forwarder never records its success, and the job's answer never reaches SQS."""

    kill: Callable[[], bool] | None = None
    kills: int = 0

    def handle(
        self,
        origin: str,
        method: str,
        path: str,
        *,
        query: str,
        token: str | None,
        raw: bytes,
        content_type: str | None = None,
    ) -> tuple[int, Any]:
        status, payload = super().handle(
            origin, method, path, query=query, token=token, raw=raw, content_type=content_type
        )
        incoming = isinstance(payload, dict) and payload.get("message_type") == 0
        if method == "POST" and status == 200 and incoming and self.kill is not None and not self.kills:
            self.kills += int(self.kill())
        return status, payload


@pytest.fixture(scope="module")
def crash_stack() -> Iterator[tuple[LocalStack, KillingDownstream, ServedDownstream]]:
    stack = stack_on_free_ports(
        "fwdcrash",
        visibility_timeout=VISIBILITY_SECONDS,
        function_timeout=FUNCTION_SECONDS,
        environment={"PROVIDER_TIMEOUT_SECONDS": "1"},
    ).start()
    fake = KillingDownstream()
    served = fake.serve()
    yield stack, fake, served
    served.stop()
    stack.stop()


def wait_for(probe: Callable[[], Any], timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := probe()):
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout} s")
        time.sleep(0.2)
    return value


def test_given_the_forwarder_killed_after_its_post_then_the_message_is_in_the_helpdesk_once(
    crash_stack: tuple[LocalStack, KillingDownstream, ServedDownstream],
) -> None:
    stack, fake, served = crash_stack
    assert stack.demo is not None and stack.functions is not None
    functions = stack.functions
    demo = stack.demo
    mapping = {
        "downstreamBaseUrl": served.url,
        "downstreamApiToken": "cw-crash-token-0123456789",
        "downstreamAccountId": 3,
        "downstreamInboxId": 31,
    }
    with httpx.Client(base_url=stack.api_url, trust_env=False, timeout=30) as api:
        answer = api.put(
            f"/api/tenants/{demo.owner_tag}", json=mapping, headers={"authorization": f"Bearer {demo.admin_key}"}
        )
    assert answer.status_code == 200, answer.text
    fake.kill = lambda: functions.kill("ForwarderFunction")
    sqs = boto3.session.Session().client("sqs", region_name="us-east-1", endpoint_url=stack.aws_url)
    queue = stack.queues["ForwardQueue"].url
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]

    def queue_empty() -> bool:
        attributes = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=names)["Attributes"]
        return sum(int(attributes[name]) for name in names) == 0

    sim = SimulatorControl(stack.sim_url)
    source_id = sim.incoming_message(demo.instances[0].name, CONTACT, "o pedido 42 chegou?")
    sim.close()
    wait_for(lambda: fake.kills, timeout=30)
    # The job comes back once the dead invocation's visibility timeout passes, and then again
    # until its idempotency record's in-progress window is over; then it is forwarded.
    wait_for(queue_empty, timeout=150)
    sqs.close()
    lookups = [r for r in fake.requests if r.method == "GET" and r.path.endswith("/messages")]

    copies = [m for messages in fake.posted.values() for m in messages if m["source_id"] == source_id]
    assert len(copies) == 1 and copies[0]["content"] == "o pedido 42 chegou?"
    assert fake.kills == 1 and lookups  # it died after the post; the redelivery looked before posting
