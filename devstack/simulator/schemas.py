"""Request bodies and configuration of the simulator, validated at the HTTP boundary.

Provider routes ignore unknown fields, as real servers do. Control routes (`/_sim`) forbid them,
so a typo in a test fails loudly instead of being silently ignored.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr

MIN_CALLS = 1
MAX_CALLS = 8
MAX_VERSION = 2**63 - 1
DEFAULT_ADMIN_TOKEN = "local-simulator-admin-token"  # noqa: S105 - a public local default, never deployed

InstanceKind = Literal["calls", "messages"]
Flavour = Literal["calls", "wuzapi", "evolution", "meta"]
WebhookFormat = Literal["json", "form"]
DisconnectReason = Literal["logged_out", "disconnected"]
FaultMode = Literal["timeout", "error500", "drop_response"]
CallAction = Literal["answer", "active", "video", "end", "recording_ready", "recording_failed"]
ReceiptStatus = Literal["delivered", "read", "failed"]


class ProviderBody(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ControlBody(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


# --- configuration ---------------------------------------------------------------------------


class SimCapabilities(BaseModel):
    """What `GET /v1/capabilities` announces; turning one off also turns off its behaviour."""

    calls: bool = True
    calls_per_instance_limit: bool = True
    calls_settings_webhook: bool = True
    calls_video: bool = True
    calls_max_concurrent: int = Field(default=1, ge=MIN_CALLS, le=MAX_CALLS)


class SimulatorConfig(BaseModel):
    admin_token: str = Field(
        default_factory=lambda: os.environ.get("SIM_ADMIN_TOKEN") or DEFAULT_ADMIN_TOKEN, repr=False
    )
    capabilities: SimCapabilities = Field(default_factory=SimCapabilities)
    fault_delay_seconds: float = Field(
        default=11.0, gt=0, description="How long a `timeout` fault sleeps: longer than the client's timeout."
    )
    webhook_timeout_seconds: float = Field(default=5.0, gt=0)
    webhook_retry_base_delay: float = Field(default=0.5, ge=0, description="Doubled after each failure.")
    webhook_max_attempts: int = Field(default=5, ge=1)


# --- provider routes -------------------------------------------------------------------------


class CallSettingsBody(ProviderBody):
    calls_max_concurrent: StrictInt = Field(alias="callsMaxConcurrent", ge=MIN_CALLS, le=MAX_CALLS)


class WebhookBody(ProviderBody):
    """A partial update: omitted fields keep their current value (the secret only for the same URL)."""

    url: StrictStr | None = None
    events: list[StrictStr] | None = None
    filters: dict[str, Any] | None = None
    enabled: StrictBool | None = None
    secret: StrictStr | None = Field(default=None, min_length=1, repr=False)


class DialBody(ProviderBody):
    phone: StrictStr = Field(min_length=1)
    video: StrictBool = False


class AttachBody(ProviderBody):
    """`resume: false` releases the call's retained media session and starts a new one."""

    resume: StrictBool = True


class CallIdBody(ProviderBody):
    call_id: StrictStr = Field(alias="callId", min_length=1)


class VideoBody(CallIdBody):
    action: Literal["stop"]


# --- control routes --------------------------------------------------------------------------


