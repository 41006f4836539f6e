"""What WhatsApp says of an agent's reply (delivered, read, failed), shown on it in the helpdesk.

Chatwoot lets an API-channel inbox set a message's status (`PATCH .../messages/{id}`,
`MessagesController#update`: `sent`, `delivered`, `read` or `failed`, with `external_error`
for a failure, shown beside the message; `Messages::StatusUpdateService` keeps `read` over a late
`delivered`). A receipt names the WhatsApp id of one part of a reply; the message map
(`MessageLinks`, written as each part leaves) gives its downstream message. A receipt of any other
message (one sent through the API, a customer's) is not a reply's and changes nothing here.

The status is shown best effort, after the receipt's own effect: a helpdesk that cannot be reached
is logged and the receipt is still applied (its provider is not made to retry it for this).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from switchboard.core.errors import provider_text
from switchboard.core.observability import logger

if TYPE_CHECKING:
    from switchboard.catalog.events import ProviderEvent
    from switchboard.routing.domain import MessageLinks
    from switchboard.routing.outbox import Downstreams, ReplyStatusClient

STATUSES = frozenset({"delivered", "read", "failed"})


class ReplyStatuses:
    """An `EffectHandler` for `receipt` events: the reply's status in the downstream."""

    def __init__(self, links: MessageLinks, downstreams: Downstreams, client: ReplyStatusClient) -> None:
        self._links = links
        self._downstreams = downstreams
        self._client = client

    def __call__(self, event: ProviderEvent) -> None:
        provider_message_id, status = event.data.get("id"), event.data.get("status")
        if not isinstance(provider_message_id, str) or status not in STATUSES:
            return
        instance = event.instance
        try:
            link = self._links.by_provider_id(instance.key, provider_message_id)
            if link is None or link.direction != "out":
                return
            target = self._downstreams.target_for(instance.owner_tag)
            if target is None:
                return
            error = failure_words(event.data.get("errors")) if status == "failed" else None
            self._client.update_status(
                target, link.conversation_id, link.downstream_message_id, str(status), external_error=error
            )
        except Exception as exc:
            logger.warning(
                "reply status not shown in the downstream",
                extra={"instance": instance.key, "status": status, "error": type(exc).__name__},
            )
            return
        logger.info("reply status shown in the downstream", extra={"instance": instance.key, "status": status})


def failure_words(errors: Any) -> str:
    """A failed receipt's reason for the agent: the provider's first error (Meta's code and title)."""
    first = next((error for error in errors if isinstance(error, dict)), None) if isinstance(errors, list) else None
    if first is None:
        return "WhatsApp reported the message as not delivered"
    code, title = first.get("code"), provider_text(first.get("title") or first.get("message"))
    words = " ".join(str(part) for part in (code, title) if part)
    return f"WhatsApp reported the message as not delivered ({words})" if words else "WhatsApp reported it failed"
