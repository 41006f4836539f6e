"""One profile per function: what its entry point needs, composed from the components.

`bootstrap.<profile>(settings=None, aws=None, **overrides)`: without arguments a profile uses this
process's components (a Lambda container runs one function); with any, components of its own,
with `overrides` in place of the components they name (`send_worker(send_queue=FakeQueue())`).
Each profile checks at cold start, when its entry point calls it, that the settings it requires
(`REQUIRED_SETTINGS`, one entry per profile) are there, so a function missing a variable fails at
import with that variable's name, not on the request that first needs it. Nothing is built before
a request or record needs it.

API profiles return the Powertools resolver with its routers and, in `dependency_overrides`, the
provider of every `deps` function the capabilities' routes declare. Workers' profiles return a
function that gives the worker, built on its first call.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from switchboard.bootstrap import (
    audit,
    calls,
    catalog,
    health,
    lines,
    live,
    messages,
    people,
    pool,
    providers,
    quotas,
    routing,
    templates,
    usage,
    webhooks,
)
from switchboard.bootstrap.components import Component, Components, current
from switchboard.core.observability import logger
from switchboard.core.settings import Settings

if TYPE_CHECKING:
    import boto3
    from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
    from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
    from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig

    from switchboard.calls.reconcile import Reconciler
    from switchboard.catalog.authentication import Authenticator
    from switchboard.live.notifier import Notifier
    from switchboard.live.service import ConnectionService
    from switchboard.messages.client_webhooks import ClientWebhookWorker
    from switchboard.messages.sending import SendWorker
    from switchboard.routing.outbox import OutboxService
    from switchboard.webhooks.service import IngestService

T = TypeVar("T")


class MissingSetting(RuntimeError):
    """A function started without an environment variable it needs."""


# The variables each profile's function cannot run without, checked at cold start (settings.py
# gives every other one a default, or makes it optional: no event bus, no global downstream).
# tests/core/test_profile_settings.py holds each function's template environment to its entry.
_QUEUES = ("FORWARD_QUEUE_URL", "RECONCILE_QUEUE_URL", "CLIENT_WEBHOOK_QUEUE_URL")
REQUIRED_SETTINGS: dict[str, tuple[str, ...]] = {
    "calls_api": ("RECONCILE_QUEUE_URL", "CLIENT_WEBHOOK_QUEUE_URL"),
    # An instance's test message goes onto SendQueue.
    "catalog_api": ("CLIENT_WEBHOOK_QUEUE_URL", "SEND_QUEUE_URL"),
    "live_tickets_api": ("LIVE_URL",),
    "messages_api": ("SEND_QUEUE_URL", "CLIENT_WEBHOOK_QUEUE_URL"),
    # Replays go back onto ClientWebhookQueue.
    "ops_api": ("CLIENT_WEBHOOK_QUEUE_URL",),
    "outgoing_api": (),
    "pool_api": (),
    "tenants_api": (),
    # The user pool is read on the first request that needs it (USER_POOL_ID, template Globals):
    # a stack run without one (tests of other capabilities) still loads every function.
    "users_api": (),
    # A fallback template's job, when Meta failed a send for the window, goes to SendQueue.
    "webhooks_api": (*_QUEUES, "SEND_QUEUE_URL", "MEDIA_BUCKET"),
    "authorizer": (),
    "client_webhooks": ("CLIENT_WEBHOOK_QUEUE_URL",),
    "forwarder": ("MEDIA_BUCKET",),
    "live_connections": (),
    "live_notifier": ("LIVE_MANAGEMENT_URL",),
    "reconcile_scheduler": ("RECONCILE_QUEUE_URL",),
    "reconcile_worker": ("CLIENT_WEBHOOK_QUEUE_URL",),
    "routing_sweep": _QUEUES,
    "send_worker": ("SEND_QUEUE_URL", "CLIENT_WEBHOOK_QUEUE_URL"),
}


def _components(
    profile: str,
    settings: Settings | None,
    aws: boto3.session.Session | None,
    overrides: dict[str, object],
) -> Components | None:
    """The components a profile uses (None: this process's), once its required settings are checked.

    From the environment only the variables' presence is checked here: validating every setting
    builds the settings' schema, about 6% of `import boto3`, which the first request pays instead
    (a value of the wrong form fails there, naming its variable)."""
    needs = REQUIRED_SETTINGS[profile]
    if settings is None:
        missing = [variable for variable in needs if not os.environ.get(variable)]
    else:
        fields = {field.alias: name for name, field in Settings.model_fields.items() if field.alias}
        missing = [variable for variable in needs if not getattr(settings, fields[variable])]
    if missing:
        function = profile.removesuffix("_api").replace("_", " ")
        raise MissingSetting(f"the {function} function needs {', '.join(missing)} set in its environment")
    if settings is None and aws is None and not overrides:
        return None
    return Components(settings, aws, overrides)


def _built(built: Component[T], components: Components | None) -> Callable[[], T]:
    """`built` of these components (or, None, of this process's at the time of the call)."""
    return lambda: built(components or current())


def _provided() -> dict[Callable[..., Any], Component[Any]]:
    """Each capability's route dependency and the component that provides it."""
    from switchboard.audit import deps as audit_deps
    from switchboard.calls import deps as calls_deps
    from switchboard.catalog import deps as catalog_deps
    from switchboard.core.api import auth
    from switchboard.health import deps as health_deps
    from switchboard.lines import deps as lines_deps
    from switchboard.live import deps as live_deps
    from switchboard.messages import deps as messages_deps
    from switchboard.people import deps as people_deps
    from switchboard.pool import deps as pool_deps
    from switchboard.quotas import deps as quotas_deps
    from switchboard.routing import deps as routing_deps
    from switchboard.templates import deps as templates_deps
    from switchboard.usage import deps as usage_deps
    from switchboard.webhooks import deps as webhooks_deps

    return {
        audit_deps.audit_log: audit.audit_log,
        lines_deps.calls_config_service: lines.calls_config_service,
        lines_deps.subscription_service: lines.subscription_service,
        calls_deps.call_service: calls.call_service,
        calls_deps.dialing_service: calls.dialing_service,
        calls_deps.media_service: calls.media_service,
        calls_deps.reconcile_on_demand: calls.reconcile_on_demand,
        catalog_deps.catalog_service: catalog.catalog_service,
        health_deps.health_watch: health.health_watch,
        health_deps.events_webhook_secrets: messages.client_webhook_deliverer,
        catalog_deps.pacing_defaults: health.pacing_defaults,
        live_deps.ticket_service: live.ticket_service,
        messages_deps.client_webhook_deliverer: messages.client_webhook_deliverer,
        messages_deps.delivery_log: messages.delivery_log,
        messages_deps.message_service: messages.message_service,
        messages_deps.media_uploads: messages.media_uploads,
        people_deps.users_service: people.users_service,
        people_deps.pool_sign_in: people.pool_sign_in,
        people_deps.authenticator_service: people.authenticator_service,
        pool_deps.pool_service: pool.pool_service,
        catalog_deps.webhook_setup: providers.webhook_setup,
        catalog_deps.pairing_service: providers.pairing_service,
        quotas_deps.quota_service: quotas.quota_service,
        auth.request_admission: quotas.request_limiter,
        routing_deps.outbox_service: routing.outbox_service,
        routing_deps.routing_service: routing.routing_service,
        templates_deps.template_service: templates.template_service,
        usage_deps.usage_recorder: usage.usage_recorder,
        webhooks_deps.ingest_service: webhooks.ingest_service,
        webhooks_deps.ignored_events: webhooks.ignored_events,
    }


def _api(components: Components | None, *routers: APIGatewayHttpRouter) -> APIGatewayHttpResolver:
    """The resolver of `routers`, every route dependency provided from `components`."""
    from switchboard.core.api.app import create_api
    from switchboard.messages import deps as messages_deps

    app = create_api(*routers)
    for dependency, built in _provided().items():
        app.dependency_overrides[dependency] = _built(built, components)

    def message_service() -> Any:
        # Lets an in-flight submission's idempotency record expire with this invocation.
        service = messages.message_service(components or current())
        service.bind_invocation(app.lambda_context)
        return service

    app.dependency_overrides[messages_deps.message_service] = message_service
    return app


# --- API functions -------------------------------------------------------------------------


def calls_api(
    settings: Settings | None = None, aws: boto3.session.Session | None = None, **overrides: object
) -> APIGatewayHttpResolver:
    from switchboard.calls import routes as calls_routes
    from switchboard.lines import routes as lines_routes

    components = _components("calls_api", settings, aws, overrides)
    return _api(components, lines_routes.router, calls_routes.router)


def catalog_api(
    settings: Settings | None = None, aws: boto3.session.Session | None = None, **overrides: object
) -> APIGatewayHttpResolver:
    from switchboard.catalog import routes as catalog_routes
    from switchboard.health import routes as health_routes
    from switchboard.templates import routes as templates_routes

    components = _components("catalog_api", settings, aws, overrides)
    return _api(components, catalog_routes.router, health_routes.router, templates_routes.router)


def live_tickets_api(
    settings: Settings | None = None, aws: boto3.session.Session | None = None, **overrides: object
) -> APIGatewayHttpResolver:
    from switchboard.live import routes as live_routes

    return _api(_components("live_tickets_api", settings, aws, overrides), live_routes.router)


def messages_api(
    settings: Settings | None = None, aws: boto3.session.Session | None = None, **overrides: object
) -> APIGatewayHttpResolver:
    from switchboard.messages import routes as messages_routes

    components = _components("messages_api", settings, aws, overrides)
    return _api(components, messages_routes.router)


def ops_api(
    settings: Settings | None = None, aws: boto3.session.Session | None = None, **overrides: object
) -> APIGatewayHttpResolver:
    from switchboard.audit import routes as audit_routes
    from switchboard.messages import delivery_routes
    from switchboard.usage import routes as usage_routes
    from switchboard.webhooks import ignored_routes

    return _api(
        _components("ops_api", settings, aws, overrides),
        usage_routes.router,
        audit_routes.router,
        delivery_routes.router,
        ignored_routes.router,
    )


def outgoing_api(
    settings: Settings | None = None, aws: boto3.session.Session | None = None, **overrides: object
) -> APIGatewayHttpResolver:
    from switchboard.routing import replies

    return _api(_components("outgoing_api", settings, aws, overrides), replies.router)


def pool_api(
    settings: Settings | None = None, aws: boto3.session.Session | None = None, **overrides: object
) -> APIGatewayHttpResolver:
    from switchboard.pool import routes as pool_routes

    return _api(_components("pool_api", settings, aws, overrides), pool_routes.router)


def tenants_api(
    settings: Settings | None = None, aws: boto3.session.Session | None = None, **overrides: object
) -> APIGatewayHttpResolver:
    from switchboard.quotas import routes as quotas_routes
    from switchboard.routing import routes as routing_routes

    return _api(_components("tenants_api", settings, aws, overrides), routing_routes.router, quotas_routes.router)


def users_api(
    settings: Settings | None = None, aws: boto3.session.Session | None = None, **overrides: object
) -> APIGatewayHttpResolver:
    from switchboard.people import routes as people_routes

    return _api(_components("users_api", settings, aws, overrides), people_routes.router)


def webhooks_api(
    settings: Settings | None = None, aws: boto3.session.Session | None = None, **overrides: object
) -> APIGatewayHttpResolver:
    from switchboard.webhooks import routes as webhooks_routes

    return _api(_components("webhooks_api", settings, aws, overrides), webhooks_routes.router)


# --- event and queue functions ---------------------------------------------------------------


def authorizer(
    settings: Settings | None = None, aws: boto3.session.Session | None = None, **overrides: object
) -> Callable[[], Authenticator]:
    """The catalog's key lookups and the user pool's token check, which authenticate each request."""
    return _built(catalog.authenticator, _components("authorizer", settings, aws, overrides))


def client_webhooks(
    settings: Settings | None = None, aws: boto3.session.Session | None = None, **overrides: object
) -> Callable[[], ClientWebhookWorker]:
    components = _components("client_webhooks", settings, aws, overrides)
    return _built(messages.client_webhook_worker, components)


@dataclass(frozen=True)
class Forwarder:
    """`forward()(message=...)` posts once per provider event; `idempotency()` is its config,
    which each invocation's Lambda context is registered with."""

    forward: Callable[[], Callable[..., int | None]]
    idempotency: Callable[[], IdempotencyConfig]


def forwarder(
    settings: Settings | None = None, aws: boto3.session.Session | None = None, **overrides: object
) -> Forwarder:
    components = _components("forwarder", settings, aws, overrides)
    return Forwarder(_built(routing.forward_once, components), _built(routing.forward_idempotency_config, components))


def live_connections(
    settings: Settings | None = None, aws: boto3.session.Session | None = None, **overrides: object
) -> Callable[[], ConnectionService]:
    return _built(live.connection_service, _components("live_connections", settings, aws, overrides))


def live_notifier(
    settings: Settings | None = None, aws: boto3.session.Session | None = None, **overrides: object
) -> Callable[[], Notifier]:
    return _built(live.notifier, _components("live_notifier", settings, aws, overrides))


def reconcile_scheduler(
    settings: Settings | None = None, aws: boto3.session.Session | None = None, **overrides: object
) -> Callable[[], int]:
    """One reconcile message per instance; the count sent. The same pass counts the fleet's gauges
    (instances disconnected, paused, down too long; call slots in use)."""
    components = _components("reconcile_scheduler", settings, aws, overrides)

    def schedule() -> int:
        from switchboard.calls.reconcile import every_instance, fan_out

        chosen = components or current()
        gauges = calls.fleet_gauges(chosen)
        listed = gauges.counting(every_instance(calls.scheduled_instances(chosen)))
        sent = fan_out(listed, calls.reconcile_queue(chosen))
        try:
            gauges.publish()
        except Exception:  # the gauges never stop the reconciliation they ride along with
            logger.exception("fleet gauges not published")
        return sent

    return schedule


def reconcile_worker(
    settings: Settings | None = None, aws: boto3.session.Session | None = None, **overrides: object
) -> Callable[[], Reconciler]:
    components = _components("reconcile_worker", settings, aws, overrides)
    return _built(calls.reconciler, components)


@dataclass(frozen=True)
class Sweep:
    """The scheduled sweep's two services: pending provider events, then every outbox."""

    ingest: Callable[[], IngestService]
    outbox: Callable[[], OutboxService]


def routing_sweep(
    settings: Settings | None = None, aws: boto3.session.Session | None = None, **overrides: object
) -> Sweep:
    components = _components("routing_sweep", settings, aws, overrides)
    return Sweep(_built(webhooks.ingest_service, components), _built(routing.outbox_service, components))


@dataclass(frozen=True)
class SendWorking:
    """`worker()` handles each record; `flush()`, after each batch, writes the sends the ban watch
    counted in it (nothing when the container has not built the ban watch)."""

    worker: Callable[[], SendWorker]
    flush: Callable[[], None]


def send_worker(
    settings: Settings | None = None, aws: boto3.session.Session | None = None, **overrides: object
) -> SendWorking:
    components = _components("send_worker", settings, aws, overrides)

    def flush() -> None:
        watch = (components or current()).built(health.health_watch)
        if watch is not None:
            watch.flush()

    return SendWorking(_built(messages.send_worker, components), flush)