class CreateInstanceBody(ControlBody):
    """An instance on the server of `flavour`; `kind` (default `calls` on the calls server,
    `messages` elsewhere) can be `calls` only there.

    The webhook secret is the calls server's subscription secret, wuzapi's HMAC key (none: unsigned
    webhooks), Evolution's `jwt_key` (none: no `Authorization`) or Meta's app secret.
    """

    id: StrictStr = Field(min_length=1)
    token: StrictStr = Field(min_length=1, repr=False)
    flavour: Flavour = "calls"
    kind: InstanceKind | None = None
    number: StrictStr = Field(min_length=1)
    connected: StrictBool = True
    paired: StrictBool = Field(
        default=True,
        description="False: no phone is linked yet (wuzapi, Evolution): the session is paired from a code "
        "(`/session/connect`, `/instance/connect/{instance}`, then `/_sim/instances/{id}/scan`).",
    )
    webhook_url: StrictStr | None = Field(default=None, alias="webhookUrl")
    webhook_secret: StrictStr | None = Field(default=None, alias="webhookSecret", min_length=1, repr=False)
    webhook_events: list[StrictStr] | None = Field(default=None, alias="webhookEvents")
    webhook_format: WebhookFormat = Field(default="json", alias="webhookFormat", description="wuzapi only")
    user_id: StrictStr | None = Field(default=None, alias="userId", min_length=1, description="wuzapi's userID")
    meta_phone_id: StrictStr | None = Field(default=None, alias="metaPhoneId", pattern=r"^[0-9]{1,32}$")
    waba_id: StrictStr | None = Field(default=None, alias="wabaId", pattern=r"^[0-9]{1,32}$")
    verify_token: StrictStr | None = Field(default=None, alias="verifyToken", min_length=1, repr=False)
    calls_max_concurrent: StrictInt | None = Field(default=None, alias="callsMaxConcurrent", ge=MIN_CALLS, le=MAX_CALLS)
    calls_config_version: StrictInt = Field(default=0, alias="callsConfigVersion", ge=0, le=MAX_VERSION)


class ConnectionBody(ControlBody):
    connected: StrictBool
    include_calls_config: StrictBool = Field(
        default=True,
        alias="includeCallsConfig",
        description="False imitates a server that could not read its database: `instance` has only kind.",
    )
    reason: DisconnectReason | None = Field(
        default=None,
        description="A disconnect on wuzapi or Evolution: `logged_out` (default; the session is gone) or "
        "`disconnected` (the socket dropped; wuzapi posts Disconnected, Evolution posts nothing).",
    )
    notify: StrictBool = Field(
        default=True,
        description="False: the change happens but its webhook never arrives (a delivery lost, a webhook "
        "configured after the fact); only the server's status read tells.",
    )


class NumberStatusBody(ControlBody):
    """What the Graph API says of a Meta number from now on (each field left out keeps its value)."""

    status: StrictStr | None = Field(default=None, pattern=r"^[A-Z0-9_]{1,40}$")
    quality_rating: StrictStr | None = Field(default=None, alias="qualityRating", pattern=r"^[A-Z]{1,20}$")
    messaging_limit: StrictStr | None = Field(default=None, alias="messagingLimit", pattern=r"^[A-Z0-9_]{1,40}$")
    throughput: StrictStr | None = Field(default=None, pattern=r"^[A-Z_]{1,40}$")


class WebhookFormatBody(ControlBody):
    format: WebhookFormat


class PanelCallSettingsBody(ControlBody):
    calls_max_concurrent: StrictInt = Field(alias="callsMaxConcurrent", ge=MIN_CALLS, le=MAX_CALLS)


class WebhookSecretsBody(ControlBody):
    secret: StrictStr = Field(min_length=1, repr=False)
    previous_secret: StrictStr | None = Field(default=None, alias="previousSecret", min_length=1, repr=False)


class GlobalWebhookBody(ControlBody):
    url: StrictStr = Field(min_length=1)
    events: list[StrictStr]
    filters: dict[str, Any] = Field(default_factory=dict)
    enabled: StrictBool = True
    secret: StrictStr = Field(min_length=1, repr=False)
    previous_secret: StrictStr | None = Field(default=None, alias="previousSecret", min_length=1, repr=False)


IncomingType = Literal[
    "text", "image", "audio", "video", "document", "sticker", "location", "reaction", "contacts", "list"
]


