"""The forwarder with files, on in-memory fakes and the Chatwoot-shaped fake: the file is posted
with its message; one that cannot be had becomes a placeholder saying why (at once, or after the
queue's retries when a later try may get it), reported on the message's outcome; a forward that
died after its multipart post posts nothing again; every posted message is linked, and a quote or
a reaction of it is threaded to it."""

from __future__ import annotations

import hashlib
from typing import Any

import httpx
import pytest

from devstack import template
from devstack.simulator import files
from switchboard.core.clock import Deadline
from switchboard.core.errors import DownstreamError, NotFound
from switchboard.media.ports import MediaUnavailable
from switchboard.providers.content import Media, MediaMessage, MediaRef, Reaction, Text
from switchboard.routing.chatwoot import ChatwootClient
from switchboard.routing.domain import DownstreamTarget, IncomingMessage
from switchboard.routing.forwarder import MEDIA_ATTEMPTS, DownstreamForwarder
from switchboard.routing.incoming_post import HELPDESK_MAX_BYTES
from tools.support.downstream import FakeDownstream
from tools.support.fakes import FakeDownstreams, FakeForwardAttempts, FakeMedia, FakeMessageLinks

TARGET = DownstreamTarget(base_url="https://cw.example", account_id=1, inbox_id=2, api_token="t", source="tenant")
PNG = files.png()
REF = MediaRef(key="acme/main/x/y", sha256=hashlib.sha256(PNG).hexdigest(), mime_type="image/png", size=len(PNG))


class Outcomes:
    def __init__(self) -> None:
        self.reported: list[tuple[str, ...]] = []

    def forwarded(self, event_key: str) -> None:
        self.reported.append(("forwarded", event_key))

    def forwarded_with_placeholder(self, event_key: str, reason: str) -> None:
        self.reported.append(("placeholder", event_key, reason))

    def no_downstream(self, event_key: str) -> None:
        self.reported.append(("no_downstream", event_key))

    def failed(self, event_key: str, reason: str) -> None:
        self.reported.append(("failed", event_key, reason))


class World:
    def __init__(self, transport: httpx.BaseTransport | None = None) -> None:
        self.fake = FakeDownstream()
        self.media = FakeMedia({"3EB0IMG": (REF, PNG)})
        self.links = FakeMessageLinks()
        self.outcomes = Outcomes()
        self.attempts = FakeForwardAttempts()
        self.transport = transport or self.fake.transport()

    def forwarder(self, reserve_seconds: float = 15) -> DownstreamForwarder:
        client = ChatwootClient(local_mode=True, transport=self.transport)
        return DownstreamForwarder(
            FakeDownstreams(TARGET),
            client,
            self.attempts,
            outcomes=self.outcomes,
            media=self.media,
            links=self.links,
            reserve_seconds=reserve_seconds,
        )

    def posted(self) -> list[dict[str, Any]]:
        return [message for messages in self.fake.posted.values() for message in messages]


def message(provider_id: str, content: Any, *, reply_to: str | None = None) -> IncomingMessage:
    return IncomingMessage(
        event_id=f"evt-{provider_id}",
        instance="acme:main",
        owner_tag="acme",
        provider_message_id=provider_id,
        sender="5511988887777",
        text="(as text)",
        content=content,
        reply_to=reply_to,
    )


PHOTO = MediaMessage(media=Media(kind="image", mime_type="image/jpeg", caption="Segue a foto"))


def test_a_photo_is_posted_with_its_caption_its_outcome_forwarded_and_its_ids_linked() -> None:
    world = World()

    conversation = world.forwarder().forward(message("3EB0IMG", PHOTO))

    [posted] = world.posted()
    assert posted["content"] == "Segue a foto" and posted["source_id"] == "3EB0IMG"
    [upload] = world.fake.message_uploads(posted)
    assert (upload.file_name, upload.content_type, upload.data) == ("image.png", "image/png", PNG)
    assert world.outcomes.reported == [("forwarded", "evt-3EB0IMG")]
    link = world.links.by_provider_id("acme:main", "3EB0IMG")
    assert (link.conversation_id, link.downstream_message_id, link.direction) == (conversation, posted["id"], "in")


