"""The local WebSocket API, its @connections API and the EventBridge rules behave as API Gateway,
EventBridge and Lambda's async invocation do, on real sockets and a real (serialised) moto
server, with a tiny template (fixtures/live.yaml)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from devstack import eventbridge, template
from devstack.aws_endpoint import AwsEndpoint
from devstack.lambdas import Functions
from devstack.websocket_api import WebSocketApi, websocket_apis
from tests.stack.test_workers import eventually
from tools.support.aws import fake_aws_environment

TEMPLATE = Path(__file__).parent / "fixtures" / "live.yaml"
REGION = "us-east-1"
CONNECTION_ID = re.compile(r"^[A-Za-z0-9_-]{15}=$")


class Live:
    """The WebSocket API and the rules of the fixture template, over an embedded endpoint."""

    def __init__(self, endpoint: AwsEndpoint, **settings: Any) -> None:
        self.endpoint = endpoint
        session = boto3.session.Session(region_name=REGION)
        self.events = session.client("events", endpoint_url=endpoint.url)
        self.bus = template.create_event_buses(self.events, template.LocalNames(prefix="live"), TEMPLATE)["TestBus"]
        self.functions = Functions(TEMPLATE, max_containers=1)
        definition = websocket_apis(TEMPLATE, set(self.functions.names()))[0]
        self.api = WebSocketApi(self.functions, definition, port=0, management_port=0, **settings).start()
        self.sqs = session.client("sqs", endpoint_url=endpoint.url)
        self.queues = template.create_queues(self.sqs, template.LocalNames(prefix="live"), TEMPLATE)
        self.send_failures = 0  # the next sends to a queue target that fail (the dead-letter queue's never do)
        found = eventbridge.rules(self.functions, {"TestBus": self.bus}, template.LocalNames(prefix="live"))
        self.router = eventbridge.EventRouter(self.functions, found, retry_delays=(0.1, 0.1), send=self.send).start()
        self.forget = endpoint.observe(eventbridge.PUT_EVENTS_TARGET, self.router.observe)
        self.connections = session.client("apigatewaymanagementapi", endpoint_url=self.api.management_url)

    def send(self, queue: str, body: str) -> None:
        if queue == "Inbox" and self.send_failures:
            self.send_failures -= 1
            raise RuntimeError("the queue refused the message")
        self.sqs.send_message(QueueUrl=self.queues[queue].url, MessageBody=body)

    def received(self, queue: str) -> list[dict[str, Any]]:
        """The bodies on `queue`, taken off it."""
        url = self.queues[queue].url
        messages = self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        for message in messages:
            self.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        return [json.loads(message["Body"]) for message in messages]

    def connect(self, query: str = "ticket=fine") -> ClientConnection:
        return connect(f"{self.api.url}?{query}", open_timeout=10, close_timeout=2)

    def recorded(self, function: str) -> list[dict[str, Any]]:
        """The events the function was invoked with (not the notes it adds, such as a gone connection)."""
        recorded: list[tuple[str, Any]] = self.functions.handler(function).__globals__["EVENTS"]
        return [event for kind, event in list(recorded) if kind != "gone"]

    def socket_events(self, event_type: str) -> list[dict[str, Any]]:
        return [e for e in self.recorded("SocketFunction") if e["requestContext"]["eventType"] == event_type]

    def put(self, detail_type: str, detail: dict[str, Any], source: str = "tests") -> str:
        entry = {"EventBusName": self.bus, "Source": source, "DetailType": detail_type, "Detail": json.dumps(detail)}
        answer = self.events.put_events(Entries=[entry])
        assert answer["FailedEntryCount"] == 0, answer
        return str(answer["Entries"][0]["EventId"])

    def close(self) -> None:
        self.forget()
        self.functions.close()
        self.router.stop(timeout=2)
        self.api.stop()
        self.events.close()
        self.sqs.close()
        self.connections.close()


def connection_of(client: ClientConnection) -> str:
    """The client's connection id, as the two-way `echo` route tells it."""
    client.send(json.dumps({"action": "echo"}))
    return str(json.loads(client.recv(timeout=10))["connection"])


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[AwsEndpoint]:
    fake_aws_environment(monkeypatch)
    running = AwsEndpoint(port=0).start()
    monkeypatch.setenv("AWS_ENDPOINT_URL", running.url)
    yield running
    running.stop()


