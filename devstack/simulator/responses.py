"""The HTTP pieces every server of the simulator shares: answers, refusals, request bodies, routes."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol, TypeVar

from pydantic import BaseModel, ValidationError
from werkzeug.routing import Rule
from werkzeug.wrappers import Request, Response

from devstack.simulator.model import SimError
from devstack.simulator.payloads import Refused

Body = TypeVar("Body", bound=BaseModel)


class Route(NamedTuple):
    """A provider route, and how an injected fault on it answers: in its server's error shape."""

    rule: Rule
    fault: Callable[[int, str], Response]


class ProviderServer(Protocol):
    """One simulated server's HTTP side: its routes, under its path prefix ("" for the root)."""

    prefix: str

    def routes(self) -> list[Route]: ...

    def not_found(self) -> Response:
        """An unknown route under the prefix, as this server answers it."""


def json_answer(payload: Any, status: int = 200) -> Response:
    return Response(json.dumps(payload), status=status, mimetype="application/json")


def error_answer(status: int, code: str, message: str = "") -> Response:
    """The simulator's own error shape (the calls server and the control API)."""
    return json_answer({"error": code, "message": message or code}, status)


def raw_answer(body: bytes, content_type: str, status: int = 200) -> Response:
    return Response(body, status=status, content_type=content_type)


def refused_answer(refused: Refused) -> Response:
    return raw_answer(refused.body, refused.content_type, refused.status)


def parse_body(request: Request, model: type[Body]) -> Body:
    """The request's JSON as `model`; `400 invalid_json` / `invalid_request` in the simulator's shape."""
    raw = request.get_data()
    try:
        payload = json.loads(raw) if raw else {}
    except ValueError as exc:
        raise SimError(400, "invalid_json", "the body is not JSON") from exc
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, error['loc']))}: {error['msg']}" for error in exc.errors(include_input=False)
        )
        raise SimError(400, "invalid_request", problems) from exc
