"""The forwarder with the media bucket on moto's S3, the links in moto's DynamoDB, a Cloud API
server answered as Meta answers (tests/contracts/media) and the Chatwoot-shaped fake: a file sent
inline and one fetched by its media id reach the helpdesk with the same bytes; a media id Meta no
longer knows becomes a placeholder on the message's outcome; a redelivery after a lost answer
neither posts nor downloads again; a quote of a file is threaded to it through the stored link."""

from __future__ import annotations

import hashlib
from typing import Any

import httpx
import pytest

from devstack.simulator import files
from switchboard import bootstrap
from switchboard.core.errors import DownstreamError
from switchboard.media.service import S3Media
from switchboard.providers.content import Media, MediaMessage, MediaSource, Text
from switchboard.providers.meta import MetaCloudClient
from switchboard.routing.chatwoot import ChatwootClient
from switchboard.routing.domain import DownstreamTarget, IncomingMessage
from switchboard.routing.forwarder import DownstreamForwarder
from tests.media.test_store_and_resolver import META, meta_server
from tests.routing.test_forward_media import Outcomes
from tools.support.aws import AwsResources
from tools.support.builders import incoming_message
from tools.support.downstream import FakeDownstream
from tools.support.fakes import FakeDownstreams, FakeForwardAttempts

TARGET = DownstreamTarget(base_url="https://cw.example", account_id=1, inbox_id=2, api_token="t", source="tenant")
INSTANCE = "acme:acme-cloud"
PNG = files.png(8, 8)
CLOUD_ID = MediaSource(via="meta_media_id", media_id="8040")
PHOTO = MediaMessage(media=Media(kind="image", mime_type="image/jpeg", caption="a nota", source=CLOUD_ID))


class World:
    def __init__(self, *, gone: bool = False) -> None:
        self.server = meta_server(PNG, gone=gone)
        meta = MetaCloudClient(local_mode=True, transport=self.server.transport)
        components = bootstrap.current()
        self.media = S3Media(components.client("s3"), components.settings.media_bucket or "", lambda _: (meta, META))
        self.fake = FakeDownstream()
        self.outcomes = Outcomes()
        self.attempts = FakeForwardAttempts()
        self.lost: list[httpx.Request] = []

    def transport(self, *, lose_first: bool) -> httpx.MockTransport:
        inner = self.fake.transport()

        def handle(request: httpx.Request) -> httpx.Response:
            if lose_first and request.method == "POST" and request.url.path.endswith("/messages") and not self.lost:
                self.lost.append(request)
                inner.handle_request(request)
                raise httpx.ReadTimeout("no answer", request=request)
            return inner.handle_request(request)

        return httpx.MockTransport(handle)

    def forwarder(self, *, lose_first: bool = False) -> DownstreamForwarder:
        client = ChatwootClient(local_mode=True, transport=self.transport(lose_first=lose_first))
        return DownstreamForwarder(
            FakeDownstreams(TARGET),
            client,
            self.attempts,
            outcomes=self.outcomes,
            media=self.media,
            links=bootstrap.message_links(),
        )

    def posted(self) -> list[dict[str, Any]]:
        return [message for messages in self.fake.posted.values() for message in messages]


def job(provider_id: str, content: Any, *, reply_to: str | None = None) -> IncomingMessage:
    return incoming_message(provider_id, "(as text)", instance=INSTANCE, content=content, reply_to=reply_to)


def test_a_file_sent_inline_reaches_the_helpdesk_with_the_same_bytes(aws: AwsResources) -> None:
    world = World()
    voice = world.media.put_inline("acme", INSTANCE, "wamid.V1", Media(kind="voice", inline=True), files.ogg_opus(5))

    world.forwarder().forward(job("wamid.V1", MediaMessage(media=voice)))

    [posted] = world.posted()
    [upload] = world.fake.message_uploads(posted)
    assert (upload.data, upload.content_type, upload.file_name) == (files.ogg_opus(5), "audio/ogg", "voice.ogg")
    assert posted["attachments"][0]["id"] in world.fake.voice
    assert world.server.requests == []  # stored at the ingest: nothing fetched


def test_a_cloud_api_media_id_is_fetched_once_and_a_redelivery_after_a_lost_answer_posts_nothing(
    aws: AwsResources,
) -> None:
    world = World()

    with pytest.raises(DownstreamError):
        world.forwarder(lose_first=True).forward(job("wamid.P1", PHOTO))
    fetched = len(world.server.requests)
    world.forwarder().forward(job("wamid.P1", PHOTO), receive_count=2)

    [posted] = world.posted()
    assert posted["content"] == "a nota"
    assert world.fake.message_uploads(posted)[0].sha256 == hashlib.sha256(PNG).hexdigest()
    assert len(world.server.requests) == fetched == 2  # the media node and the file, once
    link = bootstrap.message_links().by_provider_id(INSTANCE, "wamid.P1")
    assert link is not None and link.downstream_message_id == posted["id"]


def test_a_quote_of_a_forwarded_file_is_threaded_to_it_through_the_stored_link(aws: AwsResources) -> None:
    world = World()
    world.forwarder().forward(job("wamid.P2", PHOTO))

    world.forwarder().forward(job("wamid.T2", Text(body="chegou?"), reply_to="wamid.P2"))

    photo, quote = world.posted()
    assert quote["content_attributes"] == {"in_reply_to": photo["id"], "in_reply_to_external_id": "wamid.P2"}


def test_a_media_id_meta_no_longer_knows_is_a_placeholder_on_the_messages_outcome(aws: AwsResources) -> None:
    world = World(gone=True)

    world.forwarder().forward(job("wamid.G1", PHOTO))

    [posted] = world.posted()
    assert posted["content"] == "[imagem indisponível: o arquivo expirou no provedor]\na nota"
    assert "attachments" not in posted
    assert world.outcomes.reported == [("placeholder", "evt-wamid.G1", "expired")]