class IncomingMessageBody(ControlBody):
    """A text (`text` required), or another kind of message: `text` is then its caption (image,
    video, document) and a reaction reacts to the last message the instance sent `from`."""

    from_: StrictStr = Field(alias="from", min_length=1)
    text: StrictStr | None = None
    type: IncomingType = "text"
    # The sender's WhatsApp profile name (whatsmeow `PushName`, Baileys `pushName`, Meta
    # `contacts[].profile.name`); null: WhatsApp sent none.
    push_name: StrictStr | None = Field(default="Cliente", alias="pushName")
    # How WhatsApp addressed the chat (Evolution only): by phone number with the LID beside it,
    # by LID with the number beside it, or by LID alone (the number hidden).
    addressing: Literal["pn", "lid", "lid_only"] = "pn"
    # How a file travels, as the server's setting has it (`incoming.DELIVERY_MODES`; null: the
    # server's default): wuzapi base64 | s3 | both, Evolution base64 (webhookBase64 on) | none,
    # the envelope base64 | url, the Cloud API id.
    media_delivery: StrictStr | None = Field(default=None, alias="mediaDelivery")
    # The file padded to this many bytes (a large photo); the size the message announces when it
    # is not the file's (a file over the kind's limit, never to be fetched).
    file_size: StrictInt | None = Field(default=None, alias="fileSize", ge=1, le=20 * 1024 * 1024)
    announced_size: StrictInt | None = Field(default=None, alias="announcedSize", ge=0)
    # The id of the message the customer quoted (a reaction's: the message it reacts to).
    quote: StrictStr | None = Field(default=None, min_length=1, max_length=256)
    # The file cannot be downloaded from the start (the Cloud API: its media URL answers 404).
    media_fails: StrictBool = Field(default=False, alias="mediaFails")


class IncomingCallBody(ControlBody):
    from_: StrictStr = Field(alias="from", min_length=1)
    video: StrictBool = False


class CallActionBody(ControlBody):
    """Optional details: `reason`/`endedBy` for end, `video` for video, `url` for a recording."""

    reason: StrictStr | None = None
    ended_by: StrictStr | None = Field(default=None, alias="endedBy")
    video: StrictBool | None = None
    url: StrictStr | None = None


class ReceiptBody(ControlBody):
    status: ReceiptStatus
    outside_window: bool = Field(
        default=False,
        alias="outsideWindow",
        description="A Cloud API number's `failed` status for the customer-service window (131047).",
    )


class IncomingChoiceBody(ControlBody):
    """The user taps a reply button or a list row of the last message the instance sent them."""

    from_: StrictStr = Field(alias="from", min_length=1)
    kind: Literal["button", "list"] = "list"
    option_id: StrictStr = Field(alias="optionId", min_length=1)
    title: StrictStr = Field(min_length=1)


class WindowBody(ControlBody):
    """When the user last wrote to the number (unix seconds; now by default), posting nothing: a
    message from before the run."""

    with_: StrictStr = Field(alias="with", min_length=1)
    at: float | None = None


class TemplateBody(ControlBody):
    """A Meta business account's template, added or changed (`status` APPROVED, PENDING,
    REJECTED, PAUSED, DISABLED; `components` as the Graph API lists them)."""

    name: StrictStr = Field(pattern=r"^[a-z0-9_]{1,512}$")
    language: StrictStr = Field(min_length=2, max_length=20)
    status: Literal["APPROVED", "PENDING", "REJECTED", "PAUSED", "DISABLED"] | None = None
    category: StrictStr | None = None
    components: list[dict[str, Any]] | None = None
    reason: StrictStr | None = None


class FaultBody(ControlBody):
    route: StrictStr
    mode: FaultMode
    times: StrictInt = Field(default=1, ge=1)
    method: Literal["GET", "POST", "PUT", "DELETE"] | None = None


SendErrorCode = Literal["463", "130429", "131056", "131049"]


class SendErrorBody(ControlBody):
    """What WhatsApp answers the instance's sends: `463` (the reach-out timelock, on the wuzapi
    and calls servers) or a Meta Cloud API error code (on `/meta`); null stops it. `times`: how
    many sends it refuses (absent: every send until stopped)."""

    code: SendErrorCode | None
    times: StrictInt | None = Field(default=None, ge=1)


class RedeliverBody(ControlBody):
    event_id: StrictStr = Field(alias="eventId")


class CapabilitiesPatch(ControlBody):
    calls: StrictBool | None = None
    calls_per_instance_limit: StrictBool | None = None
    calls_settings_webhook: StrictBool | None = None
    calls_video: StrictBool | None = None
    calls_max_concurrent: StrictInt | None = Field(default=None, ge=MIN_CALLS, le=MAX_CALLS)


class HoldDialsBody(ControlBody):
    held: StrictBool