@pytest.fixture
def live(endpoint: AwsEndpoint, monkeypatch: pytest.MonkeyPatch) -> Iterator[Live]:
    running = Live(endpoint)
    monkeypatch.setenv("TEST_BUS_NAME", running.bus)
    monkeypatch.setenv("LIVE_MANAGEMENT_URL", running.api.management_url)
    yield running
    running.close()


# --- the template ---------------------------------------------------------------------------


def test_given_the_template_then_the_websocket_api_has_its_stage_routes_and_two_way_route() -> None:
    functions = Functions(TEMPLATE)

    (api,) = websocket_apis(TEMPLATE, set(functions.names()))

    assert api.stage == "live"
    assert api.selection == ("action",)
    assert {key: route.function for key, route in api.routes.items()} == dict.fromkeys(
        ["$connect", "$disconnect", "$default", "echo"], "SocketFunction"
    )
    assert [key for key, route in api.routes.items() if route.two_way] == ["echo"]


def test_given_the_template_then_sam_and_plain_rules_target_their_functions_on_the_local_bus() -> None:
    functions = Functions(TEMPLATE)

    found = {rule.target: rule for rule in eventbridge.rules(functions, {"TestBus": "b"}, template.LocalNames())}

    assert set(found) == {"NotifyFunction", "FlakyFunction", "HoldFunction", "AuditFunction", "queue:Inbox"}
    assert {rule.bus for rule in found.values()} == {"b"}
    assert found["NotifyFunction"].pattern["source"] == ["tests"]  # the parameter's default
    assert found["AuditFunction"].input_path == "$.detail"
    inbox = found["queue:Inbox"]
    assert (inbox.function, inbox.queue, inbox.dead_letter, inbox.retries) == ("", "Inbox", "InboxDLQ", 185)


def test_given_a_queue_target_without_a_send_then_the_router_refuses_it() -> None:
    functions = Functions(TEMPLATE)
    found = eventbridge.rules(functions, {"TestBus": "b"}, template.LocalNames())

    with pytest.raises(ValueError, match="InboxRule-inbox"):
        eventbridge.EventRouter(functions, found)


# --- the WebSocket API ----------------------------------------------------------------------


@pytest.mark.parametrize(("ticket", "status"), [("refused", 403), ("explode", 500)])
def test_given_a_connect_the_function_refuses_when_connecting_then_the_handshake_fails_with_its_status(
    live: Live, ticket: str, status: int
) -> None:
    with pytest.raises(InvalidStatus) as refused:
        live.connect(f"ticket={ticket}")

    assert refused.value.response.status_code == status
    assert live.api.open_connections() == []


def test_given_an_accepted_connect_then_the_function_got_the_aws_connect_event(live: Live) -> None:
    with live.connect("ticket=abc%2B1&ticket=fine"), live.connect():
        connects = live.socket_events("CONNECT")

    first, second = (event["requestContext"] for event in connects)
    assert connects[0]["queryStringParameters"] == {"ticket": "fine"}
    assert connects[0]["multiValueQueryStringParameters"] == {"ticket": ["abc+1", "fine"]}
    assert connects[0]["headers"]["Host"] == f"127.0.0.1:{live.api.port}"
    assert connects[0]["multiValueHeaders"]["Sec-WebSocket-Version"] == ["13"]
    assert first["routeKey"] == "$connect"
    assert first["stage"] == "live"
    assert first["identity"]["sourceIp"] == "127.0.0.1"
    assert isinstance(first["connectedAt"], int)
    assert all(CONNECTION_ID.match(context["connectionId"]) for context in (first, second))
    assert first["connectionId"] != second["connectionId"]


def test_given_frames_then_the_selected_route_runs_and_only_a_two_way_route_answers(live: Live) -> None:
    with live.connect() as client:
        client.send(json.dumps({"action": "unknown", "n": 1}))  # $default: one-way, no answer
        client.send(json.dumps({"action": "echo", "n": 2}))
        client.send("not json")  # $default too
        client.send(json.dumps({"action": "echo", "n": 3}))

        answers = [json.loads(client.recv(timeout=10)) for _ in range(2)]

    assert [(answer["route"], answer["got"]["n"]) for answer in answers] == [("echo", 2), ("echo", 3)]
    messages = live.socket_events("MESSAGE")
    assert [event["requestContext"]["routeKey"] for event in messages] == ["$default", "echo", "$default", "echo"]
    assert messages[2]["body"] == "not json"


