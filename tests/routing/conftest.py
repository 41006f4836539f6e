"""The routing tests' downstream: the Chatwoot-style fake, injected as the downstream client."""

from __future__ import annotations

import pytest

from switchboard.routing import wiring as routing_wiring
from switchboard.routing.chatwoot import ChatwootClient
from tests.support.aws import AwsResources
from tests.support.downstream import FakeDownstream


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, aws: AwsResources) -> FakeDownstream:
    """Every downstream (any base URL) is this fake, behind the real Chatwoot client."""
    downstream = FakeDownstream()
    client = ChatwootClient(local_mode=True, transport=downstream.transport())
    monkeypatch.setattr(routing_wiring, "downstream_client", lambda: client)
    return downstream
