"""Every answer of the API conforms to the OpenAPI document it serves, with a key of each scope.

schemathesis generates requests from the document (data that fits it and data that does not)
for every operation, with a platform, an admin, an agent and a send key in turn, against the
local stack over real HTTP: the gateway, the Lambda authorizer, every function. Each answer
must be no 5xx, a documented status, in a documented media type, with the documented headers
and a body valid against the documented schema (schemathesis's response conformance checks).

Path parameters name the demo tenant's real objects half of the time, so answers reach past
404 into the views; a spare API key stands for `key_id`, so no generated change revokes or
demotes the keys the run uses. Deletions only get generated identifiers, and the tenant's
quotas are changed last and put back after: a generated rate would slow every later request.

Deterministic: hypothesis is derandomized (the same requests on every run, against a fresh
stack) and bounded to a few examples per operation, scope and mode; a failure is collected, not
shrunk, and all of them are reported at the end.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from devstack.stack import LocalStack
from tests.support.openapi import operations_of
from tests.support.stacks import stack_on_free_ports

EXAMPLES = {GenerationMode.POSITIVE: 3, GenerationMode.NEGATIVE: 1}
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
# What no path parameter can carry through an HTTP API: it decodes the path before routing it.
UNROUTABLE = set("/?%")
# Operations run last, in this order: what they change would change the answers of the rest.
LAST = ("/api/tenants/{owner_tag}/quotas",)


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    # A stack of its own, used by this module's tests alone: its functions run in this process,
    # and the tests of other modules change the environment and the containers they read.
    local = stack_on_free_ports(
        "conformance",
        environment={
            "PROVIDER_TIMEOUT_SECONDS": "1",
            "POWERTOOLS_LOG_LEVEL": "CRITICAL",
            # the run's own pace must not turn its answers into 429s
            "QUOTA_TENANT_RPS": "10000",
            "QUOTA_TENANT_BURST": "100000",
            "QUOTA_KEY_RPS": "10000",
            "QUOTA_KEY_BURST": "100000",
        },
    ).start()
    yield local
    local.stop()


def keys(stack: LocalStack) -> dict[str, str]:
    demo = stack.demo
    assert demo is not None
    return {"platform": stack.platform_key, "admin": demo.admin_key, "agent": demo.agent_key, "send": demo.send_key}


def known_values(stack: LocalStack, spare_key_id: str) -> dict[str, str]:
    demo = stack.demo
    assert demo is not None
    return {
        "owner_tag": demo.owner_tag,
        "key_id": spare_key_id,
        "number_id": demo.numbers[0]["id"],
        "provider_id": demo.provider_id,
        "name": demo.instances[0].name,
        "instance": demo.instances[0].name,
        "message_id": "message-1",
        "call_id": "call-1",
    }


def ordered(operations: list[Any]) -> list[Any]:
    return sorted(operations, key=lambda operation: LAST.index(operation.path) + 1 if operation.path in LAST else 0)


def run_operation(
    operation: Any, mode: GenerationMode, *, scope: str, key: str, known: dict[str, str], base_url: str
) -> list[str]:
    failures: list[str] = []
    real = {name: value for name, value in known.items() if name in {p.name for p in operation.path_parameters}}
    use_real = st.booleans() if real and operation.method.upper() != "DELETE" else st.just(False)

    @given(case=operation.as_strategy(generation_mode=mode), real_path=use_real)
    @settings(
        max_examples=EXAMPLES[mode],
        derandomize=True,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def run(case: Any, real_path: bool) -> None:
        if real_path:
            case.path_parameters = {**(case.path_parameters or {}), **real}
        elif any(set(str(value)) & UNROUTABLE for value in (case.path_parameters or {}).values()):
            return  # API Gateway routes it to another path, or answers 400 (see the document)
        response = case.call(base_url=base_url, headers={"authorization": f"Bearer {key}"})
        try:
            case.validate_response(response, checks=CHECKS)
        except FailureGroup as failure:  # every check that failed on this answer
            failures.append(f"[{scope}, {mode.value}] {operation.label}: {str(failure).strip()[:1500]}")

    try:
        run()
    except Exception as error:  # an operation no negative value can be made for: nothing sent
        if "Unsatisfiable" not in type(error).__name__ and "generat" not in str(error).lower():
            raise
    return failures


@pytest.mark.stack
def test_every_answer_conforms_to_the_document_with_a_key_of_each_scope(stack: LocalStack) -> None:
    started = time.monotonic()
    scoped = keys(stack)
    with httpx.Client(base_url=stack.api_url, timeout=30) as http:
        document = http.get("/api/openapi.json").json()
        spare = http.post(
            "/api/api-keys",
            headers={"authorization": f"Bearer {scoped['admin']}"},
            json={"name": "conformance spare", "scopes": ["send"]},
        )
        assert spare.status_code == 201, spare.text
    known = known_values(stack, spare.json()["id"])
    schema = schemathesis.openapi.from_dict(document)
    operations = ordered(operations_of(schema))

    failures: list[str] = []
    cases = 0
    for operation in operations:
        for scope, key in scoped.items():
            for mode, examples in EXAMPLES.items():
                failures += run_operation(operation, mode, scope=scope, key=key, known=known, base_url=stack.api_url)
                cases += examples

    with httpx.Client(base_url=stack.api_url, timeout=30) as http:
        demo = stack.demo
        assert demo is not None
        restored = http.put(
            f"/api/tenants/{demo.owner_tag}/quotas", headers={"authorization": f"Bearer {scoped['platform']}"}, json={}
        )
        assert restored.status_code == 200, restored.text

    print(
        f"conformance: {len(operations)} operations x {len(scoped)} scopes, up to {cases} cases, "
        f"{len(failures)} failures, {time.monotonic() - started:.1f} s"
    )
    assert len(operations) == sum(len(methods) for methods in document["paths"].values())
    assert not failures, "\n\n".join(failures[:30])


@pytest.mark.stack
def test_head_is_answered_like_api_gateway_routes_it_with_allow_and_no_body(stack: LocalStack) -> None:
    """An HTTP API matches HEAD against HEAD and ANY routes only: the `$default` route answers it,
    405 with the methods the path serves; the body is left out, its length is not."""
    with httpx.Client(base_url=stack.api_url, timeout=30) as http:
        answer = http.head("/api/numbers", headers={"authorization": f"Bearer {keys(stack)['admin']}"})

    assert (answer.status_code, answer.headers["allow"], answer.content) == (405, "GET, POST", b"")
    assert int(answer.headers["content-length"]) > 0
