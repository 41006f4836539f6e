"""Composition root: the only place that builds real adapters, once per container, on first use.

Handlers call these functions; tests reset them with `reset()` after changing the environment.
`AWS_ENDPOINT_URL` (read by boto3 itself) points every client at the local stack or moto.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar

import boto3

from switchboard.core.settings import get_settings
from switchboard.webhooks.events import EffectHandler, ProviderEvent

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig

    from switchboard.audit.dynamo import AuditLog
    from switchboard.call_limit.dynamo import LineRepository
    from switchboard.call_limit.service import CallsConfigService, CapabilitiesCache
    from switchboard.call_limit.subscriptions import SubscriptionService
    from switchboard.calls.dialing import DialService
    from switchboard.calls.dynamo import CallRepository
    from switchboard.calls.reconcile import Reconciler
    from switchboard.calls.reconcile_queue import ReconcileQueue
    from switchboard.calls.service import CallService
    from switchboard.catalog.dynamo import CatalogRepository
    from switchboard.catalog.service import CatalogService
    from switchboard.core.bus import EventPublisher
    from switchboard.core.queue import SqsQueue
    from switchboard.core.secrets import SecretStore
    from switchboard.messages.client_webhooks import ClientWebhookDeliverer, ClientWebhookPublisher, ClientWebhookWorker
    from switchboard.messages.dynamo import MessageRepository
    from switchboard.messages.receipts import ReceiptEffect
    from switchboard.messages.sending import SendWorker
    from switchboard.messages.service import MessageService
    from switchboard.pool.dynamo import PoolRepository
    from switchboard.pool.service import PoolService, SendingConfigSource
    from switchboard.providers.base import ProviderClient
    from switchboard.providers.targets import ProviderKind, TargetResolver
    from switchboard.routing.domain import DownstreamClient
    from switchboard.routing.dynamo import RoutingRepository
    from switchboard.routing.outbox import OutboxService
    from switchboard.routing.service import DownstreamResolver, RoutingService
    from switchboard.usage.service import UsageRecorder
    from switchboard.webhooks.service import IngestService

T = TypeVar("T")
_built: list[Any] = []


def component(factory: Callable[..., T]) -> Callable[..., T]:
    """Build once per container; `reset()` forgets it."""
    cached = cache(factory)
    _built.append(cached)
    return cached


@component
def session() -> boto3.session.Session:
    return boto3.session.Session()


@component
def table() -> Any:
    return session().resource("dynamodb").Table(get_settings().table_name)


@component
def client(service: str) -> Any:
    return session().client(service)


@component
def secrets() -> SecretStore:
    from switchboard.core.secrets import SecretStore

    settings = get_settings()
    return SecretStore(client("ssm"), settings.secrets_prefix, settings.secret_cache_seconds)


@component
def audit_log() -> AuditLog:
    from switchboard.audit.dynamo import AuditLog

    return AuditLog(table())


@component
def catalog_repository() -> CatalogRepository:
    from switchboard.catalog.dynamo import CatalogRepository

    return CatalogRepository(table())


@component
def catalog_service() -> CatalogService:
    from switchboard.catalog.service import CatalogService

    return CatalogService(catalog_repository(), secrets(), audit_log(), local_mode=get_settings().local_mode)


# --- calls (issue 6): the versioned limit ---------------------------------------------------


@component
def provider_client(kind: ProviderKind) -> ProviderClient:
    """One pooled client per provider kind, shared by every target of that kind.

    Imported here so that functions that never reach a provider do not load httpx at cold start.
    """
    from switchboard.providers.registry import provider_client_for

    settings = get_settings()
    return provider_client_for(kind, local_mode=settings.local_mode, read_timeout=settings.provider_timeout_seconds)


@component
def targets() -> TargetResolver:
    from switchboard.providers.targets import TargetResolver

    return TargetResolver(catalog_repository(), secrets(), provider_client)


@component
def line_repository() -> LineRepository:
    from switchboard.call_limit.dynamo import LineRepository

    return LineRepository(table())


@component
def event_publisher() -> EventPublisher:
    from switchboard.core.bus import EventPublisher

    return EventPublisher(client("events"), get_settings().event_bus_name)


@component
def capabilities_cache() -> CapabilitiesCache:
    from switchboard.call_limit.service import CapabilitiesCache

    return CapabilitiesCache()


@component
def calls_config_service() -> CallsConfigService:
    """Also used by reconciliation: `refresh_from_status(instance) -> Line`."""
    from switchboard.call_limit.service import CallsConfigService

    return CallsConfigService(
        catalog_repository(),
        line_repository(),
        targets(),
        capabilities=capabilities_cache(),
        publisher=event_publisher(),
        audit=audit_log(),
    )


@component
def subscription_service() -> SubscriptionService:
    from switchboard.call_limit.subscriptions import SubscriptionService

    return SubscriptionService(catalog_repository(), targets(), calls_config_service(), audit_log())


# --- routing (issue 5): webhook ingest, downstreams, outbox, usage ---------------------------


@component
def ingest_service() -> IngestService:
    """Also used by reconciliation: `reapply_pending()` applies events a crash left pending."""
    from switchboard.webhooks.dynamo import EventStore
    from switchboard.webhooks.service import IngestService

    return IngestService(catalog_repository(), secrets(), EventStore(table()), event_handlers())


@component
def routing_repository() -> RoutingRepository:
    from switchboard.routing.dynamo import RoutingRepository

    return RoutingRepository(table())


@component
def routing_service() -> RoutingService:
    from switchboard.routing.service import RoutingService

    return RoutingService(routing_repository(), secrets(), audit_log(), local_mode=get_settings().local_mode)


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
def usage_recorder() -> UsageRecorder:
    """The pool's send worker calls `usage_recorder().record_outgoing(instance, when, message_id)`."""
    from switchboard.usage.dynamo import UsageRepository
    from switchboard.usage.service import UsageRecorder

    return UsageRecorder(UsageRepository(table()))