def test_given_a_message_the_function_fails_on_then_the_caller_gets_api_gateways_error_frame(live: Live) -> None:
    with live.connect() as client:
        client.send(json.dumps({"action": "explode"}))

        error = json.loads(client.recv(timeout=10))

    assert error["message"] == "Internal server error"
    assert CONNECTION_ID.match(error["connectionId"])


def test_given_a_binary_frame_then_the_connection_is_closed_with_1003(live: Live) -> None:
    with live.connect() as client:
        client.send(b"\x00\x01")

        with pytest.raises(ConnectionClosed):
            client.recv(timeout=10)

    assert client.close_code == 1003


def test_given_two_sockets_when_posting_to_one_then_only_that_socket_gets_the_frame(live: Live) -> None:
    with live.connect() as first, live.connect() as second:
        ids = connection_of(first), connection_of(second)

        live.connections.post_to_connection(ConnectionId=ids[0], Data=b'{"to": "first"}')
        live.connections.post_to_connection(ConnectionId=ids[1], Data=b'{"to": "second"}')

        assert first.recv(timeout=10) == '{"to": "first"}'
        assert second.recv(timeout=10) == '{"to": "second"}'
        described = live.connections.get_connection(ConnectionId=ids[0])
    assert described["Identity"]["SourceIp"] == "127.0.0.1"
    assert described["ConnectedAt"] <= described["LastActiveAt"]


def test_given_a_closed_socket_then_posting_to_it_raises_gone_and_disconnect_ran(live: Live) -> None:
    with live.connect() as client:
        connection = connection_of(client)
        client.close(1000, "bye")

    disconnect = eventually(lambda: live.socket_events("DISCONNECT"))[0]["requestContext"]
    with pytest.raises(live.connections.exceptions.GoneException):
        live.connections.post_to_connection(ConnectionId=connection, Data=b"late")
    with pytest.raises(live.connections.exceptions.GoneException):
        live.connections.get_connection(ConnectionId="neverConnected=")
    assert disconnect["connectionId"] == connection
    assert disconnect["routeKey"] == "$disconnect"
    assert disconnect["disconnectStatusCode"] == 1000
    assert disconnect["disconnectReason"] == "bye"


def test_given_a_delete_connection_then_the_socket_closes_and_disconnect_runs(live: Live) -> None:
    with live.connect() as client:
        connection = connection_of(client)

        live.connections.delete_connection(ConnectionId=connection)

        with pytest.raises(ConnectionClosed):
            client.recv(timeout=10)
    disconnect = eventually(lambda: live.socket_events("DISCONNECT"))[0]["requestContext"]
    assert disconnect["connectionId"] == connection


@pytest.mark.parametrize("setting", ["idle_timeout", "max_duration"])
def test_given_api_gateways_timeouts_then_a_connection_past_them_is_closed_going_away(
    endpoint: AwsEndpoint, setting: str
) -> None:
    live = Live(endpoint, **{setting: 0.5})
    try:
        with live.connect() as client, pytest.raises(ConnectionClosed):
            while True:  # only the max duration closes a connection that keeps talking
                if setting == "max_duration":
                    client.send(json.dumps({"action": "echo"}))
                client.recv(timeout=10)
        assert client.close_code == 1001
        disconnect = eventually(lambda: live.socket_events("DISCONNECT"))[0]["requestContext"]
        assert disconnect["disconnectStatusCode"] == 1001
    finally:
        live.close()


# --- EventBridge rules ----------------------------------------------------------------------


