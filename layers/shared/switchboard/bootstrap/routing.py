"""Builds the downstream routing, the forwarder, the outbox and the replies' services once per container."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING

from switchboard.bootstrap.audit import audit_log
from switchboard.bootstrap.catalog import catalog_repository
from switchboard.bootstrap.components import Components, component
from switchboard.bootstrap.core import secrets, table
from switchboard.bootstrap.media import message_media
from switchboard.bootstrap.messages import incoming_log, media_uploads
from switchboard.bootstrap.providers import targets
from switchboard.bootstrap.usage import usage_recorder

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig

    from switchboard.routing.attachments import HelpdeskAttachments
    from switchboard.routing.domain import DownstreamClient, MessageLinks
    from switchboard.routing.dynamo import RoutingRepository
    from switchboard.routing.outbox import OutboxService
    from switchboard.routing.reply_status import ReplyStatuses
    from switchboard.routing.service import DownstreamResolver, RoutingService


@component
def routing_repository(c: Components) -> RoutingRepository:
    from switchboard.routing.dynamo import RoutingRepository

    return RoutingRepository(table(c))


@component
def routing_service(c: Components) -> RoutingService:
    from switchboard.routing.service import RoutingService

    return RoutingService(
        routing_repository(c),
        secrets(c),
        audit_log(c),
        tenants=catalog_repository(c),
        local_mode=c.settings.local_mode,
    )


@component
def downstream_resolver(c: Components) -> DownstreamResolver:
    from switchboard.routing.service import DownstreamResolver, GlobalDownstream

    settings = c.settings
    fallback = GlobalDownstream(
        base_url=settings.downstream_base_url,
        account_id=settings.downstream_account_id,
        inbox_id=settings.downstream_inbox_id,
        token_parameter=settings.downstream_api_token_parameter,
    )
    return DownstreamResolver(routing_repository(c), secrets(c), fallback)


@component
def downstream_client(c: Components) -> DownstreamClient:
    # Imported here: only the functions that call a downstream pay for its HTTP client.
    from switchboard.routing.chatwoot import ChatwootClient

    settings = c.settings
    return ChatwootClient(local_mode=settings.local_mode, read_timeout=settings.provider_timeout_seconds)


@component
def outbox_service(c: Components) -> OutboxService:
    """Also used by reconciliation: `drain(instance_key)`, `drain_all()`."""
    from switchboard.bootstrap.messages import message_repository
    from switchboard.messages.dynamo import UploadedMediaRepository
    from switchboard.routing.outbox import OutboxService, ReplyStatusClient
    from switchboard.routing.outbox_dynamo import OutboxRepository
    from switchboard.routing.reply_window import ReplyWindow

    client = downstream_client(c)
    window = ReplyWindow(message_repository(c), downstream_resolver(c), client)
    return OutboxService(
        OutboxRepository(table(c)),
        catalog_repository(c),
        targets(c),
        usage=usage_recorder(c),
        downstreams=downstream_resolver(c),
        downstream_client=client,
        audit=audit_log(c),
        validity=timedelta(seconds=c.settings.outbox_validity_seconds),
        attachments=helpdesk_attachments(c),
        files=media_uploads(c),
        uploaded=UploadedMediaRepository(table(c)),
        links=message_links(c),
        numbers=catalog_repository(c),
        statuses=client if isinstance(client, ReplyStatusClient) else None,
        window=window,
    )


@component
def helpdesk_attachments(c: Components) -> HelpdeskAttachments | None:
    """An agent's attachments fetched from the helpdesk into the media bucket; None where the
    function has no bucket (an attachment is then refused, told to the agent)."""
    files = media_uploads(c)
    if files is None:
        return None
    from switchboard.routing.attachments import HelpdeskAttachments, fetch_from_helpdesk

    return HelpdeskAttachments(files, fetch_from_helpdesk(local_mode=c.settings.local_mode))


@component
def reply_statuses(c: Components) -> ReplyStatuses | None:
    """A receipt of an agent's reply shown on it in the helpdesk (`receipt` events)."""
    from switchboard.routing.outbox import ReplyStatusClient
    from switchboard.routing.reply_status import ReplyStatuses

    client = downstream_client(c)
    if not isinstance(client, ReplyStatusClient):
        return None
    return ReplyStatuses(message_links(c), downstream_resolver(c), client)


@component
def forward_idempotency_config(c: Components) -> IdempotencyConfig:
    from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig

    return IdempotencyConfig(event_key_jmespath="event_id", expires_after_seconds=4 * 24 * 3600)


@component
def forward_once(c: Components) -> Callable[..., int | None]:
    """`forward_once(c)(message=IncomingMessage)`: posts it to its downstream once per provider event."""
    # Imported here: only the forwarder function pays for Powertools idempotency at cold start.
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer, idempotent_function

    from switchboard.routing.dynamo import ForwardAttemptsRepository
    from switchboard.routing.forwarder import POST_SECONDS, DownstreamForwarder, ProviderPhones

    phones = ProviderPhones(catalog_repository(c), targets(c))
    attempts = ForwardAttemptsRepository(table(c))
    forwarder = DownstreamForwarder(
        downstream_resolver(c),
        downstream_client(c),
        attempts,
        phones,
        outcomes=incoming_log(c),
        media=message_media(c),
        links=message_links(c),
        # A read that stalls just before the fetch's deadline may last one read timeout more.
        reserve_seconds=POST_SECONDS + c.settings.provider_timeout_seconds,
    )
    persistence = DynamoDBPersistenceLayer(
        table_name=c.settings.idempotency_table_name, boto3_client=c.client("dynamodb")
    )
    forward: Callable[..., int | None] = idempotent_function(
        forwarder.forward,
        data_keyword_argument="message",
        persistence_store=persistence,
        config=forward_idempotency_config(c),
    )
    return forward


@component
def message_links(c: Components) -> MessageLinks:
    """The map of WhatsApp message ids to downstream message ids, both ways, per instance."""
    from switchboard.routing.links_dynamo import MessageLinkRepository

    return MessageLinkRepository(table(c))
