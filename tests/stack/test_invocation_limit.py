"""The local HTTP API hands a Lambda integration at most Lambda's 6 MB invocation payload, as AWS
does: the whole event counts (body, headers, context), and over it the function never runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

from devstack.apigw import HttpApi
from devstack.lambdas import MAX_INVOCATION_PAYLOAD, Functions


class CountingFunctions(Functions):
    """The template's functions; each invocation that passes the quota is answered here."""

    def __init__(self) -> None:
        super().__init__()
        self.ran: list[int] = []

    @contextmanager
    def _container(self, logical_id: str) -> Iterator[Any]:
        yield SimpleNamespace(killed=False)  # no function module loaded: only the quota is under test

    def _run(self, container: Any, event: Any, context: Any) -> Any:
        self.ran.append(len(event.get("body") or ""))
        return {"statusCode": 200, "headers": {"content-type": "application/json"}, "body": "{}"}


def post(api: HttpApi, body: bytes) -> Any:
    headers = [("content-type", "application/json"), ("content-length", str(len(body)))]
    return api.handle("POST", "/webhooks/prv_01", query="", headers=headers, body=body)


def body_of(size: int) -> bytes:
    return json.dumps({"data": "x" * (size - 12)}).encode()


def test_an_event_over_six_megabytes_never_reaches_the_function() -> None:
    functions = CountingFunctions()
    api = HttpApi(functions)

    # A body just under the quota makes an event over it (the headers and context count too).
    answer = post(api, body_of(MAX_INVOCATION_PAYLOAD - 100))

    assert answer.status == 413
    assert answer.json() == {"message": "Request Entity Too Large"}
    assert functions.ran == []


def test_a_five_megabyte_body_reaches_the_function() -> None:
    functions = CountingFunctions()
    api = HttpApi(functions)

    answer = post(api, body_of(5 * 1024 * 1024))

    assert answer.status == 200
    assert functions.ran == [5 * 1024 * 1024]
