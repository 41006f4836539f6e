"""Fixtures every capability's tests share: AWS on moto built from template.yaml, the HTTP API run
in-process, tenants, and the provider simulator.

`aws` starts an in-process moto (functional tests only: it is not a concurrency oracle) with
every table and queue of the template; `served_aws` is the same on a real (serialised) moto
server, for tests with threads. `client` runs requests through the same route table, authorizer
and handlers API Gateway would use. `simulator` is one provider simulator per test module and
`control` its `/_sim` control API, reset after each test. The helpers these fixtures return are
in tools/support (the benchmarks and the soak build the same worlds).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest
from moto import mock_aws

from devstack.apigw import HttpApi
from devstack.aws_endpoint import AwsEndpoint
from devstack.simulator import Simulator, SimulatorControl
from switchboard import bootstrap
from switchboard.core.bus import EventPublisher
from tools.support import once_per_process
from tools.support.api import SECRET_WATCH, Client, TenantKeys, new_platform_key, new_tenant
from tools.support.aws import AwsResources, create_template_resources, fake_aws_environment
from tools.support.connections import SIM_ADMIN_TOKEN
from tools.support.provider_webhooks import Catalog, build_catalog

once_per_process.install()


@pytest.fixture(autouse=True)
def no_secret_in_logs() -> Iterator[None]:
    SECRET_WATCH.lines.clear()
    yield
    SECRET_WATCH.assert_logs_clean()


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    """Every domain event put on the bus during the test, in order, as (detail type, detail)."""
    events: list[tuple[str, dict[str, Any]]] = []
    publish = EventPublisher.publish

    def recording(self: EventPublisher, detail_type: str, detail: dict[str, Any]) -> bool:
        events.append((detail_type, detail))
        return publish(self, detail_type, detail)

    monkeypatch.setattr(EventPublisher, "publish", recording)
    return events


@pytest.fixture
def dynamo_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The DynamoDB operations moto serves while the test runs, by name (query, scan, ...): a
    listing's test checks it is served from an index, never a Scan."""
    from moto.dynamodb.models import DynamoDBBackend  # noqa: PLC0415 - only the aws tier pays for it

    calls: list[str] = []
    for name in ("scan", "query", "get_item", "batch_get_item"):
        original = getattr(DynamoDBBackend, name)

        def recording(self: Any, *args: Any, _name: str = name, _original: Any = original, **kwargs: Any) -> Any:
            calls.append(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(DynamoDBBackend, name, recording)
    yield calls


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[AwsResources]:
    fake_aws_environment(monkeypatch)
    with mock_aws():
        resources = create_template_resources(monkeypatch)
        bootstrap.reset()
        yield resources
    bootstrap.reset()


@pytest.fixture
def override() -> Iterator[Callable[..., object]]:
    """`override(name=replacement)`: this process's components of those names replaced until the
    test ends (each time a new container), for the functions the in-process API loads like Lambda."""
    with ExitStack() as stack:
        yield lambda **replacements: stack.enter_context(bootstrap.overridden(**replacements))


@pytest.fixture(scope="session")
def aws_endpoint() -> Iterator[AwsEndpoint]:
    endpoint = AwsEndpoint(port=0).start()
    yield endpoint
    endpoint.stop()


@pytest.fixture
def served_aws(monkeypatch: pytest.MonkeyPatch, aws_endpoint: AwsEndpoint) -> Iterator[AwsResources]:
    """The template's resources on a real (serialised) moto server: for tests with threads.

    Every thread must build its own boto3 client or resource (they are not shared across threads
    in production either: each Lambda container has its own).
    """
    fake_aws_environment(monkeypatch)
    # Clearing every moto backend can take longer than httpx's 5 s default on a loaded machine.
    httpx.post(f"{aws_endpoint.url}/moto-api/reset", timeout=60)
    monkeypatch.setenv("AWS_ENDPOINT_URL", aws_endpoint.url)
    resources = create_template_resources(monkeypatch)
    bootstrap.reset()
    yield resources
    bootstrap.reset()


@pytest.fixture(scope="module")
def simulator() -> Iterator[Simulator]:
    """A provider simulator for the test module: `timeout` faults sleep 1 s, webhook retries start at 20 ms."""
    sim = Simulator(
        admin_token=SIM_ADMIN_TOKEN,
        fault_delay_seconds=1.0,
        webhook_retry_base_delay=0.02,
        webhook_max_attempts=4,
        webhook_timeout_seconds=2.0,
    )
    sim.start()
    yield sim
    sim.stop()


@pytest.fixture
def control(simulator: Simulator) -> Iterator[SimulatorControl]:
    """The `/_sim` control API of the `simulator` the test uses; reset after."""
    sim_control = SimulatorControl(simulator.base_url)
    yield sim_control
    sim_control.reset()
    sim_control.close()


@pytest.fixture(scope="session")
def http_api() -> HttpApi:
    return HttpApi()


@pytest.fixture
def client(aws: AwsResources, http_api: HttpApi) -> Client:
    return Client(http_api)


@pytest.fixture
def platform_key(aws: AwsResources) -> str:
    return new_platform_key()


@pytest.fixture
def make_tenant(client: Client, platform_key: str) -> Callable[..., TenantKeys]:
    def make(owner_tag: str = "acme") -> TenantKeys:
        return new_tenant(client, platform_key, owner_tag)

    return make


@pytest.fixture
def catalog(client: Client, make_tenant: Callable[..., TenantKeys]) -> Catalog:
    """Tenant `acme`'s number, wuzapi provider and instance `acme-main`, through the API."""
    return build_catalog(client, make_tenant("acme"))


# The tiers (`make unit` runs the first): each test gets one from the fixtures it uses, so a test
# moves tier by what it starts, never by a list kept by hand. A test marked `stack` by its module
# keeps that mark.
STACK_FIXTURES = frozenset({"stack", "local_stack", "fresh_tenant"})
STACK_FOLDERS = ("tests/stack/", "tests/e2e/", "tests/soak/")  # they start stacks in the test body too
AWS_FIXTURES = frozenset({"aws", "served_aws", "aws_endpoint", "simulator", "http_api"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    tiers = {item.nodeid: _tier(item) for item in items}
    for item in items:
        item.add_marker(getattr(pytest.mark, tiers[item.nodeid]))
    # The slow tiers' files first, each file still in one piece: parallel workers then take the
    # long files early and finish together, instead of one worker running the last long file alone.
    first_rank: dict[str, int] = {}
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        first_rank[path] = min(first_rank.get(path, len(TIER_ORDER)), TIER_ORDER.index(tiers[item.nodeid]))
    order = {id(item): index for index, item in enumerate(items)}
    items.sort(key=lambda item: (first_rank[item.nodeid.split("::", 1)[0]], order[id(item)]))


TIER_ORDER = ("browser", "stack", "aws", "unit")


def _tier(item: pytest.Item) -> str:
    fixtures = set(getattr(item, "fixturenames", ()))
    if "tests/console/" in item.nodeid or "browser" in fixtures:
        return "browser"
    if item.get_closest_marker("stack") or fixtures & STACK_FIXTURES or item.nodeid.startswith(STACK_FOLDERS):
        return "stack"
    if fixtures & AWS_FIXTURES:
        return "aws"
    return "unit"
