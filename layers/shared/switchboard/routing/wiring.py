"""Builds the downstream routing, the forwarder, the outbox and the replies' services once per container."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING

from switchboard.audit.wiring import audit_log
from switchboard.catalog.wiring import catalog_repository
from switchboard.core.components import component
from switchboard.core.settings import get_settings
from switchboard.core.wiring import client, secrets, table
from switchboard.providers.wiring import targets
from switchboard.usage.wiring import usage_recorder

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig

    from switchboard.routing.domain import DownstreamClient
    from switchboard.routing.dynamo import RoutingRepository
    from switchboard.routing.outbox import OutboxService
    from switchboard.routing.service import DownstreamResolver, RoutingService


@component
def routing_repository() -> RoutingRepository:
    from switchboard.routing.dynamo import RoutingRepository

    return RoutingRepository(table())


@component
def routing_service() -> RoutingService:
    from switchboard.routing.service import RoutingService

    return RoutingService(
        routing_repository(),
        secrets(),
        audit_log(),
        tenants=catalog_repository(),
        local_mode=get_settings().local_mode,
    )


@component
def downstream_resolver() -> DownstreamResolver:
    from switchboard.routing.service import DownstreamResolver, GlobalDownstream

    settings = get_settings()
    fallback = GlobalDownstream(
        base_url=settings.downstream_base_url,
        account_id=settings.downstream_account_id,
        inbox_id=settings.downstream_inbox_id,
        token_parameter=settings.downstream_api_token_parameter,
    )
    return DownstreamResolver(routing_repository(), secrets(), fallback)


@component
def downstream_client() -> DownstreamClient:
    # Imported here: only the functions that call a downstream pay for its HTTP client.
    from switchboard.routing.chatwoot import ChatwootClient

    settings = get_settings()
    return ChatwootClient(local_mode=settings.local_mode, read_timeout=settings.provider_timeout_seconds)


@component
def outbox_service() -> OutboxService:
    """Also used by reconciliation: `drain(instance_key)`, `drain_all()`."""
    from switchboard.routing.outbox import OutboxService
    from switchboard.routing.outbox_dynamo import OutboxRepository

    return OutboxService(
        OutboxRepository(table()),
        catalog_repository(),
        targets(),
        usage=usage_recorder(),
        downstreams=downstream_resolver(),
        downstream_client=downstream_client(),
        audit=audit_log(),
        validity=timedelta(seconds=get_settings().outbox_validity_seconds),
    )


@component
def forward_idempotency_config() -> IdempotencyConfig:
    from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig

    return IdempotencyConfig(event_key_jmespath="event_id", expires_after_seconds=4 * 24 * 3600)


@component
def forward_once() -> Callable[..., int | None]:
    """`forward_once()(message=IncomingMessage)`: posts it to its downstream once per provider event."""
    # Imported here: only the forwarder function pays for Powertools idempotency at cold start.
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer, idempotent_function

    from switchboard.routing.dynamo import ForwardAttemptsRepository
    from switchboard.routing.forwarder import DownstreamForwarder, ProviderPhones

    phones = ProviderPhones(catalog_repository(), targets())
    attempts = ForwardAttemptsRepository(table())
    forwarder = DownstreamForwarder(downstream_resolver(), downstream_client(), attempts, phones)
    persistence = DynamoDBPersistenceLayer(
        table_name=get_settings().idempotency_table_name, boto3_client=client("dynamodb")
    )
    forward: Callable[..., int | None] = idempotent_function(
        forwarder.forward,
        data_keyword_argument="message",
        persistence_store=persistence,
        config=forward_idempotency_config(),
    )
    return forward
