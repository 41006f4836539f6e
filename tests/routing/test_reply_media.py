"""An agent's reply with attachments, a quote or a deletion, through the outbox with in-memory
fakes: the parts and their order, what cannot leave told to the agent, the message map written
as each part leaves, a file gone when its turn comes, revocations once, and Chatwoot's webhook
bodies (contract fixtures) read into replies."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from devstack.simulator import files
from switchboard.catalog.domain import Number
from switchboard.core.errors import (
    ProviderRejected,
    ProviderTimeout,
    ProviderUnavailable,
    UnknownReference,
    UnsupportedByProvider,
)
from switchboard.providers.base import Quote
from switchboard.providers.content import Content, Location, Media, MediaKind, MediaMessage, MediaRef, Text
from switchboard.providers.kinds import ProviderKind
from switchboard.routing.domain import DownstreamTarget, MessageLink
from switchboard.routing.outbox import (
    Attachment,
    AttachmentUnavailable,
    OutboxService,
    Reply,
    Revocation,
    reply_parts,
)
from switchboard.routing.reply_schemas import OutgoingWebhook, attachment_file_name
from switchboard.usage.service import UsageRecorder
from tools.support.builders import instance
from tools.support.fakes import (
    FakeAudit,
    FakeCatalog,
    FakeDownstreamClient,
    FakeDownstreams,
    FakeOutboxStore,
    FakeProvider,
    FakeRevokingProvider,
    FakeTargets,
    FakeUsageStore,
)

CHATWOOT = Path(__file__).resolve().parents[1] / "contracts" / "chatwoot"
NOW = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
INSTANCE = instance("acme-main", owner_tag="acme", state="CONNECTED")
TARGET = DownstreamTarget(base_url="https://acme.example", account_id=1, inbox_id=2, api_token="t", source="tenant")
PHONE = "5511988887777"


def agent_reply(message_id: str, text: str = "", **fields: Any) -> Reply:
    """An agent's reply to PHONE in conversation 55."""
    return Reply(message_id=message_id, phone=PHONE, text=text, conversation_id=55, **fields)


def ref(data: bytes, mime: str) -> MediaRef:
    digest = hashlib.sha256(data).hexdigest()
    return MediaRef(key=f"acme/outgoing/url_{digest}", sha256=digest, mime_type=mime, size=len(data))


def media(kind: MediaKind, data: bytes, mime: str, file_name: str | None = None) -> MediaMessage:
    stored = ref(data, mime)
    return MediaMessage(media=Media(kind=kind, mime_type=mime, file_name=file_name, stored=stored))


PNG, OGG, PDF = files.png(), files.ogg_opus(frames=3), files.pdf("pedido")


@dataclass
class FakeAttachments:
    """`AttachmentStore`: each attachment's content by its URL; `refused[url]` its reason."""

    contents: dict[str, Any] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)
    fetched: list[str] = field(default_factory=list)

    def content_of(self, tenant: str, downstream: DownstreamTarget, attachment: Attachment) -> Any:
        if attachment.file_type == "unknown":
            raise AttachmentUnavailable("an attachment of no type has no WhatsApp form")
        if attachment.file_type == "location":
            return Location(latitude=attachment.latitude or 0, longitude=attachment.longitude or 0)
        url = attachment.data_url or ""
        self.fetched.append(url)
        if url in self.refused:
            raise AttachmentUnavailable(self.refused[url])
        return self.contents[url]


@dataclass
class FakeFiles:
    """The media bucket's reader: the bytes of each key; `gone` keys are expired."""

    data: dict[str, bytes] = field(default_factory=dict)
    gone: set[str] = field(default_factory=set)

    def read(self, stored: MediaRef) -> bytes:
        if stored.key in self.gone:
            raise UnknownReference("gone", code="expired")
        return self.data[stored.key]


