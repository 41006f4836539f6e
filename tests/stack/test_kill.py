"""`Functions.kill` crashes a container mid-invocation as Lambda's would: the invocation stops
where it stands with no answer, the container is gone, and an SQS batch it held comes back after
its visibility timeout to a new container."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from devstack import template
from devstack.aws_endpoint import AwsEndpoint
from devstack.lambdas import FunctionCrashed, Functions
from devstack.sqs_poller import SqsPoller
from tests.stack.test_workers import eventually
from tools.support.aws import fake_aws_environment

TEMPLATE = Path(__file__).parent / "fixtures" / "crash.yaml"
FUNCTION = "LingerFunction"


def module_state(functions: Functions) -> dict[str, Any]:
    return functions.handler(FUNCTION).__globals__


def start_invocation(functions: Functions, steps: int) -> tuple[threading.Thread, list[BaseException | Any]]:
    outcome: list[BaseException | Any] = []

    def run() -> None:
        try:
            outcome.append(functions.invoke(FUNCTION, {"steps": steps}))
        except FunctionCrashed as crashed:
            outcome.append(crashed)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def test_given_an_invocation_in_progress_when_killed_then_it_stops_unanswered_and_its_container_is_gone() -> None:
    functions = Functions(TEMPLATE)
    thread, outcome = start_invocation(functions, steps=500)
    eventually(lambda: functions.running(FUNCTION))
    first = module_state(functions)

    assert functions.kill(FUNCTION)
    thread.join(timeout=5)

    assert isinstance(outcome[0], FunctionCrashed)
    assert first["STARTED"] == ["direct"] and first["FINISHED"] == []  # it stopped mid-way
    assert functions.containers(FUNCTION) == 0
    assert functions.invoke(FUNCTION, {"steps": 1}) == {"steps": 1}
    second = module_state(functions)
    assert second is not first and second["FINISHED"] == ["direct"]  # a new container answered


def test_given_no_invocation_running_then_kill_kills_nothing() -> None:
    functions = Functions(TEMPLATE)
    assert functions.invoke(FUNCTION, {"steps": 1}) == {"steps": 1}

    assert not functions.kill(FUNCTION)
    assert functions.invoke(FUNCTION, {"steps": 1}) == {"steps": 1}
    assert functions.containers(FUNCTION) == 1


def test_given_a_kill_after_the_last_network_operation_then_the_work_is_done_but_unanswered() -> None:
    functions = Functions(TEMPLATE)
    thread, outcome = start_invocation(functions, steps=30)
    eventually(lambda: functions.running(FUNCTION))
    state = module_state(functions)

    assert functions.kill(FUNCTION, after_operations=10_000)
    thread.join(timeout=5)

    assert state["FINISHED"] == ["direct"]
    assert isinstance(outcome[0], FunctionCrashed)


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Functions, Any, Any]]:
    fake_aws_environment(monkeypatch)
    endpoint = AwsEndpoint(port=0).start()
    sqs = boto3.session.Session().client("sqs", region_name="us-east-1", endpoint_url=endpoint.url)
    queues = template.create_queues(sqs, template.LocalNames(prefix="crash"), TEMPLATE)
    functions = Functions(TEMPLATE)
    poller = SqsPoller(functions, queues, endpoint_url=endpoint.url, region="us-east-1").start()
    yield functions, sqs, queues
    poller.stop()
    sqs.close()
    endpoint.stop()


def queue_depth(sqs: Any, url: str) -> int:
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    return sum(
        int(value) for value in sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"].values()
    )


def test_given_a_killed_sqs_invocation_then_its_record_comes_back_after_the_visibility_timeout(
    served: tuple[Functions, Any, Any],
) -> None:
    functions, sqs, queues = served
    url = queues["LingerQueue"].url
    sqs.send_message(QueueUrl=url, MessageBody="300")
    eventually(lambda: functions.running(FUNCTION))
    first = module_state(functions)

    assert functions.kill(FUNCTION)

    def finished_elsewhere() -> dict[str, Any] | None:
        state = module_state(functions) if functions.containers(FUNCTION) else None
        return state if state is not None and state is not first and state["FINISHED"] else None

    second = eventually(finished_elsewhere)
    assert first["STARTED"] == ["1"] and first["FINISHED"] == []
    assert second["FINISHED"] == ["2"]  # the second receive, in a new container
    assert eventually(lambda: queue_depth(sqs, url) == 0)
