"""The send worker with contents other than text: every kind's real client (over a recording
transport) translates the same message again on a pool fallback, the file leaves byte for byte,
and a reaction or a quoted reply leaves only through the conversation's number."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from datetime import timedelta

import httpx
import pytest

from devstack.simulator import files
from switchboard.core.clock import utcnow
from switchboard.messages.domain import Message, MessageStatus, SendJob, body_hash, content_signature
from switchboard.pool.domain import Affinity, NumberRoutes, Route, SendingConfig
from switchboard.providers.content import (
    Content,
    Interactive,
    Media,
    MediaMessage,
    MediaRef,
    Option,
    Reaction,
    Template,
)
from switchboard.providers.kinds import spec_for
from tests.support.sending import sending_service
from tools.support.fakes import FakeMessages, FakeNotifier, FakeSecrets, FakeTickets

RECIPIENT = "5511988880001"
PDF = b"%PDF-1.7\nthe receipt\n%%EOF"
REF = MediaRef(
    key="acme/outgoing/med_x", sha256=hashlib.sha256(PDF).hexdigest(), mime_type="application/pdf", size=len(PDF)
)
DOCUMENT = MediaMessage(media=Media(kind="document", file_name="receipt.pdf", caption="your receipt", stored=REF))


class Recorder:
    """Every request that reached a provider; the hosts in `down` refuse (wuzapi: not connected; others: 400)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, bytes]] = []
        self.down: set[str] = set()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        host = request.url.host
        self.requests.append((host, request.url.path, request.content))
        if host in self.down:
            if host.startswith("wuzapi"):
                return httpx.Response(409, json={"error": "not_connected"})
            return httpx.Response(
                400, json={"status": 400, "error": "Bad Request", "response": {"message": ["refused"]}}
            )
        if request.url.path.endswith("/media"):
            return httpx.Response(200, json={"id": "meta-media-1"})
        if host.startswith("wuzapi"):
            return httpx.Response(200, json={"code": 200, "data": {"Details": "Sent", "Id": "wz-1"}, "success": True})
        if host.startswith("evolution"):
            return httpx.Response(
                201, json={"key": {"remoteJid": f"{RECIPIENT}@s.whatsapp.net", "fromMe": True, "id": "evo-1"}}
            )
        return httpx.Response(200, json={"messaging_product": "whatsapp", "messages": [{"id": "wamid.1"}]})


OGG = files.ogg_opus(frames=2)
MP3 = b"ID3\x04\x00\x00\x00\x00\x00\x00" + b"\xff\xfb\x90\x00" * 8


def stored(data: bytes, mime_type: str) -> MediaRef:
    digest = hashlib.sha256(data).hexdigest()
    return MediaRef(key=f"acme/outgoing/url_{digest}", sha256=digest, mime_type=mime_type, size=len(data))


FILES = {REF.key: PDF, stored(OGG, "audio/ogg").key: OGG, stored(MP3, "audio/mpeg").key: MP3}


class Bucket:
    def read(self, ref: MediaRef) -> bytes:
        return FILES[ref.key]


class Uploads:
    def __init__(self) -> None:
        self.ids: dict[tuple[str, str], str] = {}

    def media_id(self, number: str, sha256: str) -> str | None:
        return self.ids.get((number, sha256))

    def remember(self, number: str, sha256: str, media_id: str) -> None:
        self.ids[(number, sha256)] = media_id


def pool_number(digits: str, kind: str) -> NumberRoutes:
    name = f"{kind}-{digits[-2:]}"
    route = Route(
        provider_id=f"prv_{kind}",
        kind=kind,
        base_url=f"https://{kind}.example.test",
        provider_instance_id=name,
        instance=name,
        meta_phone_id=f"phone-{digits}" if kind == "meta" else None,
    )
    return NumberRoutes(
        number_id=f"num_{digits}", digits=digits, added_at=utcnow() - timedelta(days=1), routes=(route,)
    )


NUMBERS = [
    pool_number("5511900000001", "wuzapi"),
    pool_number("5511900000002", "evolution"),
    pool_number("5511900000003", "meta"),
]