@dataclass
class FakeLinks:
    links: list[MessageLink] = field(default_factory=list)

    def link(self, link: MessageLink) -> None:
        self.links.append(link)

    def by_provider_id(self, instance: str, provider_message_id: str) -> MessageLink | None:
        return next((x for x in self.links if x.provider_message_id == provider_message_id), None)

    def by_downstream_id(self, instance: str, downstream_message_id: int) -> MessageLink | None:
        return next((x for x in self.links if x.downstream_message_id == downstream_message_id), None)


@dataclass
class FakeStatuses:
    updates: list[tuple[int, int, str, str | None]] = field(default_factory=list)

    def update_status(
        self,
        target: DownstreamTarget,
        conversation_id: int,
        message_id: int,
        status: str,
        external_error: str | None = None,
    ) -> None:
        self.updates.append((conversation_id, message_id, status, external_error))


@dataclass
class Numbers:
    def get_number(self, tenant: str, number_id: str) -> Number:
        return Number(tenant=tenant, id=number_id, number="5511911112222", display_name="Acme")


@dataclass
class World:
    catalog: FakeCatalog
    outbox: OutboxService
    provider: FakeProvider
    store: FakeOutboxStore
    notes: FakeDownstreamClient
    attachments: FakeAttachments
    files: FakeFiles
    links: FakeLinks
    statuses: FakeStatuses


def world(
    provider: FakeProvider | None = None,
    *,
    kind: ProviderKind = "wuzapi",
    connected: bool = True,
    clock: datetime = NOW,
) -> World:
    provider = provider or FakeProvider()
    store, notes, links, statuses = FakeOutboxStore(), FakeDownstreamClient(), FakeLinks(), FakeStatuses()
    attachments, bucket = FakeAttachments(), FakeFiles()
    for data, mime in ((PNG, "image/png"), (OGG, "audio/ogg"), (PDF, "application/pdf")):
        bucket.data[ref(data, mime).key] = data
    state = INSTANCE.model_copy(update={"state": "CONNECTED" if connected else "DISCONNECTED"})
    catalog = FakeCatalog([state])
    outbox = OutboxService(
        store,
        catalog,
        FakeTargets(provider, kind=kind),
        usage=UsageRecorder(FakeUsageStore()),
        downstreams=FakeDownstreams(TARGET),
        downstream_client=notes,
        audit=FakeAudit(),
        clock=lambda: clock,
        attachments=attachments,
        files=bucket,
        links=links,
        numbers=Numbers(),
        statuses=statuses,
    )
    return World(catalog, outbox, provider, store, notes, attachments, bucket, links, statuses)


def image_attachment(url: str, name: str = "photo.png") -> Attachment:
    return Attachment(file_type="image", data_url=url, file_name=name)


def sent_kinds(provider: FakeProvider) -> list[str]:
    kinds = []
    for _, content, _, _ in provider.parts:
        if isinstance(content, str):
            kinds.append("text")
        elif isinstance(content, MediaMessage):
            kinds.append(content.media.kind)
        else:
            kinds.append(content.type)
    return kinds


# --- the parts of a reply ----------------------------------------------------------------------


def test_given_attachments_and_a_short_text_then_the_first_carries_it_as_caption_and_the_rest_follow() -> None:
    first, second = media("image", PNG, "image/png"), media("image", PNG, "image/png")

    parts = reply_parts("Veja as fotos", [first, second], 4096)

    assert [type(part) for part in parts] == [MediaMessage, MediaMessage]
    assert isinstance(parts[0], MediaMessage) and parts[0].media.caption == "Veja as fotos"
    assert isinstance(parts[1], MediaMessage) and parts[1].media.caption is None


