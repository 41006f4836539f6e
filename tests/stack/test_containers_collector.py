"""The containers of one local-stack process share its garbage collector: loading one neither
pauses nor freezes it, so a reference cycle that was alive while a container loaded (another
invocation's request, a killed container's module) is freed once it is garbage."""

from __future__ import annotations

import gc
import weakref

import pytest

from devstack.lambdas import Functions
from tools.support.aws import fake_aws_environment

FUNCTION = "TenantsFunction"


class Cycle:
    def __init__(self) -> None:
        self.me = self


def test_given_a_cycle_alive_while_containers_load_when_it_becomes_garbage_then_it_is_collected(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake_aws_environment(monkeypatch)
    monkeypatch.setenv("TABLE_NAME", "collector-test")
    frozen = gc.get_freeze_count()
    functions = Functions(max_containers=2)
    in_flight = Cycle()
    watch = weakref.ref(in_flight)

    functions.handler(FUNCTION)  # a container's handler module imports and runs coldstart.imported()

    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen
    del in_flight
    gc.collect()
    assert watch() is None