def test_a_file_a_later_try_may_get_is_retried_by_the_queue_then_becomes_a_placeholder() -> None:
    world = World()
    world.media.errors["3EB0IMG"] = [MediaUnavailable("provider_error", "503", retryable=True)] * MEDIA_ATTEMPTS
    job = message("3EB0IMG", PHOTO)

    for receive in range(1, MEDIA_ATTEMPTS):
        with pytest.raises(MediaUnavailable):
            world.forwarder().forward(job, receive_count=receive)
        assert world.posted() == [] and world.outcomes.reported == []
    world.forwarder().forward(job, receive_count=MEDIA_ATTEMPTS)

    [posted] = world.posted()
    assert posted["content"] == "[imagem indisponível: o provedor não entregou o arquivo]\nSegue a foto"
    assert "attachments" not in posted
    assert world.outcomes.reported == [("placeholder", "evt-3EB0IMG", "provider_error")]
    assert len(world.media.resolved) == MEDIA_ATTEMPTS


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (MediaUnavailable("not_found", "404"), "not_found"),
        (MediaUnavailable("expired", "gone"), "expired"),
        (MediaUnavailable("bad_type", "an executable"), "bad_type"),
        (NotFound("the instance is no longer in the catalog"), "no_source"),
    ],
)
def test_a_file_no_retry_can_get_is_a_placeholder_at_once(error: Exception, reason: str) -> None:
    world = World()
    world.media.errors["3EB0IMG"] = [error]

    world.forwarder().forward(message("3EB0IMG", PHOTO))

    [posted] = world.posted()
    assert posted["content"].startswith("[imagem indisponível: ") and posted["content"].endswith("\nSegue a foto")
    assert world.outcomes.reported == [("placeholder", "evt-3EB0IMG", reason)]


def test_a_failure_of_the_bucket_itself_is_retried_and_told_on_the_last_try() -> None:
    world = World()
    world.media.errors["3EB0IMG"] = [RuntimeError("S3 down")] * MEDIA_ATTEMPTS
    job = message("3EB0IMG", PHOTO)

    with pytest.raises(RuntimeError):
        world.forwarder().forward(job, receive_count=1)
    world.forwarder().forward(job, receive_count=MEDIA_ATTEMPTS)

    assert world.outcomes.reported == [("placeholder", "evt-3EB0IMG", "provider_error")]


def test_a_file_announced_over_the_helpdesks_limit_is_not_fetched() -> None:
    world = World()
    document = MediaMessage(media=Media(kind="document", file_name="planta.pdf", size=HELPDESK_MAX_BYTES + 1))

    world.forwarder().forward(message("3EB0BIG", document))

    [posted] = world.posted()
    assert posted["content"] == "[documento indisponível: o arquivo passa do limite de 40 MB do helpdesk] planta.pdf"
    assert world.media.resolved == []
    assert world.outcomes.reported == [("placeholder", "evt-3EB0BIG", "helpdesk_limit")]


def test_a_file_refused_at_the_ingest_is_a_placeholder_and_nothing_is_fetched() -> None:
    world = World()
    refused = MediaMessage(media=Media(kind="image", caption="RG", unavailable="too_large"))

    world.forwarder().forward(message("3EB0REF", refused))

    assert world.posted()[0]["content"].startswith("[imagem indisponível: o arquivo passa do limite do WhatsApp")
    assert world.media.resolved == []


