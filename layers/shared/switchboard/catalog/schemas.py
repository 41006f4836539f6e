"""Request and response bodies of the catalog API (camelCase on the wire)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Literal, Self

from pydantic import Field, StringConstraints, model_validator

from switchboard.catalog.domain import ApiKey, Instance, Number, PacingOverride, Provider, Tenant
from switchboard.core import model as core_model
from switchboard.core.identity import Principal, Scope
from switchboard.core.wire import Body, HttpUrl, Name, OwnerTag, PatchBody, Phone, Secret, View
from switchboard.providers.kinds import ProviderKind, WebhookScheme

if TYPE_CHECKING:
    from switchboard.catalog.domain import PacingLimits
    from switchboard.catalog.pairing import InstancePairing

# --- tenants -------------------------------------------------------------------------------


class CreateTenant(Body):
    owner_tag: OwnerTag
    name: Name


class TenantView(View):
    owner_tag: str
    name: str
    created_at: datetime

    @classmethod
    def of(cls, tenant: Tenant) -> TenantView:
        return cls(owner_tag=tenant.owner_tag, name=tenant.name, created_at=tenant.created_at)


# --- API keys ------------------------------------------------------------------------------


AT_LEAST_ONCE = (
    "Resend after an ambiguous outcome (a timeout or a lost answer, when the provider may have sent the "
    "message) even through a provider that cannot recognise a resend (Evolution, the Meta Cloud API): the "
    "recipient may then get a copy. Off (default): such a message ends FAILED with reason "
    "`ambiguous_outcome` and is never sent again. wuzapi takes switchboard's message id as the WhatsApp "
    "message id, so its resends are the same message whatever this setting."
)


class CreateApiKey(Body):
    name: Name
    environment: Literal["LIVE", "TEST"] = "LIVE"
    scopes: list[Literal["admin", "agent", "send"]] = Field(min_length=1)
    attendant_id: Name | None = None
    default_number: Phone | None = None
    webhook_url: HttpUrl | None = None
    at_least_once: bool = Field(default=False, description=AT_LEAST_ONCE)


class UpdateApiKey(PatchBody):
    not_nullable = ("name", "scopes", "at_least_once")

    name: Name | None = None
    scopes: list[Literal["admin", "agent", "send"]] | None = Field(default=None, min_length=1)
    attendant_id: Name | None = None
    default_number: Phone | None = None
    webhook_url: HttpUrl | None = None
    at_least_once: bool | None = Field(default=None, description=AT_LEAST_ONCE)


class ApiKeyView(View):
    id: str
    name: str
    environment: str
    scopes: list[Scope]
    attendant_id: str | None
    default_number: str | None
    webhook_url: str | None
    number_selection_mode: str
    at_least_once: bool = Field(description=AT_LEAST_ONCE)
    prefix: str
    created_at: datetime

    @classmethod
    def of(cls, key: ApiKey) -> ApiKeyView:
        return cls.model_validate(key.model_dump(exclude={"tenant"}))


class CreatedApiKeyView(ApiKeyView):
    key: str = Field(description="The API key. Shown only in this response: store it now.")


class MeView(View):
    tenant: str
    key_id: str
    name: str
    scopes: list[Scope]
    attendant_id: str | None = Field(
        default=None, description="The attendant behind an agent key; calls are owned by it (else by the key id)."
    )

    @classmethod
    def of(cls, key: ApiKey) -> MeView:
        return cls(tenant=key.tenant, key_id=key.id, name=key.name, scopes=key.scopes, attendant_id=key.attendant_id)

    @classmethod
    def of_person(cls, principal: Principal) -> MeView:
        return cls(
            tenant=principal.tenant,
            key_id=principal.key_id,
            name=principal.email or principal.user or principal.key_id,
            scopes=sorted(principal.scopes),
            attendant_id=principal.attendant_id,
        )


class CreateAdminKey(Body):
    name: Name | None = Field(default=None, description="Defaults to the tenant's name followed by `admin`.")


class CreatedTenantView(View):
    tenant: TenantView
    admin_key: CreatedApiKeyView


# --- numbers -------------------------------------------------------------------------------


WABA_ID = (
    "A Cloud API number's WhatsApp Business Account id (Meta's `WABA-ID`): its approved message "
    "templates are listed from it (`GET /api/numbers/{id}/templates`). Only with `metaPhoneId`."
)
MetaId = Annotated[str, StringConstraints(pattern=r"^[0-9]{1,32}$")]


class CreateNumber(Body):
    number: Phone
    display_name: Name
    meta_phone_id: MetaId | None = None
    waba_id: MetaId | None = Field(default=None, description=WABA_ID)

    @model_validator(mode="after")
    def _waba_of_a_cloud_number(self) -> Self:
        if self.waba_id is not None and self.meta_phone_id is None:
            raise ValueError("wabaId is a Cloud API number's: give metaPhoneId too")
        return self


MESSAGES_PER_MINUTE = "Messages a minute this number may send (a token bucket); 0: this number is not paced."
BURST = "Messages this number may send at once before its rate applies."
NEW_CONTACTS_FIRST_DAY = "New contacts (recipients not attached to the number) it may reach on its first day."
NEW_CONTACTS_STEP = "How many more new contacts it may reach each following day."
NEW_CONTACTS_MAX = "The most new contacts it may reach in one UTC day, however old it is."


class PacingBody(Body):
    """A number's own pacing, replacing its current override: a field left out or null follows the
    deployment's default (`pacingDefaults`)."""

    messages_per_minute: float | None = Field(
        default=None, ge=0, le=60_000, allow_inf_nan=False, description=MESSAGES_PER_MINUTE
    )
    burst: int | None = Field(default=None, ge=1, le=100_000, description=BURST)
    new_contacts_first_day: int | None = Field(default=None, ge=0, le=1_000_000, description=NEW_CONTACTS_FIRST_DAY)
    new_contacts_step: int | None = Field(default=None, ge=0, le=1_000_000, description=NEW_CONTACTS_STEP)
    new_contacts_max: int | None = Field(default=None, ge=0, le=1_000_000, description=NEW_CONTACTS_MAX)

    def override(self) -> PacingOverride | None:
        """The stored override; None when every field follows the default."""
        override = PacingOverride.model_validate(self.model_dump())
        return override if override.set_fields() else None


