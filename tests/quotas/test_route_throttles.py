"""The gateway's own limits in template.yaml: routes without an API key (provider and downstream
webhooks, the documentation, a person's sign-in) are throttled apart from the API routes, by route key."""

from __future__ import annotations

from typing import Any

from devstack import template

UNAUTHENTICATED = {
    "POST /webhooks/{provider_id}",
    "GET /webhooks/{provider_id}",
    "POST /api/tenants/{owner_tag}/instances/{name}/webhook",
    "GET /api/openapi.json",
    "GET /api/docs",
    "$default",
    "POST /api/sign-in",
    "POST /api/sign-in/new-password",
    "POST /api/sign-in/refresh",
    "POST /api/sign-in/mfa",
}


def http_api() -> dict[str, Any]:
    (properties,) = template.resources("AWS::Serverless::HttpApi").values()
    return properties


def template_route_keys() -> dict[str, bool]:
    """Each route key of the template's HttpApi events -> whether it has no authorizer."""
    keys = {}
    for properties in template.resources("AWS::Serverless::Function").values():
        for event in (properties.get("Events") or {}).values():
            if event.get("Type") == "HttpApi":
                event_properties = event["Properties"]
                key = f"{event_properties['Method'].upper()} {event_properties['Path']}"
                if event_properties["Path"] == "/$default":  # the catch-all route's key is `$default`
                    key = "$default"
                keys[key] = (event_properties.get("Auth") or {}).get("Authorizer") == "NONE"
    return keys


def test_every_route_without_an_api_key_has_its_own_limits() -> None:
    """Below an API route's, except provider deliveries: the receipts of sends at an API route's
    full rate (up to two per message) and the incoming messages must get through."""
    api = http_api()
    default = api["DefaultRouteSettings"]
    settings = api["RouteSettings"]
    routes = template_route_keys()

    assert {key for key, open_route in routes.items() if open_route} == UNAUTHENTICATED
    assert set(settings) == UNAUTHENTICATED  # each key names a real route: a typo would limit nothing
    deliveries = settings.pop("POST /webhooks/{provider_id}")
    assert deliveries["ThrottlingRateLimit"] >= 3 * default["ThrottlingRateLimit"]
    assert deliveries["ThrottlingBurstLimit"] >= 3 * default["ThrottlingBurstLimit"]
    for key, limits in settings.items():
        assert 0 < limits["ThrottlingRateLimit"] < default["ThrottlingRateLimit"], key
        assert 0 < limits["ThrottlingBurstLimit"] < default["ThrottlingBurstLimit"], key
