"""The customer's answer to reply buttons or a list: the option's id and title, whatever the kind.

When an interactive message is SENT, its options are kept as the open menu of (number, contact)
(`OpenMenu`, the latest replacing the one before, kept `MENU_DAYS`): which message asked, which
API key sent it, and whether the kind delivered it natively or as a numbered text menu.

At the ingest, before an incoming message is stored, `Answers.resolve` reads the open menu of
the number and the sender (one read, only for a choice or a text that is a number):
- a text menu answered by its number (`2`) becomes the `Choice` of that option (its id and
  title) within `ANSWER_HOURS` of the menu: the helpdesk and the message log see the choice;
- a native tap (Meta's `button_reply`/`list_reply`, Evolution's `listResponseMessage`) already
  carries the option's id and title.
Either way the event's data names the message it answers (`answers`), and after the event is
accepted the API key that sent the menu gets a client webhook `message.choice`. A menu that
cannot be read leaves the message as it came (a text reaches the agent as a text).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

from pydantic import ConfigDict, Field

from switchboard.catalog.domain import Instance
from switchboard.catalog.events import ProviderEvent
from switchboard.core.clock import utcnow
from switchboard.core.model import Model
from switchboard.core.observability import logger
from switchboard.core.ports import JobQueue
from switchboard.messages.domain import ClientWebhookJob, Message, recipient_digits
from switchboard.providers.content import Choice, Interactive, Option, Text, content_data, content_from
from switchboard.providers.kinds import spec_for
from switchboard.providers.menu import choice_for

MENU_DAYS = 7  # a native button or row may be tapped days later
ANSWER_HOURS = 24  # a number typed later than this is a text, not an answer
CHOICE_EVENT = "message.choice"


class OpenMenu(Model):
    """The options of the last interactive message a number sent a contact."""

    model_config = ConfigDict(frozen=True)

    tenant: str
    number_id: str
    number: str  # the number's digits, for the client webhook
    contact: str
    message_id: str
    api_key_id: str
    kind: Literal["buttons", "list"]
    native: bool  # delivered as buttons or a list; False: as a numbered text menu
    options: list[Option] = Field(default_factory=list)
    sent_at: datetime


class MenuStore(Protocol):
    def remember(self, menu: OpenMenu) -> None:
        """Keep `menu` as the open one of its (number, contact), unless a newer one is kept."""
        ...

    def open_menu(self, tenant: str, number_id: str, contact: str) -> OpenMenu | None: ...


class Menus:
    """The send worker's side: an interactive message just SENT becomes the open menu."""

    def __init__(self, store: MenuStore) -> None:
        self._store = store

    def sent(self, message: Message, *, number_id: str, number: str, kind: str) -> None:
        content = message.content
        if not isinstance(content, Interactive) or message.sent_at is None:
            return
        menu = OpenMenu(
            tenant=message.tenant,
            number_id=number_id,
            number=number,
            contact=message.to,
            message_id=message.id,
            api_key_id=message.api_key_id,
            kind=content.kind,
            native=content.kind in spec_for(kind).interactive_native,
            options=content.options(),
            sent_at=message.sent_at,
        )
        try:
            self._store.remember(menu)
        except Exception:  # the send stands; a typed answer then reaches the agent as a text
            logger.exception("open menu not kept", extra={"message_id": message.id})


class Answers:
    """The ingest's side: an incoming message read as the answer to the open menu."""

    def __init__(self, store: MenuStore, clock: Callable[[], datetime] = utcnow) -> None:
        self._store = store
        self._clock = clock

    def resolve(self, instance: Instance, data: dict[str, Any]) -> dict[str, Any]:
        """`data` with a typed answer as the option chosen, and the message it answers; as it
        came when it answers none."""
        sender = data.get("from")
        contact = recipient_digits(sender) if isinstance(sender, str) else None
        try:
            content = content_from(data)
        except ValueError:
            return data
        if contact is None or not _may_answer(content):
            return data
        try:
            menu = self._store.open_menu(instance.tenant, instance.number_id, contact)
        except Exception:
            logger.exception("open menu unreadable", extra={"instance": instance.key})
            return data
        if menu is None:
            return data
        choice = self._choice(menu, content)
        if choice is None:
            return data
        answered = {"messageId": menu.message_id, "apiKeyId": menu.api_key_id, "number": menu.number}
        return {**data, "content": content_data(choice), "answers": answered}

    def _choice(self, menu: OpenMenu, content: Any) -> Choice | None:
        source: Literal["button", "list"] = "button" if menu.kind == "buttons" else "list"
        if isinstance(content, Choice):
            option = next((o for o in menu.options if o.id == content.id), None)
            if option is None:
                return None
            return content if content.title else content.model_copy(update={"title": option.title})
        if menu.native or self._clock() - menu.sent_at > timedelta(hours=ANSWER_HOURS):
            return None
        option = choice_for(content.body, menu.options)
        return None if option is None else Choice(source=source, id=option.id, title=option.title)


def _may_answer(content: object) -> bool:
    """A tap on a button or a row, or a short text that may be an option's number."""
    if isinstance(content, Choice):
        return content.source in ("button", "list") and content.id is not None
    return isinstance(content, Text) and len(content.body) <= 8 and any(ch.isdigit() for ch in content.body)


class ChoiceWebhooks:
    """After an answer's acceptance: the `message.choice` client webhook of the key that asked."""

    def __init__(self, queue: JobQueue) -> None:
        self._queue = queue

    def __call__(self, event: ProviderEvent) -> None:
        answered = event.data.get("answers")
        if not isinstance(answered, dict):
            return
        try:
            choice = content_from(event.data)
        except ValueError:
            return
        if not isinstance(choice, Choice):
            return
        digest = hashlib.sha256(f"{event.provider_id}\n{event.instance.key}\n{event.event_id}".encode()).hexdigest()
        job = ClientWebhookJob(
            id=f"whk_{digest[:20]}",  # the same for every redelivery of the event
            tenant=event.instance.tenant,
            api_key_id=str(answered.get("apiKeyId")),
            event=CHOICE_EVENT,
            timestamp=event.received_at,
            data={
                "messageId": answered.get("messageId"),
                "from": event.data.get("from"),
                "destinationNumber": answered.get("number"),
                "choice": {"id": choice.id, "title": choice.title, "source": choice.source},
                "providerMessageId": event.data.get("id"),
                "receivedAt": event.received_at.isoformat(),
            },
        )
        try:
            self._queue.send(job.model_dump_json(exclude_none=True))
        except Exception:  # the answer itself is accepted and forwarded: the webhook is best effort
            logger.exception("choice client webhook not queued", extra={"instance": event.instance.key})