class World:
    def __init__(self) -> None:
        self.config = SendingConfig(tenant="acme", api_key_id="key_1", mode="pool", pool=NUMBERS)
        self.messages = FakeMessages()
        # The recipient wrote to the Cloud API number an hour ago: its customer-service window is open.
        self.messages.affinities[("acme", RECIPIENT)] = Affinity(
            heard={"num_5511900000003": utcnow() - timedelta(hours=1)}
        )
        self.recorder = Recorder()
        self._answer: Callable[[httpx.Request], httpx.Response] = self.recorder
        self.uploads = Uploads()
        transport = httpx.MockTransport(self._respond)
        clients = {
            kind: spec_for(kind).client(local_mode=False, read_timeout=5, transport=transport)
            for kind in ("wuzapi", "evolution", "meta")
        }
        self.service = sending_service(
            self.messages,
            configs=self,
            tickets=FakeTickets(),
            secrets=FakeSecrets(default=lambda name: "token", read_only=True),
            client_for=lambda kind: clients[kind],
            notifier=FakeNotifier(),
            max_attempts=3,
        )
        # The helper composes the pipeline without media: give its attempts the bucket and uploads.
        attempts = self.service._attempts
        attempts._media = Bucket()
        attempts._uploaded = self.uploads

    def get(self, tenant: str, api_key_id: str) -> SendingConfig:
        return self.config

    def _respond(self, request: httpx.Request) -> httpx.Response:
        return self._answer(request)

    def use(self, answer: Callable[[httpx.Request], httpx.Response]) -> None:
        """How the providers answer from now on (the recorder by default)."""
        self._answer = answer

    def send(
        self, content: Content, reply_to: str | None = None, *, fallback_template: Template | None = None
    ) -> Message:
        signature = content_signature(content, reply_to)
        message = Message(
            tenant="acme",
            id=f"msg_{len(self.messages.items) + 1}",
            api_key_id="key_1",
            to=RECIPIENT,
            text=signature,
            content=content,
            reply_to=reply_to,
            fallback_template=fallback_template,
            body_hash=body_hash(RECIPIENT, signature),
        )
        self.messages.items[message.id] = message
        self.service.process(SendJob(message_id=message.id, tenant="acme", api_key_id="key_1", to=RECIPIENT), 1)
        return self.messages.items[message.id]

    def bodies(self, host_prefix: str) -> list[tuple[str, bytes]]:
        return [(path, body) for host, path, body in self.recorder.requests if host.startswith(host_prefix)]


def test_a_document_falls_back_from_wuzapi_to_evolution_to_meta_translated_each_time() -> None:
    world = World()
    world.recorder.down = {"wuzapi.example.test", "evolution.example.test"}

    sent = world.send(DOCUMENT)

    assert (sent.status, sent.source_number) == (MessageStatus.SENT, "5511900000003")
    ((wz_path, wz_body),) = world.bodies("wuzapi")
    assert wz_path == "/chat/send/document"
    assert json.loads(wz_body)["Document"] == "data:application/pdf;base64," + base64.b64encode(PDF).decode()
    ((evo_path, evo_body),) = world.bodies("evolution")
    assert evo_path == "/message/sendMedia/evolution-02"
    assert base64.b64decode(json.loads(evo_body)["media"]) == PDF
    (upload_path, upload), (_, send) = world.bodies("meta")
    assert upload_path.endswith("/phone-5511900000003/media") and PDF in upload
    assert json.loads(send)["document"] == {"id": "meta-media-1", "caption": "your receipt", "filename": "receipt.pdf"}


def test_a_second_send_of_the_same_file_from_a_meta_number_uploads_nothing() -> None:
    world = World()
    world.config = world.config.model_copy(update={"pool": [NUMBERS[2]]})
    world.send(DOCUMENT)
    world.send(DOCUMENT)

    paths = [path for path, _ in world.bodies("meta")]
    assert [path.rsplit("/", 1)[-1] for path in paths] == ["media", "messages", "messages"]


def test_a_reaction_leaves_through_the_conversations_number_only() -> None:
    world = World()
    world.messages.affinities[("acme", RECIPIENT)] = Affinity(number_id="num_5511900000002", number="5511900000002")

    sent = world.send(Reaction(target_id="3EB0CUSTOMER", emoji="👍"))

    assert (sent.status, sent.source_number) == (MessageStatus.SENT, "5511900000002")
    ((path, body),) = [(p, b) for h, p, b in world.recorder.requests]
    assert path == "/message/sendReaction/evolution-02"
    assert json.loads(body) == {
        "key": {"remoteJid": f"{RECIPIENT}@s.whatsapp.net", "fromMe": False, "id": "3EB0CUSTOMER"},
        "reaction": "👍",
    }


