"""Invocations at once, as on Lambda: one at a time per container, each with its own event.

Lambda runs one invocation at a time per container; the local stack runs its functions in one
process, so it must keep concurrent invocations apart (devstack/lambdas.py). The last test
releases 200 requests across functions and routes together through the local gateway, and checks
every status and body against the request that produced it: a mixed-up event would answer another
route's status, echo another request's name or id, or grant another caller's scopes.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from devstack.lambdas import Functions
from devstack.stack import LocalStack

TEMPLATE = Path(__file__).parent / "fixtures" / "template.yaml"
CONCURRENT = 200


def test_given_more_invocations_than_containers_then_each_container_runs_one_at_a_time_and_the_rest_wait() -> None:
    functions = Functions(TEMPLATE, max_containers=3)

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=9) as pool:
        answers = list(pool.map(lambda _: functions.invoke("HoldFunction", {"seconds": 0.3}), range(9)))
    elapsed = time.monotonic() - started

    assert not [answer for answer in answers if answer["shared"]]
    assert len({answer["container"] for answer in answers}) == 3
    assert functions.containers("HoldFunction") == 3
    assert elapsed >= 0.9  # 9 invocations of 0.3 s, 3 at a time


def test_given_invocations_one_after_another_then_one_warm_container_serves_them() -> None:
    functions = Functions(TEMPLATE, max_containers=3)

    answers = [functions.invoke("HoldFunction", {"seconds": 0}) for _ in range(3)]

    assert len({answer["container"] for answer in answers}) == 1
    assert functions.containers("HoldFunction") == 1


def test_given_two_resolvers_sharing_a_router_when_both_resolve_at_once_then_each_reads_its_own_event() -> None:
    """Powertools stores the event on a class; the local stack keeps it per invocation thread."""
    Functions(TEMPLATE)  # the local stack's functions: Powertools' request state per thread from now on
    router = APIGatewayHttpRouter()
    both_inside = threading.Barrier(2)

    @router.get("/echo/<name>")
    def echo(name: str) -> dict[str, Any]:
        both_inside.wait(timeout=10)  # both events have been stored by now
        return {"name": name, "header": router.current_event.headers.get("x-name")}

    apps = [APIGatewayHttpResolver(), APIGatewayHttpResolver()]
    for app in apps:
        app.include_router(router)
    with ThreadPoolExecutor(max_workers=2) as pool:
        answers = list(pool.map(lambda app, name: app.resolve(_http_event(name), None), apps, ["a", "b"]))

    assert [answer["body"] for answer in answers] == ['{"name":"a","header":"a"}', '{"name":"b","header":"b"}']


def _http_event(name: str) -> dict[str, Any]:
    return {
        "version": "2.0",
        "routeKey": "GET /echo/{name}",
        "rawPath": f"/echo/{name}",
        "rawQueryString": "",
        "headers": {"x-name": name},
        "requestContext": {"http": {"method": "GET", "path": f"/echo/{name}"}, "stage": "$default"},
        "isBase64Encoded": False,
    }


@dataclass
class Request:
    method: str
    path: str
    key: str
    check: Callable[[httpx.Response], bool]
    body: dict[str, Any] | None = None
    headers: dict[str, str] | None = None


def recipient(index: int) -> str:
    return f"55119{index:08d}"


def created_named(name: str) -> Callable[[httpx.Response], bool]:
    return lambda answer: answer.status_code == 201 and answer.json()["name"] == name


def shows(expected: dict[str, str]) -> Callable[[httpx.Response], bool]:
    return lambda answer: answer.status_code == 200 and {f: answer.json().get(f) for f in expected} == expected


def test_given_200_concurrent_requests_across_routes_then_each_gets_its_own_answer(local_stack: LocalStack) -> None:
    demo = local_stack.demo
    assert demo is not None
    api = local_stack.api_url
    run = uuid.uuid4().hex[:8]
    with httpx.Client(base_url=api, trust_env=False, timeout=60) as client:
        known = {
            client.post(
                "/api/messages",
                json={"to": recipient(index), "text": "known"},
                headers={"authorization": f"Bearer {demo.send_key}"},
            ).json()["id"]: recipient(index)
            for index in range(3)
        }
    numbers = {number["id"]: number["number"] for number in demo.numbers}
    requests: list[Request] = []
    for index in range(CONCURRENT):
        kind = index % 10
        if kind in (0, 1, 2):  # 60 sends, each with its own Idempotency-Key and recipient
            requests.append(
                Request(
                    "POST",
                    "/api/messages",
                    demo.send_key,
                    lambda answer: answer.status_code == 202 and answer.json()["status"] == "QUEUED",
                    body={"to": recipient(1000 + index), "text": f"concurrent {index}"},
                    headers={"idempotency-key": f"{run}-{index}"},
                )
            )
        elif kind in (3, 4):  # 40 key creations, each echoing its own name
            name = f"{run} key {index}"
            requests.append(
                Request(
                    "POST",
                    "/api/api-keys",
                    demo.admin_key,
                    created_named(name),
                    body={"name": name, "scopes": ["send"]},
                )
            )
        elif kind == 5:  # 20 key creations by an agent key: its own principal, so refused
            requests.append(
                Request(
                    "POST",
                    "/api/api-keys",
                    demo.agent_key,
                    lambda answer: answer.status_code == 403,
                    body={"name": f"{run} refused {index}", "scopes": ["admin"]},
                )
            )
        elif kind in (6, 7):  # 40 reads with a path parameter, answered for that parameter
            if kind == 6:
                number_id = list(numbers)[index % len(numbers)]
                path = f"/api/numbers/{number_id}"
                expected = {"id": number_id, "number": numbers[number_id]}
            else:
                message_id = list(known)[index % len(known)]
                path = f"/api/messages/{message_id}"
                expected = {"id": message_id, "to": known[message_id]}
            requests.append(
                Request(
                    "GET",
                    path,
                    demo.admin_key,
                    shows(expected),
                )
            )
        elif kind == 8:  # 20 listings
            requests.append(
                Request(
                    "GET",
                    "/api/numbers",
                    demo.admin_key,
                    lambda answer: (
                        answer.status_code == 200
                        and sorted(number["id"] for number in answer.json()) == sorted(numbers)
                    ),
                )
            )
        else:  # 20 reads of the OpenAPI document: another function, holding every router
            requests.append(
                Request(
                    "GET",
                    "/api/openapi.json",
                    demo.admin_key,
                    lambda answer: answer.status_code == 200 and "/api/messages" in answer.json()["paths"],
                )
            )

    released = threading.Barrier(CONCURRENT)

    def send(request: Request) -> httpx.Response:
        headers = {"authorization": f"Bearer {request.key}", **(request.headers or {})}
        released.wait()
        return httpx.request(
            request.method, f"{api}{request.path}", json=request.body, headers=headers, timeout=120, trust_env=False
        )

    with ThreadPoolExecutor(max_workers=CONCURRENT) as pool:
        answers = list(pool.map(send, requests))

    wrong = [
        f"{request.method} {request.path} {request.body}: {answer.status_code} {answer.text[:200]}"
        for request, answer in zip(requests, answers, strict=True)
        if not _holds(request.check, answer)
    ]
    print(f"concurrency: {CONCURRENT - len(wrong)}/{CONCURRENT} answered correctly")
    assert not wrong, f"{len(wrong)} of {CONCURRENT} wrong:\n" + "\n".join(wrong[:20])

    pairs = zip(requests, answers, strict=True)
    sends = [(request, answer) for request, answer in pairs if request.path == "/api/messages"]
    ids = [answer.json()["id"] for _request, answer in sends]
    assert len(set(ids)) == len(ids)
    sender = {"authorization": f"Bearer {demo.send_key}"}

    def stored_and_replayed(accepted: tuple[Request, httpx.Response]) -> tuple[Any, Any, Any]:
        request, answer = accepted
        assert request.body is not None
        stored = httpx.get(f"{api}/api/messages/{answer.json()['id']}", headers=sender, timeout=60, trust_env=False)
        again = httpx.post(
            f"{api}/api/messages",
            json=request.body,
            headers={**sender, **(request.headers or {})},
            timeout=60,
            trust_env=False,
        )
        return request.body["to"], stored.json()["to"], (answer.json()["id"], again.json()["id"])

    with ThreadPoolExecutor(max_workers=20) as pool:
        checked = list(pool.map(stored_and_replayed, sends))
    assert [sent for sent, _stored, _ids in checked] == [stored for _sent, stored, _ids in checked]
    assert all(first == replayed for _sent, _stored, (first, replayed) in checked)  # its key, its message


def _holds(check: Callable[[httpx.Response], bool], answer: httpx.Response) -> bool:
    try:
        return check(answer)
    except (ValueError, KeyError, TypeError):
        return False
