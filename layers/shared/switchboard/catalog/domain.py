"""Catalog records: tenants, API keys, numbers, provider servers and instances.

These are the stored shapes (no secrets in them: secrets live in the secret store and only a
short hint is kept here). Every record carries its tenant.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import UTC, datetime
from enum import StrEnum
from typing import Literal

from pydantic import ConfigDict, Field

from switchboard.core.model import Model
from switchboard.providers.kinds import ProviderKind, WebhookScheme

PLATFORM_TENANT = "_platform"
OWNER_TAG_PATTERN = r"^[a-z0-9][a-z0-9-]{1,62}$"
INSTANCE_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
PHONE_PATTERN = r"^[1-9][0-9]{7,14}$"  # E.164 digits, no "+"
MAX_POOL_SIZE = 10


class Scope(StrEnum):
    PLATFORM = "platform"
    ADMIN = "admin"
    AGENT = "agent"
    SEND = "send"


def key_principal(key_id: str) -> str:
    """The principal id of an API key. A principal id names whoever holds a grant, of any kind
    (`key:<key id>` today; a person signed in through the user pool would be `user:<sub>`), so
    what reacts to a revoked grant (live connections) is not tied to API keys."""
    return f"key:{key_id}"


def key_of_principal(principal: str) -> str | None:
    """The key id of an API key's principal id; None for a principal of another kind."""
    kind, _, identifier = principal.partition(":")
    return identifier if kind == "key" and identifier else None


class Principal(Model):
    """Who is calling, as the authorizer established it."""

    model_config = ConfigDict(frozen=True)

    tenant: str
    key_id: str
    scopes: frozenset[Scope]
    attendant_id: str | None = None

    def has(self, scope: Scope) -> bool:
        return scope in self.scopes

    @property
    def principal_id(self) -> str:
        return key_principal(self.key_id)


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(10)}"


def secret_hint(secret: str) -> str:
    """A hint that identifies which secret is set without revealing it."""
    return f"…{secret[-4:]}" if len(secret) >= 16 else "…"


class Record(Model):
    model_config = ConfigDict(extra="ignore", defer_build=True)

    tenant: str
    created_at: datetime = Field(default_factory=utcnow)


class Tenant(Record):
    owner_tag: str
    name: str


class ApiKey(Record):
    id: str
    name: str
    environment: Literal["LIVE", "TEST"]
    scopes: list[Scope]
    attendant_id: str | None = None
    default_number: str | None = None
    webhook_url: str | None = None
    number_selection_mode: Literal["default", "pool"] = "default"
    # Resend after an ambiguous outcome even on a kind that cannot dedupe a resend (a copy may result).
    at_least_once: bool = False
    prefix: str  # the first characters of the key, to recognise it in a list


class NewKey(Model):
    """A freshly generated key: the plaintext exists only in this object and in one response."""

    plaintext: str
    digest: str
    prefix: str


def generate_key(environment: Literal["LIVE", "TEST"], preset: str | None = None) -> NewKey:
    """A new random key, or `preset` (operator bootstrap of a known key, e.g. for scripts)."""
    plaintext = preset or f"sb_{environment.lower()}_{secrets.token_urlsafe(32)}"
    return NewKey(plaintext=plaintext, digest=hash_key(plaintext), prefix=plaintext[:12])


def hash_key(plaintext: str) -> str:
    """Keys carry 256 bits of entropy, so a fast hash is enough (no salt or KDF needed)."""
    return hashlib.sha256(plaintext.encode()).hexdigest()


def looks_like_key(value: str) -> bool:
    return bool(re.fullmatch(r"sb_(live|test)_[A-Za-z0-9_-]{20,100}", value))


class PacingOverride(Model):
    """A number's own pacing (health/pacing.py): each field set replaces the deployment's default
    for this number only; a field left `None` follows the default."""

    model_config = ConfigDict(frozen=True)

    messages_per_minute: float | None = Field(default=None, ge=0)  # 0: this number is not paced
    burst: int | None = Field(default=None, ge=1)
    new_contacts_first_day: int | None = Field(default=None, ge=0)
    new_contacts_step: int | None = Field(default=None, ge=0)
    new_contacts_max: int | None = Field(default=None, ge=0)

    def set_fields(self) -> list[str]:
        return [name for name, value in self.model_dump().items() if value is not None]


class Number(Record):
    id: str
    number: str
    display_name: str
    meta_phone_id: str | None = None
    pacing: PacingOverride | None = None  # None: the deployment's pacing


class Provider(Record):
    id: str
    name: str
    kind: ProviderKind
    base_url: str
    priority: int = 0
    admin_token_hint: str | None = None
    webhook_secret_hint: str
    verify_token_hint: str | None = None  # Meta Cloud API only: answers its subscription check
    # How its webhooks are authenticated, one of its kind's schemes. None only for a provider
    # saved before it was stored: the first delivery authentic under one of the kind's schemes
    # stores that one (the ingest), and from then on no other verifies.
    webhook_scheme: WebhookScheme | None = None


InstanceState = Literal["CONNECTED", "DISCONNECTED"]


def instance_key(tenant: str, name: str) -> str:
    """How every capability stores and refers to an instance: a name is unique within its tenant
    only, and neither a tenant tag nor a name can contain the colon."""
    return f"{tenant}:{name}"


class Instance(Record):
    name: str
    provider_id: str
    provider_instance_id: str
    number_id: str
    priority: int = 0
    kind: Literal["messages", "calls"] = "messages"
    owner_tag: str | None = None
    token_hint: str
    state: InstanceState = "DISCONNECTED"
    state_seq: int | None = None  # the provider `seq` of the last ordered event that set `state`
    state_rev: int = 0  # moved on by every write of `state` (see connection_state/domain.py)
    state_changed_at: datetime | None = None
    # Per-instance configuration, set through `PUT /api/instances/{name}`.
    spamguard_enabled: bool = False
    inbox_id: int | None = None  # overrides the owner tag's downstream inbox (same downstream account)
    events_webhook_url: str | None = None

    @property
    def key(self) -> str:
        return instance_key(self.tenant, self.name)

    @property
    def connected(self) -> bool:
        return self.state == "CONNECTED"