@pytest.mark.parametrize(
    ("items", "text"),
    [
        ([media("voice", OGG, "audio/ogg")], "ouça"),  # a voice note takes no caption
        ([Location(latitude=1.5, longitude=2.5)], "aqui"),
        ([media("image", PNG, "image/png")], "x" * 1025),  # longer than a caption
    ],
)
def test_given_a_first_attachment_that_takes_no_caption_then_the_text_leaves_first(items: list[Any], text: str) -> None:
    parts = reply_parts(text, items, 4096)

    assert isinstance(parts[0], Text) and parts[0].body == text
    assert parts[1:] == items


def test_given_attachments_only_then_they_are_the_parts() -> None:
    items: list[Content] = [media("document", PDF, "application/pdf", "a.pdf"), Location(latitude=1.5, longitude=2.5)]

    assert reply_parts("  ", items, 4096) == items


# --- sending ------------------------------------------------------------------------------------


def test_given_two_images_and_a_caption_then_they_leave_in_order_the_first_captioned_and_each_is_linked() -> None:
    w = world()
    w.attachments.contents = {"u1": media("image", PNG, "image/png"), "u2": media("image", PNG, "image/png")}
    reply = agent_reply("9010", "As duas cores", attachments=[image_attachment("u1"), image_attachment("u2")])

    outcome = w.outbox.submit(INSTANCE, reply)

    assert outcome.status == "SENT"
    assert sent_kinds(w.provider) == ["image", "image"]
    (_, first, _, file), (_, second, _, _) = w.provider.parts
    assert first.media.caption == "As duas cores" and second.media.caption is None
    assert file is not None and file.data == PNG and file.mime_type == "image/png"
    assert [(link.downstream_message_id, link.direction) for link in w.links.links] == [(9010, "out"), (9010, "out")]
    assert len(outcome.provider_message_ids) == 2
    assert outcome.provider_message_ids == [link.provider_message_id for link in w.links.links]


def test_given_an_attachment_that_cannot_be_fetched_then_the_agent_is_told_and_the_rest_leaves() -> None:
    w = world()
    w.attachments.contents = {"u2": media("image", PNG, "image/png")}
    w.attachments.refused = {"u1": "the helpdesk answered 404"}
    reply = agent_reply("9020", "Fotos", attachments=[image_attachment("u1", "a.png"), image_attachment("u2", "b.png")])

    outcome = w.outbox.submit(INSTANCE, reply)

    assert outcome.status == "SENT" and sent_kinds(w.provider) == ["image"]
    [(conversation, note)] = w.notes.notes
    assert conversation == 55
    assert note == (
        "Attachment 1 of 2 (a.png) of message 9020 was not sent through acme-main: the helpdesk answered 404."
    )


def test_given_the_only_attachment_cannot_be_fetched_then_the_reply_fails_marked_failed_and_told_once() -> None:
    w = world()
    w.attachments.refused = {"u1": "the helpdesk answered 404"}
    reply = agent_reply("9021", "", attachments=[image_attachment("u1")])

    outcome = w.outbox.submit(INSTANCE, reply)

    assert outcome.status == "FAILED" and w.provider.parts == []
    assert len(w.notes.notes) == 1 and "The attachment (photo.png) of message 9021" in w.notes.notes[0][1]
    assert w.statuses.updates == [(55, 9021, "failed", "none of its attachments could be sent")]


def test_given_a_redelivered_webhook_then_its_attachments_are_fetched_once_and_sent_once() -> None:
    w = world()
    w.attachments.contents = {"u1": media("image", PNG, "image/png")}
    reply = agent_reply("9022", "", attachments=[image_attachment("u1")])

    w.outbox.submit(INSTANCE, reply)
    again = w.outbox.submit(INSTANCE, reply)

    assert (again.status, w.attachments.fetched, sent_kinds(w.provider)) == ("SENT", ["u1"], ["image"])


