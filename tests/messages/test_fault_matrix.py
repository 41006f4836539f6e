"""The send worker under faults, for every provider kind: a message reaches its recipient at most
once (or, with at-least-once, at least once), and always ends SENT or FAILED with its reason.

The worker is the real one (`SendWorker` over `SendingService`) with the real provider clients,
the real message records on a moto server, and each kind's server in the provider simulator:
the calls-capable wuzapi at `/`, the plain wuzapi, Evolution and Meta. A cell queues a message
for a recipient of its own, injects the fault on its kind's send route (`once`: the first
request; `repeatedly`: every attempt), and delivers the job as SQS would, once per attempt,
until it is not retried any more. The simulator's `/_sim/sent` is what recipients' phones show:
a wuzapi resend of the same Id is the same message there.

Faults: `timeout` (no answer in time, not applied), `error500` (refused, not applied) and
`drop_response` (applied, then the connection dropped). Then the DynamoDB side: two workers with
the same job at once, a worker whose lease another worker took over, and a worker that dies in
the middle of a batch after the provider accepted a send.

`pytest -s` prints the cells as a table.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import boto3
import httpx
import pytest

from devstack import template
from devstack.aws_endpoint import AwsEndpoint
from devstack.lambdas import Functions
from devstack.simulator import Simulator, SimulatorControl
from switchboard.core import store
from switchboard.core.clock import utcnow
from switchboard.core.errors import RetryLater
from switchboard.messages.domain import (
    Claim,
    Message,
    MessageStatus,
    PendingRoute,
    SendJob,
    SendOutcome,
    body_hash,
    content_signature,
)
from switchboard.messages.dynamo import MessageRepository
from switchboard.messages.sending import SendingService, SendWorker
from switchboard.messages.sending import service as sending
from switchboard.pool.domain import NumberRoutes, Route, SendingConfig
from switchboard.providers.base import ProviderClient, ProviderTarget, SentMessage
from switchboard.providers.content import Media, MediaMessage, MediaRef
from switchboard.providers.kinds import spec_for
from tests.support.sending import sending_service
from tools.support.aws import REGION, AwsResources, create_template_resources, fake_aws_environment
from tools.support.fakes import FakeBackoff, FakeNotifier, FakeSecrets, FakeTickets
from tools.support.sqs import received_record

MAX_ATTEMPTS = 3
# A request the simulator stalls (the `timeout` fault answers after 1 s, in the shared `simulator`
# fixture) is read with 0.1 s of patience, every other request with the usual patience: a busy
# machine cannot turn a normal answer into a timeout, and a timeout costs 0.1 s.
STALLED_READ_TIMEOUT_SECONDS = 0.1
READ_TIMEOUT_SECONDS = 5.0
OWN_NUMBER = "5511900000000"
TENANT = "acme"

# flavour (the simulator's server) -> (provider kind, path prefix, send route to fault)
FLAVOURS: dict[str, tuple[str, str, str]] = {
    "calls": ("wuzapi", "", "/chat/send/text"),
    "wuzapi": ("wuzapi", "/wuzapi", "/wuzapi/chat/send/text"),
    "evolution": ("evolution", "/evolution", "/evolution/message/sendText/{instance}"),
    "meta": ("meta", "/meta", "/meta/{version}/{phone_number_id}/messages"),
}
# The same cells for a document: its kind's media send route (Meta's upload is not faulted).
MEDIA_ROUTES: dict[str, str] = {
    "calls": "/chat/send/document",
    "wuzapi": "/wuzapi/chat/send/document",
    "evolution": "/evolution/message/sendMedia/{instance}",
    "meta": "/meta/{version}/{phone_number_id}/messages",
}
PDF = b"%PDF-1.7\n" + bytes(range(256)) + b"%%EOF"
PDF_REF = MediaRef(
    key="acme/outgoing/med_fault", sha256=hashlib.sha256(PDF).hexdigest(), mime_type="application/pdf", size=len(PDF)
)
FAULTS = ("timeout", "error500", "drop_response")
REPEATS = ("once", "repeatedly")
NOT_RETRY_SAFE = [flavour for flavour, (kind, _, _) in FLAVOURS.items() if not spec_for(kind).retry_safe]

SENT, FAILED = MessageStatus.SENT, MessageStatus.FAILED
AMBIGUOUS = "ambiguous_outcome"

# (kind is retry-safe, fault, repeat) -> (status, failure reason, copies at the recipient).
# A timeout is not applied, a dropped answer is: where the kind cannot resend safely, both end
# ambiguous at once; a wuzapi resend reuses the message id, so it is the same message. A timeout on
# the last attempt ends ambiguous too: the client must not read it as "not sent".
EXPECTED: dict[tuple[bool, str, str], tuple[MessageStatus, str | None, int]] = {
    (True, "timeout", "once"): (SENT, None, 1),
    (True, "timeout", "repeatedly"): (FAILED, AMBIGUOUS, 0),
    (True, "error500", "once"): (SENT, None, 1),
    (True, "error500", "repeatedly"): (FAILED, "provider_unavailable", 0),
    (True, "drop_response", "once"): (SENT, None, 1),
    (True, "drop_response", "repeatedly"): (FAILED, AMBIGUOUS, 1),
    (False, "timeout", "once"): (FAILED, AMBIGUOUS, 0),
    (False, "timeout", "repeatedly"): (FAILED, AMBIGUOUS, 0),
    (False, "error500", "once"): (SENT, None, 1),
    (False, "error500", "repeatedly"): (FAILED, "provider_unavailable", 0),
    (False, "drop_response", "once"): (FAILED, AMBIGUOUS, 1),
    (False, "drop_response", "repeatedly"): (FAILED, AMBIGUOUS, 1),
}
# With at-least-once a non-retry-safe kind resends after an ambiguous outcome: a timeout then
# delivers once, a dropped answer makes a copy per resend.
EXPECTED_AT_LEAST_ONCE: dict[tuple[str, str], tuple[MessageStatus, str | None, int]] = {
    ("timeout", "once"): (SENT, None, 1),
    ("timeout", "repeatedly"): (FAILED, AMBIGUOUS, 0),
    ("drop_response", "once"): (SENT, None, 2),
    ("drop_response", "repeatedly"): (FAILED, AMBIGUOUS, MAX_ATTEMPTS),
}

_RECIPIENTS = itertools.count(1)


# --- the table printed with -s ----------------------------------------------------------------


@dataclass
class Row:
    cell: str
    outcome: str
    copies: int
    attempts: int


@pytest.fixture(scope="module")
def table() -> Iterator[list[Row]]:
    rows: list[Row] = []
    yield rows
    width = max((len(row.cell) for row in rows), default=10)
    print(f"\n{'cell':<{width}}  {'outcome':<28} copies attempts")
    for row in rows:
        print(f"{row.cell:<{width}}  {row.outcome:<28} {row.copies:>6} {row.attempts:>8}")


# --- the world: simulator numbers, the worker, the records -------------------------------------


@pytest.fixture(scope="module")
def records(aws_endpoint: AwsEndpoint) -> Iterator[AwsResources]:
    """The template's resources on the moto server for this module (each cell also gets a table of
    its own, `cell_table`): a real endpoint, so threads each use their own client."""
    with pytest.MonkeyPatch.context() as patch:
        fake_aws_environment(patch)
        # Clearing every moto backend can take longer than httpx's 5 s default on a loaded machine.
        httpx.post(f"{aws_endpoint.url}/moto-api/reset", timeout=60)
        patch.setenv("AWS_ENDPOINT_URL", aws_endpoint.url)
        yield create_template_resources(patch)


Clients = dict[tuple[str, float], ProviderClient]


@pytest.fixture(scope="module")
def clients() -> Iterator[Clients]:
    """Each kind's real client, patient and impatient."""
    made: Clients = {
        (kind, timeout): spec_for(kind).client(local_mode=True, read_timeout=timeout)
        for kind in ("wuzapi", "evolution", "meta")
        for timeout in (READ_TIMEOUT_SECONDS, STALLED_READ_TIMEOUT_SECONDS)
    }
    yield made
    for client in made.values():
        close = getattr(client, "close", None)
        if close is not None:
            close()