class UpdateNumber(PatchBody):
    not_nullable = ("display_name",)

    display_name: Name | None = None
    meta_phone_id: MetaId | None = None
    waba_id: MetaId | None = Field(default=None, description=WABA_ID)
    pacing: PacingBody | None = Field(
        default=None, description="This number's own pacing; null (or an empty object) clears it. Left out: kept."
    )


class PacingView(View):
    """A number's override: a null field follows the deployment's default."""

    messages_per_minute: float | None = Field(description=MESSAGES_PER_MINUTE)
    burst: int | None = Field(description=BURST)
    new_contacts_first_day: int | None = Field(description=NEW_CONTACTS_FIRST_DAY)
    new_contacts_step: int | None = Field(description=NEW_CONTACTS_STEP)
    new_contacts_max: int | None = Field(description=NEW_CONTACTS_MAX)


class PacingDefaultsView(View):
    """The deployment's pacing (its environment), which a number follows where its override is silent."""

    messages_per_minute: float = Field(description=MESSAGES_PER_MINUTE)
    burst: int = Field(description=BURST)
    new_contacts_first_day: int = Field(description=NEW_CONTACTS_FIRST_DAY)
    new_contacts_step: int = Field(description=NEW_CONTACTS_STEP)
    new_contacts_max: int = Field(description=NEW_CONTACTS_MAX)

    @classmethod
    def of(cls, limits: PacingLimits) -> PacingDefaultsView:
        return cls(
            messages_per_minute=limits.per_minute,
            burst=limits.burst,
            new_contacts_first_day=limits.new_contacts_first_day,
            new_contacts_step=limits.new_contacts_step,
            new_contacts_max=limits.new_contacts_max,
        )


class NumberView(View):
    id: str
    number: str
    display_name: str
    meta_phone_id: str | None
    waba_id: str | None = Field(default=None, description=WABA_ID)
    connected: bool
    pacing: PacingView | None = Field(description="This number's own pacing; null: it follows `pacingDefaults`.")
    pacing_defaults: PacingDefaultsView = Field(
        description="The deployment's pacing, which applies to every field the number's own leaves null."
    )
    created_at: datetime

    @classmethod
    def of(cls, number: Number, connected: bool, pacing_defaults: PacingLimits) -> NumberView:
        return cls.model_validate(
            {
                **number.model_dump(exclude={"tenant"}),
                "connected": connected,
                "pacing_defaults": PacingDefaultsView.of(pacing_defaults),
            }
        )


