"""What customers send reaches the agent, on the whole local stack (one start): the simulator posts
each server's real webhook, the ingest takes inline files into the media bucket, the FIFO forward
queue hands each conversation's messages to the forwarder in order, which fetches the other files
from their provider and posts each message to a Chatwoot-shaped helpdesk that reads multipart bodies
byte for byte.

- a photo with its caption, a voice note, a PDF with its file name, a sticker, a location, a contact
  card and a list reply from wuzapi (base64 and S3 URL delivery), Evolution (`webhookBase64`,
  `getBase64FromMediaMessage` and its S3/MinIO `mediaUrl`), the Cloud API (media ids) and the
  calls-capable envelope reach the conversation once each, in the order sent, files with the
  simulator's own bytes;
- a quote is threaded to the quoted photo, a reaction is a reply on it;
- a 3 MB base64 webhook is taken and its photo posted; a file announcing a size over its kind's
  limit, and a Cloud API media whose URL answers 404, are placeholders saying why;
- a second delivery of a webhook posts nothing new;
- a forwarder container killed right after the helpdesk took a photo's multipart post: the job
  comes back, finds the message and posts nothing again, and the photo is still linked (a later
  quote is threaded to it).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import httpx
import pytest

from devstack.seed import SeededInstance
from devstack.simulator import SimulatorControl
from devstack.simulator.incoming import media_file
from devstack.stack import LocalStack
from tests.support.stacks import stack_on_free_ports
from tools.support.downstream import FakeDownstream, ServedDownstream, Upload

# A redelivery waits for the killed invocation's idempotency record to expire (its Lambda timeout,
# shortened here from the template's, with time enough for a file's fetch and post): a few
# receives a visibility timeout apart, fewer than the dead-letter queue's 8.
VISIBILITY_SECONDS = 8
FUNCTION_SECONDS = 20
CRASH_CAPTION = "foto antes da queda"
SOURCES = {  # (flavour, media delivery): the contact each writes from
    ("wuzapi", None): "5511980000001",
    ("wuzapi", "s3"): "5511980000002",
    ("evolution", "base64"): "5511980000003",
    ("evolution", None): "5511980000004",
    ("evolution", "s3"): "5511980000007",
    ("meta", None): "5511980000005",
    ("calls", None): "5511980000006",
}
KINDS = ("image", "audio", "document", "sticker", "location", "contacts", "list")
CAPTIONS = {"image": "segue a foto", "document": "o comprovante"}


class KillingHelpdesk(FakeDownstream):
    """Kills the forwarder (`kill`) right after applying the multipart post of the photo captioned
    `CRASH_CAPTION`: the forward never records its success, and its job is never acknowledged."""

    kill: Callable[[], bool] | None = None
    kills: int = 0

    def handle(
        self,
        origin: str,
        method: str,
        path: str,
        *,
        query: str,
        token: str | None,
        raw: bytes,
        content_type: str | None = None,
    ) -> tuple[int, Any]:
        status, payload = super().handle(
            origin, method, path, query=query, token=token, raw=raw, content_type=content_type
        )
        crashing = isinstance(payload, dict) and payload.get("content") == CRASH_CAPTION and payload.get("attachments")
        if method == "POST" and status == 200 and crashing and self.kill is not None and not self.kills:
            self.kills += int(self.kill())
        return status, payload


@dataclass
class World:
    stack: LocalStack
    helpdesk: KillingHelpdesk
    served: ServedDownstream
    sim: SimulatorControl
    sqs: Any

    def instance(self, flavour: str) -> SeededInstance:
        assert self.stack.demo is not None
        return next(i for i in self.stack.demo.instances if i.flavour == flavour and i.kind == "messages")

    def send(self, flavour: str, contact: str, kind: str = "text", **options: Any) -> str:
        sent = self.sim.incoming(self.instance(flavour).sim_id, contact, kind=kind, **options)
        return str(sent["id"])

    def posted(self, source_id: str) -> list[dict[str, Any]]:
        with self.helpdesk._lock:
            return [m for ms in self.helpdesk.posted.values() for m in ms if m["source_id"] == source_id]

    def one(self, source_id: str, timeout: float = 30) -> dict[str, Any]:
        found: list[dict[str, Any]] = wait_for(lambda: self.posted(source_id), timeout)
        [message] = found
        return message

    def uploads(self, message: dict[str, Any]) -> list[Upload]:
        return self.helpdesk.message_uploads(message)

    def queue_empty(self) -> bool:
        names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        url = self.stack.queues["ForwardQueue"].url
        attributes = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
        return sum(int(attributes[name]) for name in names) == 0


def wait_for(probe: Callable[[], Any], timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := probe()):
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout} s")
        time.sleep(0.1)
    return value


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    stack = stack_on_free_ports(
        "media",
        visibility_timeout=VISIBILITY_SECONDS,
        function_timeout=FUNCTION_SECONDS,
        environment={"PROVIDER_TIMEOUT_SECONDS": "2"},
    ).start()
    helpdesk = KillingHelpdesk()
    served = helpdesk.serve()
    assert stack.demo is not None and stack.functions is not None
    mapping = {
        "downstreamBaseUrl": served.url,
        "downstreamApiToken": "cw-media-token-0123456789",
        "downstreamAccountId": 4,
        "downstreamInboxId": 41,
    }
    with httpx.Client(base_url=stack.api_url, trust_env=False, timeout=30) as api:
        answer = api.put(
            f"/api/tenants/{stack.demo.owner_tag}",
            json=mapping,
            headers={"authorization": f"Bearer {stack.demo.admin_key}"},
        )
    assert answer.status_code == 200, answer.text
    functions = stack.functions
    helpdesk.kill = lambda: functions.kill("ForwarderFunction")
    sqs = boto3.session.Session().client("sqs", region_name="us-east-1", endpoint_url=stack.aws_url)
    sim = SimulatorControl(stack.sim_url)
    yield World(stack, helpdesk, served, sim, sqs)
    sim.close()
    sqs.close()
    served.stop()
    stack.stop()


@pytest.fixture(scope="module")
def crashed(world: World) -> str:
    """A wuzapi photo whose forward was killed after the helpdesk took it (its retry comes back
    after the visibility timeout and the dead invocation's Lambda timeout: checked last)."""
    photo = world.send("wuzapi", "5511980000099", "image", text=CRASH_CAPTION)
    wait_for(lambda: world.helpdesk.kills, timeout=30)
    return photo


def test_every_kind_from_every_server_reaches_its_conversation_once_in_order_with_its_bytes(
    world: World, crashed: str
) -> None:
    sent: dict[tuple[str, str | None], list[tuple[str, str]]] = {}
    for (flavour, mode), contact in SOURCES.items():
        options = {"media_delivery": mode} if mode else {}
        sent[(flavour, mode)] = [
            (kind, world.send(flavour, contact, kind, text=CAPTIONS.get(kind), **options)) for kind in KINDS
        ]

    for source, messages in sent.items():
        posted = {kind: world.one(message_id) for kind, message_id in messages}
        ids = [posted[kind]["id"] for kind, _ in messages]
        assert ids == sorted(ids), source  # shown in the order the customer sent them
        assert len({posted[kind]["conversation_id"] for kind in posted}) == 1, source
        image, voice, document, sticker = (world.uploads(posted[k]) for k in ("image", "audio", "document", "sticker"))
        assert (posted["image"]["content"], posted["document"]["content"]) == ("segue a foto", "o comprovante"), source
        assert [u.sha256 for u in image] == [sha(media_file("image"))] and image[0].content_type == "image/jpeg"
        assert [u.sha256 for u in voice] == [sha(media_file("audio"))] and voice[0].content_type == "audio/ogg"
        assert posted["audio"]["attachments"][0]["id"] in world.helpdesk.voice, source
        assert [(u.file_name, u.sha256) for u in document] == [("comprovante.pdf", sha(media_file("document")))]
        assert [u.sha256 for u in sticker] == [sha(media_file("sticker"))] and sticker[0].content_type == "image/webp"
        assert posted["location"]["content"].startswith("[Localização] Avenida Paulista, Av. Paulista, 1578")
        assert "https://maps.google.com/?q=-23.5613,-46.6565" in posted["location"]["content"]
        assert posted["contacts"]["content"] == "[Contato] Ana Souza: 5511912345678"
        [card] = world.uploads(posted["contacts"])
        assert card.content_type == "text/vcard" and b"FN:Ana Souza" in card.data
        assert posted["list"]["content"] == "Segunda via do boleto (opção boleto-2)", source


def test_a_quote_is_threaded_to_its_photo_and_a_reaction_is_a_reply_on_it(world: World) -> None:
    contact = "5511980000010"
    photo = world.one(world.send("evolution", contact, "image", text="qual destes?"))

    quote = world.one(world.send("evolution", contact, text="este aqui", quote=photo["source_id"]))
    reaction = world.one(world.send("evolution", contact, "reaction", quote=photo["source_id"]))

    assert quote["content"] == "este aqui" and quote["content_attributes"]["in_reply_to"] == photo["id"]
    assert reaction["content"] == "Reagiu com 👍" and reaction["content_attributes"]["in_reply_to"] == photo["id"]
    assert not reaction["private"] and reaction["message_type"] == 0


def test_a_3_mb_base64_webhook_is_taken_and_its_photo_posted(world: World) -> None:
    size = 3 * 1024 * 1024

    photo = world.one(world.send("wuzapi", "5511980000011", "image", text="em alta", file_size=size))

    [upload] = world.uploads(photo)
    assert (len(upload.data), upload.sha256) == (size, sha(media_file("image", size)))
    assert photo["content"] == "em alta"


def test_a_file_over_its_kinds_announced_limit_and_a_cloud_url_answering_404_are_placeholders(world: World) -> None:
    video = world.one(
        world.send("wuzapi", "5511980000012", "video", text="o vídeo", media_delivery="s3", announced_size=64 << 20)
    )
    photo = world.one(world.send("meta", "5511980000013", "image", text="a nota", media_fails=True))

    assert video["content"] == "[vídeo indisponível: o arquivo passa do limite do WhatsApp para este tipo]\no vídeo"
    assert photo["content"] == "[imagem indisponível: o arquivo expirou no provedor]\na nota"
    assert "attachments" not in video and "attachments" not in photo


def test_a_second_delivery_of_a_webhook_posts_nothing_new(world: World) -> None:
    contact = "5511980000014"
    sent = world.sim.incoming(world.instance("meta").sim_id, contact, kind="document", text="2a via")
    world.one(str(sent["id"]))

    world.sim.redeliver(str(sent["eventId"]))
    # The conversation's next message is forwarded after anything the redelivery queued.
    world.one(world.send("meta", contact, text="recebeu?"))

    assert len(world.posted(str(sent["id"]))) == 1


def test_a_forwarder_killed_after_the_helpdesk_took_a_photo_leaves_it_there_once_and_linked(
    world: World, crashed: str
) -> None:
    lookups_before = len([r for r in world.helpdesk.requests if r.method == "GET" and r.path.endswith("/messages")])

    quote = world.one(world.send("wuzapi", "5511980000099", text="viu a foto?", quote=crashed), timeout=150)

    [photo] = world.posted(crashed)
    assert world.helpdesk.kills == 1 and [u.sha256 for u in world.uploads(photo)] == [sha(media_file("image"))]
    assert quote["content_attributes"]["in_reply_to"] == photo["id"]
    lookups = [r for r in world.helpdesk.requests if r.method == "GET" and r.path.endswith("/messages")]
    assert len(lookups) > lookups_before  # the retried forward looked before it posted
    wait_for(world.queue_empty, timeout=30)