@pytest.fixture(scope="module")
def sim(simulator: Simulator) -> Iterator[SimulatorControl]:
    """One control client for the module (each new one builds its own TLS context)."""
    control = SimulatorControl(simulator.base_url)
    yield control
    control.close()


@pytest.fixture(autouse=True)
def forget_the_simulators_state(sim: SimulatorControl) -> Iterator[None]:
    yield
    sim.reset()


class Sender(Protocol):
    def send_text(self, target: ProviderTarget, phone: str, body: str, idempotency_key: str) -> SentMessage: ...


@dataclass
class Impatient:
    """The kind's client, impatient for the next `stalls` sends: the ones the simulator stalls."""

    patient: ProviderClient
    impatient: ProviderClient
    stalls: int = 0

    def send_text(self, target: ProviderTarget, phone: str, body: str, idempotency_key: str) -> SentMessage:
        client = self.patient
        if self.stalls > 0:
            self.stalls -= 1
            client = self.impatient
        return client.send_text(target, phone, body, idempotency_key)

    def send_content(
        self, target: ProviderTarget, phone: str, content: Any, idempotency_key: str, **extra: Any
    ) -> SentMessage:
        client = self.patient
        if self.stalls > 0:
            self.stalls -= 1
            client = self.impatient
        return client.send_content(target, phone, content, idempotency_key, **extra)


