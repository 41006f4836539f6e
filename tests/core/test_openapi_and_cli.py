"""The one OpenAPI document, the Swagger UI, and the operator CLI."""

from __future__ import annotations

import json

import pytest

from devstack import template
from switchboard.__main__ import main as cli
from tools import openapi
from tools.support.api import Client
from tools.support.aws import AwsResources


def documented_routes() -> set[tuple[str, str]]:
    routes = set()
    for logical_id, properties in template.resources("AWS::Serverless::Function").items():
        for event in (properties.get("Events") or {}).values():
            if event.get("Type") == "HttpApi" and logical_id != "DocsFunction":
                routes.add((event["Properties"]["Method"].lower(), event["Properties"]["Path"]))
    return routes


def test_openapi_document_covers_every_route_of_the_template(client: Client) -> None:
    answer = client.get("/api/openapi.json")

    assert answer.status == 200
    document = answer.json()
    served = {(method, path) for path, operations in document["paths"].items() for method in operations}
    assert documented_routes() <= served
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            if path.startswith("/api/"):
                assert {"401", "422"} <= set(operation["responses"]), (method, path)
    assert "bearerAuth" in document["components"]["securitySchemes"]
    error_schema = document["components"]["schemas"]["ErrorBody"]
    assert set(error_schema["required"]) == {"error", "message"}


def test_served_document_is_what_the_routers_produce() -> None:
    # The docs function serves the file as it is: a route, schema or docstring changed without
    # `make openapi` would otherwise leave the published document behind the code.
    assert openapi.DOCUMENT.read_text(encoding="utf-8") == openapi.generated(), "run `make openapi`"


def test_swagger_ui_is_served(client: Client) -> None:
    answer = client.get("/api/docs")
    assert answer.status == 200
    assert b"swagger" in answer.body.lower()


def test_cli_bootstraps_a_platform_key_and_a_tenant(
    aws: AwsResources, client: Client, capsys: pytest.CaptureFixture[str]
) -> None:
    preset = "sb_live_" + "p" * 40
    assert cli(["create-platform-key", "--value", preset]) == 0
    capsys.readouterr()

    assert cli(["create-tenant", "--owner-tag", "acme", "--name", "Acme"]) == 0
    created = json.loads(capsys.readouterr().out)

    assert client.get("/api/tenants", key=preset).json()[0]["ownerTag"] == "acme"
    assert client.get("/api/tenants/acme", key=created["adminKey"]).status == 200
    assert cli(["create-platform-key", "--value", preset]) == 0
    assert "unchanged" in capsys.readouterr().out
