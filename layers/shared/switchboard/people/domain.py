"""People of a tenant: who they are (the pool's `sub`, their email), their role, whether they
may sign in, and the scopes their role grants.

A person belongs to one tenant, in one user pool group named `<owner tag>:<role>`; the group is
what a token says, the directory (one item per person) is what holds now: the authorizer reads
the directory on every request, so a disabled person or a changed role counts at once, not when
the token expires.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import ConfigDict

from switchboard.core.errors import Forbidden, InvalidInput
from switchboard.core.identity import Principal, Scope, user_principal
from switchboard.core.model import Model


class Role(StrEnum):
    ADMIN = "admin"  # the tenant's administration screens and the calls panel
    ATTENDANT = "attendant"  # the calls panel: its own calls and those of no attendant


ROLE_SCOPES: dict[Role, frozenset[Scope]] = {
    Role.ADMIN: frozenset({Scope.ADMIN}),
    Role.ATTENDANT: frozenset({Scope.AGENT}),
}


def group_name(tenant: str, role: Role) -> str:
    return f"{tenant}:{role}"


def tenant_of_groups(groups: tuple[str, ...]) -> str | None:
    """The one tenant a token's groups name (`<owner tag>:<role>`); None for none or several."""
    tenants = set()
    for group in groups:
        tenant, _, role = group.rpartition(":")
        if tenant and role in Role.__members__.values():
            tenants.add(tenant)
    return tenants.pop() if len(tenants) == 1 else None


class User(Model):
    """One person of a tenant, as the directory keeps them."""

    model_config = ConfigDict(frozen=True)

    tenant: str
    id: str  # the user pool's `sub`: stable, never reused; the attendant id of their calls
    email: str
    role: Role
    enabled: bool = True
    created_at: datetime
    updated_at: datetime
    # When they last signed out: every token issued until then is refused (their tabs, everywhere).
    signed_out_at: datetime | None = None

    def issued_before_sign_out(self, issued_at: int | None) -> bool:
        """A token issued (`iat`, whole seconds) at or before their last sign-out; a token that
        says nothing of when it was issued counts as such once they have signed out."""
        if self.signed_out_at is None:
            return False
        return issued_at is None or issued_at <= int(self.signed_out_at.timestamp())

    def principal(self) -> Principal | None:
        """The principal a request of this person is, or None while they are disabled."""
        if not self.enabled:
            return None
        return Principal(
            tenant=self.tenant,
            key_id=user_principal(self.id),
            scopes=ROLE_SCOPES[self.role],
            attendant_id=self.id,
            user=self.id,
            email=self.email,
        )


class Invitation(Model):
    """A person created in the user pool: who, and the temporary password when one was set here
    (None when the pool emailed its own invitation)."""

    user: User
    temporary_password: str | None = None


class CodeNotConfirmed(InvalidInput):
    """The first code of a new authenticator app is not the one its secret gives now (or no
    secret is pending): the app is not turned on."""

    code = "mfa_code_refused"


class ProofRefused(Forbidden):
    """The password, or the authenticator app's current code, given to change the person's
    two-step verification is not theirs: nothing changed. `field` says which (`password`, `code`)."""

    code = "proof_refused"
