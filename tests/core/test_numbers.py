"""Every number a request body can carry is one a DynamoDB item stores exactly; anything else is a
422 naming the field, never a 500 when the item is written, and the OpenAPI document says so.

The walk goes over the document the API serves: every numeric field of every request body,
nested objects included, gets the values that used to reach DynamoDB and fail there (an
underflow like 1e-300, an overflow, a 64-bit id past 2^63 - 1).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from switchboard.core.model import INT64_MAX, INT64_MIN, storable_number_problem
from tools.support.api import Client
from tools.support.provider_webhooks import Catalog

# Values a path parameter of any route accepts (every pattern takes lowercase letters and digits).
PATH_VALUE = "a1b2"
# What used to pass validation and then fail in DynamoDB (a 500), or be stored past 64 bits.
BAD_INTEGERS = [INT64_MAX + 1, INT64_MIN - 1, 10**40]
BAD_NUMBERS = [1e-300, 1e-320, -1e-131, 1e126, -1e300]
# Fields the walk must find: the ones found refusing nothing before.
EXPECTED_FIELDS = {"requestsPerSecond", "keyRequestsPerSecond", "pacing.messagesPerMinute", "inboxId", "priority"}


def resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    return resolve(document, document["components"]["schemas"][ref.rsplit("/", 1)[1]]) if ref else schema


def numeric_fields(
    document: dict[str, Any], schema: dict[str, Any], prefix: str = ""
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(dotted camelCase path, its schema) of every integer or number field under `schema`."""
    schema = resolve(document, schema)
    for branch in schema.get("anyOf", []):
        yield from numeric_fields(document, branch, prefix)
    if schema.get("type") in ("integer", "number"):
        yield prefix, schema
    for name, field in (schema.get("properties") or {}).items():
        yield from numeric_fields(document, field, f"{prefix}.{name}" if prefix else name)


def nested(path: str, value: Any) -> dict[str, Any]:
    head, _, rest = path.partition(".")
    return {head: nested(rest, value) if rest else value}