@component
def outbox_service() -> OutboxService:
    """Also used by reconciliation: `drain(instance_name)`, `drain_all()`."""
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
    from aws_lambda_powertools.utilities.idempotency import (
        DynamoDBPersistenceLayer,
        idempotent_function,
    )

    from switchboard.routing.forwarder import DownstreamForwarder

    forwarder = DownstreamForwarder(downstream_resolver(), downstream_client())
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


def _count_incoming(event: ProviderEvent) -> None:
    from switchboard.usage.service import IncomingUsageHandler

    IncomingUsageHandler(usage_recorder())(event)


def _forward_incoming(event: ProviderEvent) -> None:
    from switchboard.routing.forward_queue import SqsForwardQueue
    from switchboard.routing.forwarder import IncomingForwardHandler

    url = get_settings().forward_queue_url
    if not url:
        raise RuntimeError("FORWARD_QUEUE_URL is not set")
    IncomingForwardHandler(SqsForwardQueue(client("sqs"), url))(event)


def _connection_state(event: ProviderEvent) -> None:
    from switchboard.routing.outbox import REQUEST_BUDGET_SECONDS
    from switchboard.routing.service import ConnectionStateHandler

    drain = outbox_service().drain
    ConnectionStateHandler(routing_repository(), lambda name: drain(name, REQUEST_BUDGET_SECONDS))(event)


# --- number pool and sending (issue 4) ---------------------------------------------------------


@component
def message_repository() -> MessageRepository:
    from switchboard.messages.dynamo import MessageRepository

    return MessageRepository(table())


@component
def pool_repository() -> PoolRepository:
    from switchboard.pool.dynamo import PoolRepository

    return PoolRepository(table())


@component
def pool_service() -> PoolService:
    from switchboard.pool.service import PoolService

    return PoolService(catalog_repository(), pool_repository(), catalog_service(), audit_log())


@component
def sending_config_source() -> SendingConfigSource:
    """A key's pool and numbers, cached per container for `POOL_CONFIG_CACHE_SECONDS`."""
    from switchboard.pool.service import SendingConfigSource

    ttl = get_settings().pool_config_cache_seconds
    return SendingConfigSource(catalog_repository(), pool_repository(), ttl_seconds=ttl)


@component
def send_queue() -> SqsQueue:
    from switchboard.core.queue import SqsQueue

    return SqsQueue(client("sqs"), get_settings().send_queue_url)


@component
def client_webhook_queue() -> SqsQueue:
    from switchboard.core.queue import SqsQueue

    return SqsQueue(client("sqs"), get_settings().client_webhook_queue_url)


@component
def client_webhook_publisher() -> ClientWebhookPublisher:
    from switchboard.messages.client_webhooks import ClientWebhookPublisher

    return ClientWebhookPublisher(client_webhook_queue())


