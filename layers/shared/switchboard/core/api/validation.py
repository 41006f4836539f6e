"""Powertools' request validation, reading a body only in a media type its route declares.

Powertools reads any body whose Content-Type starts with `application/json` as JSON (so
`application/jsonx` and `application/json-patch+json` too), one without a Content-Type as JSON,
`APPLICATION/JSON` not at all (media types are case-insensitive), and form or multipart bodies
as forms. Here a route reads exactly the media types its body parameter declares
(`Body(media_type=...)`, `application/json` unless it says otherwise; a `+json` type where a
route takes one), parameters and letter case aside; anything else is 415 `unsupported_media_type`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.event_handler.middlewares.openapi_validation import OpenAPIRequestValidationMiddleware
from aws_lambda_powertools.event_handler.openapi.params import Body

from switchboard.core.api.body import JSON, check_media_type, is_json

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler.api_gateway import Route
    from aws_lambda_powertools.event_handler.types import EventHandlerInstance


def declared_media_types(route: Route) -> frozenset[str]:
    """The media types the route's body is read in; only JSON ones: every body here is JSON."""
    declared = {
        param.field_info.media_type.lower()
        for param in route.dependant.body_params
        if isinstance(param.field_info, Body)
    }
    undeclared = {found for found in declared if not is_json(found)}
    if undeclared:
        raise ValueError(f"{route.path} declares a body that is not JSON: {sorted(undeclared)}")
    return frozenset(declared or {JSON})


class MediaTypeValidation(OpenAPIRequestValidationMiddleware):
    def _get_body(self, app: EventHandlerInstance) -> Any:
        event = app.current_event
        check_media_type(event.headers.get("content-type"), event.body, declared_media_types(app.context["_route"]))
        return self._parse_json_data(app)
