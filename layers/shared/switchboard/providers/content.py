"""What a WhatsApp message holds, whatever the provider kind that carried it: one shape for all.

Each kind's webhook mapping turns its own payload into a `Content` (and a `reply_to`, the
provider id of the message a customer quoted); everything after the ingest — the helpdesk
forward, the usage counts, the traces — reads only this shape.

Media never travels as bytes past the ingest. A `Media` says where its bytes are:
- `stored`: already in the media bucket (the claim check: key, digest, type, size), because
  the provider sent them inline (base64) and the ingest put them there;
- `source`: where they can be fetched (a Meta media id, a URL of the provider's own storage,
  or what the provider's download route needs), by the worker that forwards the message;
- neither: the provider said a file was sent and gave no way to get it (the agent is told).

The provider's announced `size`, `sha256` and `mime_type` are claims: the bytes fetched are
typed and measured again before anyone sees them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, TypeAdapter

from switchboard.core.model import Model

MediaKind = Literal["image", "video", "audio", "voice", "document", "sticker"]
ChoiceSource = Literal["button", "list", "flow", "template_button"]


class _Shape(Model):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MediaRef(_Shape):
    """Bytes in the media bucket: the claim check every later step carries instead of them."""

    key: str = Field(min_length=1, max_length=1024)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    mime_type: str = Field(min_length=1, max_length=255)  # as the bytes say, not the sender
    size: int = Field(ge=0)
    file_name: str | None = Field(default=None, max_length=255)


class MediaSource(_Shape):
    """Where a file not sent inline can be fetched from, as its provider said.

    - `meta_media_id`: `media_id` (Graph `GET /{version}/{media-id}`, then its short-lived URL);
    - `url`: a URL of the provider's own storage (wuzapi's or Evolution's S3/MinIO), fetched
      under the outbound URL policy;
    - `provider_download`: the provider's own download route, given `fields` (Evolution's
      `getBase64FromMediaMessage` message key; wuzapi's `/chat/download*` body: url, directPath,
      mediaKey, mimetype, fileEncSHA256, fileSHA256, fileLength)."""

    via: Literal["meta_media_id", "url", "provider_download"]
    media_id: str | None = Field(default=None, max_length=256)
    url: str | None = Field(default=None, max_length=4096)
    fields: dict[str, Any] = Field(default_factory=dict)


class Media(_Shape):
    kind: MediaKind
    mime_type: str | None = Field(default=None, max_length=255)  # as announced
    file_name: str | None = Field(default=None, max_length=255)
    caption: str | None = None
    size: int | None = Field(default=None, ge=0)  # as announced
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")  # as announced (hex)
    seconds: int | None = Field(default=None, ge=0)  # an audio's or video's length
    animated: bool = False  # a sticker's
    inline: bool = False  # its bytes came with the webhook (`InboundEvent.media_bytes`)
    stored: MediaRef | None = None
    source: MediaSource | None = None
    # Why the file cannot be had (a `media.ports.UnavailableReason`), when that was known at
    # the ingest (bytes refused by type or size): the agent gets a placeholder with it.
    unavailable: str | None = Field(default=None, max_length=64)


class Text(_Shape):
    type: Literal["text"] = "text"
    body: str


class MediaMessage(_Shape):
    type: Literal["media"] = "media"
    media: Media


class Location(_Shape):
    type: Literal["location"] = "location"
    latitude: float = Field(ge=-90, le=90)
    longitude: float = Field(ge=-180, le=180)
    name: str | None = None
    address: str | None = None
    url: str | None = None
    live: bool = False


class ContactCard(_Shape):
    name: str | None = None
    phones: list[str] = Field(default_factory=list)
    vcard: str | None = None  # the vCard as sent, when it was


class Contacts(_Shape):
    type: Literal["contacts"] = "contacts"
    cards: list[ContactCard] = Field(min_length=1)


class Choice(_Shape):
    """The option a customer tapped on a button, list, flow or template button."""

    type: Literal["choice"] = "choice"
    source: ChoiceSource
    id: str | None = None
    title: str | None = None
    response: dict[str, Any] | None = None  # a flow's answers (`nfm_reply.response_json`)


class Poll(_Shape):
    """A poll the customer created (a vote on someone else's poll is encrypted: not mapped)."""

    type: Literal["poll"] = "poll"
    question: str
    options: list[str] = Field(default_factory=list)
    multiple: bool = False


class Reaction(_Shape):
    type: Literal["reaction"] = "reaction"
    target_id: str  # the provider id of the message reacted to
    emoji: str  # "" removes the reaction


class TemplateParameter(_Shape):
    """One value of an approved template's placeholder, as Meta's `parameters[]` names them:
    `text` (a header, body or URL button variable; `name` for a named parameter), `payload` (a
    quick reply button's), `coupon_code` (a copy-code button's), or a header's file (`media`,
    its bytes in the media bucket once the send API took it)."""

    type: Literal["text", "payload", "coupon_code", "image", "video", "document"]
    text: str | None = None
    name: str | None = None
    payload: str | None = None
    coupon_code: str | None = None
    media: Media | None = None


class TemplateComponent(_Shape):
    """The parameters of one part of a template: its header, its body, or its button `index`
    (`sub_type` quick_reply, url or copy_code)."""

    type: Literal["header", "body", "button"]
    sub_type: Literal["quick_reply", "url", "copy_code"] | None = None
    index: int | None = Field(default=None, ge=0, le=9)
    parameters: list[TemplateParameter] = Field(default_factory=list)


class Template(_Shape):
    """An approved template of the number's WhatsApp Business Account, filled in: the only
    message a Cloud API number may send outside the customer-service window."""

    type: Literal["template"] = "template"
    name: str
    language: str
    components: list[TemplateComponent] = Field(default_factory=list)

    def header_media(self) -> Media | None:
        """The header's file, when the template's header is an image, a video or a document."""
        for component in self.components:
            if component.type == "header":
                return next((p.media for p in component.parameters if p.media is not None), None)
        return None

    def with_header_media(self, media: Media) -> Template:
        components = [
            component.model_copy(
                update={
                    "parameters": [
                        p.model_copy(update={"media": media}) if p.media is not None else p
                        for p in component.parameters
                    ]
                }
            )
            if component.type == "header"
            else component
            for component in self.components
        ]
        return self.model_copy(update={"components": components})


class Option(_Shape):
    """A reply button or a list row: what the customer taps, and the id that comes back."""

    id: str
    title: str
    description: str | None = None


class Section(_Shape):
    title: str | None = None
    rows: list[Option] = Field(min_length=1)


class Interactive(_Shape):
    """Reply buttons or a list. Sent natively where the kind's WhatsApp server can, else as a
    numbered text menu; the customer's tap (or typed number) comes back as a `Choice`."""

    type: Literal["interactive"] = "interactive"
    kind: Literal["buttons", "list"]
    body: str
    header: str | None = None
    # A file header instead of a text one (an image, a video or a document: reply buttons only,
    # as Meta allows); its bytes in the media bucket once the send API took it.
    header_media: Media | None = None
    footer: str | None = None
    buttons: list[Option] = Field(default_factory=list)
    button: str | None = None  # a list's: the label of the button that opens it
    sections: list[Section] = Field(default_factory=list)

    def options(self) -> list[Option]:
        """Every option in the order shown: the buttons, or the rows section after section."""
        if self.kind == "buttons":
            return list(self.buttons)
        return [row for section in self.sections for row in section.rows]

    def header_first(self) -> tuple[MediaMessage | None, Interactive]:
        """The file header as a media message of its own, and the message without it: what a kind
        whose WhatsApp server has no file headers sends, the file first (None: no file header)."""
        if self.header_media is None:
            return None, self
        return MediaMessage(media=self.header_media), self.model_copy(update={"header_media": None})


class Edit(_Shape):
    type: Literal["edit"] = "edit"
    target_id: str
    body: str


class Revoke(_Shape):
    type: Literal["revoke"] = "revoke"
    target_id: str


Content = Annotated[
    Text | MediaMessage | Location | Contacts | Choice | Poll | Reaction | Edit | Revoke | Template | Interactive,
    Field(discriminator="type"),
]
_CONTENT: TypeAdapter[Content] = TypeAdapter(Content)


def header_file(content: Content | None) -> Media | None:
    """The file a template's or an interactive message's header shows (None: none)."""
    if isinstance(content, Template):
        return content.header_media()
    if isinstance(content, Interactive):
        return content.header_media
    return None


def with_header_file(content: Template | Interactive, media: Media) -> Template | Interactive:
    """`content` with its header's file replaced by `media` (its stored form)."""
    if isinstance(content, Template):
        return content.with_header_media(media)
    return content.model_copy(update={"header_media": media})


def content_data(content: Content) -> dict[str, Any]:
    """`content` as the JSON object an event's `data["content"]` holds."""
    return content.model_dump(mode="json", exclude_defaults=False)


def content_from(data: dict[str, Any]) -> Content:
    """The content of a message event's data: its `content`, or (events stored before content
    existed) its `text`. Raises `ValueError` when neither is there."""
    raw = data.get("content")
    if isinstance(raw, dict):
        return _CONTENT.validate_python(raw)
    text = data.get("text")
    if isinstance(text, str) and text:
        return Text(body=text)
    raise ValueError("a message event holds no content")


def kind_of(content: Content) -> str:
    """The usage and trace label of a content: `text`, a media kind, or the content's type."""
    return content.media.kind if isinstance(content, MediaMessage) else content.type
