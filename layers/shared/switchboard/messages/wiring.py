"""Builds the message API's service, the send worker, receipts and client webhooks once per container."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.audit.wiring import audit_log
from switchboard.catalog.wiring import catalog_repository
from switchboard.core.components import component
from switchboard.core.queue import SqsQueue
from switchboard.core.settings import get_settings
from switchboard.core.wiring import client, event_publisher, secrets, table
from switchboard.pool.wiring import pool_repository, sending_config_source
from switchboard.providers.wiring import provider_client
from switchboard.quotas.wiring import daily_send_quota
from switchboard.usage.wiring import usage_recorder

if TYPE_CHECKING:
    from switchboard.messages.client_webhooks import ClientWebhookDeliverer, ClientWebhookPublisher, ClientWebhookWorker
    from switchboard.messages.dynamo import MessageRepository
    from switchboard.messages.heard import HeardFrom
    from switchboard.messages.receipts import ReceiptEffect
    from switchboard.messages.sending import SendWorker
    from switchboard.messages.service import MessageService
    from switchboard.messages.status_events import StatusChanges


@component
def message_repository() -> MessageRepository:
    from switchboard.messages.dynamo import MessageRepository

    return MessageRepository(table())


@component
def send_queue() -> SqsQueue:
    return SqsQueue(client("sqs"), get_settings().send_queue_url)


@component
def client_webhook_queue() -> SqsQueue:
    return SqsQueue(client("sqs"), get_settings().client_webhook_queue_url)


@component
def client_webhook_publisher() -> ClientWebhookPublisher:
    from switchboard.messages.client_webhooks import ClientWebhookPublisher

    return ClientWebhookPublisher(client_webhook_queue())


@component
def status_changes() -> StatusChanges:
    """Each committed status change: to the bus, and to the key's client webhook."""
    from switchboard.messages.status_events import StatusChanges

    return StatusChanges(event_publisher(), client_webhook_publisher())


@component
def message_service() -> MessageService:
    """Its own idempotency persistence layer (Powertools keeps the first config a layer sees)."""
    # Imported here: only the messages function pays for Powertools idempotency at cold start.
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

    from switchboard.messages.service import MessageService, submission_idempotency_config

    persistence = DynamoDBPersistenceLayer(
        table_name=get_settings().idempotency_table_name, boto3_client=client("dynamodb")
    )
    return MessageService(
        message_repository(),
        send_queue(),
        persistence,
        submission_idempotency_config(),
        daily_quota=daily_send_quota(),
        status=status_changes(),
    )


@component
def send_worker() -> SendWorker:
    from switchboard.health.wiring import health_watch, pacer
    from switchboard.messages.dynamo import SpamHistoryRepository
    from switchboard.messages.sending import SendingService, SendWorker
    from switchboard.messages.sending.attempt import Attempts
    from switchboard.messages.sending.gates import Gates
    from switchboard.messages.sending.outcome import Outcomes
    from switchboard.messages.sending.plan import Planner
    from switchboard.messages.spam_guard import SpamGuard

    messages = message_repository()
    service = SendingService(
        messages,
        planner=Planner(messages, configs=sending_config_source(), tickets=pool_repository()),
        gates=Gates(spam_guard=SpamGuard(SpamHistoryRepository(table())), health=health_watch(), pacer=pacer()),
        attempts=Attempts(messages, secrets=secrets(), client_for=provider_client, health=health_watch()),
        outcomes=Outcomes(
            messages,
            notifier=status_changes(),
            max_attempts=get_settings().send_max_attempts,
            usage=usage_recorder(),
            jobs=send_queue(),
            health=health_watch(),
        ),
    )
    return SendWorker(service, send_queue())


@component
def client_webhook_deliverer() -> ClientWebhookDeliverer:
    from switchboard.messages.client_webhooks import ClientWebhookDeliverer
    from switchboard.messages.webhook_http import HttpxPoster

    local_mode = get_settings().local_mode
    poster = HttpxPoster(local_mode=local_mode)
    return ClientWebhookDeliverer(catalog_repository(), secrets(), poster, audit_log(), local_mode=local_mode)


@component
def client_webhook_worker() -> ClientWebhookWorker:
    from switchboard.messages.client_webhooks import ClientWebhookWorker

    return ClientWebhookWorker(client_webhook_deliverer(), client_webhook_queue())


@component
def receipt_effect() -> ReceiptEffect:
    from switchboard.messages.receipts import ReceiptEffect

    return ReceiptEffect(message_repository(), sending_config_source(), status_changes())


@component
def heard_from() -> HeardFrom:
    """The webhook ingest marks each `message` event's sender as heard by the instance's number
    in the transaction that accepts it."""
    from switchboard.messages.heard import HeardFrom

    return HeardFrom(message_repository())