def test_given_a_disconnected_instance_then_the_reply_waits_as_references_and_leaves_on_reconnect() -> None:
    w = world(connected=False)
    w.attachments.contents = {"u1": media("document", PDF, "application/pdf", "pedido.pdf")}
    reply = agent_reply("9023", "", attachments=[Attachment(file_type="file", data_url="u1")])

    assert w.outbox.submit(INSTANCE, reply).status == "PENDING"
    [entry] = w.store.entries
    assert entry.media_valid_until == NOW + timedelta(days=14)
    stored = entry.items[0]
    assert (
        isinstance(stored, MediaMessage) and stored.media.stored is not None and "data" not in entry.model_dump_json()
    )
    assert w.provider.parts == []

    w.catalog.instances[INSTANCE.key] = INSTANCE  # the instance reconnected
    drained = w.outbox.drain(INSTANCE.key)

    [(_, document, _, file)] = w.provider.parts
    assert drained.sent == 1 and isinstance(document, MediaMessage) and document.media.file_name == "pedido.pdf"
    assert file is not None and file.data == PDF and w.store.outcomes["9023"].status == "SENT"


def test_given_a_waiting_attachment_whose_file_expired_then_the_reply_fails_and_the_agent_is_told() -> None:
    w = world(clock=NOW)
    doc = media("document", PDF, "application/pdf", "pedido.pdf")
    w.files.gone.add(doc.media.stored.key)  # type: ignore[union-attr]
    w.attachments.contents = {"u1": doc}
    reply = agent_reply("9024", "Seu pedido", attachments=[Attachment(file_type="file", data_url="u1")])

    outcome = w.outbox.submit(INSTANCE, reply)

    assert outcome.status == "FAILED" and w.provider.parts == []
    assert "could not be read (expired)" in (outcome.reason or "")
    assert "Message 9024 was not delivered through acme-main" in w.notes.notes[0][1]


def test_given_a_part_the_kind_cannot_send_then_the_reply_fails_saying_so_after_the_parts_before_it() -> None:
    provider = FakeProvider()
    provider.failures["location"] = [UnsupportedByProvider("wuzapi refuses a latitude or longitude of exactly 0")]
    w = world(provider)
    w.attachments.contents = {"u1": media("image", PNG, "image/png")}
    reply = agent_reply(
        "9025", "", attachments=[image_attachment("u1"), Attachment(file_type="location", latitude=0.0, longitude=1.0)]
    )

    outcome = w.outbox.submit(INSTANCE, reply)

    assert outcome.status == "FAILED" and sent_kinds(w.provider) == ["image"]
    assert outcome.reason == (
        "part 2 of 2 not sent: wuzapi cannot send it (wuzapi refuses a latitude or longitude of exactly 0);"
        " the 1 before it were sent"
    )


def test_given_an_unavailable_provider_mid_reply_then_it_resumes_from_the_part_that_did_not_leave() -> None:
    provider = FakeProvider()
    provider.failures["document"] = [ProviderUnavailable("down")]
    w = world(provider)
    w.attachments.contents = {
        "u1": media("image", PNG, "image/png"),
        "u2": media("document", PDF, "application/pdf", "p.pdf"),
    }
    reply = agent_reply("9026", "Oi", attachments=[image_attachment("u1"), Attachment(file_type="file", data_url="u2")])

    assert w.outbox.submit(INSTANCE, reply).status == "PENDING"
    w.outbox.drain(INSTANCE.key)

    assert sent_kinds(w.provider) == ["image", "document"]
    assert w.store.outcomes["9026"].status == "SENT" and len(w.store.outcomes["9026"].provider_message_ids) == 2


MP3 = b"ID3\x04" + bytes(64)


