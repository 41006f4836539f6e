"""The messages tests' recording provider, and the template's workers run on what their queues hold."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

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