def test_given_an_event_on_the_bus_then_the_matching_rule_invokes_its_function_with_the_envelope(live: Live) -> None:
    live.put("thing.changed", {"tenant": "t1"})  # no `connection`: the pattern's exists fails
    live.put("other.changed", {"connection": "x"})
    live.put("thing.changed", {"connection": "x"}, source="elsewhere")
    event_id = live.put("thing.changed", {"connection": "gone", "tenant": "t1"})

    # The fixture's stack is shared: only this test's events count (an earlier test's may land late).
    (event,) = eventually(lambda: [e for e in live.recorded("NotifyFunction") if e["id"] == event_id])
    # One target's events arrive in order: the three put before it and refused never reach it.
    refused = ({"tenant": "t1"}, {"connection": "x"})
    assert not [e for e in live.recorded("NotifyFunction") if e["detail"] in refused]

    assert event == {
        "version": "0",
        "id": event_id,
        "detail-type": "thing.changed",
        "source": "tests",
        "account": "000000000000",
        "time": event["time"],
        "region": REGION,
        "resources": [],
        "detail": {"connection": "gone", "tenant": "t1"},
    }
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", event["time"])


def test_given_a_plain_rule_with_an_input_path_then_its_target_gets_that_part(live: Live) -> None:
    live.put("audit", {"who": "me"})

    assert eventually(lambda: live.recorded("AuditFunction")) == [{"who": "me"}]


def test_given_events_in_a_row_then_their_target_gets_them_in_that_order(live: Live) -> None:
    for index in range(15):
        live.put("audit", {"index": index})

    eventually(lambda: len(live.recorded("AuditFunction")) == 15)

    assert [event["index"] for event in live.recorded("AuditFunction")] == list(range(15))


def test_given_a_failing_target_then_it_is_retried_twice_then_dropped(live: Live) -> None:
    recovers = live.put("flaky", {"failures": 2})
    never = live.put("flaky", {"failures": 5})

    eventually(lambda: live.router.pending() == 0 and len(live.recorded("FlakyFunction")) == 6)

    attempts = [event["id"] for event in live.recorded("FlakyFunction")]
    assert attempts.count(recovers) == 3
    assert attempts.count(never) == 3  # the first attempt and two retries, then no more


def test_given_a_queue_target_then_a_matching_event_is_its_message_body_as_eventbridge_sends_it(live: Live) -> None:
    live.put("queued", {"wanted": False})
    event_id = live.put("queued", {"wanted": True, "n": 1})

    eventually(lambda: live.router.pending() == 0)
    (body,) = eventually(lambda: live.received("Inbox"))

    assert body == {
        "version": "0",
        "id": event_id,
        "detail-type": "queued",
        "source": "tests",
        "account": "000000000000",
        "time": body["time"],
        "region": REGION,
        "resources": [],
        "detail": {"wanted": True, "n": 1},
    }
    assert live.received("Inbox") == []


def test_given_a_queue_that_refuses_then_the_send_is_retried_and_finally_dead_lettered(live: Live) -> None:
    live.send_failures = 2
    recovers = live.put("queued", {"wanted": True, "n": 1})
    eventually(lambda: live.router.pending() == 0)
    assert [body["id"] for body in eventually(lambda: live.received("Inbox"))] == [recovers]

    live.send_failures = 3  # the first attempt and both retries
    never = live.put("queued", {"wanted": True, "n": 2})
    eventually(lambda: live.router.pending() == 0)

    assert [body["id"] for body in eventually(lambda: live.received("InboxDLQ"))] == [never]
    assert live.received("Inbox") == []


def test_given_a_target_still_running_then_put_events_has_answered_and_the_next_event_waits_its_turn(
    live: Live,
) -> None:
    gate = live.functions.handler("HoldFunction").__globals__["GATE"]
    try:
        first = live.put("hold", {"n": 1})
        live.put("hold", {"n": 2})  # answered while the first event's target still runs

        eventually(lambda: live.recorded("HoldFunction"))
        assert [event["id"] for event in live.recorded("HoldFunction")] == [first]
        assert live.router.pending() == 1
    finally:
        gate.set()
    eventually(lambda: len(live.recorded("HoldFunction")) == 2)


# --- the whole flow -------------------------------------------------------------------------


def test_given_a_message_that_publishes_then_the_rule_notifies_that_socket_through_connections(live: Live) -> None:
    with live.connect() as client, live.connect() as other:
        connection = connection_of(client)
        connection_of(other)

        client.send(json.dumps({"action": "publish", "type": "thing.changed", "detail": {"tenant": "t1"}}))
        frame = json.loads(client.recv(timeout=10))

        assert frame["type"] == "thing.changed"
        assert frame["detail"] == {"tenant": "t1", "connection": connection}
        with pytest.raises(TimeoutError):
            other.recv(timeout=0)