class Bucket:
    """The media bucket as the worker reads it: the one document of the media cells."""

    def read(self, ref: MediaRef) -> bytes:
        assert ref == PDF_REF
        return PDF


def repository(table_name: str) -> MessageRepository:
    """A repository with its own boto3 resource (one per thread, as one per Lambda container)."""
    return MessageRepository(boto3.resource("dynamodb", region_name=REGION).Table(table_name))


@pytest.fixture(scope="module")
def dynamodb(records: AwsResources) -> Any:
    """The test thread's boto3 resource (one costs tens of milliseconds to build)."""
    return boto3.resource("dynamodb", region_name=REGION)


@pytest.fixture
def cell_table(dynamodb: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A fresh MainTable per cell, from the template's own properties: moto copies the whole
    table in every transaction, so one table for every cell would make each cell slower. The
    item models are bound to it for the cell (a low-level client: botocore's are thread-safe),
    the binding of the tests around it restored afterwards."""
    name = f"fault-matrix-{uuid.uuid4().hex[:12]}"
    properties = template.resources("AWS::DynamoDB::Table")["MainTable"]
    dynamodb.meta.client.create_table(**template.table_create_kwargs(properties, name))
    monkeypatch.setattr(store._Bound, "current", None)
    monkeypatch.setattr(store.TableItem.Meta, "table_name", store.TableItem.Meta.table_name)
    store.bind(name, boto3.client("dynamodb", region_name=REGION))
    yield dynamodb.Table(name)
    dynamodb.meta.client.delete_table(TableName=name)


@pytest.fixture(scope="module")
def functions() -> Functions:
    """The template's functions, their handler modules loaded once for the module."""
    return Functions()


@dataclass
class World:
    """Two pool numbers of one flavour on the simulator, one API key, one send worker."""

    flavour: str
    control: SimulatorControl
    records: AwsResources
    messages: MessageRepository
    table_name: str
    config: SendingConfig
    client: Sender
    secrets: FakeSecrets
    instance_ids: list[str]
    notifier: FakeNotifier = field(default_factory=FakeNotifier)
    tickets: FakeTickets = field(default_factory=FakeTickets)
    media: bool = False  # the cell sends a document rather than a text

    @property
    def fault_route(self) -> str:
        return MEDIA_ROUTES[self.flavour] if self.media else FLAVOURS[self.flavour][2]

    def service(self, messages: Any = None) -> SendingService:
        service = sending_service(
            messages or self.messages,
            configs=self,
            tickets=self.tickets,
            secrets=self.secrets,
            client_for=lambda kind: cast(ProviderClient, self.client),
            notifier=self.notifier,
            max_attempts=MAX_ATTEMPTS,
        )
        service._attempts._media = Bucket()
        return service

    def worker(self, messages: Any = None) -> SendWorker:
        return SendWorker(self.service(messages), FakeBackoff())

    def get(self, tenant: str, api_key_id: str) -> SendingConfig:
        return self.config

    def inject(self, fault: str, repeat: str) -> None:
        """`fault` on the kind's send route, for the next request or for every attempt."""
        times = 1 if repeat == "once" else MAX_ATTEMPTS
        self.control.fault(self.fault_route, fault, times=times)
        if fault == "timeout" and isinstance(self.client, Impatient):
            self.client.stalls = times

    def queue(self) -> Message:
        recipient = f"551197{next(_RECIPIENTS):07d}"
        message = Message(
            tenant=TENANT,
            id=f"msg_{uuid.uuid4().hex[:20]}",
            api_key_id=self.config.api_key_id,
            to=recipient,
            text=f"hello {recipient}",
            body_hash=body_hash(recipient, f"hello {recipient}"),
        )
        if self.media:
            document = MediaMessage(media=Media(kind="document", file_name="receipt.pdf", stored=PDF_REF))
            message = message.model_copy(update={"content": document, "text": content_signature(document, None)})
        self.messages.create(message)
        if self.flavour == "meta":  # the recipient wrote to both numbers: their 24-hour windows are open
            for number in self.config.pool:
                uow = store.unit_of_work()  # one incoming message each
                self.messages.record_heard(uow, TENANT, recipient, number.number_id, utcnow())
                uow.commit()
            for instance_id in self.instance_ids:
                self.control.open_window(instance_id, recipient)
        return message

    def stored(self, message: Message) -> Message:
        return self.messages.get(TENANT, message.id)

    def copies(self, message: Message) -> int:
        """Distinct messages the recipient's phone shows (a resend of one Id is one message)."""
        return len([m for m in self.control.sent() if m["phone"] == message.to and m["instance"] in self.instance_ids])

    def deliver_until_settled(self, message: Message, worker: SendWorker | None = None) -> list[SendOutcome]:
        """The job delivered as SQS would: again after each RetryLater, up to the last attempt."""
        worker = worker or self.worker()
        outcomes: list[SendOutcome] = []
        for receive_count in range(1, MAX_ATTEMPTS + 1):
            try:
                outcome = worker.handle(job_of(message).model_dump_json(), f"receipt-{receive_count}", receive_count)
            except RetryLater:
                continue
            assert outcome is not None
            outcomes.append(outcome)
            break
        return outcomes


def job_of(message: Message) -> SendJob:
    return SendJob(message_id=message.id, tenant=message.tenant, api_key_id=message.api_key_id, to=message.to)


WorldFactory = Callable[..., World]


@pytest.fixture
def make_world(
    simulator: Simulator,
    sim: SimulatorControl,
    records: AwsResources,
    cell_table: Any,
    clients: Clients,
) -> WorldFactory:
    def make(flavour: str, *, at_least_once: bool = False, media: bool = False) -> World:
        kind, prefix, _ = FLAVOURS[flavour]
        numbers, ids, tokens = [], [], {}
        for position in (1, 2):
            instance_id, token = f"{flavour}-{uuid.uuid4().hex[:12]}", f"tok-{uuid.uuid4()}"
            body: dict[str, Any] = {"id": instance_id, "token": token, "flavour": flavour, "number": OWN_NUMBER}
            meta_phone_id = None
            if flavour == "meta":
                meta_phone_id = str(uuid.uuid4().int % 10**15)
                body["metaPhoneId"] = meta_phone_id
            if flavour == "calls":
                body["kind"] = "messages"
            sim.create_instance(**body)
            route = Route(
                provider_id=f"prv_{flavour}",
                kind=kind,
                base_url=simulator.base_url + prefix,
                provider_instance_id=meta_phone_id or instance_id,
                instance=instance_id,
                meta_phone_id=meta_phone_id,
            )
            numbers.append(NumberRoutes(number_id=f"num_{position}", digits=f"551190000000{position}", routes=(route,)))
            ids.append(instance_id)
            tokens[f"instances/{TENANT}/{instance_id}/token"] = token
        config = SendingConfig(
            tenant=TENANT,
            api_key_id="key_1",
            mode="pool",
            pool=tuple(numbers),
            webhook_url="https://client.example/hooks",
            at_least_once=at_least_once,
        )
        secrets = FakeSecrets(tokens, read_only=True)
        client = Impatient(clients[(kind, READ_TIMEOUT_SECONDS)], clients[(kind, STALLED_READ_TIMEOUT_SECONDS)])
        messages = MessageRepository(cell_table)
        return World(flavour, sim, records, messages, cell_table.name, config, client, secrets, ids, media=media)

    return make


def settle_and_check(world: World, message: Message, outcomes: list[SendOutcome]) -> Message:
    """What every cell holds: a final status, the client told once, the outcome the worker answered."""
    stored = world.stored(message)
    assert stored.status in (SENT, FAILED), f"stuck in {stored.status}"
    assert len(outcomes) == 1, "the last attempt must settle the message"
    assert (outcomes[0].status, outcomes[0].failure_reason) == (stored.status, stored.failure_reason)
    assert world.notifier.changes == [(message.id, stored.status, "https://client.example/hooks")]
    assert stored.in_flight is None
    return stored


def outcome_text(stored: Message) -> str:
    return f"{stored.status} {stored.failure_reason}" if stored.failure_reason else str(stored.status)


# --- the matrix ---------------------------------------------------------------------------------


@pytest.mark.parametrize("repeat", REPEATS)
@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("flavour", list(FLAVOURS))
def test_fault_matrix(make_world: WorldFactory, table: list[Row], flavour: str, fault: str, repeat: str) -> None:
    world = make_world(flavour)
    message = world.queue()
    world.inject(fault, repeat)

    outcomes = world.deliver_until_settled(message)

    stored = settle_and_check(world, message, outcomes)
    copies = world.copies(message)
    table.append(Row(f"{flavour} {fault} {repeat}", outcome_text(stored), copies, stored.attempts))
    retry_safe = spec_for(FLAVOURS[flavour][0]).retry_safe
    assert (stored.status, stored.failure_reason, copies) == EXPECTED[(retry_safe, fault, repeat)]


@pytest.mark.parametrize("repeat", REPEATS)
@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("flavour", list(FLAVOURS))
def test_fault_matrix_for_a_document(
    make_world: WorldFactory, table: list[Row], flavour: str, fault: str, repeat: str
) -> None:
    world = make_world(flavour, media=True)
    message = world.queue()
    world.inject(fault, repeat)

    outcomes = world.deliver_until_settled(message)

    stored = settle_and_check(world, message, outcomes)
    copies = world.copies(message)
    table.append(Row(f"{flavour} document {fault} {repeat}", outcome_text(stored), copies, stored.attempts))
    retry_safe = spec_for(FLAVOURS[flavour][0]).retry_safe
    assert (stored.status, stored.failure_reason, copies) == EXPECTED[(retry_safe, fault, repeat)]


@pytest.mark.parametrize("repeat", REPEATS)
@pytest.mark.parametrize("fault", ["timeout", "drop_response"])
@pytest.mark.parametrize("flavour", NOT_RETRY_SAFE)
def test_at_least_once_resends_where_a_copy_may_result(
    make_world: WorldFactory, table: list[Row], flavour: str, fault: str, repeat: str
) -> None:
    world = make_world(flavour, at_least_once=True)
    message = world.queue()
    world.inject(fault, repeat)

    outcomes = world.deliver_until_settled(message)

    stored = settle_and_check(world, message, outcomes)
    copies = world.copies(message)
    table.append(Row(f"{flavour} {fault} {repeat} at-least-once", outcome_text(stored), copies, stored.attempts))
    assert (stored.status, stored.failure_reason, copies) == EXPECTED_AT_LEAST_ONCE[(fault, repeat)]


# --- conditional writes on the message -------------------------------------------------------------


@pytest.mark.parametrize("flavour", list(FLAVOURS))
def test_two_workers_with_the_same_job_at_once_send_it_once(
    make_world: WorldFactory, table: list[Row], flavour: str
) -> None:
    """SQS may deliver one job twice at once: the claim is one conditional write, one worker wins."""
    world = make_world(flavour)
    message = world.queue()
    workers = [world.worker(repository(world.table_name)) for _ in range(2)]
    start = threading.Barrier(len(workers))
    outcomes: list[SendOutcome] = []
    errors: list[BaseException] = []

    def run(worker: SendWorker) -> None:
        start.wait()
        try:
            outcome = worker.handle(job_of(message).model_dump_json(), "receipt", 1)
            assert outcome is not None
            outcomes.append(outcome)
        except BaseException as exc:  # reported below, with the thread's outcome
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(worker,)) for worker in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert sorted(str(outcome.status) for outcome in outcomes) == ["SENT", "SKIPPED"]
    stored = world.stored(message)
    table.append(Row(f"{flavour} two workers at once", outcome_text(stored), world.copies(message), stored.attempts))
    assert (stored.status, world.copies(message)) == (SENT, 1)
    assert world.notifier.changes == [(message.id, SENT, "https://client.example/hooks")]


class LeaseRunsOut(MessageRepository):
    """A worker that stalls right after its claim (which recorded its first route in flight) until
    its lease has run out, and meanwhile another worker claims the message (`meanwhile`)."""

    def __init__(self, table: Any, meanwhile: Callable[[], None]) -> None:
        super().__init__(table)
        self._meanwhile = meanwhile

    def claim_in_flight(
        self,
        message_id: str,
        tenant: str,
        token: str,
        lease_seconds: int,
        *,
        route: PendingRoute,
        wake: str | None = None,
    ) -> Claim | None:
        claimed = super().claim_in_flight(message_id, tenant, token, -1, route=route, wake=wake)  # run out already
        self._meanwhile()
        return claimed


@pytest.mark.parametrize("flavour", list(FLAVOURS))
def test_a_worker_whose_lease_was_taken_over_after_its_claim_sends_at_most_once(
    make_world: WorldFactory, table: list[Row], flavour: str
) -> None:
    """The stalled worker's route is in flight from its claim on: the worker taking over finds it
    there and treats it as a send that may have left (resent only where that cannot copy), and
    the stalled one, whose outcome is refused, ends SKIPPED."""
    world = make_world(flavour)
    message = world.queue()
    taken_over: list[SendOutcome | None] = []

    def other_worker_sends() -> None:
        taken_over.append(world.worker().handle(job_of(message).model_dump_json(), "receipt-2", 2))

    table_resource = boto3.resource("dynamodb", region_name=REGION).Table(world.table_name)
    stalled = world.worker(LeaseRunsOut(table_resource, other_worker_sends))

    outcome = stalled.handle(job_of(message).model_dump_json(), "receipt-1", 1)

    assert outcome is not None
    assert outcome.status == "SKIPPED"
    stored = world.stored(message)
    table.append(Row(f"{flavour} lease taken over", outcome_text(stored), world.copies(message), stored.attempts))
    expected = SENT if spec_for(FLAVOURS[flavour][0]).retry_safe else FAILED
    assert [o.status if o else None for o in taken_over] == [expected]
    assert (stored.status, world.copies(message)) == (expected, 1)
    if expected is FAILED:
        assert stored.failure_reason == AMBIGUOUS
    assert world.notifier.changes == [(message.id, expected, "https://client.example/hooks")]


# --- a worker that dies in the middle of a batch ---------------------------------------------------


class WorkerDied(BaseException):
    """The Lambda process ends (timeout, out of memory): no handler of ours or of Powertools runs."""


@dataclass
class DiesAfterSending:
    """The kind's real client; the process dies right after the provider accepted `fatal`'s send."""

    client: Sender
    fatal_recipient: str
    died: bool = False

    def send_text(self, target: ProviderTarget, phone: str, body: str, idempotency_key: str) -> SentMessage:
        sent = self.client.send_text(target, phone, body, idempotency_key)
        if phone == self.fatal_recipient and not self.died:
            self.died = True
            raise WorkerDied
        return sent


CRASHES = [(flavour, False) for flavour in FLAVOURS] + [(flavour, True) for flavour in NOT_RETRY_SAFE]


@pytest.mark.parametrize(
    "crash", CRASHES, ids=[f"{flavour}{'-at-least-once' if alo else ''}" for flavour, alo in CRASHES]
)
def test_a_worker_dying_mid_batch_after_the_provider_accepted(
    make_world: WorldFactory,
    table: list[Row],
    functions: Functions,
    monkeypatch: pytest.MonkeyPatch,
    crash: tuple[str, bool],
    *,
    override: Callable[..., object],
) -> None:
    """A batch of three: the first is sent and recorded, the second is accepted by the provider
    and the process dies before recording it, the third never starts. Nothing was deleted from
    the queue, so SQS delivers all three again once their visibility timeout passes."""
    flavour, at_least_once = crash
    world = make_world(flavour, at_least_once=at_least_once)
    first, fatal, third = world.queue(), world.queue(), world.queue()
    world.client = DiesAfterSending(world.client, fatal.to)
    worker = world.worker()
    override(send_worker=worker)
    sqs = boto3.client("sqs", region_name=REGION)
    queue_url = world.records.queues["SendQueue"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    for queued in (first, fatal, third):
        sqs.send_message(QueueUrl=queue_url, MessageBody=job_of(queued).model_dump_json())

    def receive() -> list[dict[str, Any]]:
        batch = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, AttributeNames=["All"])
        return list(batch.get("Messages", []))

    batch = sorted(receive(), key=lambda m: [first.id, fatal.id, third.id].index(job_id(m["Body"])))
    assert len(batch) == 3
    # The crashed worker's lease has run out by the time SQS redelivers (visibility 180 s, lease 60 s).
    with monkeypatch.context() as lease, pytest.raises(WorkerDied):
        lease.setattr(sending, "LEASE_SECONDS", -1)
        functions.invoke("SendWorkerFunction", {"Records": [received_record(m, queue_arn) for m in batch]})
    assert world.stored(first).status is SENT
    assert world.stored(fatal).status is MessageStatus.SENDING

    for received in batch:  # the visibility timeout passes
        sqs.change_message_visibility(QueueUrl=queue_url, ReceiptHandle=received["ReceiptHandle"], VisibilityTimeout=0)
    again = receive()
    response = functions.invoke("SendWorkerFunction", {"Records": [received_record(m, queue_arn) for m in again]})

    assert response == {"batchItemFailures": []}
    assert {int(m["Attributes"]["ApproximateReceiveCount"]) for m in again} == {2}
    resent = world.stored(fatal)
    table.append(
        Row(
            f"{flavour} crash mid-batch{' at-least-once' if at_least_once else ''}",
            outcome_text(resent),
            world.copies(fatal),
            resent.attempts,
        )
    )
    assert [world.stored(m).status for m in (first, third)] == [SENT, SENT]
    assert [world.copies(m) for m in (first, third)] == [1, 1]
    if spec_for(FLAVOURS[flavour][0]).retry_safe:
        # The same route first, with the same message id: the recipient's phone shows one message.
        assert (resent.status, resent.source_number, world.copies(fatal)) == (SENT, "5511900000002", 1)
    elif at_least_once:
        assert (resent.status, world.copies(fatal)) == (SENT, 2)
    else:
        assert (resent.status, resent.failure_reason, world.copies(fatal)) == (FAILED, AMBIGUOUS, 1)
    assert [status for message_id, status, _ in world.notifier.changes if message_id == fatal.id] == [resent.status]


def job_id(body: str) -> str:
    return SendJob.model_validate_json(body).message_id


@dataclass
class DiesBeforeSending:
    """The kind's real client; the process dies as the first send is about to reach the provider
    (after the claim that recorded its route in flight, before any request of the send)."""

    client: Sender
    died: bool = False

    def send_text(self, target: ProviderTarget, phone: str, body: str, idempotency_key: str) -> SentMessage:
        if not self.died:
            self.died = True
            raise WorkerDied
        return self.client.send_text(target, phone, body, idempotency_key)


@pytest.mark.parametrize(
    "crash", CRASHES, ids=[f"{flavour}{'-at-least-once' if alo else ''}" for flavour, alo in CRASHES]
)
def test_a_worker_dying_between_its_claim_and_the_provider_call(
    make_world: WorldFactory, table: list[Row], monkeypatch: pytest.MonkeyPatch, crash: tuple[str, bool]
) -> None:
    """Nothing left, but the route is in flight from the claim on: the redelivery cannot tell this
    from a send that left, so it resends only where that cannot copy, and else ends ambiguous."""
    flavour, at_least_once = crash
    world = make_world(flavour, at_least_once=at_least_once)
    message = world.queue()
    world.client = DiesBeforeSending(world.client)
    with monkeypatch.context() as lease, pytest.raises(WorkerDied):
        lease.setattr(sending, "LEASE_SECONDS", -1)  # run out by the time SQS redelivers
        world.worker().handle(job_of(message).model_dump_json(), "receipt-1", 1)
    crashed = world.stored(message)
    assert (crashed.status, crashed.in_flight is not None, world.copies(message)) == (MessageStatus.SENDING, True, 0)

    outcome = world.worker().handle(job_of(message).model_dump_json(), "receipt-2", 2)

    assert outcome is not None
    resent = world.stored(message)
    name = f"{flavour} crash before the call{' at-least-once' if at_least_once else ''}"
    table.append(Row(name, outcome_text(resent), world.copies(message), resent.attempts))
    if spec_for(FLAVOURS[flavour][0]).retry_safe or at_least_once:
        assert (resent.status, resent.in_flight, world.copies(message)) == (SENT, None, 1)
    else:
        assert (resent.status, resent.failure_reason, world.copies(message)) == (FAILED, AMBIGUOUS, 0)
    assert [status for message_id, status, _ in world.notifier.changes if message_id == message.id] == [resent.status]
