"""Request and response bodies of the send API (camelCase on the wire)."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal, Self

from pydantic import Field, StringConstraints, field_validator, model_validator
from pydantic.alias_generators import to_camel

from switchboard.core.model import Text
from switchboard.core.wire import Body, View
from switchboard.media import limits
from switchboard.messages.domain import (
    MAX_TEXT_LENGTH,
    MAX_VALID_FOR_SECONDS,
    RECIPIENT_PATTERN,
    Message,
    MessageStatus,
    recipient_digits,
)
from switchboard.messages.log_schemas import SENT_AS_DESCRIPTION, SentAsView
from switchboard.messages.service import MediaSource, NumberWindow
from switchboard.providers.content import (
    ContactCard,
    Contacts,
    Content,
    Interactive,
    Location,
    Media,
    MediaMessage,
    MediaRef,
    Option,
    Reaction,
    Section,
    Template,
    TemplateComponent,
    TemplateParameter,
    kind_of,
)
from switchboard.providers.vcard import vcard_of

MAX_UPLOAD_BYTES = limits.LARGEST  # a document's limit, the largest kind's: checked per kind on use
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


# --- templates ----------------------------------------------------------------------------------

# Meta's template names: lower-case letters, digits and underscores, at most 512 characters.
TEMPLATE_NAME_PATTERN = r"^[a-z0-9_]{1,512}$"
# A template's language and locale code (`en_US`, `pt_BR`, `es`, `zh_HK`).
TEMPLATE_LANGUAGE_PATTERN = r"^[a-z]{2,3}(_[A-Za-z0-9]{2,4})?$"
MAX_TEMPLATE_TEXT = 1024  # a body parameter's text (a header's is checked against its template)
MAX_TEMPLATE_PARAMETERS = 100
TemplateName = Annotated[str, StringConstraints(pattern=TEMPLATE_NAME_PATTERN)]
TemplateLanguage = Annotated[str, StringConstraints(pattern=TEMPLATE_LANGUAGE_PATTERN)]
_PARAMETER_FIELDS: dict[str, tuple[str, ...]] = {
    "text": ("text",),
    "payload": ("payload",),
    "coupon_code": ("coupon_code",),
    "image": ("media_id", "url"),
    "video": ("media_id", "url"),
    "document": ("media_id", "url"),
}


class TemplateParameterBody(Body):
    """One value of the template's placeholders: `text` (header, body, URL button), `payload`
    (a quick reply button), `couponCode` (a copy-code button), or a header's file (`image`,
    `video`, `document`: `mediaId` from `POST /api/media`, or an https `url` fetched once)."""

    type: Literal["text", "payload", "coupon_code", "image", "video", "document"]
    text: Annotated[Text, StringConstraints(min_length=1, max_length=MAX_TEMPLATE_TEXT)] | None = None
    parameter_name: Annotated[str, StringConstraints(pattern=r"^[a-z0-9_]{1,128}$")] | None = Field(
        default=None, description="The placeholder's name, for a template with named parameters."
    )
    payload: Annotated[str, StringConstraints(min_length=1, max_length=256)] | None = Field(
        default=None, description="What a quick reply button sends back when tapped."
    )
    coupon_code: Annotated[str, StringConstraints(min_length=1, max_length=20)] | None = None
    media_id: Annotated[str, StringConstraints(pattern=MEDIA_ID_PATTERN)] | None = None
    url: Annotated[str, StringConstraints(pattern=r"^https://[^\s]+$", max_length=2048)] | None = None
    file_name: Annotated[Text, StringConstraints(min_length=1, max_length=MAX_FILE_NAME_LENGTH)] | None = None

    @model_validator(mode="after")
    def _fields_of_its_type(self) -> Self:
        given = {
            name for name in ("text", "payload", "coupon_code", "media_id", "url") if getattr(self, name) is not None
        }
        expected = set(_PARAMETER_FIELDS[self.type])
        if self.type in ("image", "video", "document"):
            if len(given) != 1 or not given <= expected:
                raise ValueError(f"a {self.type} parameter takes exactly one of mediaId and url")
        elif given != expected:
            wanted = " and ".join(to_camel(name) for name in sorted(expected))
            raise ValueError(f"a {self.type} parameter takes {wanted} only")
        if self.file_name is not None and self.type != "document":
            raise ValueError("only a document parameter has a fileName")
        if self.parameter_name is not None and self.type != "text":
            raise ValueError("only a text parameter has a parameterName")
        return self


class TemplateComponentBody(Body):
    type: Literal["header", "body", "button"]
    sub_type: Literal["quick_reply", "url", "copy_code"] | None = Field(
        default=None, description="A button's: quick_reply, url or copy_code."
    )
    index: int | None = Field(default=None, ge=0, le=9, description="A button's position in the template, from 0.")
    parameters: list[TemplateParameterBody] = Field(default_factory=list, max_length=MAX_TEMPLATE_PARAMETERS)

    @model_validator(mode="after")
    def _button_fields(self) -> Self:
        if self.type == "button":
            if self.sub_type is None or self.index is None:
                raise ValueError("a button component takes subType and index")
        elif self.sub_type is not None or self.index is not None:
            raise ValueError(f"a {self.type} component has no subType or index")
        return self


class TemplateBody(Body):
    """An approved template of the WhatsApp Business Account of the key's Cloud API numbers, by
    `name` and `language`, with the values of its placeholders (`GET /api/numbers/{id}/templates`
    lists them). Checked against the template's definition before the message is queued."""

    name: TemplateName
    language: TemplateLanguage = Field(description="The template's language and locale code, as listed (`pt_BR`).")
    components: list[TemplateComponentBody] = Field(default_factory=list, max_length=12)

    @model_validator(mode="after")
    def _one_of_each(self) -> Self:
        for part in ("header", "body"):
            if sum(component.type == part for component in self.components) > 1:
                raise ValueError(f"a template has at most one {part} component")
        indexes = [component.index for component in self.components if component.type == "button"]
        if len(indexes) != len(set(indexes)):
            raise ValueError("each button index may be given once")
        for component in self.components:
            media = [p for p in component.parameters if p.type in ("image", "video", "document")]
            if media and (component.type != "header" or len(component.parameters) != 1):
                raise ValueError("a file parameter is the one parameter of a header component")
        return self

    def template(self) -> tuple[Template, MediaSource | None]:
        """The content, and where its header's file is (None: no file)."""
        source: MediaSource | None = None
        components: list[TemplateComponent] = []
        for component in self.components:
            parameters: list[TemplateParameter] = []
            for p in component.parameters:
                media = None
                if p.type in ("image", "video", "document"):
                    media = Media(kind=p.type, file_name=p.file_name)
                    source = MediaSource(media_id=p.media_id, url=p.url)
                parameters.append(
                    TemplateParameter(
                        type=p.type,
                        text=p.text,
                        name=p.parameter_name,
                        payload=p.payload,
                        coupon_code=p.coupon_code,
                        media=media,
                    )
                )
            components.append(
                TemplateComponent(
                    type=component.type, sub_type=component.sub_type, index=component.index, parameters=parameters
                )
            )
        return Template(name=self.name, language=self.language, components=components), source


