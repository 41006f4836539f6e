"""Pairing a number through the API: `GET /api/instances/{name}/qr`, `POST .../connect`,
`POST .../logout` and `POST .../test-message`, against the simulator's real-server flavours. A test
message is an ordinary message pinned to its instance: queued, then sent by the send worker
(run here on what SendQueue holds), logged, traced and counted like any other."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from devstack.apigw import HttpApi
from devstack.simulator import Simulator, SimulatorControl
from tests.support.kinds import KindsSetup
from tools.support.api import Client
from tools.support.aws import AwsResources
from tools.support.sqs import drain_queue


@pytest.fixture
def setup(client: Client, make_tenant: Any, simulator: Simulator, control: SimulatorControl) -> KindsSetup:
    return KindsSetup(client, make_tenant("acme"), simulator, control)


def pairing(setup: KindsSetup, name: str, method: str = "GET", route: str = "qr", body: Any = None) -> Any:
    path = f"/api/instances/{name}/{route}"
    key = setup.tenant.admin
    answer = setup.client.get(path, key=key) if method == "GET" else setup.client.post(path, key=key, json_body=body)
    return answer


@pytest.mark.parametrize("flavour", ["wuzapi", "evolution"])
def test_an_admin_pairs_a_number_from_its_code_then_sends_a_test_message_and_logs_it_out(
    setup: KindsSetup, flavour: str, aws: AwsResources, http_api: HttpApi
) -> None:
    name = f"new-{flavour}"
    token = setup.paired(flavour, name, "5511900002001", connected=False, paired=False)
    setup.put(name, flavour, setup.number("5511900002001"), token)

    started = pairing(setup, name, "POST", "connect")

    assert started.status == 200, started.body
    shown = started.json()
    assert (shown["state"], shown["connection"]) == ("code", "DISCONNECTED")
    assert shown["qrCode"].startswith("data:image/png;base64,")
    assert token not in started.body.decode()

    setup.control.scan(name)
    paired = pairing(setup, name).json()

    # No webhook reaches the in-process API: the status read behind a `paired` answer connects it.
    assert (paired["state"], paired["connection"], paired["qrCode"]) == ("paired", "CONNECTED", None)
    assert setup.listed(name) == "CONNECTED"

    queued = pairing(setup, name, "POST", "test-message", {"to": "+5511988887777", "text": "Teste do switchboard"})

    assert queued.status == 202, queued.body
    assert (queued.json()["status"], queued.json()["instance"]) == ("QUEUED", name)
    assert not [m for m in setup.control.sent() if m["instance"] == name]  # the worker sends it
    drain_queue(aws, http_api.functions, "SendQueue", "SendWorkerFunction")
    [message] = [m for m in setup.control.sent() if m["instance"] == name]
    assert (message["phone"], message["body"]) == ("5511988887777", "Teste do switchboard")
    read = setup.client.get(f"/api/messages/{queued.json()['id']}", key=setup.tenant.admin).json()
    assert (read["status"], read["instance"], read["pinnedInstance"]) == ("SENT", name, name)
    stages = [event["stage"] for event in read["trace"]]
    assert stages[:2] == ["message.accepted", "pool.number.resolved"] and "message.sent" in stages
    resolved = read["trace"][1]["data"]
    assert (resolved["selectionMode"], resolved["instance"], resolved["resolvedNumber"]) == (
        "instance",
        name,
        "5511900002001",
    )
    logged = setup.client.get("/api/messages?direction=out", key=setup.tenant.admin).json()["items"]
    assert [item["id"] for item in logged if item["instance"] == name] == [queued.json()["id"]]

    logged_out = pairing(setup, name, "POST", "logout")

    assert logged_out.status == 200, logged_out.body
    assert logged_out.json()["state"] == "DISCONNECTED"
    again = pairing(setup, name, "POST", "logout")
    assert (again.status, again.json()["error"]) == (409, "instance_disconnected")
    refused = pairing(setup, name, "POST", "test-message", {"to": "5511988887777", "text": "oi"})
    assert (refused.status, refused.json()["error"]) == (409, "instance_disconnected")


def test_a_meta_number_is_not_paired_by_a_code(setup: KindsSetup) -> None:
    phone_id = "106500000002002"
    token = setup.paired("meta", "meta-pairing", "5511900002002", metaPhoneId=phone_id)
    setup.put(phone_id, "meta", setup.number("5511900002002", phone_id), token)

    answer = pairing(setup, phone_id)

    assert (answer.status, answer.json()["error"]) == (422, "not_supported")


def test_another_tenants_instance_is_not_found_and_a_bad_recipient_is_refused_at_its_field(
    setup: KindsSetup, make_tenant: Any
) -> None:
    token = setup.paired("wuzapi", "acme-only", "5511900002003", connected=False, paired=False)
    setup.put("acme-only", "wuzapi", setup.number("5511900002003"), token)
    other = make_tenant("globex")

    for method, route in (("GET", "qr"), ("POST", "connect"), ("POST", "logout")):
        path = f"/api/instances/acme-only/{route}"
        answer = (
            setup.client.get(path, key=other.admin) if method == "GET" else setup.client.post(path, key=other.admin)
        )
        assert answer.status == 404, (route, answer.body)
    bad = pairing(setup, "acme-only", "POST", "test-message", {"to": "not a phone", "text": "oi"})
    assert bad.status == 422
    # The field and the reason, for the console to say it at the field in its own words.
    assert bad.json()["error"] == "validation_error"
    assert bad.json()["fields"] == [{"field": "to", "reason": "string_pattern_mismatch"}]
    long = pairing(setup, "acme-only", "POST", "test-message", {"to": "5511988887777", "text": "x" * 1001})
    # Bounded after the control characters are checked (the send API's text): pydantic says `too_long`.
    assert long.json()["fields"] == [{"field": "text", "reason": "too_long", "limit": 1000}]
    # The send API's text: an escape sequence is refused, a line break is kept.
    escaped = pairing(setup, "acme-only", "POST", "test-message", {"to": "5511988887777", "text": "oi\x1b[2J"})
    assert (escaped.status, [f["field"] for f in escaped.json()["fields"]]) == (422, ["text"])


def test_a_test_message_leaves_through_its_instance_alone_and_fails_in_words_when_that_instance_went_away(
    setup: KindsSetup, aws: AwsResources, http_api: HttpApi
) -> None:
    number = setup.number("5511900002004")
    first, second = (setup.paired("wuzapi", name, "5511900002004") for name in ("shop-a", "shop-b"))
    setup.put("shop-a", "wuzapi", number, first, priority=0)
    setup.put("shop-b", "wuzapi", number, second, priority=1)

    # The number's second instance, though the first would be tried first by any other message.
    queued = pairing(setup, "shop-b", "POST", "test-message", {"to": "5511988887777", "text": "por shop-b"})
    gone = pairing(setup, "shop-a", "POST", "test-message", {"to": "5511988887777", "text": "por shop-a"})
    assert setup.client.delete("/api/instances/shop-a", key=setup.tenant.admin).status == 204
    drain_queue(aws, http_api.functions, "SendQueue", "SendWorkerFunction")

    assert [(m["instance"], m["body"]) for m in setup.control.sent()] == [("shop-b", "por shop-b")]
    failed = setup.client.get(f"/api/messages/{gone.json()['id']}", key=setup.tenant.admin).json()
    assert (failed["status"], failed["failureReason"]) == ("FAILED", "instance_not_found")
    month = datetime.now(UTC).strftime("%Y-%m")
    usage = setup.client.get(f"/api/usage/summary?month={month}", key=setup.tenant.admin).json()
    assert {row["instance"]: row["messagesOut"] for summary in usage for row in summary["instances"]} == {"shop-b": 1}
    assert queued.status == 202
