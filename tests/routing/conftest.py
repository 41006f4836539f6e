"""The routing tests' downstream: the Chatwoot-style fake, injected as the downstream client."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from switchboard import bootstrap
from switchboard.routing.chatwoot import ChatwootClient
from tools.support.aws import AwsResources
from tools.support.downstream import FakeDownstream


@pytest.fixture
def fake(aws: AwsResources) -> Iterator[FakeDownstream]:
    """Every downstream (any base URL) is this fake, behind the real Chatwoot client."""
    downstream = FakeDownstream()
    client = ChatwootClient(local_mode=True, transport=downstream.transport())
    with bootstrap.overridden(downstream_client=client):
        yield downstream