# --- interactive messages ------------------------------------------------------------------------

# Meta's limits for interactive messages (reply buttons, lists).
MAX_INTERACTIVE_BODY = 1024
MAX_INTERACTIVE_HEADER = 60
MAX_INTERACTIVE_FOOTER = 60
MAX_REPLY_BUTTONS = 3
MAX_BUTTON_TITLE = 20
MAX_BUTTON_ID = 256
MAX_LIST_ROWS = 10
MAX_LIST_SECTIONS = 10
MAX_ROW_TITLE = 24
MAX_ROW_ID = 200
MAX_ROW_DESCRIPTION = 72
MAX_SECTION_TITLE = 24
MAX_LIST_BUTTON = 20


def _line(limit: int) -> Any:
    """A one-line label of at most `limit` characters (trimmed, never blank)."""
    return StringConstraints(strip_whitespace=True, min_length=1, max_length=limit)


HeaderLine = Annotated[Text, _line(MAX_INTERACTIVE_HEADER)]
FooterLine = Annotated[Text, _line(MAX_INTERACTIVE_FOOTER)]
ButtonTitle = Annotated[Text, _line(MAX_BUTTON_TITLE)]
RowTitle = Annotated[Text, _line(MAX_ROW_TITLE)]
RowDescription = Annotated[Text, _line(MAX_ROW_DESCRIPTION)]
SectionTitle = Annotated[Text, _line(MAX_SECTION_TITLE)]
ListButton = Annotated[Text, _line(MAX_LIST_BUTTON)]