# --- providers -----------------------------------------------------------------------------


WEBHOOK_SCHEME = (
    "How the provider's webhooks are signed; every other way is refused. `wuzapi`: `envelope` (the "
    "calls-capable server: `X-Webhook-Timestamp`, `X-Webhook-Signature: v1=`) or `wuzapi-hmac` (a plain "
    "wuzapi: `x-hmac-signature`). `evolution`: `evolution-jwt` (`Authorization: Bearer`, the webhook's "
    "`jwt_key`) or `evolution-apikey` (the body's `apikey`). `meta`: `meta-signature` "
    "(`X-Hub-Signature-256`). Left out, a kind with one scheme gets it; otherwise the first authentic "
    "delivery stores the scheme it came under, and from then on only that one is accepted."
)


class CreateProvider(Body):
    name: Name | None = Field(default=None, description="How the console lists it; left out: its base URL's host.")
    kind: ProviderKind
    base_url: HttpUrl
    admin_token: Secret | None = None
    webhook_secret: Secret
    webhook_scheme: WebhookScheme | None = Field(default=None, description=WEBHOOK_SCHEME)
    verify_token: Secret | None = Field(
        default=None, description="Write-only. Meta Cloud API only: the Verify token set in the Meta app."
    )
    priority: Annotated[int, Field(ge=0, le=1000)] = 0


class UpdateProvider(PatchBody):
    not_nullable = ("name", "base_url", "admin_token", "webhook_secret", "webhook_scheme", "verify_token", "priority")

    name: Name | None = None
    base_url: HttpUrl | None = None
    admin_token: Secret | None = None
    webhook_secret: Secret | None = None
    webhook_scheme: WebhookScheme | None = Field(default=None, description=WEBHOOK_SCHEME)
    verify_token: Secret | None = None
    priority: Annotated[int, Field(ge=0, le=1000)] | None = None


class ProviderView(View):
    id: str
    name: str
    kind: str
    base_url: str
    priority: int
    admin_token_hint: str | None
    webhook_secret_hint: str
    verify_token_hint: str | None
    webhook_scheme: WebhookScheme | None = Field(
        description="How its webhooks are signed (see `webhookScheme` on create). Null until its first "
        "authentic delivery stores the one it came under, when it was saved without one."
    )
    webhook_path: str = Field(description="Configure this path (under the API's base URL) at the provider.")
    webhook_url: str | None = Field(
        default=None,
        description="The whole URL to paste as the provider's webhook (null where the deployment does not "
        "know its public base URL: then the API's base URL followed by `webhookPath`).",
    )
    created_at: datetime

    @classmethod
    def of(cls, provider: Provider, public_base_url: str | None = None) -> ProviderView:
        path = f"/webhooks/{provider.id}"
        url = f"{public_base_url.rstrip('/')}{path}" if public_base_url else None
        return cls.model_validate({**provider.model_dump(exclude={"tenant"}), "webhook_path": path, "webhook_url": url})


# --- instances -----------------------------------------------------------------------------

SPAMGUARD_ENABLED = (
    "Refuse to send through this instance a text equal (trimmed, inner whitespace collapsed, casefolded) to "
    "one of the last 2 texts sent to the same recipient through it within 24 h; the pool then tries the next "
    "instance. Left out: kept as it is (false on create)."
)
INBOX_ID = (
    "The downstream inbox of this instance's incoming messages, in the account of its owner tag's "
    "downstream (null: that downstream's own inbox). Left out: kept as it is."
)
EVENTS_WEBHOOK_URL = "An https URL for this instance's events, or null. Left out: kept as it is."
REENGAGEMENT_TEMPLATE = (
    "A Cloud API instance's approved template without parameters (`name`, `language`), sent instead of an "
    "agent's reply when the contact has not written within 24 hours (the agent's private note says so); "
    "null: such a reply is not sent and the note asks for a template. Left out: kept as it is."
)


class TemplateRefBody(Body):
    name: Annotated[str, StringConstraints(pattern=r"^[a-z0-9_]{1,512}$")]
    language: Annotated[str, StringConstraints(pattern=r"^[a-z]{2,3}(_[A-Za-z0-9]{2,4})?$")]


class TemplateRefView(View):
    name: str
    language: str


