"""The whole of switchboard in one process: AWS endpoint, gateway, SQS poller, scheduler,
EventBridge rules, the WebSocket API, provider simulator, and the seeded demo tenant.

    stack = LocalStack(port=0, aws_port=0, sim_port=0, live_port=0, live_management_port=0).start()
    ...  stack.api_url, stack.live_url, stack.sim_url, stack.platform_key, stack.demo
    stack.stop()                                                  # nothing left behind

The functions run in this process (as warm Lambda containers would), so the stack sets the
process environment they read (TABLE_NAME, queue URLs, AWS_ENDPOINT_URL, ...) while it runs
and restores it on `stop()`.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3

from devstack import eventbridge, template
from devstack.apigw import HttpApi
from devstack.aws_endpoint import AwsEndpoint, own_client_config
from devstack.console import ConsoleFiles
from devstack.gateway import Gateway
from devstack.lambdas import Functions, mount_layers
from devstack.scheduler import Scheduler
from devstack.seed import SeededPerson, SeededTenant, TenantExists, seed_people, seed_tenant
from devstack.simulator import Simulator
from devstack.sqs_poller import SqsPoller
from devstack.ttl import SWEEP_SECONDS, ExpiringItems
from devstack.websocket_api import IDLE_TIMEOUT, MAX_DURATION, WebSocketApi, websocket_apis

# The shared layer is importable as in Lambda (/opt/python), also under `python -m devstack`.
mount_layers()
from switchboard import bootstrap  # noqa: E402
from switchboard.catalog.domain import looks_like_key  # noqa: E402
from switchboard.core.identity import PLATFORM_TENANT, Scope  # noqa: E402

log = logging.getLogger("devstack.stack")

REGION = "us-east-1"
DRAIN_SECONDS = 4.0  # how long stop() lets invocations in flight end
LOOPBACK_CIDRS = "127.0.0.0/8,::1/128"
DEMO_TENANT = "demo"
DEMO_DIGITS = "55119000000"
FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "local",
    "AWS_SECRET_ACCESS_KEY": "local",
    "AWS_SESSION_TOKEN": "local",
}


class LocalStack:
    """Starts everything with threads in this process; `start()` returns once all is up.

    - `port`, `aws_port`, `sim_port`, `live_port` (the WebSocket API), `live_management_port`
      (its `@connections` API): 0 picks a free port.
    - `aws_endpoint_url`: use that endpoint instead of the embedded one (resources are
      created there if missing).
    - `aws_front`: called with the embedded endpoint's URL once it is up, returns the URL every
      client of the stack and of its functions uses instead: something in front of the endpoint
      (a counting proxy) that sees all their requests.
    - `platform_key`: exactly this platform key (`sb_live_...`), else a random one.
    - `schedule_seconds`: replaces every schedule's period.
    - `sqs_wait_seconds`: each receive's long-poll wait (delivery is immediate either way).
    - `visibility_timeout`: overrides every queue's, for tests that watch retries.
    - `function_timeout`: overrides every function's timeout (with a shorter visibility timeout:
      a crashed invocation's idempotency record holds its redelivery back for that long).
    - `seed`: seed the `demo` tenant.
    - `simulator_settings`: `SimulatorConfig` fields (e.g. a short `fault_delay_seconds`).
    - `environment`: extra variables for the functions (e.g. PROVIDER_TIMEOUT_SECONDS).
    - `live_idle_timeout`, `live_max_duration`: API Gateway's WebSocket idle timeout (10 min) and
      maximum connection duration (2 h), shorter for tests.
    - `event_retry_delays`: the delays before the retries of a failed async invocation by an
      EventBridge rule (Lambda's: about 1 and 2 minutes).
    - `ttl_sweep_seconds`: how often items past their Time to Live are deleted (`devstack/ttl.py`).
    - `prefix`: the local stack name, prefixed to every table, queue, bus and secret. Embedded
      endpoints in one process share moto's state, so stacks that live in one process (tests)
      need a prefix each.
    """

    def __init__(
        self,
        *,
        port: int = 3000,
        aws_port: int = 4566,
        sim_port: int = 3100,
        live_port: int = 3001,
        live_management_port: int = 3002,
        live_idle_timeout: float = IDLE_TIMEOUT,
        live_max_duration: float = MAX_DURATION,
        event_retry_delays: tuple[float, ...] = eventbridge.RETRY_DELAYS,
        aws_endpoint_url: str | None = None,
        aws_front: Callable[[str], str] | None = None,
        platform_key: str | None = None,
        schedule_seconds: float | None = None,
        sqs_wait_seconds: int = 1,
        visibility_timeout: int | None = None,
        function_timeout: int | None = None,
        seed: bool = True,
        prefix: str = "switchboard",
        template_path: Path = template.TEMPLATE,
        simulator_settings: dict[str, Any] | None = None,
        environment: dict[str, str] | None = None,
        ttl_sweep_seconds: float = SWEEP_SECONDS,
    ) -> None:
        self._port = port
        self._ttl_sweep_seconds = ttl_sweep_seconds
        self._aws_port = aws_port
        self._sim_port = sim_port
        self._live_port = live_port
        self._live_management_port = live_management_port
        self._live_idle_timeout = live_idle_timeout
        self._live_max_duration = live_max_duration
        self._event_retry_delays = event_retry_delays
        self._endpoint: AwsEndpoint | None = None
        self._external_endpoint = aws_endpoint_url
        self._aws_front = aws_front
        self._platform_key = platform_key
        self._schedule_seconds = schedule_seconds
        self._sqs_wait_seconds = sqs_wait_seconds
        self._visibility_timeout = visibility_timeout
        self._function_timeout = function_timeout
        self._seed = seed
        self.names = template.LocalNames(prefix=prefix)
        self._template_path = template_path
        self.sim_admin_token = secrets.token_urlsafe(24)
        self._simulator_settings = simulator_settings or {}
        self._extra_environment = environment or {}
        self._saved_environment: dict[str, str | None] = {}
        self._stops: list[Callable[[], None]] = []
        self._quiesce: list[Callable[[], None]] = []
        self.aws_url = ""
        self.api_url = ""
        self.sim_url = ""
        self.live_url = ""
        self.live_management_url = ""
        self.platform_key = ""
        self.queues: dict[str, template.Queue] = {}
        self.tables: dict[str, str] = {}
        self.buses: dict[str, str] = {}
        self.buckets: dict[str, str] = {}
        self.environment: dict[str, str] = {}
        self.demo: SeededTenant | None = None
        self.notes: list[str] = []
        self.functions: Functions | None = None
        self.http_api: HttpApi | None = None
        self.poller: SqsPoller | None = None
        self.scheduler: Scheduler | None = None
        self.expiring: ExpiringItems | None = None
        self.live: WebSocketApi | None = None
        self.events: eventbridge.EventRouter | None = None
        self.user_pools: dict[str, str] = {}
        self.people: list[SeededPerson] = []

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> LocalStack:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        if self._external_endpoint:
            self.aws_url = self._external_endpoint
        else:
            endpoint = AwsEndpoint(port=self._aws_port).start()
            self._stops.append(endpoint.stop)
            expiring = ExpiringItems(
                endpoint.exclusive, lambda: set(self.tables.values()), interval=self._ttl_sweep_seconds
            ).start()
            self._stops.append(expiring.stop)
            self.expiring = expiring
            self.aws_url = self._aws_front(endpoint.url) if self._aws_front else endpoint.url
            self._endpoint = endpoint
        self.functions = Functions(self._template_path, timeout_seconds=self._function_timeout)
        self._stops.append(self._drain)
        self.http_api = HttpApi(self.functions)
        # The console's images may come from the media bucket, served here by the AWS endpoint.
        gateway = Gateway(self.http_api, port=self._port, console=ConsoleFiles(media_origin=self.aws_url))
        self._stops.append(gateway.stop)
        self._quiesce.append(gateway.stop)
        self.api_url = gateway.url
        self._start_live_api()
        self._set_environment(self._provision())
        self._start_event_rules()
        gateway.start()
        simulator = Simulator(admin_token=self.sim_admin_token, **self._simulator_settings)
        self.sim_url = simulator.start(port=self._sim_port)
        self._stops.append(simulator.stop)
        self.poller = SqsPoller(
            self.functions, self.queues, region=REGION, endpoint_url=self.aws_url, wait_seconds=self._sqs_wait_seconds
        ).start()
        poller = self.poller
        self._stops.append(lambda: poller.stop(timeout=self._sqs_wait_seconds + 1))
        self._quiesce.append(poller.request_stop)
        self.scheduler = Scheduler(self.functions, period_override=self._schedule_seconds, region=REGION).start()
        scheduler = self.scheduler
        self._stops.append(lambda: scheduler.stop(timeout=1))
        self._quiesce.append(scheduler.request_stop)
        self.platform_key = self._create_platform_key()
        if self._seed:
            try:
                self.demo = self.seed_tenant(DEMO_TENANT, DEMO_DIGITS)
            except TenantExists as exists:
                self.notes.append(str(exists))
            if self.demo is not None and self.user_pools.get("UserPool"):
                self.people = self.seed_people(self.demo.admin_key, self.demo.owner_tag)

    def cognito(self) -> Any:
        """A client of the stack's user pool (moto's Cognito IdP on the embedded endpoint)."""
        session = boto3.session.Session(**_credentials(self._external_endpoint), region_name=REGION)
        return session.client("cognito-idp", endpoint_url=self.aws_url, config=own_client_config("people"))

    def seed_people(self, admin_key: str, owner_tag: str) -> list[SeededPerson]:
        """An admin and an attendant of the tenant with permanent passwords (printed by the banner)."""
        client = self.cognito()
        try:
            return seed_people(self.api_url, admin_key, client, self.user_pools["UserPool"], owner_tag=owner_tag)
        finally:
            client.close()

    def _start_live_api(self) -> None:
        """The template's WebSocket API (the first one: the functions get one `LIVE_URL`)."""
        assert self.functions is not None
        apis = websocket_apis(self._template_path, set(self.functions.names()))
        if not apis:
            return
        for extra in apis[1:]:
            self.notes.append(f"WebSocket API {extra.logical_id} not served locally: only {apis[0].logical_id} is")
        live = WebSocketApi(
            self.functions,
            apis[0],
            port=self._live_port,
            management_port=self._live_management_port,
            idle_timeout=self._live_idle_timeout,
            max_duration=self._live_max_duration,
            region=REGION,
        )
        self._stops.append(live.stop)
        self._quiesce.append(live.stop)
        live.start()
        self.live = live
        self.live_url = live.url
        self.live_management_url = live.management_url

    def _start_event_rules(self) -> None:
        """The template's EventBridge rules, fed by the embedded endpoint's PutEvents (see eventbridge.py)."""
        assert self.functions is not None
        found = eventbridge.rules(self.functions, self.buses, self.names, self.notes)
        if not found:
            return
        if self._endpoint is None:
            self.notes.append("event rules not run: the local stack sees PutEvents on its embedded AWS endpoint only")
            return
        router = eventbridge.EventRouter(
            self.functions, found, region=REGION, retry_delays=self._event_retry_delays, send=self._queue_send()
        ).start()
        forget = self._endpoint.observe(eventbridge.PUT_EVENTS_TARGET, router.observe)
        self._stops.append(lambda: router.stop(timeout=1))
        self._stops.append(forget)
        self._quiesce.append(router.request_stop)
        self.events = router

    def _queue_send(self) -> eventbridge.QueueSend:
        """How a rule's queue target gets its event: a SendMessage through the AWS endpoint, as
        EventBridge's own delivery to SQS is (the queue's pollers then take it)."""
        session = boto3.session.Session(**_credentials(self._external_endpoint), region_name=REGION)
        sqs = session.client("sqs", endpoint_url=self.aws_url, config=own_client_config("event-rules"))
        self._stops.append(sqs.close)

        def send(queue: str, body: str) -> None:
            sqs.send_message(QueueUrl=self.queues[queue].url, MessageBody=body)

        return send

    def stop(self) -> None:
        """Stop every part and restore the environment.

        First no new work: the functions refuse new invocations, the gateway closes, the pollers
        and schedules stop. Then the parts stop, last started first stopped, the invocations in
        flight getting up to `DRAIN_SECONDS` to end before the AWS endpoint goes.
        """
        if self.functions is not None:
            self.functions.close()
        while self._quiesce:
            self._quiesce.pop(0)()
        while self._stops:
            self._stops.pop()()
        for name, value in self._saved_environment.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self._saved_environment = {}
        _reset_components()

    def _drain(self) -> None:
        if self.functions is not None and not self.functions.wait_idle(DRAIN_SECONDS):
            log.warning("invocations still running after %s s: the stack stops without them", DRAIN_SECONDS)

    def __enter__(self) -> LocalStack:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- seeding -------------------------------------------------------------------------

    def seed_tenant(self, owner_tag: str, digits_prefix: str) -> SeededTenant:
        """A tenant with a simulator provider, three connected numbers/instances and keys."""
        return seed_tenant(
            self.api_url,
            self.sim_url,
            self.platform_key,
            owner_tag=owner_tag,
            digits_prefix=digits_prefix,
            sim_admin_token=self.sim_admin_token,
        )

    # --- internals -----------------------------------------------------------------------

    def _provision(self) -> dict[str, str]:
        """Tables, queues and buses of the template; returns the functions' environment."""
        session = boto3.session.Session(**_credentials(self._external_endpoint), region_name=REGION)
        clients = {
            service: session.client(service, endpoint_url=self.aws_url, config=own_client_config("provisioning"))
            for service in ("dynamodb", "sqs", "events", "cognito-idp", "s3")
        }
        exist_ok = bool(self._external_endpoint)
        self.tables = template.create_tables(clients["dynamodb"], self.names, self._template_path, exist_ok=exist_ok)
        self.queues = template.create_queues(
            clients["sqs"], self.names, self._template_path, visibility_timeout=self._visibility_timeout
        )
        self.buses = template.create_event_buses(clients["events"], self.names, self._template_path)
        self.user_pools = template.create_user_pools(clients["cognito-idp"], self.names, self._template_path)
        self.buckets = template.create_buckets(clients["s3"], self.names, self._template_path)
        for client in clients.values():
            client.close()
        refs = {
            **self.tables,
            **{logical_id: queue.url for logical_id, queue in self.queues.items()},
            **self.buses,
            **self.user_pools,
            **self.buckets,
        }
        environment = template.function_environment(refs, self.names, self._template_path)
        # The provider simulator and local downstreams listen on loopback: the operator
        # allowlist lets outbound calls (and plain http) reach it, as it would a private network.
        allowed = ",".join(filter(None, [LOOPBACK_CIDRS, os.environ.get("OUTBOUND_ALLOWED_CIDRS", "")]))
        environment.update(
            {
                "OUTBOUND_ALLOWED_CIDRS": allowed,
                "AWS_ENDPOINT_URL": self.aws_url,
                "AWS_REGION": REGION,
                "AWS_DEFAULT_REGION": REGION,
                "PUBLIC_BASE_URL": self.api_url,
                **_credentials(self._external_endpoint, environ_names=True),
            }
        )
        for name in ("DOWNSTREAM_BASE_URL", "DOWNSTREAM_ACCOUNT_ID", "DOWNSTREAM_INBOX_ID"):
            environment[name] = os.environ.get(name, "")
        if self.live is not None:
            # The template's values name the deployed API (`${LiveApi}` is unresolvable here).
            environment["LIVE_URL"] = self.live_url
            environment["LIVE_MANAGEMENT_URL"] = self.live_management_url
        if environment.get("USER_POOL_ID"):
            # moto signs the pool's tokens with its issuer (the pool's AWS URL) and serves the
            # JWKS from the embedded endpoint, which the authorizer reads as it would Cognito's.
            environment["USER_POOL_JWKS_URL"] = f"{self.aws_url}/{environment['USER_POOL_ID']}/.well-known/jwks.json"
        if os.environ.get("POWERTOOLS_LOG_LEVEL"):
            environment["POWERTOOLS_LOG_LEVEL"] = os.environ["POWERTOOLS_LOG_LEVEL"]
        return {**environment, **self._extra_environment}

    def _set_environment(self, environment: dict[str, str]) -> None:
        for name, value in environment.items():
            self._saved_environment.setdefault(name, os.environ.get(name))
            os.environ[name] = value
        self.environment = environment
        _reset_components()
        token = os.environ.get("DOWNSTREAM_API_TOKEN")
        parameter = environment.get("DOWNSTREAM_API_TOKEN_PARAMETER")
        if token and parameter:
            bootstrap.secrets().put(parameter, token)

    def _create_platform_key(self) -> str:
        service = bootstrap.catalog_service()
        if self._platform_key:
            if not looks_like_key(self._platform_key):
                raise ValueError("the platform key must look like sb_live_<20+ characters of [A-Za-z0-9_-]>")
            if service.authenticate(self._platform_key):
                return self._platform_key
        created = service.create_api_key(
            None,
            tenant=PLATFORM_TENANT,
            name="local operator",
            environment="LIVE",
            scopes=[Scope.PLATFORM],
            preset_key=self._platform_key,
        )
        return created.plaintext


def _credentials(external_endpoint: str | None, *, environ_names: bool = False) -> dict[str, str]:
    """Fake credentials for the embedded endpoint; an external one keeps the user's own, if any."""
    if external_endpoint and os.environ.get("AWS_ACCESS_KEY_ID"):
        return {}
    if environ_names:
        return dict(FAKE_CREDENTIALS)
    return {
        "aws_access_key_id": FAKE_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": FAKE_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        "aws_session_token": FAKE_CREDENTIALS["AWS_SESSION_TOKEN"],
    }


def _reset_components() -> None:
    """Adapters built for the previous environment are forgotten (clients, settings)."""
    bootstrap.reset()
