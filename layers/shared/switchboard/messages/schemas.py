"""Request and response bodies of the send API (camelCase on the wire)."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal, Self

from pydantic import Field, StringConstraints, field_validator, model_validator

from switchboard.core.model import Text
from switchboard.core.wire import Body, View
from switchboard.messages.domain import (
    MAX_TEXT_LENGTH,
    MAX_VALID_FOR_SECONDS,
    RECIPIENT_PATTERN,
    Message,
    MessageStatus,
    recipient_digits,
)
from switchboard.messages.service import MediaSource
from switchboard.providers.content import (
    ContactCard,
    Contacts,
    Content,
    Location,
    Media,
    MediaMessage,
    MediaRef,
    Reaction,
    kind_of,
)
from switchboard.providers.vcard import vcard_of

MAX_UPLOAD_BYTES = 100 * 1024 * 1024  # a document's limit, the largest kind's: checked per kind on use
IDEMPOTENCY_KEY_PATTERN = r"^[\x21-\x7e]{1,255}$"  # printable ASCII, no spaces
MAX_CAPTION_LENGTH = 1024  # WhatsApp's (and the Cloud API's) limit for a media caption
MAX_FILE_NAME_LENGTH = 240
MAX_CONTACTS = 10
MEDIA_ID_PATTERN = r"^med_[0-9a-z]{8,64}$"
MessageId = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=r"^[\x21-\x7e]+$")]
_JOINERS = {"\u200d", "\ufe0e", "\ufe0f", "\u20e3"}


def is_one_grapheme(value: str) -> bool:
    """Whether `value` is one user-perceived character (an emoji with its modifiers, variation
    selectors, zero-width-joined parts, a keycap, a flag's two regional indicators, a tag
    sequence): what WhatsApp shows as one reaction."""
    if not value or len(value) > 32:
        return False
    regional = [ch for ch in value if 0x1F1E6 <= ord(ch) <= 0x1F1FF]
    if regional:
        return len(regional) == 2 and len(value) == 2
    joined = True  # the first character starts the cluster
    for ch in value:
        point = ord(ch)
        extends = (
            ch in _JOINERS
            or unicodedata.category(ch) in {"Mn", "Me"}
            or 0x1F3FB <= point <= 0x1F3FF  # skin tones
            or 0xE0020 <= point <= 0xE007F  # tag sequences (subdivision flags)
        )
        if extends:
            joined = ch == "\u200d"
            continue
        if not joined:
            return False
        joined = False
    return True


class MediaBody(Body):
    media_id: Annotated[str, StringConstraints(pattern=MEDIA_ID_PATTERN)] | None = Field(
        default=None, description="The id `POST /api/media` answered, once the file is uploaded."
    )
    url: Annotated[str, StringConstraints(pattern=r"^https://[^\s]+$", max_length=2048)] | None = Field(
        default=None, description="An https URL switchboard fetches once (instead of `mediaId`)."
    )
    type: Literal["image", "video", "audio", "voice", "document", "sticker"]
    caption: Annotated[Text, StringConstraints(max_length=MAX_CAPTION_LENGTH)] | None = None
    file_name: Annotated[Text, StringConstraints(min_length=1, max_length=MAX_FILE_NAME_LENGTH)] | None = None

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.media_id is None) == (self.url is None):
            raise ValueError("media takes exactly one of mediaId and url")
        if self.caption is not None and self.type in ("audio", "voice", "sticker"):
            raise ValueError(f"a {self.type} has no caption")
        if self.file_name is not None and self.type != "document":
            raise ValueError("only a document has a fileName")
        return self


class LocationBody(Body):
    latitude: float = Field(ge=-90, le=90)
    longitude: float = Field(ge=-180, le=180)
    name: Annotated[Text, StringConstraints(max_length=1000)] | None = None
    address: Annotated[Text, StringConstraints(max_length=1000)] | None = None


class ContactBody(Body):
    name: Annotated[Text, StringConstraints(min_length=1, max_length=255)]
    phones: list[Annotated[str, StringConstraints(pattern=RECIPIENT_PATTERN)]] = Field(min_length=1, max_length=5)


class ReactionBody(Body):
    message_id: MessageId = Field(description="switchboard's id, or the provider's id, of the message reacted to.")
    emoji: str = Field(max_length=32, description='One emoji; "" removes the reaction.')

    @field_validator("emoji")
    @classmethod
    def _one_emoji(cls, value: str) -> str:
        if value and not is_one_grapheme(value):
            raise ValueError("emoji must be a single emoji, or empty to remove the reaction")
        return value


class SendMessage(Body):
    to: Annotated[str, StringConstraints(pattern=RECIPIENT_PATTERN)] = Field(
        description="Recipient in E.164, with or without the leading +."
    )
    text: Annotated[Text, StringConstraints(min_length=1, max_length=MAX_TEXT_LENGTH)] | None = None
    media: MediaBody | None = None
    location: LocationBody | None = None
    contacts: list[ContactBody] | None = Field(default=None, min_length=1, max_length=MAX_CONTACTS)
    reaction: ReactionBody | None = None
    reply_to: MessageId | None = Field(
        default=None,
        description=(
            "Quote this message: switchboard's id of a message sent to `to`, or the provider's id of "
            "a message in that conversation. The reply leaves through the conversation's number."
        ),
    )
    valid_for: int = Field(
        default=0,
        ge=0,
        le=MAX_VALID_FOR_SECONDS,
        description=(
            "Seconds the message may wait for a number when none of the key's numbers can take it "
            "(all disconnected, logged out or banned): it stays WAITING and is tried again through "
            "the normal selection until `expiresAt`, then ends FAILED `expired`. 0 (the default) "
            "fails it at once with `no_number_available`. At most 86400 (a day)."
        ),
    )

    @field_validator("to")
    @classmethod
    def _digits(cls, value: str) -> str:
        digits = recipient_digits(value)
        if digits is None:  # the pattern already refused it; kept for the type checker
            raise ValueError("to must be a phone number in E.164")
        return digits

    @field_validator("text")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("text must not be blank")
        return value

    def content(self) -> tuple[Content | None, MediaSource | None]:
        """The content the body sends (None: a plain `text`) and where a media message's file is."""
        return _content_of(self)

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        given = [name for name in CONTENT_FIELDS if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of {', '.join(CONTENT_FIELDS)} (got {', '.join(given) or 'none'})")
        if self.reaction is not None and self.reply_to is not None:
            raise ValueError("a reaction cannot quote a message (replyTo)")
        return self


CONTENT_FIELDS = ("text", "media", "location", "contacts", "reaction")


def _content_of(body: SendMessage) -> tuple[Content | None, MediaSource | None]:
    if body.media is not None:
        m = body.media
        media = Media(kind=m.type, caption=m.caption, file_name=m.file_name)
        return MediaMessage(media=media), MediaSource(media_id=m.media_id, url=m.url)
    if body.location is not None:
        loc = body.location
        return Location(latitude=loc.latitude, longitude=loc.longitude, name=loc.name, address=loc.address), None
    if body.contacts is not None:
        cards = [ContactCard(name=c.name, phones=[recipient_digits(p) or p for p in c.phones]) for c in body.contacts]
        return Contacts(cards=[card.model_copy(update={"vcard": vcard_of(card)}) for card in cards]), None
    if body.reaction is not None:
        return Reaction(target_id=body.reaction.message_id, emoji=body.reaction.emoji), None
    return None, None


class AcceptedView(View):
    id: str
    status: MessageStatus


class TraceEventView(View):
    stage: str
    at: datetime
    data: dict[str, Any]


class MediaView(View):
    """A media message's file as the console shows it; never its bytes, never its bucket key."""

    type: str = Field(description="image, video, audio, voice, document or sticker.")
    caption: str | None = None
    file_name: str | None = None
    mime_type: str | None = Field(default=None, description="As the file's bytes say.")
    size: int | None = Field(default=None, description="Bytes.")
    preview_url: str | None = Field(
        default=None,
        description="An image's thumbnail: a link to the stored file valid for a few minutes; null for other types.",
    )


class MessageView(View):
    id: str
    status: MessageStatus
    type: str = Field(
        description="text, image, video, audio, voice, document, sticker, location, contacts or reaction."
    )
    media: MediaView | None = Field(default=None, description="A media message's file; null for other types.")
    reply_to: str | None = None
    to: str
    source_number: str | None
    instance: str | None
    pinned_instance: str | None = Field(
        default=None,
        description="The one instance it may leave through: a test message sent from an instance's "
        "screen in the console. Null for a message sent here (the key's number or pool).",
    )
    attempts: int
    failure_reason: str | None
    last_error: str | None
    provider_code: str | None = Field(default=None, description="The provider's own code of its last refusal.")
    provider_message: str | None = Field(default=None, description="The provider's own message of its last refusal.")
    valid_for: int = Field(description="Seconds it may wait for a number (0: it fails at once).")
    expires_at: datetime | None = Field(
        description="When a message still unsent stops waiting and ends FAILED `expired`; null without a validity."
    )
    next_check_at: datetime | None = Field(description="While WAITING: when the numbers are tried again.")
    provider_message_id: str | None
    created_at: datetime
    sent_at: datetime | None
    delivered_at: datetime | None
    read_at: datetime | None
    updated_at: datetime
    trace: list[TraceEventView]

    @classmethod
    def of(cls, message: Message, preview: Callable[[MediaRef], str | None] | None = None) -> MessageView:
        """`preview(ref)`: a short-lived link to an image's stored file (None: no link)."""
        hidden = {"tenant", "text", "content", "body_hash", "pending", "lease_token", "wake_token", "wait_checks"}
        view = message.model_dump(exclude=hidden)
        view["type"] = "text" if message.content is None else kind_of(message.content)
        if message.status is not MessageStatus.WAITING:
            view["next_check_at"] = None
        if isinstance(message.content, MediaMessage):
            view["media"] = _media_view(message.content.media, preview)
        return cls.model_validate(view)


def _media_view(media: Media, preview: Callable[[MediaRef], str | None] | None) -> MediaView:
    stored = media.stored
    url = preview(stored) if preview is not None and stored is not None and media.kind == "image" else None
    return MediaView(
        type=media.kind,
        caption=media.caption,
        file_name=media.file_name,
        mime_type=stored.mime_type if stored is not None else media.mime_type,
        size=stored.size if stored is not None else media.size,
        preview_url=url,
    )


class ClientWebhookSecretView(View):
    api_key_id: str
    secret: str = Field(description="The Standard Webhooks signing secret. Shown only in this response.")


class CreateUpload(Body):
    mime_type: Annotated[str, StringConstraints(pattern=r"^[a-z]+/[a-z0-9.+-]+$", max_length=255)]
    size: int = Field(
        ge=1, le=MAX_UPLOAD_BYTES, description="The file's exact length in bytes (signed into the upload)."
    )
    file_name: Annotated[Text, StringConstraints(min_length=1, max_length=MAX_FILE_NAME_LENGTH)] | None = None
    sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-fA-F]{64}$")] | None = None


class UploadView(View):
    media_id: str
    upload_url: str = Field(description="PUT the file's bytes here, with exactly the `uploadHeaders`.")
    upload_headers: dict[str, str]
    expires_at: datetime