class ReplyButtonBody(Body):
    id: Annotated[str, StringConstraints(min_length=1, max_length=MAX_BUTTON_ID, pattern=r"^[^\s].*$")]
    title: ButtonTitle


class RowBody(Body):
    id: Annotated[str, StringConstraints(min_length=1, max_length=MAX_ROW_ID, pattern=r"^[^\s].*$")]
    title: RowTitle
    description: RowDescription | None = None


class SectionBody(Body):
    title: SectionTitle | None = None
    rows: list[RowBody] = Field(min_length=1, max_length=MAX_LIST_ROWS)


class InteractiveHeaderBody(Body):
    """A file header of reply buttons: an image, a video or a document, by `mediaId` (from
    `POST /api/media`) or an https `url` fetched once, checked as a media message's file is."""

    type: Literal["image", "video", "document"]
    media_id: Annotated[str, StringConstraints(pattern=MEDIA_ID_PATTERN)] | None = None
    url: Annotated[str, StringConstraints(pattern=r"^https://[^\s]+$", max_length=2048)] | None = None
    file_name: Annotated[Text, StringConstraints(min_length=1, max_length=MAX_FILE_NAME_LENGTH)] | None = None

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.media_id is None) == (self.url is None):
            raise ValueError("a file header takes exactly one of mediaId and url")
        if self.file_name is not None and self.type != "document":
            raise ValueError("only a document header has a fileName")
        return self


class InteractiveBody(Body):
    """Reply buttons (`type: buttons`, 1 to 3 `buttons`) or a list (`type: list`, a `button`
    label and 1 to 10 `sections` with 10 rows in all), within Meta's limits: body 1,024
    characters, header and footer 60, a button's title 20 (id 256), a row's title 24 (id 200,
    description 72), a section's title 24 (required with more than one section). Reply buttons
    may have a file header instead (an image, a video or a document); a list's is text only."""

    type: Literal["buttons", "list"]
    body: Annotated[Text, StringConstraints(min_length=1, max_length=MAX_INTERACTIVE_BODY)]
    header: HeaderLine | InteractiveHeaderBody | None = Field(
        default=None,
        description=(
            "A text of at most 60 characters, or (reply buttons) a file: "
            "`{type: image|video|document, mediaId | url, fileName?}`."
        ),
    )
    footer: FooterLine | None = None
    buttons: list[ReplyButtonBody] | None = Field(default=None, min_length=1, max_length=MAX_REPLY_BUTTONS)
    button: ListButton | None = Field(default=None, description="A list's: the label of the button that opens it.")
    sections: list[SectionBody] | None = Field(default=None, min_length=1, max_length=MAX_LIST_SECTIONS)

    @model_validator(mode="after")
    def _its_parts(self) -> Self:
        if self.type == "buttons":
            if self.buttons is None or self.sections is not None or self.button is not None:
                raise ValueError("reply buttons take buttons, and no button or sections")
            ids = [button.id for button in self.buttons]
            titles = [button.title for button in self.buttons]
        else:
            if self.sections is None or self.button is None or self.buttons is not None:
                raise ValueError("a list takes button and sections, and no buttons")
            rows = [row for section in self.sections for row in section.rows]
            if len(rows) > MAX_LIST_ROWS:
                raise ValueError(f"a list holds at most {MAX_LIST_ROWS} rows in all its sections")
            if len(self.sections) > 1 and any(section.title is None for section in self.sections):
                raise ValueError("each section of a list with more than one takes a title")
            ids = [row.id for row in rows]
            titles = []
        if len(ids) != len(set(ids)):
            raise ValueError("each option's id must be unique")
        if len(titles) != len(set(titles)):
            raise ValueError("each button's title must be unique")
        if not self.body.strip():
            raise ValueError("body must not be blank")
        if isinstance(self.header, InteractiveHeaderBody) and self.type == "list":
            raise ValueError("a list's header is text only: a file header goes with reply buttons")
        return self

    def interactive(self) -> tuple[Interactive, MediaSource | None]:
        """The content, and where its file header is (None: none)."""
        buttons = [Option(id=b.id, title=b.title) for b in self.buttons or []]
        sections = [
            Section(title=s.title, rows=[Option(id=r.id, title=r.title, description=r.description) for r in s.rows])
            for s in self.sections or []
        ]
        text, media, source = self.header, None, None
        if isinstance(self.header, InteractiveHeaderBody):
            media = Media(kind=self.header.type, file_name=self.header.file_name)
            text, source = None, MediaSource(media_id=self.header.media_id, url=self.header.url)
        content = Interactive(
            kind=self.type,
            body=self.body,
            header=text if isinstance(text, str) else None,
            header_media=media,
            footer=self.footer,
            buttons=buttons,
            button=self.button,
            sections=sections,
        )
        return content, source


