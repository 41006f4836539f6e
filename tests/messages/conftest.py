"""The messages tests' recording provider, and the template's workers run on what their queues hold."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from moto.dynamodb.models import DynamoDBBackend

from devstack.apigw import HttpApi
from switchboard import bootstrap
from tools.support.aws import AwsResources
from tools.support.fakes import FakeProvider
from tools.support.sqs import drain_queue


@pytest.fixture
def provider(aws: AwsResources) -> Iterator[FakeProvider]:
    """Every provider kind the send worker reaches is this recording fake."""
    fake = FakeProvider()
    with bootstrap.overridden(send_provider_client=lambda kind: fake):
        yield fake


@pytest.fixture
def drain(aws: AwsResources, http_api: HttpApi) -> Callable[[str, str], list[Any]]:
    """`drain(queue, function)`: the function run on every message of the queue, as Lambda's event
    source mapping would; its responses."""
    return lambda queue, function: drain_queue(aws, http_api.functions, queue, function)


@pytest.fixture
def run_worker(drain: Callable[[str, str], list[Any]]) -> Callable[[], list[Any]]:
    """The send worker run on what SendQueue holds."""
    return lambda: drain("SendQueue", "SendWorkerFunction")


@pytest.fixture
def dynamo_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The DynamoDB operations moto serves while the test runs, by name (query, scan, ...)."""
    calls: list[str] = []
    for name in ("scan", "query", "get_item", "batch_get_item"):
        original = getattr(DynamoDBBackend, name)

        def recording(self: Any, *args: Any, _name: str = name, _original: Any = original, **kwargs: Any) -> Any:
            calls.append(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(DynamoDBBackend, name, recording)
    yield calls
