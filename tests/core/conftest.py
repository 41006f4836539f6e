"""The local stack the HTTP-level fuzz and conformance runs share (tests/core/test_conformance.py,
tests/core/test_fuzz.py): starting one takes 10 to 15 s on two cores, so it is started once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from devstack.stack import LocalStack
from tests.support.stacks import stack_on_free_ports


@pytest.fixture(scope="package")
def api_stack() -> Iterator[LocalStack]:
    local = stack_on_free_ports(
        "api",
        environment={
            "PROVIDER_TIMEOUT_SECONDS": "1",
            "POWERTOOLS_LOG_LEVEL": "CRITICAL",
            # the runs' own pace must not turn their answers into 429s
            "QUOTA_TENANT_RPS": "10000",
            "QUOTA_TENANT_BURST": "100000",
            "QUOTA_KEY_RPS": "10000",
            "QUOTA_KEY_BURST": "100000",
        },
    ).start()
    yield local
    local.stop()
