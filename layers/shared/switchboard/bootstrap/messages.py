"""Builds the message API's service, the send worker, receipts and client webhooks once per container."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from switchboard.bootstrap.audit import audit_log
from switchboard.bootstrap.catalog import catalog_repository
from switchboard.bootstrap.components import Components, component
from switchboard.bootstrap.core import event_publisher, secrets, table
from switchboard.bootstrap.pool import pool_repository, sending_config_source
from switchboard.bootstrap.providers import provider_client
from switchboard.bootstrap.quotas import daily_send_quota
from switchboard.bootstrap.usage import outgoing_usage
from switchboard.core.queue import SqsQueue

if TYPE_CHECKING:
    from switchboard.media.uploads import MediaUploads
    from switchboard.messages.choices import Answers
    from switchboard.messages.client_webhooks import ClientWebhookDeliverer, ClientWebhookPublisher, ClientWebhookWorker
    from switchboard.messages.delivery_log import DeliveryLog
    from switchboard.messages.dynamo import MenuRepository, MessageLogRepository, MessageRepository
    from switchboard.messages.heard import HeardFrom
    from switchboard.messages.incoming_log import IncomingLog
    from switchboard.messages.pinned import PinnedMessages
    from switchboard.messages.ports import TextSender
    from switchboard.messages.receipts import ReceiptEffect
    from switchboard.messages.sending import SendWorker
    from switchboard.messages.service import MessageService
    from switchboard.messages.status_events import StatusChanges
    from switchboard.providers.kinds import ProviderKind


@component
def message_repository(c: Components) -> MessageRepository:
    """The send worker's SENT transaction counts the message on its instance's usage."""
    from switchboard.messages.dynamo import MessageRepository

    return MessageRepository(table(c), usage=outgoing_usage(c))


@component
def send_queue(c: Components) -> SqsQueue:
    return SqsQueue(c.client("sqs"), c.settings.send_queue_url)


@component
def client_webhook_queue(c: Components) -> SqsQueue:
    return SqsQueue(c.client("sqs"), c.settings.client_webhook_queue_url)


@component
def client_webhook_publisher(c: Components) -> ClientWebhookPublisher:
    from switchboard.messages.client_webhooks import ClientWebhookPublisher

    return ClientWebhookPublisher(client_webhook_queue(c))


@component
def status_changes(c: Components) -> StatusChanges:
    """Each committed status change, to the bus (which feeds the key's client webhook too)."""
    from switchboard.messages.status_events import StatusChanges

    return StatusChanges(event_publisher(c))


@component
def send_provider_client(c: Components) -> Callable[[str], TextSender]:
    """The provider clients the send worker sends through: every kind's pooled client (a route's
    kind is one the catalog accepted)."""
    client_for = provider_client(c)
    return lambda kind: client_for(cast("ProviderKind", kind))


@component
def media_uploads(c: Components) -> MediaUploads | None:
    """The media bucket for sends (uploads, URL fetches, the worker's reads); None where the
    function has no bucket, and a media send is then refused with a clear reason."""
    if not c.settings.media_bucket:
        return None
    from botocore.config import Config

    from switchboard.media.uploads import MediaUploads, fetch_under_policy

    # Only SigV4 signs the Content-Type and Content-Length into a presigned PUT. Presigned URLs
    # name the bucket's regional host (`<bucket>.s3.<region>.amazonaws.com`, its
    # RegionalDomainName): the one origin the console's CSP allows images from. The local stack's
    # endpoint takes the bucket in the path.
    s3_options = {"us_east_1_regional_endpoint": "regional"}
    if not c.settings.local_mode:
        s3_options["addressing_style"] = "virtual"
    s3 = c.session.client("s3", config=Config(signature_version="s3v4", s3=s3_options))
    return MediaUploads(s3, c.settings.media_bucket, fetch=fetch_under_policy(local_mode=c.settings.local_mode))


@component
def message_service(c: Components) -> MessageService:
    """Its own idempotency persistence layer (Powertools keeps the first config a layer sees)."""
    # Imported here: only the messages function pays for Powertools idempotency at cold start.
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

    from switchboard.messages.service import MessageService, submission_idempotency_config

    persistence = DynamoDBPersistenceLayer(
        table_name=c.settings.idempotency_table_name, boto3_client=c.client("dynamodb")
    )
    from switchboard.bootstrap.templates import template_service

    return MessageService(
        message_repository(c),
        send_queue(c),
        persistence,
        submission_idempotency_config(),
        daily_quota=daily_send_quota(c),
        log=message_log(c),
        status=status_changes(c),
        media=media_uploads(c),
        templates=template_service(c),
        numbers=catalog_repository(c),
    )


@component
def pinned_messages(c: Components) -> PinnedMessages:
    """Test messages of an instance: accepted and queued like the send API's, without its
    idempotency layer (the console sends each one once)."""
    from switchboard.messages.pinned import PinnedMessages

    return PinnedMessages(
        message_repository(c), send_queue(c), daily_quota=daily_send_quota(c), status=status_changes(c)
    )


@component
def send_worker(c: Components) -> SendWorker:
    from switchboard.bootstrap.health import health_watch, pacer
    from switchboard.messages.choices import Menus
    from switchboard.messages.dynamo import SpamHistoryRepository, UploadedMediaRepository
    from switchboard.messages.sending import SendingService, SendWorker
    from switchboard.messages.sending.attempt import Attempts
    from switchboard.messages.sending.gates import Gates
    from switchboard.messages.sending.outcome import Outcomes
    from switchboard.messages.sending.plan import Planner
    from switchboard.messages.spam_guard import SpamGuard

    messages = message_repository(c)
    service = SendingService(
        messages,
        planner=Planner(
            messages, configs=sending_config_source(c), tickets=pool_repository(c), pinned=sending_config_source(c)
        ),
        gates=Gates(spam_guard=SpamGuard(SpamHistoryRepository(table(c))), health=health_watch(c), pacer=pacer(c)),
        attempts=Attempts(
            messages,
            secrets=secrets(c),
            client_for=send_provider_client(c),
            health=health_watch(c),
            media=media_uploads(c),
            uploaded=UploadedMediaRepository(table(c)),
        ),
        outcomes=Outcomes(
            messages,
            notifier=status_changes(c),
            max_attempts=c.settings.send_max_attempts,
            usage=outgoing_usage(c),
            jobs=send_queue(c),
            health=health_watch(c),
            menus=Menus(menu_repository(c)),
        ),
    )
    return SendWorker(service, send_queue(c))


@component
def client_webhook_deliverer(c: Components) -> ClientWebhookDeliverer:
    """Every attempt recorded in the delivery log; the last one ends `failed` there (replayable)
    rather than in the queue's DLQ."""
    from switchboard.messages.client_webhooks import ClientWebhookDeliverer
    from switchboard.messages.webhook_http import HttpxPoster

    local_mode = c.settings.local_mode
    poster = HttpxPoster(local_mode=local_mode)
    return ClientWebhookDeliverer(
        catalog_repository(c),
        secrets(c),
        poster,
        audit_log(c),
        local_mode=local_mode,
        log=delivery_log(c),
        max_attempts=c.settings.client_webhook_max_attempts,
        retry_seconds=c.settings.client_webhook_retry_seconds,
    )


@component
def delivery_log(c: Components) -> DeliveryLog:
    """The webhook delivery log: attempts recorded by the deliverer; listed, read and replayed
    (onto ClientWebhookQueue, audited) through the API."""
    from switchboard.messages.delivery_dynamo import DeliveryRepository
    from switchboard.messages.delivery_log import DeliveryLog

    return DeliveryLog(DeliveryRepository(table(c)), client_webhook_queue(c), audit_log(c))


@component
def client_webhook_worker(c: Components) -> ClientWebhookWorker:
    from switchboard.messages.client_webhooks import ClientWebhookWorker

    return ClientWebhookWorker(client_webhook_deliverer(c), client_webhook_queue(c))


@component
def receipt_effect(c: Components) -> ReceiptEffect:
    from switchboard.messages.receipts import ReceiptEffect

    # The send queue takes a fallback template's job when Meta refused a send for the window.
    return ReceiptEffect(message_repository(c), sending_config_source(c), status_changes(c), jobs=send_queue(c))


@component
def heard_from(c: Components) -> HeardFrom:
    """The webhook ingest marks each `message` event's sender as heard by the instance's number
    in the transaction that accepts it."""
    from switchboard.messages.heard import HeardFrom

    return HeardFrom(message_repository(c))


@component
def menu_repository(c: Components) -> MenuRepository:
    from switchboard.messages.dynamo import MenuRepository

    return MenuRepository(table(c))


@component
def answers(c: Components) -> Answers:
    """The ingest reads a customer's message as the answer to the menu their number sent them."""
    from switchboard.messages.choices import Answers

    return Answers(menu_repository(c))


@component
def message_log(c: Components) -> MessageLogRepository:
    from switchboard.messages.dynamo import MessageLogRepository

    return MessageLogRepository(table(c))


@component
def incoming_log(c: Components) -> IncomingLog:
    """Incoming messages in the message log: written with their event's acceptance, their
    outcome reported by the forwarder."""
    from switchboard.messages.incoming_log import IncomingLog

    return IncomingLog(message_log(c))