@pytest.mark.parametrize(
    ("kind", "data", "mime", "leaves_as"),
    [
        ("wuzapi", OGG, "audio/ogg", "voice"),
        ("meta", OGG, "audio/ogg", "voice"),
        ("evolution", MP3, "audio/mpeg", "voice"),  # Evolution converts it to Opus itself
        ("wuzapi", MP3, "audio/mpeg", "audio"),  # WhatsApp plays only OGG/Opus as a voice note
        ("meta", MP3, "audio/mpeg", "audio"),
    ],
)
def test_given_an_agents_recording_then_it_is_a_voice_note_where_the_kind_can_send_it_as_one(
    kind: ProviderKind, data: bytes, mime: str, leaves_as: str
) -> None:
    w = world(kind=kind)
    w.files.data[ref(data, mime).key] = data
    w.attachments.contents = {"rec": media("voice", data, mime)}
    reply = agent_reply("9027", "", attachments=[Attachment(file_type="audio", data_url="rec")])

    assert w.outbox.submit(INSTANCE, reply).status == "SENT"
    assert sent_kinds(w.provider) == [leaves_as] and w.notes.notes == []


@pytest.mark.parametrize(
    ("kind", "status", "sends"),
    [
        ("wuzapi", "SENT", 2),  # resent with the same id: WhatsApp shows one message
        ("evolution", "FAILED", 1),  # a resend would be a second copy: never repeated, the agent told
        ("meta", "FAILED", 1),
    ],
)
def test_given_a_lost_answer_to_an_attachment_then_it_is_never_sent_twice_as_two_messages(
    kind: ProviderKind, status: str, sends: int
) -> None:
    provider = FakeProvider()
    provider.failures["image"] = [ProviderTimeout("lost")]
    w = world(provider, kind=kind)
    w.attachments.contents = {"u1": media("image", PNG, "image/png")}
    reply = agent_reply("9028", "", attachments=[image_attachment("u1")])
    keys: list[str] = []
    original = provider.send_content

    def recording(*args: Any, **kwargs: Any) -> Any:
        keys.append(args[3])
        return original(*args, **kwargs)

    provider.send_content = recording  # type: ignore[method-assign]

    w.outbox.submit(INSTANCE, reply)
    w.outbox.drain(INSTANCE.key)

    assert w.store.outcomes["9028"].status == status and len(keys) == sends and len(set(keys)) == 1
    assert len(w.provider.parts) == (1 if status == "SENT" else 0)
    assert [("may not have been delivered" in note) for _, note in w.notes.notes] == (
        [] if status == "SENT" else [True]
    )


# --- quotes -------------------------------------------------------------------------------------


def test_given_a_reply_to_an_agents_message_sent_here_then_it_quotes_its_whatsapp_id_from_our_number() -> None:
    w = world()
    w.links.link(
        MessageLink(
            instance=INSTANCE.key,
            provider_message_id="wamid-a",
            conversation_id=55,
            downstream_message_id=9000,
            direction="out",
        )
    )

    w.outbox.submit(INSTANCE, agent_reply("9030", "Isso", in_reply_to=9000))

    [(_, content, quoted, _)] = w.provider.parts
    assert isinstance(content, Text) and content.body == "Isso"
    assert quoted == Quote(id="wamid-a", from_me=True, author="5511911112222")


def test_given_a_reply_to_a_customers_message_then_it_quotes_the_id_the_helpdesk_kept() -> None:
    w = world()

    w.outbox.submit(
        INSTANCE,
        agent_reply("9031", "Sim", in_reply_to=8999, in_reply_to_external_id="3EB0AA"),
    )

    assert w.provider.parts[0][2] == Quote(id="3EB0AA", from_me=False, author=PHONE)


def test_given_a_reply_to_a_message_of_unknown_whatsapp_id_then_it_leaves_unquoted_and_the_agent_is_told() -> None:
    w = world()

    outcome = w.outbox.submit(INSTANCE, agent_reply("9032", "Sim", in_reply_to=1))

    assert outcome.status == "SENT" and w.provider.bodies == ["Sim"] and w.provider.parts[0][2] is None
    assert w.notes.notes == [(55, "Message 9032 leaves without quoting message 1: its WhatsApp id is not known here.")]


# --- failures shown on the message ---------------------------------------------------------------