def request_bodies(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            content = operation.get("requestBody", {}).get("content", {})
            if "application/json" in content:
                yield method.upper(), path, content["application/json"]["schema"]


def filled(path: str) -> str:
    return "/".join(PATH_VALUE if part.startswith("{") else part for part in path.split("/"))


def test_every_numeric_field_of_every_request_body_refuses_what_dynamodb_cannot_store(
    client: Client, platform_key: str
) -> None:
    document = client.get("/api/openapi.json").json()
    walked: set[str] = set()
    accepted: list[str] = []

    for method, path, schema in request_bodies(document):
        for field, found in numeric_fields(document, schema):
            walked.add(field)
            for value in BAD_INTEGERS if found["type"] == "integer" else BAD_NUMBERS:
                body = json.dumps(nested(field, value)).encode()
                answer = client.request(
                    method, filled(path), key=platform_key, body=body, headers={"idempotency-key": "k"}
                )
                refused = answer.status == 422 and f"{field}: " in answer.json()["message"]
                if not refused:
                    accepted.append(f"{method} {path} {field}={value!r} -> {answer.status} {answer.body[:160]!r}")

    assert walked >= EXPECTED_FIELDS
    assert not accepted, "\n".join(accepted)


def test_the_tiny_rates_answer_422_naming_the_field(client: Client, catalog: Catalog, platform_key: str) -> None:
    quotas = client.put("/api/tenants/acme/quotas", key=platform_key, json_body={"requestsPerSecond": 1e-300})
    pacing = client.patch(
        f"/api/numbers/{catalog.number_id}",
        key=catalog.tenant.admin,
        json_body={"pacing": {"messagesPerMinute": 1e-320}},
    )

    assert (quotas.status, quotas.json()["error"]) == (422, "validation_error")
    assert quotas.json()["message"].startswith("requestsPerSecond: ")
    assert (pacing.status, pacing.json()["error"]) == (422, "validation_error")
    assert pacing.json()["message"].startswith("pacing.messagesPerMinute: ")
    # and nothing was stored: the tenant still answers (a stored 1e-130 rate made every request 500)
    assert client.get("/api/numbers", key=catalog.tenant.admin).status == 200


def test_a_rate_below_one_request_in_1000_s_is_refused_it_would_make_every_request_of_the_tenant_fail(
    client: Client, catalog: Catalog, platform_key: str
) -> None:
    slowest = client.put("/api/tenants/acme/quotas", key=platform_key, json_body={"requestsPerSecond": 0.001})
    slower = client.put("/api/tenants/acme/quotas", key=platform_key, json_body={"requestsPerSecond": 1e-130})

    assert slowest.status == 200
    assert client.get("/api/numbers", key=catalog.tenant.admin).status in (200, 429)
    assert (slower.status, slower.json()["message"].split(":")[0]) == (422, "requestsPerSecond")


def test_the_extremes_of_the_storable_range_are_stored_and_read_back_exactly(client: Client, catalog: Catalog) -> None:
    admin, number = catalog.tenant.admin, catalog.number_id
    for rate in (1e-130, 59999.99999999999, 0.1):
        answer = client.patch(f"/api/numbers/{number}", key=admin, json_body={"pacing": {"messagesPerMinute": rate}})
        assert answer.status == 200, answer.body
        assert client.get(f"/api/numbers/{number}", key=admin).json()["pacing"]["messagesPerMinute"] == rate


def test_an_integral_number_is_an_integer_however_it_is_written(client: Client, catalog: Catalog) -> None:
    instance = {
        "providerId": catalog.provider_id,
        "providerInstanceId": catalog.provider_instance_id,
        "numberId": catalog.number_id,
    }
    admin = catalog.tenant.admin

    written_as_float = client.put(
        f"/api/instances/{catalog.instance}", key=admin, json_body={**instance, "priority": 2.0}
    )
    with_exponent = client.put(
        f"/api/instances/{catalog.instance}",
        key=admin,
        body=(json.dumps(instance)[:-1] + ', "inboxId": 7e0}').encode(),
    )
    fractional = client.put(f"/api/instances/{catalog.instance}", key=admin, json_body={**instance, "priority": 2.5})

    assert (written_as_float.status, written_as_float.json()["priority"]) == (200, 2)
    assert (with_exponent.status, with_exponent.json()["inboxId"]) == (200, 7)
    assert (fractional.status, fractional.json()["message"].split(":")[0]) == (422, "priority")


def test_the_document_bounds_every_numeric_field_of_every_request_body(client: Client) -> None:
    """A generated client validates what the API validates: each integer within 64 bits (or its
    own tighter bounds), each number clear of the magnitudes DynamoDB refuses."""
    document = client.get("/api/openapi.json").json()
    unbounded = []
    for method, path, schema in request_bodies(document):
        for field, found in numeric_fields(document, schema):
            lower = max(found.get("minimum", -float("inf")), found.get("exclusiveMinimum", -float("inf")))
            upper = min(found.get("maximum", float("inf")), found.get("exclusiveMaximum", float("inf")))
            if found["type"] == "integer":
                bounded = lower >= INT64_MIN and upper <= INT64_MAX
            else:
                tiny_refused = lower >= 1e-130 or "not" in found
                bounded = lower >= -1e126 and upper <= 1e126 and tiny_refused
            if not bounded:
                unbounded.append(f"{method} {path} {field}: {found}")
    assert not unbounded, "\n".join(unbounded)


@pytest.mark.parametrize(
    ("value", "storable"),
    [
        (0, True),
        (-0.0, True),
        (INT64_MAX, True),
        (INT64_MIN, True),
        (INT64_MAX + 1, False),
        (1e-130, True),
        (-1e-130, True),
        (9.99e125, True),
        (1e-131, False),
        (1e126, False),
        (float("inf"), False),
        (float("nan"), False),
        (Decimal("1." + "1" * 37), True),
        (Decimal("1." + "1" * 38), False),
        (True, True),
        ([1, 2**64], False),
        ({"a": {"b": 1e-300}}, False),
        ("1e-300", True),  # a string is no number here
    ],
)
def test_what_counts_as_storable(value: Any, storable: bool) -> None:
    assert (storable_number_problem(value) is None) is storable
