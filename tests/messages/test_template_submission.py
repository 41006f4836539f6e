"""A template submitted to the send API: checked before anything is stored (a refusal stores and
queues nothing), its header's file taken into the media bucket, its job marked a template's; the
send worker then uploads that file to the Cloud API number and names it in the template."""

from __future__ import annotations

import json

import pytest
from aws_lambda_powertools.utilities.idempotency.persistence.base import BasePersistenceLayer

from switchboard.core.errors import InvalidTemplate
from switchboard.core.identity import Principal, Scope
from switchboard.messages.domain import MessageStatus, SendJob
from switchboard.messages.service import MediaSource, MessageService, submission_idempotency_config
from switchboard.providers.content import (
    Interactive,
    Media,
    MediaKind,
    MediaRef,
    Option,
    Template,
    TemplateComponent,
    TemplateParameter,
)
from tests.messages.test_send_content import NUMBERS, REF, World
from tools.support.fakes import FakeMessages

SENDER = Principal(tenant="acme", key_id="key_1", scopes=frozenset({Scope.SEND}))
HEADER = TemplateComponent(
    type="header", parameters=[TemplateParameter(type="document", media=Media(kind="document", file_name="r.pdf"))]
)
ORDER = Template(name="order_confirmation", language="en_US", components=[HEADER])


class Checks:
    def __init__(self, refuse: str | None = None) -> None:
        self.refuse = refuse
        self.checked: list[Template] = []

    def check(self, tenant: str, api_key_id: str, template: Template) -> None:
        self.checked.append(template)
        if self.refuse and template.name == self.refuse:
            raise InvalidTemplate(f"template {template.name}: the body takes 2 parameters, got 1")


class Queue:
    def __init__(self) -> None:
        self.jobs: list[SendJob] = []

    def send(self, body: str) -> None:
        self.jobs.append(SendJob.model_validate_json(body))


class Bucket:
    def claim(self, tenant: str, media_id: str, kind: MediaKind) -> MediaRef:
        assert (media_id, kind) == ("med_0123456789abcdef", "document")
        return REF

    def fetch_url(self, tenant: str, url: str, kind: MediaKind, file_name: str | None = None) -> MediaRef:
        raise AssertionError("not used")


def service(checks: Checks) -> tuple[MessageService, FakeMessages, Queue]:
    messages, queue = FakeMessages(), Queue()
    persistence: BasePersistenceLayer = None  # type: ignore[assignment]  # no Idempotency-Key: never used
    built = MessageService(
        messages, queue, persistence, submission_idempotency_config(), media=Bucket(), templates=checks
    )
    return built, messages, queue


def test_a_template_that_does_not_fit_stores_and_queues_nothing() -> None:
    send, messages, queue = service(Checks(refuse="order_confirmation"))

    with pytest.raises(InvalidTemplate):
        send.submit(
            SENDER, "5511988880001", None, None, content=ORDER, media=MediaSource(media_id="med_0123456789abcdef")
        )
    with pytest.raises(InvalidTemplate):
        send.submit(SENDER, "5511988880001", "oi", None, fallback_template=ORDER)

    assert messages.items == {} and queue.jobs == []


def test_a_template_is_stored_with_its_header_file_in_the_bucket_and_its_job_says_so() -> None:
    checks = Checks()
    send, messages, queue = service(checks)
    hello = Template(name="hello_world", language="en_US")

    accepted = send.submit(
        SENDER, "5511988880001", None, None, content=ORDER, media=MediaSource(media_id="med_0123456789abcdef")
    )
    text = send.submit(SENDER, "5511988880002", "oi", None, fallback_template=hello)

    stored = messages.items[accepted.id]
    assert isinstance(stored.content, Template) and stored.content.header_media() is not None
    assert stored.content.header_media().stored == REF  # type: ignore[union-attr]
    assert stored.trace[0].data["template"] == {"name": "order_confirmation", "language": "en_US"}
    assert [job.template for job in queue.jobs] == [True, None]
    assert messages.items[text.id].fallback_template == hello and messages.items[text.id].content is None
    assert checks.checked == [ORDER, hello]


def test_the_worker_uploads_the_header_file_to_the_number_and_names_it_in_the_template() -> None:
    world = World()
    world.config = world.config.model_copy(update={"pool": [NUMBERS[2]]})
    stored = ORDER.with_header_media(Media(kind="document", file_name="r.pdf", stored=REF, mime_type="application/pdf"))

    sent = world.send(stored)

    assert sent.status is MessageStatus.SENT
    (upload_path, _), (_, body) = world.bodies("meta")
    assert upload_path.endswith("/media")
    assert json.loads(body)["template"]["components"] == [
        {
            "type": "header",
            "parameters": [{"type": "document", "document": {"id": "meta-media-1", "filename": "r.pdf"}}],
        }
    ]


def test_reply_buttons_file_header_is_taken_into_the_bucket_as_a_media_messages_file_is() -> None:
    send, messages, queue = service(Checks())
    header = Media(kind="document", file_name="menu.pdf")
    buttons = Interactive(kind="buttons", body="Confirma?", header_media=header, buttons=[Option(id="y", title="Sim")])

    accepted = send.submit(
        SENDER, "5511988880001", None, None, content=buttons, media=MediaSource(media_id="med_0123456789abcdef")
    )

    stored = messages.items[accepted.id].content
    assert isinstance(stored, Interactive) and stored.header_media is not None
    assert (stored.header_media.stored, stored.header_media.file_name) == (REF, "menu.pdf")
    assert stored.header_media.mime_type == REF.mime_type
    assert [job.template for job in queue.jobs] == [None]
