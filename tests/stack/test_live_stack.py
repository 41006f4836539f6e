"""`LocalStack` serves the template's WebSocket API and runs its EventBridge rules: the functions
get the local `LIVE_URL` and `LIVE_MANAGEMENT_URL` in place of the deployed API's, an event a
function puts on the bus reaches a socket through the rule's function and @connections, and
`stop()` leaves no thread, socket or port.

The template is the real one's tables, queues, bus and layer (what the stack itself needs) with
the WebSocket API, bus and functions of fixtures/live.yaml."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from devstack import template
from devstack.stack import LocalStack
from devstack.template import Intrinsic
from tests.stack.test_lifecycle import port_is_free, settle
from tests.support.stacks import unique_prefix

FIXTURE = Path(__file__).parent / "fixtures" / "live.yaml"
KEPT = {"AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::Events::EventBus", "AWS::Serverless::LayerVersion"}


class _Dumper(yaml.SafeDumper):  # type: ignore[misc]  # PyYAML ships no annotations: its classes are Any
    pass


def _intrinsic(dumper: yaml.SafeDumper, value: Intrinsic) -> yaml.Node:
    tag = f"!{value.name}"
    if isinstance(value.value, list):
        return dumper.represent_sequence(tag, value.value)
    if isinstance(value.value, dict):
        return dumper.represent_mapping(tag, value.value)
    return dumper.represent_scalar(tag, str(value.value))


_Dumper.add_representer(Intrinsic, _intrinsic)


def combined_template(directory: Path) -> Path:
    """The real template's storage and layer, the fixture's API and functions; paths made absolute."""
    real = copy.deepcopy(template.load(template.TEMPLATE))
    fixture = copy.deepcopy(template.load(FIXTURE))
    resources: dict[str, Any] = {}
    for logical_id, resource in real["Resources"].items():
        if resource["Type"] in KEPT:
            if resource["Type"] == "AWS::Serverless::LayerVersion":
                properties = resource["Properties"]
                properties["ContentUri"] = str((template.TEMPLATE.parent / properties["ContentUri"]).resolve())
            resources[logical_id] = resource
    for logical_id, resource in fixture["Resources"].items():
        if resource["Type"] == "AWS::Serverless::Function":
            properties = resource["Properties"]
            properties["CodeUri"] = str((FIXTURE.parent / properties["CodeUri"]).resolve())
        resources[logical_id] = resource
    document = {
        "AWSTemplateFormatVersion": real["AWSTemplateFormatVersion"],
        "Transform": real["Transform"],
        "Parameters": {**(real.get("Parameters") or {}), **(fixture.get("Parameters") or {})},
        "Globals": real.get("Globals") or {},
        "Resources": resources,
    }
    path = directory / "template.yaml"
    path.write_text(yaml.dump(document, Dumper=_Dumper, sort_keys=False))
    return path


@pytest.fixture
def stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalStack]:
    monkeypatch.setenv("LOCAL_MAX_CONTAINERS", "1")
    local = LocalStack(
        port=0,
        aws_port=0,
        sim_port=0,
        live_port=0,
        live_management_port=0,
        seed=False,
        prefix=unique_prefix(),
        template_path=combined_template(tmp_path),
        event_retry_delays=(0.1, 0.1),
    ).start()
    yield local
    local.stop()


def test_given_a_template_with_a_websocket_api_then_the_functions_get_the_local_live_urls(stack: LocalStack) -> None:
    assert stack.live is not None
    assert stack.live_url == f"ws://127.0.0.1:{stack.live.port}/live"
    assert stack.live_management_url.startswith("http://127.0.0.1:")
    assert stack.live_management_url.endswith("/live")
    assert stack.environment["LIVE_URL"] == stack.live_url
    assert stack.environment["LIVE_MANAGEMENT_URL"] == stack.live_management_url
    assert stack.environment["TEST_BUS_NAME"] == stack.buses["TestBus"]


def test_given_a_message_that_publishes_then_the_bus_rule_notifies_the_socket(stack: LocalStack) -> None:
    with connect(f"{stack.live_url}?ticket=fine", open_timeout=10) as client:
        client.send(json.dumps({"action": "echo"}))
        connection = json.loads(client.recv(timeout=10))["connection"]

        client.send(json.dumps({"action": "publish", "type": "thing.changed", "detail": {"tenant": "t1"}}))
        frame = json.loads(client.recv(timeout=10))

    assert frame["type"] == "thing.changed"
    assert frame["detail"] == {"tenant": "t1", "connection": connection}


def test_given_an_open_socket_when_the_stack_stops_then_it_is_closed_and_nothing_is_left(tmp_path: Path) -> None:
    before = set(threading.enumerate())
    local = LocalStack(
        port=0,
        aws_port=0,
        sim_port=0,
        live_port=0,
        live_management_port=0,
        seed=False,
        prefix=unique_prefix(),
        template_path=combined_template(tmp_path),
    ).start()
    ports = [int(url.split(":")[2].split("/")[0]) for url in (local.live_url, local.live_management_url)]
    with connect(f"{local.live_url}?ticket=fine", open_timeout=10) as client:
        local.stop()

        with pytest.raises(ConnectionClosed):
            client.recv(timeout=10)
    assert client.close_code == 1001
    assert settle(lambda: not (set(threading.enumerate()) - before)), set(threading.enumerate()) - before
    assert all(port_is_free(port) for port in ports)
