"""Shared fixtures: moto-backed AWS built from template.yaml, and the HTTP API run in-process.

`aws` starts an in-process moto (functional tests only: it is not a concurrency oracle) with
every table and queue of the template; `api` runs requests through the same route table,
authorizer and handlers API Gateway would use.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import httpx
import pytest
from moto import mock_aws

from devstack import template
from devstack.apigw import HttpApi, HttpResponse
from devstack.aws_endpoint import AwsEndpoint
from devstack.simulator import Simulator, SimulatorControl
from switchboard import bootstrap
from switchboard.catalog.domain import PLATFORM_TENANT, Scope
from switchboard.core.observability import logger

# Request fields whose values are secrets: once seen, they must never come back in a response
# body or a log line. Keys returned at creation (`key`) are learnt after that one response.
SECRET_FIELDS = {
    "token",
    "webhookSecret",
    "adminToken",
    "downstream_api_token",
    "downstreamApiToken",
    "secret",
    "signingSecret",
}

REGION = "us-east-1"
PREFIX = "switchboard-test"


@dataclass
class AwsResources:
    tables: dict[str, str]
    queues: dict[str, str]  # logical id -> queue URL
    bus: str

    def queue_messages(self, logical_id: str) -> list[dict[str, Any]]:
        """Receive (and leave in flight) every message currently visible on a queue."""
        sqs = boto3.client("sqs", region_name=REGION)
        received: list[dict[str, Any]] = []
        while True:
            batch = sqs.receive_message(QueueUrl=self.queues[logical_id], MaxNumberOfMessages=10).get("Messages", [])
            if not batch:
                return received
            received.extend(batch)


def fake_aws_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        "SECRETS_PREFIX": "/switchboard/test",
        "LOCAL_MODE": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "Switchboard",
        "POWERTOOLS_SERVICE_NAME": "switchboard",
        "POWERTOOLS_DEV": "false",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def create_template_resources(monkeypatch: pytest.MonkeyPatch) -> AwsResources:
    """Tables, queues and the bus of template.yaml, with the env vars the functions read."""
    names = template.LocalNames(prefix=PREFIX)
    tables = template.create_tables(boto3.client("dynamodb", region_name=REGION), names)
    sqs = boto3.client("sqs", region_name=REGION)
    queues = {}
    for logical_id in template.resources("AWS::SQS::Queue"):
        queues[logical_id] = sqs.create_queue(QueueName=names.queue(logical_id))["QueueUrl"]
    bus = f"{PREFIX}-events"
    boto3.client("events", region_name=REGION).create_event_bus(Name=bus)
    environment = {
        "TABLE_NAME": tables["MainTable"],
        "IDEMPOTENCY_TABLE_NAME": tables["IdempotencyTable"],
        "EVENT_BUS_NAME": bus,
        "SEND_QUEUE_URL": queues.get("SendQueue", ""),
        "FORWARD_QUEUE_URL": queues.get("ForwardQueue", ""),
        "CLIENT_WEBHOOK_QUEUE_URL": queues.get("ClientWebhookQueue", ""),
        "RECONCILE_QUEUE_URL": queues.get("ReconcileQueue", ""),
    }
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    return AwsResources(tables=tables, queues=queues, bus=bus)


class SecretWatch(logging.Handler):
    """Remembers every secret the tests hand to the API and fails if one leaks back out.

    It sees every log line of the switchboard logger and every response of `Client`.
    """

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.secrets: set[str] = set()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record) + json.dumps(record.__dict__, default=str))

    def learn(self, value: Any) -> None:
        if isinstance(value, dict):
            for name, field_value in value.items():
                if name in SECRET_FIELDS and isinstance(field_value, str) and len(field_value) >= 8:
                    self.secrets.add(field_value)
                self.learn(field_value)
        elif isinstance(value, list):
            for element in value:
                self.learn(element)

    def learn_created_keys(self, value: Any) -> None:
        if isinstance(value, dict):
            for name, field_value in value.items():
                if name == "key" and isinstance(field_value, str):
                    self.secrets.add(field_value)
                self.learn_created_keys(field_value)
        elif isinstance(value, list):
            for element in value:
                self.learn_created_keys(element)

    def assert_absent(self, text: str, where: str) -> None:
        leaked = [secret for secret in self.secrets if secret in text]
        assert not leaked, f"a secret leaked into {where}"

    def assert_logs_clean(self) -> None:
        for line in self.lines:
            self.assert_absent(line, "a log line")


SECRET_WATCH = SecretWatch()
logger.addHandler(SECRET_WATCH)


@pytest.fixture(autouse=True)
def no_secret_in_logs() -> Iterator[None]:
    SECRET_WATCH.lines.clear()
    yield
    SECRET_WATCH.assert_logs_clean()


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[AwsResources]:
    fake_aws_environment(monkeypatch)
    with mock_aws():
        resources = create_template_resources(monkeypatch)
        bootstrap.reset()
        yield resources
    bootstrap.reset()


@pytest.fixture(scope="session")
def aws_endpoint() -> Iterator[AwsEndpoint]:
    endpoint = AwsEndpoint(port=0).start()
    yield endpoint
    endpoint.stop()


@pytest.fixture
def served_aws(monkeypatch: pytest.MonkeyPatch, aws_endpoint: AwsEndpoint) -> Iterator[AwsResources]:
    """The template's resources on a real (serialised) moto server: for tests with threads.

    Every thread must build its own boto3 client or resource (they are not shared across threads
    in production either: each Lambda container has its own).
    """
    fake_aws_environment(monkeypatch)
    httpx.post(f"{aws_endpoint.url}/moto-api/reset")
    monkeypatch.setenv("AWS_ENDPOINT_URL", aws_endpoint.url)
    resources = create_template_resources(monkeypatch)
    bootstrap.reset()
    yield resources
    bootstrap.reset()


@pytest.fixture
def control(simulator: Simulator) -> Iterator[SimulatorControl]:
    """The `/_sim` control API of whichever `simulator` fixture the test module uses; reset after."""
    sim_control = SimulatorControl(simulator.base_url)
    yield sim_control
    sim_control.reset()
    sim_control.close()


@pytest.fixture(scope="session")
def http_api() -> HttpApi:
    return HttpApi()


class Client:
    """Calls the HTTP API in-process: gateway routing, authorizer, handler."""

    def __init__(self, api: HttpApi) -> None:
        self._api = api

    def request(
        self,
        method: str,
        path: str,
        *,
        key: str | None = None,
        json_body: Any = None,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> HttpResponse:
        raw_path, _, query = path.partition("?")
        all_headers = {"content-type": "application/json", **(headers or {})}
        if key is not None:
            all_headers["authorization"] = f"Bearer {key}"
        payload = body if body is not None else (b"" if json_body is None else json.dumps(json_body).encode())
        SECRET_WATCH.learn(json_body)
        answer = self._api.handle(method, raw_path, query=query, headers=all_headers, body=payload)
        SECRET_WATCH.assert_absent(answer.body.decode(errors="replace"), f"the response to {method} {raw_path}")
        with contextlib.suppress(ValueError):
            SECRET_WATCH.learn_created_keys(answer.json())
        return answer

    def get(self, path: str, **kwargs: Any) -> HttpResponse:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> HttpResponse:
        return self.request("POST", path, **kwargs)

    def put(self, path: str, **kwargs: Any) -> HttpResponse:
        return self.request("PUT", path, **kwargs)

    def patch(self, path: str, **kwargs: Any) -> HttpResponse:
        return self.request("PATCH", path, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> HttpResponse:
        return self.request("DELETE", path, **kwargs)


@pytest.fixture
def client(aws: AwsResources, http_api: HttpApi) -> Client:
    return Client(http_api)


@pytest.fixture
def platform_key(aws: AwsResources) -> str:
    created = bootstrap.catalog_service().create_api_key(
        None, tenant=PLATFORM_TENANT, name="operator", environment="LIVE", scopes=[Scope.PLATFORM]
    )
    SECRET_WATCH.secrets.add(created.plaintext)
    return created.plaintext


@dataclass
class TenantKeys:
    owner_tag: str
    admin: str


@pytest.fixture
def make_tenant(client: Client, platform_key: str) -> Any:
    def make(owner_tag: str = "acme") -> TenantKeys:
        answer = client.post("/api/tenants", key=platform_key, json_body={"ownerTag": owner_tag, "name": owner_tag})
        assert answer.status == 201, answer.body
        return TenantKeys(owner_tag=owner_tag, admin=answer.json()["adminKey"]["key"])

    return make
