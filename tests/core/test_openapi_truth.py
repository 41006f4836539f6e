"""The OpenAPI document says what the API does, where a generated client would trip otherwise:
path parameters arrive percent-decoded (as an HTTP API hands them on), a field is nullable in the
document exactly when null is accepted, the dial's required header is a documented parameter, and
the 401 API Gateway writes itself matches the documented 401 of every authorized route."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from devstack.apigw import decoded_path
from tools.support.api import Client
from tools.support.provider_webhooks import Catalog

CAPTURES = Path(__file__).resolve().parents[1] / "contracts" / "apigateway" / "ingress_paths.json"
PATH_VALUE = "a1b2"


@pytest.mark.parametrize("capture", json.loads(CAPTURES.read_text(encoding="utf-8")), ids=lambda c: c["sentPath"])
def test_the_local_gateway_decodes_a_path_as_a_live_http_api_did(capture: dict[str, Any]) -> None:
    assert decoded_path(capture["sentPath"]) == (None if capture.get("httpAPIRejected") else capture["httpAPIPath"])


def test_a_percent_encoded_path_parameter_names_the_same_object(client: Client, catalog: Catalog) -> None:
    admin = catalog.tenant.admin

    encoded = client.get("/api/instances/acme%2Dmain", key=admin)
    every_letter = client.get("/api/instances/" + "".join(f"%{byte:02X}" for byte in b"acme-main"), key=admin)
    refused = client.get("/api/instances/acme%25main", key=admin)

    assert (encoded.status, encoded.json()["name"]) == (200, "acme-main")
    assert (every_letter.status, every_letter.json()["name"]) == (200, "acme-main")
    assert (refused.status, refused.json()) == (400, {"message": "Bad Request"})


def test_a_path_parameter_its_pattern_refuses_is_422_naming_it_not_an_unknown_route(
    client: Client, catalog: Catalog
) -> None:
    """API Gateway routes any segment to `{name}`: the function must not answer that no route serves it."""
    for value in ("sales%60team", "sales%20team", "sales%22team"):
        answer = client.get(f"/api/connections/{value}/calls", key=catalog.tenant.admin)

        assert (answer.status, answer.json()["error"]) == (422, "validation_error"), value
        assert answer.json()["message"].startswith("path.instance: ")


# --- nullable exactly where null is accepted ----------------------------------------------------


def resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    return resolve(document, document["components"]["schemas"][ref.rsplit("/", 1)[1]]) if ref else schema


def fields(document: dict[str, Any], schema: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """(dotted path, schema) of every property under `schema`, nested objects included."""
    schema = resolve(document, schema)
    for name, field in (schema.get("properties") or {}).items():
        path = f"{prefix}.{name}" if prefix else name
        yield path, field
        for branch in [field, *field.get("anyOf", [])]:
            if "properties" in resolve(document, branch):
                yield from fields(document, branch, path)


def nullable(field: dict[str, Any]) -> bool:
    return field.get("type") == "null" or any(branch.get("type") == "null" for branch in field.get("anyOf", []))


def nested(path: str, value: Any) -> dict[str, Any]:
    head, _, rest = path.partition(".")
    return {head: nested(rest, value) if rest else value}


def test_a_field_is_nullable_in_the_document_exactly_when_the_api_accepts_null(
    client: Client, platform_key: str
) -> None:
    document = client.get("/api/openapi.json").json()
    wrong = []
    walked = 0
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            content = operation.get("requestBody", {}).get("content", {})
            if "application/json" not in content:
                continue
            target = "/".join(PATH_VALUE if part.startswith("{") else part for part in path.split("/"))
            for field, schema in fields(document, content["application/json"]["schema"]):
                walked += 1
                answer = client.request(
                    method.upper(),
                    target,
                    key=platform_key,
                    json_body=nested(field, None),
                    headers={"idempotency-key": "k"},
                )
                message = answer.json().get("message", "") if answer.status == 422 else ""
                refused_null = f"{field}: " in message or f"{field.rsplit('.', 1)[-1]} cannot be null" in message
                if nullable(schema) == refused_null:
                    wrong.append(f"{method.upper()} {path} {field}: nullable={nullable(schema)}, answer {message!r}")
    assert walked > 60  # every property of every request body
    assert not wrong, "\n".join(wrong)


# --- headers and the gateway's own answers -----------------------------------------------------


def test_the_dials_required_idempotency_key_is_a_documented_parameter_and_required(
    client: Client, catalog: Catalog
) -> None:
    document = client.get("/api/openapi.json").json()
    dial = document["paths"]["/api/connections/{instance}/calls"]["post"]

    [header] = [parameter for parameter in dial["parameters"] if parameter["in"] == "header"]
    assert (header["name"].lower(), header["required"]) == ("idempotency-key", True)
    without = client.post(f"/api/connections/{catalog.instance}/calls", key=catalog.tenant.admin, json_body={"to": "x"})
    assert without.status == 422
    assert "idempotency-key" in without.json()["message"]


def test_no_parameter_is_documented_as_nullable_a_header_or_query_value_is_never_null(client: Client) -> None:
    document = client.get("/api/openapi.json").json()
    nullable_parameters = [
        f"{method} {path} {parameter['name']}"
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        for parameter in operation.get("parameters", [])
        if nullable(parameter["schema"])
    ]
    assert not nullable_parameters


def test_the_gateways_own_401_is_the_documented_401_of_every_authorized_route(client: Client) -> None:
    document = client.get("/api/openapi.json").json()
    refused = client.get("/api/numbers")  # no key: the authorizer's answer, before any function
    assert (refused.status, refused.json()) == (401, {"message": "Unauthorized"})

    undocumented = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            if operation.get("security") == []:
                continue
            schema = operation["responses"].get("401", {}).get("content", {}).get("application/json", {}).get("schema")
            try:
                jsonschema.validate(refused.json(), {**(schema or {"not": {}}), "components": document["components"]})
            except jsonschema.ValidationError as error:
                undocumented.append(f"{method} {path}: {error.message}")
    assert not undocumented, "\n".join(undocumented)
