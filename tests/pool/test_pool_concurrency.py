"""Concurrent send workers against moto in server mode: the round-robin spread holds, nothing is sent twice.

Each thread is one Lambda container: its own boto3 session, repositories, cache and service.
"""

from __future__ import annotations

import threading
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from switchboard import bootstrap
from switchboard.catalog.dynamo import CatalogRepository
from switchboard.core.identity import Scope
from switchboard.core.settings import get_settings
from switchboard.messages.domain import Message, SendJob, body_hash
from switchboard.messages.dynamo import MessageRepository
from switchboard.messages.sending import SendingService
from switchboard.pool.dynamo import PoolRepository
from switchboard.pool.service import SendingConfigSource
from switchboard.usage.dynamo import UsageRepository
from switchboard.usage.service import OutgoingUsage
from tests.support.sending import sending_service
from tools.support import builders
from tools.support.aws import REGION, AwsResources
from tools.support.fakes import FakeNotifier, FakeProvider, FakeSecrets
from tools.support.pool import NUMBERS

WORKERS = 3
# Enough for every worker to take many batches and interleave its tickets with the others'.
MESSAGES = 150


def pool_key() -> str:
    """A tenant, three connected numbers in one key's pool (through the real services)."""
    admin = builders.admin("acme")
    catalog = bootstrap.catalog_service()
    provider = catalog.create_provider(
        admin,
        name="zap",
        kind="wuzapi",
        base_url="http://127.0.0.1:3100",
        webhook_secret="whsec-concurrency-1",
        admin_token=None,
        priority=0,
    )
    key = catalog.create_api_key(admin, tenant="acme", name="sender", environment="LIVE", scopes=[Scope.SEND]).key
    bootstrap.pool_service().set_mode(admin, key.id, "pool")
    for digits in NUMBERS:
        number = catalog.create_number(admin, digits, digits, None)
        instance, _ = catalog.put_instance(
            admin,
            name=f"i-{digits}",
            provider_id=provider.id,
            provider_instance_id=f"i-{digits}",
            number_id=number.id,
            token="instance-token",
            priority=0,
            kind="messages",
            owner_tag=None,
            owner_tag_given=False,
        )
        bootstrap.connection_state_repository().apply_event(instance.key, "CONNECTED", 1, datetime.now(UTC))
        bootstrap.pool_service().add(admin, key.id, number.id)
    return key.id


def container(provider: FakeProvider) -> SendingService:
    table = boto3.session.Session().resource("dynamodb", region_name=REGION).Table(get_settings().table_name)
    pools = PoolRepository(table)
    # Each SENT transaction also writes its instance's usage counter, which every worker writes.
    usage = OutgoingUsage(UsageRepository(table))
    return sending_service(
        MessageRepository(table, usage=usage),
        configs=SendingConfigSource(CatalogRepository(table), pools, ttl_seconds=5),
        tickets=pools,
        secrets=FakeSecrets(default=lambda name: "instance-token", read_only=True),
        client_for=lambda kind: provider,
        notifier=FakeNotifier(),
        max_attempts=5,
        usage=usage,
    )


def drain_with_workers(queue_url: str, provider: FakeProvider, expected: int) -> list[Any]:
    """Run WORKERS threads until `expected` distinct messages were handled; their outcomes."""
    outcomes: list[Any] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def work() -> None:
        try:
            service = container(provider)
            sqs = boto3.session.Session().client("sqs", region_name=REGION)
            idle = 0
            while idle < 3:
                batch = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", [])
                idle = 0 if batch else idle + 1
                for received in batch:
                    outcome = service.process(SendJob.model_validate_json(received["Body"]), 1)
                    with lock:
                        outcomes.append(outcome)
                if batch:
                    entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(batch)]
                    sqs.delete_message_batch(QueueUrl=queue_url, Entries=entries)
                with lock:
                    if len({outcome.message_id for outcome in outcomes}) >= expected:
                        return
        except BaseException as exc:  # surfaced in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not errors, errors
    return outcomes


def enqueue(queue_url: str, jobs: list[SendJob]) -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    for start in range(0, len(jobs), 10):
        entries = [
            {"Id": str(i), "MessageBody": job.model_dump_json()} for i, job in enumerate(jobs[start : start + 10])
        ]
        sqs.send_message_batch(QueueUrl=queue_url, Entries=entries)


@pytest.mark.stack
def test_concurrent_workers_keep_the_spread_and_never_send_a_message_twice(served_aws: AwsResources) -> None:
    key_id = pool_key()
    records = MessageRepository(bootstrap.table())
    jobs = []
    for i in range(MESSAGES):
        to, text = f"5521{i:09d}", f"hello {i}"
        message = Message(
            tenant="acme", id=f"msg_{i:04d}", api_key_id=key_id, to=to, text=text, body_hash=body_hash(to, text)
        )
        records.create(message)
        jobs.append(SendJob(message_id=message.id, tenant="acme", api_key_id=key_id, to=to))
    queue_url = served_aws.queues["SendQueue"]
    enqueue(queue_url, jobs)
    provider = FakeProvider()

    outcomes = [o for o in drain_with_workers(queue_url, provider, expected=MESSAGES) if o.status == "SENT"]

    assert len(outcomes) == MESSAGES
    spread = Counter(outcome.source_number for outcome in outcomes)
    assert sorted(spread) == sorted(NUMBERS)
    share = MESSAGES // len(NUMBERS)
    assert all(share - 1 <= count <= share + 1 for count in spread.values()), spread
    assert sorted(sent.key for sent in provider.sent) == [job.message_id for job in jobs]
    # Counted by the SENT transactions, once each however they collided on the counters.
    usage = UsageRepository(bootstrap.table()).month("acme", datetime.now(UTC).strftime("%Y-%m"))  # the tenant's tag
    counted = Counter({day.instance: 0 for day in usage})
    for day in usage:
        counted[day.instance] += day.messages_out
    assert counted == Counter({f"i-{digits}": count for digits, count in spread.items()})

    # Jobs delivered again (SQS redelivery, here one in ten, twice each, at once): nothing is sent again.
    enqueue(queue_url, jobs[::10] * 2)
    again = drain_with_workers(queue_url, provider, expected=MESSAGES // 10)

    assert {outcome.status for outcome in again} == {"SKIPPED"}
    assert len(provider.sent) == MESSAGES
