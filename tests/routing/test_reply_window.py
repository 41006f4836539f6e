"""An agent's reply through a Cloud API instance outside the contact's 24-hour window: never sent as
text; the instance's re-engagement template instead when it has one (the note says so), else the
agent's private note asks for a template. Meta's own 131047 leads the same way; inside the window,
or through an unofficial kind, the reply leaves as usual."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from switchboard.catalog.domain import TemplateRef
from switchboard.core.errors import ProviderRejected
from switchboard.pool.domain import Affinity
from switchboard.providers.base import ProviderTarget, SentMessage
from switchboard.providers.content import Content, Template
from switchboard.providers.kinds import ProviderKind
from switchboard.routing.outbox import OutboxService
from switchboard.routing.reply_window import NO_TEMPLATE_NOTE, ReplyWindow
from switchboard.usage.service import UsageRecorder
from tests.routing.test_outbox_rules import INSTANCE, NOW, TARGET, queue
from tools.support.fakes import (
    FakeAudit,
    FakeCatalog,
    FakeDownstreamClient,
    FakeDownstreams,
    FakeOutboxStore,
    FakeProvider,
    FakeTargets,
    FakeUsageStore,
)

CONTACT = "5511988887777"


class CloudProvider(FakeProvider):
    """Records texts (`sent`) and contents (`contents`)."""

    def __init__(self) -> None:
        super().__init__()
        self.contents: list[Content] = []

    def send_content(
        self, target: ProviderTarget, phone: str, content: Content, idempotency_key: str, **_: Any
    ) -> SentMessage:
        self.contents.append(content)
        return SentMessage(provider_message_id=f"wamid-t{len(self.contents)}")


class Heard:
    def __init__(self, ago: timedelta | None) -> None:
        self.ago = ago

    def affinity(self, tenant: str, recipient: str) -> Affinity | None:
        if self.ago is None:
            return None
        return Affinity(heard={INSTANCE.number_id: datetime.now(UTC) - self.ago})


def outbox(
    provider: FakeProvider, *, heard: timedelta | None, kind: ProviderKind = "meta", template: TemplateRef | None = None
) -> tuple[OutboxService, FakeOutboxStore, FakeDownstreamClient]:
    store, notes = FakeOutboxStore(), FakeDownstreamClient()
    state = INSTANCE.model_copy(update={"reengagement_template": template})
    downstreams = FakeDownstreams(TARGET)
    service = OutboxService(
        store,
        FakeCatalog([state]),
        FakeTargets(provider, kind=kind),
        usage=UsageRecorder(FakeUsageStore()),
        downstreams=downstreams,
        downstream_client=notes,
        audit=FakeAudit(),
        clock=lambda: NOW,  # the replies were queued just now
        window=ReplyWindow(Heard(heard), downstreams, notes),
    )
    return service, store, notes


def test_outside_the_window_the_reply_is_not_sent_and_the_agent_is_asked_for_a_template() -> None:
    provider = CloudProvider()
    service, store, notes = outbox(provider, heard=timedelta(hours=25))
    queue(store, "segue o boleto")

    service.drain(INSTANCE.key)

    assert provider.sent == [] and provider.contents == []
    assert notes.notes == [(55, NO_TEMPLATE_NOTE)] and NO_TEMPLATE_NOTE == "fora da janela de 24 h: envie um modelo"
    outcome = store.outcome(INSTANCE.key, "m0")
    assert outcome is not None and (outcome.status, outcome.reason) == ("FAILED", "outside_service_window")


def test_with_a_re_engagement_template_it_is_sent_instead_and_the_note_says_so() -> None:
    provider = CloudProvider()
    service, store, notes = outbox(provider, heard=None, template=TemplateRef(name="hello_world", language="en_US"))
    queue(store, "segue o boleto")

    service.drain(INSTANCE.key)

    assert provider.sent == [] and provider.contents == [Template(name="hello_world", language="en_US")]
    assert notes.notes == [(55, "fora da janela de 24 h: enviado o modelo hello_world (en_US) no lugar da resposta")]
    outcome = store.outcome(INSTANCE.key, "m0")
    assert outcome is not None and outcome.status == "SENT"


@pytest.mark.parametrize(("kind", "heard"), [("meta", timedelta(hours=23)), ("wuzapi", None)])
def test_inside_the_window_or_through_an_unofficial_kind_the_reply_leaves_as_text(
    kind: ProviderKind, heard: timedelta | None
) -> None:
    provider = CloudProvider()
    service, store, notes = outbox(provider, heard=heard, kind=kind)
    queue(store, "segue o boleto")

    service.drain(INSTANCE.key)

    assert provider.bodies == ["segue o boleto"] and notes.notes == []


def test_metas_131047_on_a_reply_goes_the_windows_way() -> None:
    provider = CloudProvider()
    provider.failures["segue o boleto"] = [
        ProviderRejected("refused", code="outside_service_window", provider_code="131047")
    ]
    service, store, notes = outbox(provider, heard=timedelta(hours=1))  # our marks say open; Meta knows better
    queue(store, "segue o boleto")

    service.drain(INSTANCE.key)

    assert notes.notes == [(55, NO_TEMPLATE_NOTE)]
    outcome = store.outcome(INSTANCE.key, "m0")
    assert outcome is not None and outcome.reason == "outside_service_window"
