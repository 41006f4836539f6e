"""Schemathesis against the OpenAPI document the API serves, through the local gateway:
generated requests (valid and invalid) never get a server error, every status is documented and
every response matches the schema documented for it. Authenticated with the seeded demo tenant's
admin key (operations of other scopes answer their documented 403).

Driven through Hypothesis directly (one bounded run per operation) rather than schemathesis's
pytest plugin, whose lazy fixture loader does not run on this pytest version.
"""

from __future__ import annotations

from typing import Any

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import response_schema_conformance, status_code_conformance

from devstack.stack import LocalStack
from tests.support.openapi import operations_of

EXAMPLES_PER_OPERATION = 4


def test_generated_requests_get_no_server_error_and_documented_responses(local_stack: LocalStack) -> None:
    assert local_stack.demo is not None
    headers = {"authorization": f"Bearer {local_stack.demo.admin_key}"}
    schema = schemathesis.openapi.from_url(f"{local_stack.api_url}/api/openapi.json")
    failures: dict[str, str] = {}
    operations = 0
    for operation in operations_of(schema):
        operations += 1

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            derandomize=True,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def check(case: Any) -> None:
            case.call_and_validate(
                base_url=local_stack.api_url,
                headers=headers,
                checks=[not_a_server_error, status_code_conformance, response_schema_conformance],
            )

        try:
            check()
        except (Exception, FailureGroup) as failure:  # every operation runs; all are reported together
            failures[operation.label] = _describe(failure)
    print(f"schemathesis: {operations} operations x {EXAMPLES_PER_OPERATION} examples")
    assert operations > 10
    assert not failures, "\n\n".join(f"{label}:\n{text}" for label, text in failures.items())


def _describe(failure: BaseException) -> str:
    parts = [str(failure)]
    if isinstance(failure, BaseExceptionGroup):
        parts += [str(inner) for inner in failure.exceptions]
    return "\n".join(parts)[:3000]