class PutInstance(Body):
    provider_id: Name
    provider_instance_id: Annotated[core_model.Name, StringConstraints(min_length=1, max_length=128)]
    number_id: Name
    token: Secret | None = Field(default=None, description="Write-only. Required when creating.")
    priority: Annotated[int, Field(ge=0, le=1000)] = 0
    kind: Literal["messages", "calls"] = "messages"
    owner_tag: OwnerTag | None = None
    spamguard_enabled: bool = Field(default=False, description=SPAMGUARD_ENABLED)
    # The same Chatwoot inbox id as a downstream's `downstreamInboxId`, with the same bound: a
    # JavaScript client (the console) reads numbers above 2^53 wrong.
    inbox_id: Annotated[int, Field(ge=1, lt=2**53)] | None = Field(default=None, description=INBOX_ID)
    events_webhook_url: HttpUrl | None = Field(default=None, description=EVENTS_WEBHOOK_URL)
    reengagement_template: TemplateRefBody | None = Field(default=None, description=REENGAGEMENT_TEMPLATE)


# The per-instance configuration: a PUT that leaves one of these out keeps its current value.
INSTANCE_CONFIGURATION = ("spamguard_enabled", "inbox_id", "events_webhook_url", "reengagement_template")


class ConnectionView(View):
    """A calls connection as an attendant's console needs it: no token hint, no webhook settings."""

    name: str
    number_id: str
    number: str | None
    display_name: str | None
    connected: bool

    @classmethod
    def of(cls, instance: Instance, number: Number | None) -> ConnectionView:
        return cls(
            name=instance.name,
            number_id=instance.number_id,
            number=number.number if number else None,
            display_name=number.display_name if number else None,
            connected=instance.connected,
        )


class InstanceView(View):
    name: str
    provider_id: str
    provider_instance_id: str
    number_id: str
    priority: int
    kind: str
    owner_tag: str | None
    token_hint: str
    state: str
    state_changed_at: datetime | None
    spamguard_enabled: bool = Field(description=SPAMGUARD_ENABLED)
    inbox_id: int | None = Field(description=INBOX_ID)
    events_webhook_url: str | None = Field(description=EVENTS_WEBHOOK_URL)
    reengagement_template: TemplateRefView | None = Field(default=None, description=REENGAGEMENT_TEMPLATE)
    created_at: datetime

    @classmethod
    def of(cls, instance: Instance) -> InstanceView:
        return cls.model_validate(instance.model_dump(exclude={"tenant", "state_seq", "state_rev"}))


# --- pairing an instance's number --------------------------------------------------------------


class PairingView(View):
    instance: str
    connection: str = Field(description="The instance's connection state as switchboard holds it now.")
    state: Literal["paired", "code", "starting", "not_started"] = Field(
        description="`code`: scan `qrCode` (or type `pairingCode`) on the phone, and read this again: the "
        "provider draws a new code every 20 to 60 s; `starting`: no code yet, read again shortly; `paired`: "
        "the phone is linked; `not_started`: no session runs, start one with `POST .../connect`."
    )
    qr_code: str | None = Field(description="The code as the provider drew it: a `data:image/png;base64,...` image.")
    pairing_code: str | None = Field(description="A code typed on the phone instead, where the provider made one.")
    count: int | None = Field(description="Codes the provider has drawn in this attempt, where it counts them.")

    @classmethod
    def of(cls, paired: InstancePairing) -> PairingView:
        pairing = paired.pairing
        return cls(
            instance=paired.instance.name,
            connection=paired.instance.state,
            state=pairing.state,
            qr_code=pairing.qr_code,
            pairing_code=pairing.pairing_code,
            count=pairing.count,
        )


class SendTestMessage(Body):
    to: Phone = Field(description="Whom to send it to, in E.164 (your own phone).")
    # The send API's text: line breaks and tabs kept, other control characters refused.
    text: Annotated[core_model.Text, StringConstraints(strip_whitespace=True, min_length=1, max_length=1000)]


class TestMessageView(View):
    id: str = Field(description="The message's id: read it at `GET /api/messages/{id}` until SENT or FAILED.")
    status: Literal["QUEUED"] = Field(description="Accepted and queued for the send worker.")
    instance: str
    to: str

    @classmethod
    def of(cls, message_id: str, instance: str, to: str) -> TestMessageView:
        return cls(id=message_id, status="QUEUED", instance=instance, to=to)