def test_given_a_refused_reply_then_the_helpdesk_message_is_marked_failed_with_the_reason() -> None:
    provider = FakeProvider()
    provider.failures["Oi"] = [ProviderRejected("bad phone")]
    w = world(provider)

    w.outbox.submit(INSTANCE, agent_reply("9040", "Oi"))

    assert w.statuses.updates == [(55, 9040, "failed", "refused by the provider (provider_rejected)")]


# --- deletions ----------------------------------------------------------------------------------


def sent_reply(w: World, message_id: str = "9050", attachments: int = 0) -> None:
    w.attachments.contents = {f"u{n}": media("image", PNG, "image/png") for n in range(attachments)}
    reply = agent_reply(message_id, "Oi", attachments=[image_attachment(f"u{n}") for n in range(attachments)])
    assert w.outbox.submit(INSTANCE, reply).status == "SENT"


def test_given_a_deleted_reply_through_a_kind_that_revokes_then_every_part_is_revoked_once() -> None:
    w = world(FakeRevokingProvider())
    sent_reply(w, attachments=2)
    revocation = Revocation(message_id="9050", phone=PHONE, conversation_id=55)

    first = w.outbox.revoke(INSTANCE, revocation)
    again = w.outbox.revoke(INSTANCE, revocation)

    assert (first.status, again.status) == ("REVOKED", "REVOKED")
    revoker = w.provider
    assert isinstance(revoker, FakeRevokingProvider)
    assert revoker.revoked == [(PHONE, pid) for pid in w.store.outcomes["9050"].provider_message_ids]
    assert len(revoker.revoked) == 2 and w.notes.notes == []


def test_given_a_deleted_reply_through_the_cloud_api_then_the_agent_is_told_it_stays_on_whatsapp() -> None:
    w = world(kind="meta")
    sent_reply(w)

    revoked = w.outbox.revoke(INSTANCE, Revocation(message_id="9050", phone=PHONE, conversation_id=55))

    assert (revoked.status, revoked.reason) == ("FAILED", "meta cannot delete a message it sent")
    assert w.notes.notes == [
        (
            55,
            "Message 9050 was deleted here but stays on the customer's WhatsApp: meta cannot delete a message it sent.",
        )
    ]


def test_given_a_revoke_the_provider_refuses_then_the_agent_is_told_the_customer_may_still_see_it() -> None:
    provider = FakeRevokingProvider()
    provider.revoke_failures = [ProviderRejected("too old")]
    w = world(provider)
    sent_reply(w)

    revoked = w.outbox.revoke(INSTANCE, Revocation(message_id="9050", phone=PHONE, conversation_id=55))

    assert revoked.status == "FAILED"
    assert w.notes.notes == [
        (
            55,
            "Message 9050 was deleted here but the customer may still see it:"
            " acme-main could not delete it for everyone.",
        )
    ]


def test_given_a_deleted_reply_still_waiting_then_it_never_leaves_and_nothing_is_revoked() -> None:
    provider = FakeRevokingProvider()
    w = world(provider, connected=False)
    w.outbox.submit(INSTANCE, agent_reply("9051", "Oi"))

    revoked = w.outbox.revoke(INSTANCE, Revocation(message_id="9051", phone=PHONE, conversation_id=55))
    w.outbox.drain(INSTANCE.key)

    assert (revoked.status, revoked.reason) == ("REVOKED", "it had not left")
    assert w.store.entries == [] and provider.parts == [] and provider.revoked == [] and w.notes.notes == []


def test_given_a_deletion_of_a_message_not_sent_here_then_it_is_ignored() -> None:
    w = world(FakeRevokingProvider())

    assert w.outbox.revoke(INSTANCE, Revocation(message_id="1", phone=PHONE)).status == "IGNORED"


# --- Chatwoot's webhooks (contract fixtures) ------------------------------------------------------


def fixture(name: str) -> OutgoingWebhook:
    return OutgoingWebhook.model_validate(json.loads((CHATWOOT / name).read_text()))


