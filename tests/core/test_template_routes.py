"""template.yaml and the functions' routers agree, both ways.

API Gateway sends each `HttpApi` event of a function to that function's code (its `CodeUri`);
the function answers with the resolver `app` its app.py builds from the capability routers. So
every route of the template must be served by that `app`, and every route the `app` serves must
be one the template sends to that function: a route only in the code is unreachable in AWS, one
only in the template answers 404 there. The docs function's `app` serves only the document (generated
from every router, see tests/core/test_openapi_and_cli.py) and the Swagger UI.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from typing import Any

from devstack import template
from devstack.apigw import HttpApi
from tools.support.aws import AwsResources

DOCS_FUNCTION = "DocsFunction"
UNMATCHED_ROUTE_PATH = "/$default"  # SAM's spelling of API Gateway's `$default` route
Route = tuple[str, str]  # (METHOD, /path/{param})


def template_routes() -> dict[str, set[Route]]:
    """Each function code directory (`CodeUri`) -> the routes of its functions' `HttpApi` events."""
    routes: dict[str, set[Route]] = defaultdict(set)
    for properties in template.resources("AWS::Serverless::Function").values():
        code = routes[properties["CodeUri"]]
        for event in (properties.get("Events") or {}).values():
            if event.get("Type") == "HttpApi" and event["Properties"]["Path"] != UNMATCHED_ROUTE_PATH:
                code.add((event["Properties"]["Method"].upper(), event["Properties"]["Path"]))
    return dict(routes)


def function_of_each_code() -> dict[str, str]:
    """Each `CodeUri` -> the first function built from it (functions sharing code share its `app`)."""
    functions: dict[str, str] = {}
    for logical_id, properties in template.resources("AWS::Serverless::Function").items():
        functions.setdefault(properties["CodeUri"], logical_id)
    return functions


def served_routes(http_api: HttpApi, logical_id: str) -> set[Route]:
    """What the `app` of the function's module serves (nothing for a function without one).

    The module is the one the local gateway runs: the function's app.py, imported by path.
    """
    module = sys.modules[http_api.functions.handler(logical_id).__module__]
    app: Any = getattr(module, "app", None)
    if app is None:
        return set()
    routes = app._static_routes + app._dynamic_routes  # Powertools has no public accessor
    return {(route.method.upper(), re.sub(r"<(\w+)>", r"{\1}", route.path)) for route in routes}


def test_every_route_of_the_template_is_served_by_its_function_and_every_served_route_is_in_it(
    aws: AwsResources, http_api: HttpApi
) -> None:
    expected = template_routes()
    functions = function_of_each_code()
    docs = template.resources("AWS::Serverless::Function")[DOCS_FUNCTION]["CodeUri"]
    api = {route for code, routes in expected.items() if code != docs for route in routes}

    mismatches = {}
    for code, routes in expected.items():
        served = served_routes(http_api, functions[code])
        if served != routes:
            mismatches[code] = {"not served": sorted(routes - served), "not in template.yaml": sorted(served - routes)}

    assert api, "no HttpApi route found in template.yaml"
    assert not mismatches, mismatches


def test_a_request_no_route_matches_goes_to_the_docs_function_without_a_key_and_gets_our_answer(
    aws: AwsResources, http_api: HttpApi
) -> None:
    unmatched = [
        (logical_id, event["Properties"])
        for logical_id, properties in template.resources("AWS::Serverless::Function").items()
        for event in (properties.get("Events") or {}).values()
        if event.get("Type") == "HttpApi" and event["Properties"]["Path"] == UNMATCHED_ROUTE_PATH
    ]
    assert [(logical_id, route["Method"], route["Auth"]["Authorizer"]) for logical_id, route in unmatched] == [
        (DOCS_FUNCTION, "ANY", "NONE")
    ]

    # an unknown path, the root: none reaches a route's code
    answers = [http_api.handle("GET", "/api/nope"), http_api.handle("GET", "/")]
    # a known path with another method (HEAD included: an HTTP API routes it like any method)
    other_method = http_api.handle("DELETE", "/api/messages", headers={"authorization": "Bearer sb_live_x"})
    head = http_api.handle("HEAD", "/api/numbers/num_1", headers={"authorization": "Bearer sb_live_x"})

    assert [(answer.status, answer.json()) for answer in answers] == [
        (404, {"error": "not_found", "message": "no such route"})
    ] * 2
    assert (other_method.status, other_method.headers["allow"], other_method.json()["error"]) == (
        405,
        "GET, POST",
        "method_not_allowed",
    )
    assert (head.status, head.headers["allow"], head.body) == (405, "DELETE, GET, PATCH", b"")
    assert int(head.headers["content-length"]) > 0  # the length of the body it leaves out