def test_given_a_multipart_post_whose_answer_was_lost_then_the_redelivery_posts_nothing_and_links_it() -> None:
    fake = FakeDownstream()
    inner = fake.transport()
    lost: list[httpx.Request] = []

    def losing(request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and request.url.path.endswith("/messages") and not lost:
            lost.append(request)
            inner.handle_request(request)  # applied by the helpdesk; its answer never comes back
            raise httpx.ReadTimeout("no answer", request=request)
        return inner.handle_request(request)

    world = World(httpx.MockTransport(losing))
    world.fake = fake
    job = message("3EB0IMG", PHOTO)

    with pytest.raises(DownstreamError):
        world.forwarder().forward(job)
    world.forwarder().forward(job, receive_count=2)

    [posted] = world.posted()
    assert world.fake.message_uploads(posted)[0].data == PNG
    assert world.links.by_provider_id("acme:main", "3EB0IMG").downstream_message_id == posted["id"]
    assert world.outcomes.reported[-1] == ("forwarded", "evt-3EB0IMG")


def test_a_quote_and_a_reaction_of_a_forwarded_message_are_threaded_to_it() -> None:
    world = World()
    world.forwarder().forward(message("3EB0IMG", PHOTO))

    world.forwarder().forward(message("3EB0TXT", Text(body="é esse o modelo?"), reply_to="3EB0IMG"))
    world.forwarder().forward(message("3EB0REA", Reaction(target_id="3EB0IMG", emoji="❤️")))

    photo, quote, reaction = world.posted()
    assert quote["content_attributes"]["in_reply_to"] == photo["id"]
    assert (reaction["content"], reaction["content_attributes"]["in_reply_to"]) == ("Reagiu com ❤️", photo["id"])


def test_a_job_queued_before_contents_existed_is_posted_as_its_text() -> None:
    world = World()
    old = message("3EB0OLD", None).model_copy(update={"text": "oi, tudo bem?"})

    world.forwarder().forward(old)

    assert world.posted()[0]["content"] == "oi, tudo bem?"


def test_a_file_becomes_a_placeholder_before_its_job_could_reach_the_dead_letter_queue() -> None:
    queues = template.resources("AWS::SQS::Queue")
    forward = queues["ForwardQueue"]

    assert int(forward["RedrivePolicy"]["maxReceiveCount"]) > MEDIA_ATTEMPTS
    # Lambda's advice for a queue it polls: a visibility of six times the function's timeout.
    forwarder = template.resources("AWS::Serverless::Function")["ForwarderFunction"]
    assert int(forward["VisibilityTimeout"]) >= 6 * int(forwarder["Timeout"])
    assert forward["FifoQueue"] is True and queues["ForwardDLQ"]["FifoQueue"] is True  # a FIFO's DLQ is FIFO


class Clock:
    """A monotonic clock that moves only when told: the invocation's time, without waiting."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class SlowMedia(FakeMedia):
    """A provider that needs `seconds` to hand a file over: the fetch stops at its deadline, as
    the resolver's does (`too_slow`, retryable), the clock having run until then."""

    def __init__(self, clock: Clock, seconds: float) -> None:
        super().__init__({"3EB0IMG": (REF, PNG)})
        self.clock = clock
        self.seconds = seconds

    def resolve(
        self, owner_tag: str | None, instance: str, message_id: str, media: Any, *, deadline: Any = None
    ) -> Any:
        if media.stored is not None:  # in the bucket already (inline, or fetched before): no fetch
            return media.stored
        if deadline is not None and self.clock.now + self.seconds > deadline.at:
            self.clock.now = max(self.clock.now, deadline.at)
            self.resolved.append(message_id)
            self.deadlines.append(deadline)
            raise MediaUnavailable("too_slow", "stopped at the deadline", retryable=True)
        self.clock.now += self.seconds
        return super().resolve(owner_tag, instance, message_id, media, deadline=deadline)


def test_a_file_too_slow_for_the_invocation_is_retried_then_a_placeholder_posted_before_it_ends() -> None:
    clock = Clock()
    world = World()
    world.media = SlowMedia(clock, seconds=100)
    job = message("3EB0IMG", PHOTO)

    for receive in range(1, MEDIA_ATTEMPTS):
        with pytest.raises(MediaUnavailable):
            world.forwarder().forward(job, receive_count=receive, deadline=Deadline(clock.now + 60, clock))
        assert world.posted() == []
    ends = Deadline(clock.now + 60, clock)
    world.forwarder(reserve_seconds=15).forward(job, receive_count=MEDIA_ATTEMPTS, deadline=ends)

    [posted] = world.posted()
    assert posted["content"] == "[imagem indisponível: o provedor demorou demais para entregar o arquivo]\nSegue a foto"
    assert world.outcomes.reported == [("placeholder", "evt-3EB0IMG", "too_slow")]
    assert world.media.deadlines[-1].at == ends.at - 15  # the fetch stopped with 15 s left to post
    assert not ends.passed()


def test_a_file_fetched_in_time_is_posted_and_its_fetch_kept_the_posts_time() -> None:
    clock = Clock()
    world = World()
    world.media = SlowMedia(clock, seconds=40)

    world.forwarder(reserve_seconds=15).forward(message("3EB0IMG", PHOTO), deadline=Deadline(60, clock))

    assert world.fake.message_uploads(world.posted()[0])[0].data == PNG
    assert world.outcomes.reported == [("forwarded", "evt-3EB0IMG")]


def test_a_file_with_no_time_left_to_fetch_is_put_back_untried_even_on_its_last_receive() -> None:
    clock = Clock()
    world = World()
    world.media = SlowMedia(clock, seconds=1)
    nearly_over = Deadline(10, clock)  # the invocation's earlier messages used the rest

    with pytest.raises(MediaUnavailable) as put_back:
        world.forwarder(reserve_seconds=15).forward(
            message("3EB0IMG", PHOTO), receive_count=MEDIA_ATTEMPTS + 1, deadline=nearly_over
        )
    inline = PHOTO.model_copy(update={"media": PHOTO.media.model_copy(update={"stored": REF})})
    world.forwarder(reserve_seconds=15).forward(message("3EB0IMG", inline), deadline=nearly_over)

    assert (put_back.value.reason, put_back.value.retryable) == ("too_slow", True)
    assert world.media.resolved == []  # nothing was fetched
    assert world.outcomes.reported == [("forwarded", "evt-3EB0IMG")]