# --- content filtering ----------------------------------------------------------------------

EVENT = {
    "source": "switchboard",
    "detail-type": "call.state.changed",
    "resources": ["arn:aws:x:1", "arn:aws:x:2"],
    "detail": {
        "tenant": "acme",
        "count": 5,
        "ok": True,
        "none": None,
        "tags": ["a", "b"],
        "ip": "10.0.3.7",
        "nested": {"state": "ACTIVE", "items": [{"k": 1}, {"k": 2}]},
    },
}


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ({"source": ["switchboard"]}, True),
        ({"source": ["other", "switchboard"]}, True),
        ({"source": ["Switchboard"]}, False),
        ({"source": [{"equals-ignore-case": "SWITCHBOARD"}]}, True),
        ({"detail-type": [{"prefix": "call."}]}, True),
        ({"detail-type": [{"prefix": "line."}]}, False),
        ({"detail-type": [{"suffix": ".changed"}]}, True),
        ({"detail-type": [{"prefix": {"equals-ignore-case": "CALL."}}]}, True),
        ({"detail-type": [{"wildcard": "call.*.changed"}]}, True),
        ({"detail-type": [{"wildcard": "line.*"}]}, False),
        ({"detail": {"tenant": ["acme"]}}, True),
        ({"detail": {"tenant": ["other"]}}, False),
        ({"detail": {"tenant": [{"anything-but": "other"}]}}, True),
        ({"detail": {"tenant": [{"anything-but": ["acme", "x"]}]}}, False),
        ({"detail": {"tenant": [{"anything-but": {"prefix": "ac"}}]}}, False),
        ({"detail": {"missing": [{"anything-but": "x"}]}}, False),
        ({"detail": {"tenant": [{"exists": True}]}}, True),
        ({"detail": {"missing": [{"exists": True}]}}, False),
        ({"detail": {"missing": [{"exists": False}]}}, True),
        ({"detail": {"tenant": [{"exists": False}]}}, False),
        ({"detail": {"count": [5]}}, True),
        ({"detail": {"count": ["5"]}}, False),
        ({"detail": {"count": [{"numeric": [">", 1, "<=", 5]}]}}, True),
        ({"detail": {"count": [{"numeric": ["<", 5]}]}}, False),
        ({"detail": {"ok": [True]}}, True),
        ({"detail": {"ok": [1]}}, False),
        ({"detail": {"none": [None]}}, True),
        ({"detail": {"missing": [None]}}, False),
        ({"detail": {"tags": ["b"]}}, True),
        ({"detail": {"tags": ["c"]}}, False),
        ({"resources": [{"suffix": ":2"}]}, True),
        ({"detail": {"ip": [{"cidr": "10.0.0.0/16"}]}}, True),
        ({"detail": {"ip": [{"cidr": "10.1.0.0/16"}]}}, False),
        ({"detail": {"nested": {"state": ["ACTIVE"]}}}, True),
        ({"detail": {"nested": {"state": ["ENDED"]}}}, False),
        ({"detail": {"nested": {"items": {"k": [2]}}}}, True),
        ({"detail": {"nested": ["ACTIVE"]}}, False),  # an object is not a value
        ({"detail": {"absent": {"state": [{"exists": False}]}}}, True),
        ({"source": ["switchboard"], "detail": {"tenant": ["other"]}}, False),  # every field must match
        ({"$or": [{"source": ["x"]}, {"detail": {"tenant": ["acme"]}}]}, True),
        ({"$or": [{"source": ["x"]}, {"detail": {"tenant": ["y"]}}]}, False),
    ],
)
def test_given_a_pattern_then_it_matches_as_eventbridge_content_filtering_does(
    pattern: dict[str, Any], expected: bool
) -> None:
    eventbridge.check_pattern(pattern)

    assert eventbridge.matches(pattern, EVENT) is expected


@pytest.mark.parametrize(
    "pattern",
    [{}, {"source": "switchboard"}, {"source": [{"prefix": "a", "suffix": "b"}]}, {"source": [{"regex": "."}]}],
)
def test_given_a_pattern_eventbridge_refuses_then_it_is_refused(pattern: dict[str, Any]) -> None:
    with pytest.raises(eventbridge.PatternError):
        eventbridge.check_pattern(pattern)