@component
def message_service() -> MessageService:
    """Its own idempotency persistence layer (Powertools keeps the first config a layer sees)."""
    # Imported here: only the messages function pays for Powertools idempotency at cold start.
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

    from switchboard.messages.service import MessageService, submission_idempotency_config

    persistence = DynamoDBPersistenceLayer(
        table_name=get_settings().idempotency_table_name, boto3_client=client("dynamodb")
    )
    return MessageService(message_repository(), send_queue(), persistence, submission_idempotency_config())


@component
def send_worker() -> SendWorker:
    from switchboard.messages.sending import SendingService, SendWorker

    service = SendingService(
        message_repository(),
        configs=sending_config_source(),
        tickets=pool_repository(),
        secrets=secrets(),
        client_for=provider_client,
        notifier=client_webhook_publisher(),
        max_attempts=get_settings().send_max_attempts,
        usage=usage_recorder(),
    )
    return SendWorker(service, send_queue())


@component
def client_webhook_deliverer() -> ClientWebhookDeliverer:
    from switchboard.messages.client_webhooks import ClientWebhookDeliverer
    from switchboard.messages.webhook_http import HttpxPoster

    local_mode = get_settings().local_mode
    return ClientWebhookDeliverer(catalog_repository(), secrets(), HttpxPoster(), audit_log(), local_mode=local_mode)


@component
def client_webhook_worker() -> ClientWebhookWorker:
    from switchboard.messages.client_webhooks import ClientWebhookWorker

    return ClientWebhookWorker(client_webhook_deliverer(), client_webhook_queue())


@component
def receipt_effect() -> ReceiptEffect:
    from switchboard.messages.receipts import ReceiptEffect

    return ReceiptEffect(message_repository(), sending_config_source(), client_webhook_publisher())


# --- calls (issue 7): slots, dialing, call lifecycle, reconciliation -------------------------


@component
def call_repository() -> CallRepository:
    from switchboard.calls.dynamo import CallRepository

    return CallRepository(table())


@component
def call_service() -> CallService:
    from switchboard.calls.service import CallService

    return CallService(call_repository(), catalog_repository(), targets())


@component
def reconcile_queue() -> ReconcileQueue:
    from switchboard.calls.reconcile_queue import ReconcileQueue

    return ReconcileQueue(client("sqs"), get_settings().reconcile_queue_url)


@component
def dialing_service() -> DialService:
    from switchboard.calls.dialing import DialService

    return DialService(
        catalog_repository(),
        call_repository(),
        call_service(),
        targets(),
        reconcile_queue(),
        capabilities=lambda instance: calls_config_service().capabilities(instance),
        refresh_limit=lambda instance: calls_config_service().refresh_from_status(instance),
    )


@component
def reconciler() -> Reconciler:
    """Calls instances: limit, live calls, reservations; messaging instances: their outbox."""
    from switchboard.calls.reconcile import Reconciler

    return Reconciler(
        catalog_repository(),
        call_repository(),
        call_service(),
        targets(),
        refresh_limit=lambda instance: calls_config_service().refresh_from_status(instance),
        drain_outbox=lambda name: outbox_service().drain(name),
    )


def _apply_receipt(event: ProviderEvent) -> None:
    receipt_effect()(event)


def _reconcile_calls_on_reconnect(event: ProviderEvent) -> None:
    from switchboard.calls.reconcile import ReconcileOnReconnect

    ReconcileOnReconnect(reconcile_queue())(event)


@component
def event_handlers() -> dict[str, list[EffectHandler]]:
    """The effects of each provider webhook event, in order; the ingest runs them all."""
    handlers: dict[str, list[EffectHandler]] = {
        name: [] for name in ("message", "receipt", "connection", "call", "call_settings")
    }
    handlers["call_settings"].append(lambda event: calls_config_service().on_call_settings(event))
    handlers["connection"].append(lambda event: calls_config_service().on_connection(event))
    handlers["message"] += [_count_incoming, _forward_incoming]  # usage, then the downstream
    handlers["connection"].append(_connection_state)  # state by seq, then the outbox
    handlers["receipt"].append(_apply_receipt)  # status forward, then the client webhook
    handlers["call"].append(lambda event: call_service().on_call_event(event))
    handlers["connection"].append(_reconcile_calls_on_reconnect)  # calls may have moved while away
    return handlers


def reset() -> None:
    """Forget every built adapter and the settings (tests, after changing the environment)."""
    get_settings.cache_clear()
    for built in _built:
        built.cache_clear()
