"""The call-limit tests' tenant `acme` and its connections on the simulator, made through the API."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from devstack.simulator import Simulator, SimulatorControl
from tools.support.api import Client, TenantKeys
from tools.support.connections import Connection, register_connection


@pytest.fixture
def acme(make_tenant: Callable[..., TenantKeys]) -> TenantKeys:
    return make_tenant("acme")


@pytest.fixture
def connect(
    client: Client, acme: TenantKeys, simulator: Simulator, control: SimulatorControl
) -> Callable[..., Connection]:
    """`connect(**simulator_fields)`: a calls connection of `acme` (fields of the simulator instance)."""

    def make(**sim_fields: Any) -> Connection:
        return register_connection(client, acme, simulator, control, **sim_fields)

    return make