class SendMessage(Body):
    to: Annotated[str, StringConstraints(pattern=RECIPIENT_PATTERN)] = Field(
        description="Recipient in E.164, with or without the leading +."
    )
    text: Annotated[Text, StringConstraints(min_length=1, max_length=MAX_TEXT_LENGTH)] | None = None
    media: MediaBody | None = None
    location: LocationBody | None = None
    contacts: list[ContactBody] | None = Field(default=None, min_length=1, max_length=MAX_CONTACTS)
    reaction: ReactionBody | None = None
    template: TemplateBody | None = None
    interactive: InteractiveBody | None = None
    fallback_template: TemplateBody | None = Field(
        default=None,
        description=(
            "Sent instead when no number can send this free-form message: a Cloud API number outside "
            "the contact's 24-hour customer-service window (and no other number of the key could take "
            "it). Traced as such. Checked like `template` before the message is queued."
        ),
    )
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
        if self.fallback_template is not None and (self.template is not None or self.reaction is not None):
            raise ValueError("fallbackTemplate replaces free-form content: not a template or a reaction")
        return self

    def fallback(self) -> tuple[Template | None, MediaSource | None]:
        """The fallback template, and where its header's file is."""
        if self.fallback_template is None:
            return None, None
        return self.fallback_template.template()


CONTENT_FIELDS = ("text", "media", "location", "contacts", "reaction", "template", "interactive")


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
    if body.template is not None:
        return body.template.template()
    if body.interactive is not None:
        return body.interactive.interactive()
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
        description=(
            "text, image, video, audio, voice, document, sticker, location, contacts, reaction, template "
            "or interactive."
        )
    )
    media: MediaView | None = Field(default=None, description="A media message's file; null for other types.")
    sent_as: SentAsView | None = Field(default=None, description=SENT_AS_DESCRIPTION)
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
        hidden = {
            "tenant",
            "text",
            "content",
            "body_hash",
            "pending",
            "lease_token",
            "wake_token",
            "wait_checks",
            "window_refused_at",
        }
        view = message.model_dump(exclude=hidden)
        view["type"] = "text" if message.content is None else kind_of(message.content)
        if message.status is not MessageStatus.WAITING:
            view["next_check_at"] = None
        if isinstance(message.content, MediaMessage):
            view["media"] = _media_view(message.content.media, preview)
        return cls.model_validate(view)


class NumberWindowView(View):
    number_id: str
    number: str
    display_name: str
    service_window: bool = Field(
        description="Whether the number sends free-form content only within the window (a Cloud API number)."
    )
    last_heard_at: datetime | None = Field(description="When the contact last wrote to this number.")
    window_open_until: datetime | None = Field(description="Until when the number may answer freely.")
    open: bool = Field(description="Whether the window is open now.")


class ContactWindowView(View):
    contact: str
    checked_at: datetime
    numbers: list[NumberWindowView]

    @classmethod
    def of(cls, contact: str, windows: list[NumberWindow], now: datetime) -> ContactWindowView:
        return cls(
            contact=contact,
            checked_at=now,
            numbers=[
                NumberWindowView(
                    number_id=w.number.id,
                    number=w.number.number,
                    display_name=w.number.display_name,
                    service_window=w.service_window,
                    last_heard_at=w.window.last_heard_at,
                    window_open_until=w.window.open_until,
                    open=w.window.is_open(now),
                )
                for w in windows
            ],
        )


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
