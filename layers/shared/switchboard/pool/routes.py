"""An API key's sending configuration (scope admin): selection mode, number pool, webhook signing secret."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.openapi.params import Path
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from switchboard.catalog.schemas import ApiKeyView
from switchboard.core.api.auth import requires
from switchboard.core.api.errors import documented
from switchboard.core.identity import Principal, Scope
from switchboard.pool.deps import pool_service
from switchboard.pool.schemas import AddPoolNumber, PoolEntryView, ReorderPool, SetSelectionMode

if TYPE_CHECKING:
    from switchboard.pool.service import PoolService
else:
    # Depends() never looks at the type: the service's module is imported by the composition root
    # when a route that takes it first runs.
    PoolService = Any


router = APIGatewayHttpRouter()
Pool = Annotated[PoolService, Depends(pool_service)]
Admin = Annotated[Principal, Depends(requires(router, Scope.ADMIN))]
ERRORS = documented(400, 401, 403, 404, 409, 422)
ID = Annotated[str, Path(max_length=64)]


@router.put("/api/api-keys/<key_id>/selection-mode", tags=["number pool"], responses=ERRORS)
def set_selection_mode(pool: Pool, key_id: ID, body: SetSelectionMode, principal: Admin) -> ApiKeyView:
    """`default` sends from the key's defaultNumber; `pool` balances over the pool (empty pool: default)."""
    return ApiKeyView.of(pool.set_mode(principal, key_id, body.number_selection_mode))


@router.get("/api/api-keys/<key_id>/pool", tags=["number pool"], responses=ERRORS)
def list_pool(pool: Pool, key_id: ID, principal: Admin) -> list[PoolEntryView]:
    """The pool in priority order, with each number's connection state."""
    return [PoolEntryView.of(member) for member in pool.members(principal, key_id)]


@router.post("/api/api-keys/<key_id>/pool", status_code=201, tags=["number pool"], responses=ERRORS)
def add_to_pool(pool: Pool, key_id: ID, body: AddPoolNumber, principal: Admin) -> PoolEntryView:
    """Append a number of this tenant (at most 10): 422 `unknown_number` for a number the tenant does
    not have, 409 `number_already_in_pool`, 409 `pool_full`."""
    return PoolEntryView.of(pool.add(principal, key_id, body.whatsapp_number_id))


@router.delete("/api/api-keys/<key_id>/pool/<number_id>", tags=["number pool"], responses=ERRORS)
def remove_from_pool(pool: Pool, key_id: ID, number_id: ID, principal: Admin) -> Response[None]:
    """Take a number out; recipients attached to it stop coming back to it."""
    pool.remove(principal, key_id, number_id)
    return Response(status_code=204, content_type=content_types.APPLICATION_JSON)


@router.put("/api/api-keys/<key_id>/pool/reorder", tags=["number pool"], responses=ERRORS)
def reorder_pool(pool: Pool, key_id: ID, body: ReorderPool, principal: Admin) -> list[PoolEntryView]:
    """New priority order; `numberIds` must be a permutation of the pool (400 `not_a_permutation`)."""
    members = pool.reorder(principal, key_id, body.number_ids)
    return [PoolEntryView.of(member) for member in members]
