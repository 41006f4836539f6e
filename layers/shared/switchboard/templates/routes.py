"""`GET /api/numbers/{number_id}/templates`: a Cloud API number's message templates."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from switchboard.core.api.auth import requires
from switchboard.core.api.errors import documented
from switchboard.core.identity import Principal, Scope
from switchboard.templates.deps import template_service
from switchboard.templates.schemas import TemplateListView

if TYPE_CHECKING:
    from switchboard.templates.service import TemplateService
else:
    # Depends() never looks at the type, and the module is not imported before a route needs it.
    TemplateService = Any

router = APIGatewayHttpRouter()
Templates = Annotated[TemplateService, Depends(template_service)]
Reader = Annotated[Principal, Depends(requires(router, Scope.ADMIN, Scope.SEND))]


@router.get("/api/numbers/<number_id>/templates", tags=["numbers"], responses=documented(401, 403, 404, 422, 502))
def list_templates(
    templates: Templates,
    number_id: Annotated[str, Path(max_length=64)],
    principal: Reader,
    refresh: Annotated[bool, Query(description="Read them from Meta now, not from the cache.")] = False,
) -> TemplateListView:
    """The message templates of the number's WhatsApp Business Account (its `wabaId`), every
    status, with what a send of each gives (`takes`). Read from Meta's Graph API, kept a few
    minutes; `refresh=true` reads them again now. Template status changes reach the list at once
    through the account's `message_template_status_update` webhook. 422 for a number that is not a
    Cloud API number with a `wabaId`."""
    number, listing = templates.for_number(principal, number_id, refresh=refresh)
    return TemplateListView.of(number.id, listing)
