"""An agent's reply outside the contact's customer-service window on a Cloud API instance.

A Cloud API number sends free-form text only within 24 h of the contact's last message to it
(`messages/window.py`); Meta refuses anything else but a template (131047). Such a reply is not
sent as text: when the instance has a re-engagement template (`Instance.reengagement_template`, an
approved template without parameters) it is sent instead and the agent's private note says so;
otherwise the note asks the agent for a template. Either way the helpdesk hears of it at once,
never a silent failure. The window is read from the contact's heard marks (one read, for a Cloud
API instance's reply only); Meta's own 131047 answer, when the marks were behind, leads here too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from switchboard.core.clock import utcnow
from switchboard.core.errors import ProviderError
from switchboard.core.observability import logger
from switchboard.messages.window import OUTSIDE_SERVICE_WINDOW, has_window, window_of
from switchboard.providers.content import Template

if TYPE_CHECKING:
    from switchboard.catalog.domain import Instance
    from switchboard.pool.domain import Affinity
    from switchboard.providers.base import ProviderClient, ProviderTarget, SentMessage
    from switchboard.routing.domain import DownstreamClient, DownstreamTarget
    from switchboard.routing.records import OutboxEntry

NO_TEMPLATE_NOTE = "fora da janela de 24 h: envie um modelo"
TEMPLATE_SENT_NOTE = "fora da janela de 24 h: enviado o modelo {name} ({language}) no lugar da resposta"


class Heard(Protocol):
    def affinity(self, tenant: str, recipient: str) -> Affinity | None: ...


class Downstreams(Protocol):
    def target_for(self, owner_tag: str | None) -> DownstreamTarget | None: ...


class ReplyWindow:
    def __init__(self, heard: Heard, downstreams: Downstreams, downstream_client: DownstreamClient) -> None:
        self._heard = heard
        self._downstreams = downstreams
        self._downstream_client = downstream_client

    def closed(self, instance: Instance, phone: str, kind: str) -> bool:
        """Whether a reply through `instance` (of `kind`) to `phone` falls outside the window; a
        heard mark that cannot be read lets the reply try (Meta's answer decides)."""
        if not has_window(kind):
            return False
        try:
            affinity = self._heard.affinity(instance.tenant, phone)
        except Exception:
            logger.exception("heard marks unreadable", extra={"instance": instance.key})
            return False
        return not window_of(affinity, instance.number_id).is_open(utcnow())

    def reengage(
        self, instance: Instance, entry: OutboxEntry, client: ProviderClient, target: ProviderTarget
    ) -> tuple[str, str | None]:
        """The reply is not sent: the instance's re-engagement template instead, if it has one.
        Returns the reason to record, and the template's provider message id when it left; the
        agent's private note says which."""
        template = instance.reengagement_template
        sent: SentMessage | None = None
        if template is not None:
            content = Template(name=template.name, language=template.language)
            try:
                sent = client.send_content(target, entry.phone, content, f"reengage-{instance.key}-{entry.message_id}")
            except ProviderError as exc:
                logger.info("re-engagement template refused", extra={"instance": instance.key, "error": exc.code})
        if sent is not None and template is not None:
            note = TEMPLATE_SENT_NOTE.format(name=template.name, language=template.language)
            reason = f"{OUTSIDE_SERVICE_WINDOW}: template {template.name} ({template.language}) sent instead"
        else:
            note, reason = NO_TEMPLATE_NOTE, OUTSIDE_SERVICE_WINDOW
        self._note(instance, entry, note)
        return reason, sent.provider_message_id if sent is not None else None

    def _note(self, instance: Instance, entry: OutboxEntry, note: str) -> None:
        if entry.conversation_id is None:
            return
        try:
            target = self._downstreams.target_for(instance.owner_tag)
            if target is not None:
                self._downstream_client.post_note(target, entry.conversation_id, note)
        except Exception as exc:
            logger.warning("window note not posted", extra={"instance": instance.key, "error": type(exc).__name__})
