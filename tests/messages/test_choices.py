"""A customer's answer to the menu their number sent them: a typed number on a text menu, or a
native tap, becomes the option's id and title on the incoming message, names the message it
answers, and goes to the sending key's client webhook once per event."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from switchboard.messages.choices import Answers, ChoiceWebhooks, Menus, OpenMenu
from switchboard.messages.domain import ClientWebhookJob, Message, MessageStatus, body_hash
from switchboard.providers.content import Choice, Interactive, Option, Section, Text, content_data, content_from
from tools.support.builders import instance, provider_event

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)
INSTANCE = instance("acme-4", provider_instance_id="acme-4", number_id="num_4")
OPTIONS = [Option(id="slot-09", title="09:00"), Option(id="slot-15", title="15:00")]


class Store:
    def __init__(self) -> None:
        self.menus: dict[tuple[str, str, str], OpenMenu] = {}
        self.reads = 0

    def remember(self, menu: OpenMenu) -> None:
        self.menus[(menu.tenant, menu.number_id, menu.contact)] = menu

    def open_menu(self, tenant: str, number_id: str, contact: str) -> OpenMenu | None:
        self.reads += 1
        return self.menus.get((tenant, number_id, contact))


def sent_menu(store: Store, *, native: bool, ago: timedelta = timedelta(minutes=5)) -> None:
    store.remember(
        OpenMenu(
            tenant="acme",
            number_id="num_4",
            number="5511900000004",
            contact="5511988887777",
            message_id="msg_menu",
            api_key_id="key_1",
            kind="list",
            native=native,
            options=OPTIONS,
            sent_at=NOW - ago,
        )
    )


def incoming(content: Any) -> dict[str, Any]:
    return {"id": "3EB0IN", "from": "5511988887777", "content": content_data(content)}


def test_a_typed_number_on_a_text_menu_becomes_the_option_and_names_the_message_it_answers() -> None:
    store = Store()
    sent_menu(store, native=False)

    data = Answers(store, clock=lambda: NOW).resolve(INSTANCE, incoming(Text(body=" 2 ")))

    assert content_from(data) == Choice(source="list", id="slot-15", title="15:00")
    assert data["answers"] == {"messageId": "msg_menu", "apiKeyId": "key_1", "number": "5511900000004"}


def test_a_native_tap_keeps_its_words_and_names_the_message_a_number_does_not_answer_it() -> None:
    store = Store()
    sent_menu(store, native=True)
    answers = Answers(store, clock=lambda: NOW)

    tapped = answers.resolve(INSTANCE, incoming(Choice(source="list", id="slot-09", title="09:00")))
    typed = answers.resolve(INSTANCE, incoming(Text(body="1")))

    assert content_from(tapped) == Choice(source="list", id="slot-09", title="09:00")
    assert tapped["answers"]["messageId"] == "msg_menu"
    assert "answers" not in typed and content_from(typed) == Text(body="1")


def test_what_answers_no_menu_is_left_as_it_came_and_a_plain_text_costs_no_read() -> None:
    store = Store()
    sent_menu(store, native=False, ago=timedelta(hours=25))
    answers = Answers(store, clock=lambda: NOW)

    late = answers.resolve(INSTANCE, incoming(Text(body="2")))
    out_of_range = answers.resolve(INSTANCE, incoming(Text(body="7")))
    reads = store.reads
    words = answers.resolve(INSTANCE, incoming(Text(body="bom dia, tudo bem?")))

    assert late == incoming(Text(body="2")) and out_of_range == incoming(Text(body="7"))
    assert words == incoming(Text(body="bom dia, tudo bem?")) and store.reads == reads


def test_a_sent_interactive_message_becomes_the_open_menu_native_as_its_kind_delivers_it() -> None:
    store = Store()
    content = Interactive(kind="list", body="Qual?", button="Ver", sections=[Section(rows=OPTIONS)])
    message = Message(
        tenant="acme",
        id="msg_menu",
        api_key_id="key_1",
        to="5511988887777",
        text="x",
        content=content,
        body_hash=body_hash("5511988887777", "x"),
        status=MessageStatus.SENT,
        sent_at=NOW,
    )

    Menus(store).sent(message, number_id="num_4", number="5511900000004", kind="evolution")

    kept = store.menus[("acme", "num_4", "5511988887777")]
    assert (kept.native, kept.options, kept.kind) == (True, OPTIONS, "list")
    Menus(store).sent(
        message.model_copy(update={"content": content.model_copy(update={"kind": "buttons"})}),
        number_id="num_4",
        number="5511900000004",
        kind="evolution",
    )
    assert store.menus[("acme", "num_4", "5511988887777")].native is False


class Queue:
    def __init__(self) -> None:
        self.bodies: list[str] = []

    def send(self, body: str) -> None:
        self.bodies.append(body)


def test_the_answer_goes_to_the_key_that_sent_the_menu_with_one_webhook_id_per_event() -> None:
    queue = Queue()
    data = {
        **incoming(Choice(source="list", id="slot-15", title="15:00")),
        "answers": {"messageId": "msg_menu", "apiKeyId": "key_1", "number": "5511900000004"},
    }
    event = provider_event(INSTANCE, "message", data, event_id="e1", received_at=NOW)

    ChoiceWebhooks(queue)(event)
    ChoiceWebhooks(queue)(event)  # a redelivery
    ChoiceWebhooks(queue)(event.model_copy(update={"data": incoming(Text(body="oi"))}))

    first, again = (ClientWebhookJob.model_validate_json(body) for body in queue.bodies)
    assert first == again and first.event == "message.choice" and first.api_key_id == "key_1"
    assert first.data["choice"] == {"id": "slot-15", "title": "15:00", "source": "list"}
    assert (first.data["messageId"], first.data["from"], first.data["destinationNumber"]) == (
        "msg_menu",
        "5511988887777",
        "5511900000004",
    )
