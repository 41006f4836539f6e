"""The users of a tenant: people who sign in to the console (admins and attendants)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from switchboard.core.api.auth import requires
from switchboard.core.api.errors import documented
from switchboard.core.identity import Principal, Scope
from switchboard.core.wire import OwnerTag
from switchboard.people import deps
from switchboard.people.domain import Role
from switchboard.people.schemas import InvitedUserView, InviteUser, UpdateUser, UsersView, UserView

if TYPE_CHECKING:
    from switchboard.people.service import UsersService
else:
    UsersService = Any

router = APIGatewayHttpRouter()
Users = Annotated[UsersService, Depends(deps.users_service)]
PlatformOrAdmin = Annotated[Principal, Depends(requires(router, Scope.PLATFORM, Scope.ADMIN))]
UserId = Annotated[str, Path(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9-]+$")]
Tenant = Annotated[OwnerTag | None, Query(alias="ownerTag")]


@router.get("/api/users", tags=["users"], responses=documented(401, 403, 404, 422))
def list_users(users: Users, principal: PlatformOrAdmin, owner_tag: Tenant = None) -> UsersView:
    """The tenant's people, by email. An admin lists its own tenant's; the platform names one."""
    return UsersView(users=[UserView.of(user) for user in users.list(principal, owner_tag)])


@router.post("/api/users", status_code=201, tags=["users"], responses=documented(400, 401, 403, 404, 409, 422))
def invite_user(users: Users, principal: PlatformOrAdmin, body: InviteUser) -> InvitedUserView:
    """Invite a person: created in the user pool in the tenant's group of the role, signing in by
    email with a temporary password (given here, or emailed by the pool) they replace at once."""
    invitation = users.invite(principal, body.email, Role(body.role), body.temporary_password, body.owner_tag)
    return InvitedUserView.of(invitation)


@router.patch("/api/users/<user_id>", tags=["users"], responses=documented(400, 401, 403, 404, 409, 422))
def update_user(
    users: Users, principal: PlatformOrAdmin, user_id: UserId, body: UpdateUser, owner_tag: Tenant = None
) -> UserView:
    """Change a person's role or disable (enable) them: refused at once on the API and on live
    updates, whatever tokens they hold. An admin cannot disable or demote themselves."""
    return UserView.of(
        users.update(
            principal, user_id, role=Role(body.role) if body.role else None, enabled=body.enabled, owner_tag=owner_tag
        )
    )
