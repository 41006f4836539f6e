"""The users of a tenant: invite, list, disable or enable, change a role. Admins manage their own
tenant's people only; the platform manages any tenant's (how a tenant gets its first admin)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from switchboard.audit.ports import Audit
from switchboard.core.clock import utcnow
from switchboard.core.errors import Conflict, Forbidden, InvalidInput, NotFound
from switchboard.core.identity import PLATFORM_TENANT, Principal, Scope, user_principal
from switchboard.core.observability import logger
from switchboard.people.domain import Invitation, Role, User
from switchboard.people.ports import Directory, GrantChanges, UserPool


class UsersService:
    def __init__(
        self,
        pool: UserPool,
        directory: Directory,
        audit: Audit,
        grant_changes: GrantChanges | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._pool = pool
        self._directory = directory
        self._audit = audit
        self._grant_changes = grant_changes
        self._clock = clock

    def tenant_of(self, principal: Principal, owner_tag: str | None) -> str:
        """The tenant a call manages: the caller's own; the platform names one."""
        if principal.has(Scope.PLATFORM):
            if not owner_tag or owner_tag == PLATFORM_TENANT:
                raise Forbidden("the platform names the tenant whose users it manages (ownerTag)")
            return owner_tag
        if owner_tag and owner_tag != principal.tenant:
            raise NotFound("tenant not found")
        return principal.tenant

    def list(self, principal: Principal, owner_tag: str | None = None) -> list[User]:
        return self._directory.list_users(self.tenant_of(principal, owner_tag))

    def invite(
        self, principal: Principal, email: str, role: Role, temporary_password: str | None, owner_tag: str | None = None
    ) -> Invitation:
        """Create the person in the user pool, in their tenant's group, and in the directory.

        Raises AlreadyExists (409) when the email already has a user in the pool (of any tenant:
        an email signs in to one tenant). A failure after the pool created the person deletes
        them again, so nothing half-made can sign in."""
        tenant = self.tenant_of(principal, owner_tag)
        sub = self._pool.create_user(email, temporary_password)
        now = self._clock()
        user = User(tenant=tenant, id=sub, email=email, role=role, created_at=now, updated_at=now)
        try:
            self._pool.set_group(sub, tenant, role, None)
            self._directory.add_user(user)
        except Exception:
            self._pool.delete_user(sub)
            raise
        self._audit.record(principal, "user.invite", user_principal(sub), after=user)
        logger.info("user invited", extra={"tenant": tenant, "user": sub, "role": role})
        return Invitation(user=user, temporary_password=temporary_password)

    def sign_out(self, principal: Principal) -> None:
        """A person signs out: every token of theirs issued until now is refused at once (the
        directory), and their refresh tokens end (the pool), in every tab and on every device.
        Raises InvalidInput for an API key (a key is revoked, not signed out)."""
        if not principal.user:
            raise InvalidInput("only a person signs out: an API key is revoked instead", code="not_a_person")
        self._directory.record_sign_out(principal.tenant, principal.user, self._clock())
        try:
            self._pool.sign_out(principal.email or principal.user)
        except Exception:
            # Their access tokens are refused already; the refresh tokens end with the next sign-out.
            logger.exception("user pool sessions not ended", extra={"tenant": principal.tenant})
        logger.info("user signed out", extra={"tenant": principal.tenant, "user": principal.user})

    def update(
        self,
        principal: Principal,
        user_id: str,
        *,
        role: Role | None = None,
        enabled: bool | None = None,
        owner_tag: str | None = None,
    ) -> User:
        """Change a person's role or whether they may sign in; effective on their next request
        and on their open live connections at once (the directory is read on every request).

        Raises NotFound for a person of another tenant, Conflict when an admin would disable or
        demote themselves (a tenant must not lose its last way in by a click)."""
        tenant = self.tenant_of(principal, owner_tag)
        current = self._directory.get_user(tenant, user_id, consistent=True)
        if current is None:
            raise NotFound("user not found")
        if principal.user == current.id and (enabled is False or (role is not None and role != current.role)):
            raise Conflict("you cannot disable yourself or change your own role")
        changes: dict[str, object] = {}
        if role is not None and role != current.role:
            changes["role"] = role
        if enabled is not None and enabled != current.enabled:
            changes["enabled"] = enabled
        if not changes:
            return current
        updated = current.model_copy(update={**changes, "updated_at": self._clock()})
        # The directory first: it is what the authorizer reads, so the change holds at once even
        # if the pool's side fails after it (the pool is then corrected by retrying the call).
        self._directory.save_user(updated, current)
        if "role" in changes:
            self._pool.set_group(current.id, tenant, updated.role, current.role)
        if "enabled" in changes:
            self._pool.set_enabled(current.id, updated.enabled)
        action = "user.update"
        if "enabled" in changes:
            action = "user.enable" if updated.enabled else "user.disable"
        self._audit.record(principal, action, user_principal(current.id), before=current, after=updated)
        if self._grant_changes is not None:
            self._grant_changes.grant_changed(tenant, user_principal(current.id))
        logger.info("user changed", extra={"tenant": tenant, "user": current.id, "changes": sorted(changes)})
        return updated
