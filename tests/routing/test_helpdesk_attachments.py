"""An agent's attachment fetched from the helpdesk (the fake Chatwoot serving ActiveStorage's
routes) into the media bucket, as the WhatsApp kind its bytes allow; the outbound rules of the
fetch (the helpdesk's own host first, redirects followed and checked, bounded); a reply's
receipts shown on the helpdesk message (Chatwoot's status update, on the fake)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

import httpx
import pytest

from devstack.simulator import files
from switchboard.catalog.events import ProviderEvent
from switchboard.media.uploads import MediaUploads
from switchboard.providers.content import Location, MediaMessage
from switchboard.routing.attachments import FetchRefused, HelpdeskAttachments, fetch_from_helpdesk
from switchboard.routing.chatwoot import ChatwootClient
from switchboard.routing.domain import DownstreamTarget, MessageLink
from switchboard.routing.outbox import Attachment, AttachmentUnavailable
from switchboard.routing.reply_status import ReplyStatuses
from tests.support.trickle import Trickle
from tools.support.builders import instance
from tools.support.downstream import FakeDownstream
from tools.support.fakes import FakeDownstreams

HELPDESK = "https://chatwoot.acme.example"
TARGET = DownstreamTarget(base_url=HELPDESK, account_id=1, inbox_id=7, api_token="t", source="tenant")


class FakeS3:
    """The two calls `MediaUploads.store_bytes` makes of S3."""

    def __init__(self) -> None:
        self.objects: dict[str, tuple[bytes, str]] = {}

    def put_object(self, *, Bucket: str, Key: str, Body: bytes, ContentType: str) -> None:
        self.objects[Key] = (Body, ContentType)


def helpdesk() -> tuple[FakeDownstream, HelpdeskAttachments, FakeS3]:
    fake, s3 = FakeDownstream(), FakeS3()
    fetch = fetch_from_helpdesk(transport=fake.transport())
    return fake, HelpdeskAttachments(MediaUploads(s3, "bucket"), fetch), s3


@pytest.mark.parametrize(
    ("file_type", "data", "declared", "name", "kind", "mime"),
    [
        ("image", files.png(), "image/png", "green.png", "image", "image/png"),
        ("image", b"GIF89a" + bytes(64), "image/gif", "anim.gif", "document", "image/gif"),
        ("audio", files.ogg_opus(frames=3), "audio/ogg", "recording.ogg", "voice", "audio/ogg"),
        ("audio", b"ID3\x04" + bytes(64), "audio/mpeg", "recording.mp3", "voice", "audio/mpeg"),
        ("file", files.pdf("pedido"), "application/pdf", "Pedido 1.pdf", "document", "application/pdf"),
        ("video", b"\x00\x00\x00\x18ftypmp42" + bytes(64), "video/mp4", "clip.mp4", "video", "video/mp4"),
    ],
)
def test_given_an_agents_file_then_it_is_stored_and_leaves_as_the_kind_its_bytes_allow(  # noqa: PLR0917 - one case's columns
    file_type: str, data: bytes, declared: str, name: str, kind: str, mime: str
) -> None:
    fake, attachments, s3 = helpdesk()
    url = fake.attach(HELPDESK, data, declared, name)

    content = attachments.content_of("acme", TARGET, Attachment(file_type=file_type, data_url=url, file_name=name))

    assert isinstance(content, MediaMessage)
    stored = content.media.stored
    assert (content.media.kind, stored and stored.mime_type) == (kind, mime)
    assert stored is not None and s3.objects[stored.key] == (data, mime) and stored.key.startswith("acme/outgoing/")
    assert content.media.file_name == (name if kind == "document" else None)


def test_given_an_image_over_the_image_limit_then_it_leaves_as_a_document() -> None:
    fake, attachments, _ = helpdesk()
    big = files.png() + bytes(5 * 1024 * 1024)
    url = fake.attach(HELPDESK, big, "image/png", "big.png")

    content = attachments.content_of("acme", TARGET, Attachment(file_type="image", data_url=url, file_name="big.png"))

    assert isinstance(content, MediaMessage) and content.media.kind == "document"


def test_given_a_location_then_it_is_one_with_its_title() -> None:
    _, attachments, _ = helpdesk()
    attachment = Attachment(file_type="location", latitude=-23.5, longitude=-46.6, title="Loja")

    assert attachments.content_of("acme", TARGET, attachment) == Location(latitude=-23.5, longitude=-46.6, name="Loja")


@pytest.mark.parametrize(
    ("attachment", "reason"),
    [
        (Attachment(file_type="contact"), "a contact attachment has no WhatsApp form"),
        (Attachment(file_type="unknown"), "an attachment of no type has no WhatsApp form"),
        (Attachment(file_type="image"), "the image attachment has no file URL"),
        (Attachment(file_type="file", data_url="https://elsewhere.example/x.pdf"), "its URL is not on the helpdesk"),
        (Attachment(file_type="file", data_url=f"{HELPDESK}/rails/active_storage/blobs/redirect/nope/x.pdf"), "404"),
        (Attachment(file_type="file", data_url=f"{HELPDESK}/x.exe"), "404"),
    ],
)
def test_given_an_attachment_that_cannot_leave_then_it_is_refused_with_a_reason(
    attachment: Attachment, reason: str
) -> None:
    _, attachments, _ = helpdesk()

    with pytest.raises(AttachmentUnavailable) as refused:
        attachments.content_of("acme", TARGET, attachment)

    assert reason in refused.value.message


def test_given_an_executable_then_it_is_not_stored() -> None:
    fake, attachments, s3 = helpdesk()
    url = fake.attach(HELPDESK, b"MZ" + bytes(64), "application/octet-stream", "setup.exe")

    with pytest.raises(AttachmentUnavailable):
        attachments.content_of("acme", TARGET, Attachment(file_type="file", data_url=url))
    assert s3.objects == {}


def test_given_a_file_whose_storage_is_gone_then_the_fetch_is_refused() -> None:
    fake, attachments, _ = helpdesk()
    url = fake.attach(HELPDESK, files.pdf(), "application/pdf", "p.pdf")
    fake.gone.add(url.split("/")[-2])

    with pytest.raises(AttachmentUnavailable, match="the helpdesk answered 404"):
        attachments.content_of("acme", TARGET, Attachment(file_type="file", data_url=url))


def redirecting(locations: list[str], final: bytes = b"%PDF-1.4") -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        hop = int(request.url.params.get("hop", "0"))
        if hop < len(locations):
            return httpx.Response(302, headers={"location": locations[hop]})
        return httpx.Response(200, content=final, headers={"content-type": "application/pdf"})

    return httpx.MockTransport(handler)


def test_given_redirects_to_the_storage_then_they_are_followed_to_the_file() -> None:
    fetch = fetch_from_helpdesk(transport=redirecting(["https://s3.example/b?hop=1", "/c?hop=2"]))

    assert fetch(f"{HELPDESK}/a?hop=0", HELPDESK, 1024) == (b"%PDF-1.4", "application/pdf")


@pytest.mark.parametrize(
    ("locations", "match"),
    [
        ([f"{HELPDESK}/a?hop={n + 1}" for n in range(4)], "more than 3 redirects"),
        (["https://169.254.169.254/latest/meta-data?hop=1"], "refused by the outbound URL policy"),
    ],
)
def test_given_redirects_the_policy_refuses_then_the_fetch_stops(locations: list[str], match: str) -> None:
    fetch = fetch_from_helpdesk(transport=redirecting(locations))

    with pytest.raises(FetchRefused, match=match):
        fetch(f"{HELPDESK}/a?hop=0", HELPDESK, 1024)


def test_given_a_file_over_the_bound_then_its_reading_stops() -> None:
    fetch = fetch_from_helpdesk(transport=redirecting([], final=bytes(2048)))

    with pytest.raises(FetchRefused, match="over 1024 bytes"):
        fetch(f"{HELPDESK}/a", HELPDESK, 1024)


def test_given_a_file_trickling_in_then_its_fetch_ends_at_the_deadline() -> None:
    trickle = Trickle()  # one second passes per byte read
    fetch = fetch_from_helpdesk(transport=trickle.transport, clock=trickle.clock)

    with pytest.raises(FetchRefused, match="did not hand it over"):
        fetch(f"{HELPDESK}/a", HELPDESK, 1024)
    assert len(trickle.sent) <= 20


# --- a reply's status in the helpdesk ------------------------------------------------------------


class Links:
    def __init__(self, *links: MessageLink) -> None:
        self._links = {link.provider_message_id: link for link in links}

    def link(self, link: MessageLink) -> None:
        self._links[link.provider_message_id] = link

    def by_provider_id(self, instance: str, provider_message_id: str) -> MessageLink | None:
        return self._links.get(provider_message_id)

    def by_downstream_id(self, instance: str, downstream_message_id: int) -> MessageLink | None:
        return None


INSTANCE = instance("acme-main", owner_tag="acme", state="CONNECTED")


def receipt(provider_message_id: str, status: str, **data: Any) -> ProviderEvent:
    return ProviderEvent(
        provider_id="prv_1",
        instance=INSTANCE,
        name="receipt",
        event_id=f"{provider_message_id}-{status}",
        data={"id": provider_message_id, "status": status, **data},
        received_at=datetime(2026, 11, 30, tzinfo=UTC),
    )


def agent_reply(fake: FakeDownstream) -> tuple[int, int]:
    conversation = fake.open_conversation(f"{HELPDESK}:443", "+5511988887777", inbox_id=7)
    return conversation, fake.agent_message(conversation, "Oi")


def statuses(fake: FakeDownstream, *links: MessageLink) -> ReplyStatuses:
    client = ChatwootClient(local_mode=False, transport=fake.transport())
    return ReplyStatuses(Links(*links), FakeDownstreams(TARGET), client)


def out(
    conversation: int, message: int, provider_message_id: str = "wamid-1", direction: Literal["in", "out"] = "out"
) -> MessageLink:
    return MessageLink(
        instance=INSTANCE.key,
        provider_message_id=provider_message_id,
        conversation_id=conversation,
        downstream_message_id=message,
        direction=direction,
    )


def test_given_receipts_of_a_reply_then_the_helpdesk_shows_delivered_then_read_never_back() -> None:
    fake = FakeDownstream()
    conversation, message = agent_reply(fake)
    effect = statuses(fake, out(conversation, message))

    effect(receipt("wamid-1", "delivered"))
    shown = fake.status_of(message)
    effect(receipt("wamid-1", "read"))
    effect(receipt("wamid-1", "delivered"))  # late

    assert (shown, fake.status_of(message)) == (("delivered", None), ("read", None))
    assert [r.method for r in fake.requests if r.path.endswith(f"/messages/{message}")] == ["PATCH"] * 3


def test_given_a_failed_receipt_then_the_helpdesk_shows_failed_with_the_providers_words() -> None:
    fake = FakeDownstream()
    conversation, message = agent_reply(fake)
    errors = [{"code": 131049, "title": "This message was not delivered to maintain healthy ecosystem engagement."}]

    statuses(fake, out(conversation, message))(receipt("wamid-1", "failed", errors=errors))

    assert fake.status_of(message) == (
        "failed",
        "WhatsApp reported the message as not delivered (131049 This message was not delivered to maintain healthy "
        "ecosystem engagement.)",
    )


@pytest.mark.parametrize("link", [None, "in"])
def test_given_a_receipt_of_a_message_that_is_no_reply_then_the_helpdesk_is_not_called(
    link: Literal["in"] | None,
) -> None:
    fake = FakeDownstream()
    conversation, message = agent_reply(fake)
    links = [] if link is None else [out(conversation, message, direction=link)]
    before = len(fake.requests)

    statuses(fake, *links)(receipt("wamid-1", "delivered"))

    assert len(fake.requests) == before and fake.status_of(message) == ("sent", None)


def test_given_an_unreachable_helpdesk_then_the_receipt_effect_does_not_raise() -> None:
    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("down")

    client = ChatwootClient(local_mode=False, transport=httpx.MockTransport(down))
    effect = ReplyStatuses(Links(out(1, 2)), FakeDownstreams(TARGET), client)

    effect(receipt("wamid-1", "read"))  # logged, not raised