def test_given_chatwoots_message_with_two_images_then_the_reply_has_them_in_order_with_their_names() -> None:
    reply = fixture("webhook_message_created_attachments.json").reply()

    assert reply is not None and reply.text == "Aqui estão as duas cores."
    assert [(a.file_type, a.file_name) for a in reply.attachments] == [("image", "blue.jpg"), ("image", "green.png")]
    assert all(
        (a.data_url or "").startswith("https://chatwoot.acme.example/rails/active_storage/blobs/redirect/")
        for a in reply.attachments
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("webhook_message_created_audio.json", ("audio", "recording.ogg", None)),
        ("webhook_message_created_file.json", ("file", "Pedido 12345.pdf", None)),
        ("webhook_message_created_location.json", ("location", None, (-23.5613, -46.6565, "Loja Paulista"))),
    ],
)
def test_given_chatwoots_message_with_one_attachment_and_no_text_then_it_is_a_reply(
    name: str, expected: tuple[Any, ...]
) -> None:
    reply = fixture(name).reply()

    assert reply is not None and reply.text == "" and reply.phone == "16505551234"
    [attachment] = reply.attachments
    located = (attachment.latitude, attachment.longitude, attachment.title) if attachment.latitude is not None else None
    assert (attachment.file_type, attachment.file_name, located) == expected


def test_given_chatwoots_reply_to_a_message_then_it_names_the_message_and_its_source_id() -> None:
    reply = fixture("webhook_message_created_reply_to.json").reply()

    assert reply is not None and (reply.in_reply_to, reply.in_reply_to_external_id) == (9000, "3EB0C767D097B7C7C030")


def test_given_chatwoots_deletion_of_an_agents_message_then_it_is_a_revocation_not_a_reply() -> None:
    payload = fixture("webhook_message_updated_deleted.json")

    assert payload.reply() is None
    assert payload.revocation() == Revocation(message_id="9001", phone="16505551234", conversation_id=12)


def test_given_a_message_updated_that_is_not_a_deletion_then_neither() -> None:
    raw = json.loads((CHATWOOT / "webhook_message_updated_deleted.json").read_text())
    raw["content_attributes"] = {"external_error": "x"}  # the status we set, announced back
    payload = OutgoingWebhook.model_validate(raw)

    assert (payload.reply(), payload.revocation()) == (None, None)


@pytest.mark.parametrize(
    ("url", "extension", "expected"),
    [
        ("https://h/rails/active_storage/blobs/redirect/abc/Pedido%2012.pdf", "pdf", "Pedido 12.pdf"),
        ("https://h/rails/active_storage/blobs/redirect/abc/rec.ogg?disposition=inline", "ogg", "rec.ogg"),
        ("https://h/x/noextension", "png", "attachment.png"),
        (None, None, None),
    ],
)
def test_given_a_data_url_then_the_file_name_is_its_last_segment(
    url: str | None, extension: str | None, expected: str | None
) -> None:
    assert attachment_file_name(url, extension) == expected


def test_given_an_attachment_chatwoot_sends_as_null_then_the_agent_is_told_it_was_not_sent() -> None:
    raw = json.loads((CHATWOOT / "webhook_message_created_attachments.json").read_text())
    raw["attachments"] = [None, raw["attachments"][0]]
    reply = OutgoingWebhook.model_validate(raw).reply()
    assert reply is not None and reply.attachments[0].file_type == "unknown"
    w = world()
    w.attachments.contents = {str(reply.attachments[1].data_url): media("image", PNG, "image/png")}

    assert w.outbox.submit(INSTANCE, reply.model_copy(update={"conversation_id": 55})).status == "SENT"
    assert sent_kinds(w.provider) == ["image"]
    assert w.notes.notes == [
        (
            55,
            "Attachment 1 of 2 of message 9010 was not sent through acme-main:"
            " an attachment of no type has no WhatsApp form.",
        )
    ]
