"""Live updates on moto: the ticket route through the in-process gateway, the WebSocket events
and bus events through the functions' real handlers, and a stand-in for the management API."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from botocore.exceptions import ClientError

from devstack.apigw import HttpApi
from switchboard import bootstrap
from tools.support.api import Client, TenantKeys
from tools.support.aws import AwsResources

LIVE_URL = "ws://127.0.0.1:9/live"


@pytest.fixture
def live(aws: AwsResources, monkeypatch: pytest.MonkeyPatch) -> AwsResources:
    monkeypatch.setenv("LIVE_URL", LIVE_URL)
    monkeypatch.setenv("LIVE_MANAGEMENT_URL", "http://127.0.0.1:9/live")
    bootstrap.reset()
    return aws


@dataclass
class ManagementApi:
    """Stands in for the `apigatewaymanagementapi` client: records posts and closes; some
    connections are gone, some fail."""

    gone: set[str] = field(default_factory=set)
    broken: set[str] = field(default_factory=set)
    posts: dict[str, list[bytes]] = field(default_factory=dict)
    closed: list[str] = field(default_factory=list)

    def delete_connection(self, *, ConnectionId: str) -> dict[str, Any]:
        if ConnectionId in self.gone or ConnectionId in self.closed:
            raise ClientError(
                {"Error": {"Code": "GoneException", "Message": ""}, "ResponseMetadata": {"HTTPStatusCode": 410}},
                "DeleteConnection",
            )
        if ConnectionId in self.broken:
            raise ClientError(
                {"Error": {"Code": "InternalServerError", "Message": ""}, "ResponseMetadata": {"HTTPStatusCode": 500}},
                "DeleteConnection",
            )
        self.closed.append(ConnectionId)
        return {}

    def post_to_connection(self, *, ConnectionId: str, Data: bytes) -> dict[str, Any]:
        if ConnectionId in self.gone or ConnectionId in self.closed:
            raise ClientError(
                {"Error": {"Code": "GoneException", "Message": ""}, "ResponseMetadata": {"HTTPStatusCode": 410}},
                "PostToConnection",
            )
        if ConnectionId in self.broken:
            raise ClientError(
                {"Error": {"Code": "InternalServerError", "Message": ""}, "ResponseMetadata": {"HTTPStatusCode": 500}},
                "PostToConnection",
            )
        self.posts.setdefault(ConnectionId, []).append(Data)
        return {}


@pytest.fixture
def management(live: AwsResources) -> Iterator[ManagementApi]:
    api = ManagementApi()
    with bootstrap.overridden(management_api=api):
        yield api


def ws_event(route: str, connection_id: str, ticket: str | None = None) -> dict[str, Any]:
    """A WebSocket proxy event as API Gateway sends it."""
    event_type = {"$connect": "CONNECT", "$disconnect": "DISCONNECT", "$default": "MESSAGE"}[route]
    event: dict[str, Any] = {
        "requestContext": {
            "routeKey": route,
            "eventType": event_type,
            "connectionId": connection_id,
            "stage": "live",
            "domainName": "127.0.0.1",
            "apiId": "live",
            "requestId": f"req-{connection_id}",
            "connectedAt": 0,
            "requestTimeEpoch": 0,
            "identity": {"sourceIp": "127.0.0.1"},
        },
        "headers": {},
        "multiValueHeaders": {},
        "isBase64Encoded": False,
    }
    if route == "$connect":
        event["queryStringParameters"] = {"ticket": ticket} if ticket is not None else None
    if route == "$default":
        event["body"] = '{"action":"ping"}'
    if route == "$disconnect":
        event["disconnectStatusCode"] = 1001
        event["disconnectReason"] = "Going away"
    return event


def bus_event(detail_type: str, detail: dict[str, Any]) -> dict[str, Any]:
    return {
        "version": "0",
        "id": "e1",
        "detail-type": detail_type,
        "source": "switchboard",
        "account": "000000000000",
        "time": "2026-12-01T04:00:00Z",
        "region": "us-east-1",
        "resources": [],
        "detail": detail,
    }


def digest(ticket: str) -> str:
    return hashlib.sha256(ticket.encode()).hexdigest()


@dataclass
class Live:
    client: Client
    api: HttpApi

    def ticket(self, key: str) -> str:
        answer = self.client.post("/api/live/tickets", key=key)
        assert answer.status == 201, answer.body
        return str(answer.json()["ticket"])

    def connect(self, connection_id: str, ticket: str | None) -> int:
        return int(
            self.api.functions.invoke("LiveConnectionsFunction", ws_event("$connect", connection_id, ticket))[
                "statusCode"
            ]
        )

    def disconnect(self, connection_id: str) -> int:
        answer = self.api.functions.invoke("LiveConnectionsFunction", ws_event("$disconnect", connection_id))
        return int(answer["statusCode"])

    def notify(self, detail_type: str, detail: dict[str, Any]) -> Any:
        return self.api.functions.invoke("LiveNotifierFunction", bus_event(detail_type, detail))


@pytest.fixture
def sockets(live: AwsResources, client: Client, http_api: HttpApi) -> Live:
    return Live(client, http_api)


@pytest.fixture
def agent_key(client: Client) -> Callable[[TenantKeys, str], str]:
    def make(tenant: TenantKeys, attendant: str) -> str:
        answer = client.post(
            "/api/api-keys",
            key=tenant.admin,
            json_body={"name": attendant, "scopes": ["agent"], "attendantId": attendant},
        )
        assert answer.status == 201, answer.body
        return str(answer.json()["key"])

    return make
