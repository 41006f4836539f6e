"""Domain objects as the services receive them: principals, instance records and their routes,
provider events (and those events run through the effect handlers, as the webhook ingest runs them)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from switchboard import bootstrap
from switchboard.catalog.domain import Instance
from switchboard.catalog.events import ProviderEvent
from switchboard.core.identity import PLATFORM_TENANT, Principal, Scope
from switchboard.pool.domain import Route
from switchboard.providers.content import Template, TemplateComponent, TemplateParameter
from switchboard.providers.kinds import ProviderKind
from switchboard.routing.domain import IncomingMessage

# Meta's documented template with body parameters (`2023_april_promo` of
# tests/contracts/meta/templates_list.json), filled as Meta's example fills it.
APRIL_PROMO = Template(
    name="2023_april_promo",
    language="en_US",
    components=[
        TemplateComponent(
            type="body",
            parameters=[TemplateParameter(type="text", text="Mark"), TemplateParameter(type="text", text="FALL25")],
        )
    ],
)


def admin(tenant: str = "acme") -> Principal:
    return Principal(tenant=tenant, key_id="key_admin", scopes=frozenset({Scope.ADMIN}))


def agent(attendant: str, tenant: str = "acme") -> Principal:
    return Principal(tenant=tenant, key_id=f"key_{attendant}", scopes=frozenset({Scope.AGENT}), attendant_id=attendant)


def sender(key_id: str, tenant: str = "acme") -> Principal:
    return Principal(tenant=tenant, key_id=key_id, scopes=frozenset({Scope.SEND}))


def platform() -> Principal:
    return Principal(tenant=PLATFORM_TENANT, key_id="key_platform", scopes=frozenset({Scope.PLATFORM}))


def instance(
    name: str = "acme-main",
    *,
    tenant: str = "acme",
    kind: str = "messages",
    provider_id: str = "prv_1",
    provider_instance_id: str | None = None,
    number_id: str = "num_1",
    **fields: Any,
) -> Instance:
    """An instance record; its provider instance id is `pi-<name>` unless given."""
    return Instance(
        tenant=tenant,
        name=name,
        provider_id=provider_id,
        provider_instance_id=provider_instance_id or f"pi-{name}",
        number_id=number_id,
        kind=kind,
        token_hint="…",
        **fields,
    )


def connected(name: str, **fields: Any) -> Instance:
    """A connected instance named `name` on the provider server (its provider instance id too),
    holding the number `num_<name>`; `fields` set the rest, or others of these."""
    return instance(name, **{"provider_instance_id": name, "number_id": f"num_{name}", "state": "CONNECTED", **fields})


def route_through(source: Instance, kind: ProviderKind = "wuzapi") -> Route:
    """How a number sends through `source`, an instance of the provider server `prv_1` of `kind`."""
    return Route(
        provider_id="prv_1",
        kind=kind,
        base_url="http://127.0.0.1:9",
        provider_instance_id=source.provider_instance_id,
        instance=source.name,
        source=source,
    )


def incoming_message(provider_id: str, text: str = "", **fields: Any) -> IncomingMessage:
    """A customer's message to forward, from 5511988887777 through the instance `acme:main` of owner
    tag acme, written as `text` (its provider id when none); `fields` set the rest."""
    base: dict[str, Any] = {
        "event_id": f"evt-{provider_id}",
        "instance": "acme:main",
        "owner_tag": "acme",
        "provider_message_id": provider_id,
        "sender": "5511988887777",
        "text": text or provider_id,
    }
    return IncomingMessage(**(base | fields))


def provider_event(
    target: Instance,
    name: str,
    data: dict[str, Any] | None = None,
    *,
    seq: int | None = None,
    event_id: str | None = None,
    envelope_instance: dict[str, Any] | None = None,
    provider_id: str | None = None,
    received_at: datetime | None = None,
) -> ProviderEvent:
    """A provider webhook event bound to `target`, as the ingest hands it to the effect handlers
    (received now unless `received_at`)."""
    return ProviderEvent(
        provider_id=provider_id or target.provider_id,
        instance=target,
        name=name,
        event_id=event_id or str(uuid.uuid4()),
        seq=seq,
        data=data or {},
        envelope_instance=envelope_instance,
        received_at=received_at or datetime.now(UTC),
    )


def event_of_envelope(target: Instance, envelope: dict[str, Any], provider_id: str | None = None) -> ProviderEvent:
    """The event of one provider envelope (`event`, `eventId`, `seq`, `data`, `instance`)."""
    return provider_event(
        target,
        envelope["event"],
        envelope.get("data") or {},
        seq=envelope.get("seq"),
        event_id=envelope["eventId"],
        envelope_instance=envelope.get("instance"),
        provider_id=provider_id,
    )


def run_effects(event: ProviderEvent) -> None:
    """Every effect handler of the event, in order, as the ingest runs them after its dedupe commit."""
    for handler in bootstrap.event_handlers()[event.name]:
        handler(event)
