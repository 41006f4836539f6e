"""The HTTP API called in-process (`Client`), and the watch that no secret ever comes back out.

`SECRET_WATCH` remembers every secret the tests hand to the API and fails if one appears in a
response of `Client` or in a log line of the switchboard logger (it is that logger's handler).
"""

from __future__ import annotations

import contextlib
import json
import logging
from dataclasses import dataclass
from typing import Any

from devstack.apigw import HttpApi, HttpResponse
from switchboard import bootstrap
from switchboard.core.identity import PLATFORM_TENANT, Scope
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
        # header names are case-insensitive: a caller's own Content-Type replaces the default one
        given = {name.lower(): value for name, value in (headers or {}).items()}
        all_headers = {"content-type": "application/json", **given}
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


@dataclass
class TenantKeys:
    owner_tag: str
    admin: str


def new_platform_key() -> str:
    """A `platform` key made through the catalog service (what the operator CLI does)."""
    created = bootstrap.catalog_service().create_api_key(
        None, tenant=PLATFORM_TENANT, name="operator", environment="LIVE", scopes=[Scope.PLATFORM]
    )
    SECRET_WATCH.secrets.add(created.plaintext)
    return created.plaintext


def new_tenant(client: Client, platform_key: str, owner_tag: str = "acme") -> TenantKeys:
    """A tenant made through the API, and its first admin key."""
    answer = client.post("/api/tenants", key=platform_key, json_body={"ownerTag": owner_tag, "name": owner_tag})
    assert answer.status == 201, answer.body
    return TenantKeys(owner_tag=owner_tag, admin=answer.json()["adminKey"]["key"])