def test_a_reaction_whose_number_is_down_fails_and_never_uses_another() -> None:
    world = World()
    world.messages.affinities[("acme", RECIPIENT)] = Affinity(number_id="num_5511900000002", number="5511900000002")
    down = NumberRoutes(number_id="num_5511900000002", digits="5511900000002", routes=())
    world.config = world.config.model_copy(update={"pool": [NUMBERS[0], down, NUMBERS[2]]})

    sent = world.send(Reaction(target_id="3EB0CUSTOMER", emoji="👍"))

    assert (sent.status, sent.failure_reason) == (MessageStatus.FAILED, "conversation_number_unavailable")
    assert world.recorder.requests == []


def test_a_quoted_reply_to_our_own_message_quotes_its_provider_id_from_its_number() -> None:
    world = World()
    world.config = world.config.model_copy(update={"pool": [NUMBERS[0], NUMBERS[2]]})
    first = world.send(DOCUMENT)
    assert first.source_number == "5511900000001"

    reply = world.send(Reaction(target_id=first.id, emoji="🎉"))

    assert reply.source_number == "5511900000001"
    _, body = world.bodies("wuzapi")[-1]
    assert json.loads(body) == {"Phone": RECIPIENT, "Body": "🎉", "Id": "me:wz-1"}


def test_a_reaction_with_no_conversation_fails_with_its_reason() -> None:
    world = World()

    sent = world.send(Reaction(target_id="3EB0CUSTOMER", emoji="👍"))

    assert (sent.status, sent.failure_reason) == (MessageStatus.FAILED, "no_conversation_number")


def test_reply_buttons_with_a_file_header_carry_the_stored_file_first_where_the_kind_has_no_file_headers() -> None:
    world = World()
    header = Media(kind="document", file_name="menu.pdf", stored=REF)
    buttons = Interactive(kind="buttons", body="Confirma?", header_media=header, buttons=[Option(id="y", title="Sim")])

    sent = world.send(buttons)

    assert (sent.status, sent.source_number) == (MessageStatus.SENT, "5511900000001")
    (file_path, file_body), (menu_path, menu_body) = world.bodies("wuzapi")
    assert (file_path, menu_path) == ("/chat/send/document", "/chat/send/text")
    assert json.loads(file_body)["Document"] == "data:application/pdf;base64," + base64.b64encode(PDF).decode()
    assert json.loads(menu_body)["Body"] == "Confirma?\n\n1. Sim"


@pytest.mark.parametrize(
    ("index", "data", "mime_type", "as_voice"),
    [
        (0, OGG, "audio/ogg", True),
        (0, MP3, "audio/mpeg", False),  # wuzapi sends what it is given: an MP3 voice note would not play
        (1, MP3, "audio/mpeg", True),  # Evolution's sendWhatsAppAudio converts it to Opus itself
        (2, OGG, "audio/ogg", True),
        (2, MP3, "audio/mpeg", False),  # the Cloud API plays only OGG/Opus as a voice message
    ],
)
def test_a_voice_note_leaves_as_one_where_the_kind_can_play_it_else_as_an_audio_the_trace_tells(
    index: int, data: bytes, mime_type: str, as_voice: bool
) -> None:
    world = World()
    world.config = world.config.model_copy(update={"pool": [NUMBERS[index]]})
    kind = NUMBERS[index].routes[0].kind

    sent = world.send(MediaMessage(media=Media(kind="voice", stored=stored(data, mime_type))))

    assert sent.status == MessageStatus.SENT
    path, body = world.bodies(kind)[-1]
    if kind == "wuzapi":
        assert path == "/chat/send/audio" and json.loads(body)["ptt"] is as_voice
    elif kind == "evolution":
        assert path == "/message/sendWhatsAppAudio/evolution-02"
    else:
        assert json.loads(body)["type"] == "audio"
    noted = [
        (event.data["mimeType"], event.data["number"]) for event in sent.trace if event.stage == "send.voice_as_audio"
    ]
    assert noted == ([] if as_voice else [(mime_type, NUMBERS[index].digits)])
