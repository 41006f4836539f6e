"""Catalog records: tenants, API keys, numbers, provider servers and instances.

These are the stored shapes (no secrets in them: secrets live in the secret store and only a
short hint is kept here). Every record carries its tenant.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import datetime
from typing import Literal

from pydantic import ConfigDict, Field

from switchboard.core.clock import utcnow
from switchboard.core.identity import Scope
from switchboard.core.model import Model
from switchboard.providers.kinds import ProviderKind, WebhookScheme

MAX_POOL_SIZE = 10


def secret_hint(secret: str) -> str:
    """A hint that identifies which secret is set without revealing it."""
    return f"…{secret[-4:]}" if len(secret) >= 16 else "…"


class ProviderChanged(Exception):
    """The provider's stamp moved since it was read: what was read of its catalog may be stale."""


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


class PacingLimits(Model):
    """How fast a number may send (health/pacing.py): the deployment's defaults, or those with a
    number's `PacingOverride` over them."""

    model_config = ConfigDict(frozen=True)

    per_minute: float = Field(default=0, ge=0)
    burst: int = Field(default=5, ge=1)
    new_contacts_first_day: int = Field(default=20, ge=0)
    new_contacts_step: int = Field(default=20, ge=0)
    new_contacts_max: int = Field(default=200, ge=0)

    @property
    def enabled(self) -> bool:
        return self.per_minute > 0

    def overridden_by(self, override: PacingOverride | None) -> PacingLimits:
        """These limits with each field the number's override sets replacing the default."""
        if override is None:
            return self
        changes = {
            "per_minute": override.messages_per_minute,
            "burst": override.burst,
            "new_contacts_first_day": override.new_contacts_first_day,
            "new_contacts_step": override.new_contacts_step,
            "new_contacts_max": override.new_contacts_max,
        }
        return self.model_copy(update={name: value for name, value in changes.items() if value is not None})


class Number(Record):
    id: str
    number: str
    display_name: str
    meta_phone_id: str | None = None
    # A Cloud API number's WhatsApp Business Account: where its message templates are listed.
    waba_id: str | None = None
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


class TemplateRef(Model):
    """An approved template named by its name and language (`pt_BR`)."""

    model_config = ConfigDict(frozen=True)

    name: str
    language: str


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
    # A Cloud API instance's template sent instead of an agent's reply outside the contact's
    # customer-service window (None: the reply is not sent and the agent is told).
    reengagement_template: TemplateRef | None = None

    @property
    def key(self) -> str:
        return instance_key(self.tenant, self.name)

    @property
    def connected(self) -> bool:
        return self.state == "CONNECTED"
