"""Catalog routes: API keys, numbers, provider servers, instances (scope `admin`, own tenant), and
the platform's admin key for an existing tenant."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.openapi.params import Path
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from switchboard.catalog.deps import catalog_service, pacing_defaults, pairing_service, webhook_setup
from switchboard.catalog.domain import TemplateRef
from switchboard.catalog.schemas import (
    INSTANCE_CONFIGURATION,
    ApiKeyView,
    ConnectionView,
    CreateAdminKey,
    CreateApiKey,
    CreatedApiKeyView,
    CreateNumber,
    CreateProvider,
    InstanceView,
    MeView,
    NumberView,
    PairingView,
    ProviderView,
    PutInstance,
    SendTestMessage,
    TemplateRefBody,
    TestMessageView,
    UpdateApiKey,
    UpdateNumber,
    UpdateProvider,
)
from switchboard.core.api.auth import requires
from switchboard.core.api.errors import documented
from switchboard.core.identity import Principal, Scope
from switchboard.core.settings import get_settings
from switchboard.core.wire import InstanceName, OwnerTag

if TYPE_CHECKING:
    # The composition root imports each when a route that takes it first runs: the service brings
    # the catalog's item models and PynamoDB, the webhook setup the providers' clients.
    from switchboard.catalog.domain import PacingLimits
    from switchboard.catalog.pairing import PairingService
    from switchboard.catalog.service import CatalogService
    from switchboard.catalog.webhook_setup import WebhookSetup
else:
    # Depends() never looks at the type, and the module is not imported before a route needs it.
    CatalogService = PacingLimits = PairingService = WebhookSetup = Any

router = APIGatewayHttpRouter()
Catalog = Annotated[CatalogService, Depends(catalog_service)]
Setup = Annotated[WebhookSetup, Depends(webhook_setup)]
Pairings = Annotated[PairingService, Depends(pairing_service)]
Pacing = Annotated[PacingLimits, Depends(pacing_defaults)]
Admin = Annotated[Principal, Depends(requires(router, Scope.ADMIN))]
Platform = Annotated[Principal, Depends(requires(router, Scope.PLATFORM))]
AdminOrAgent = Annotated[Principal, Depends(requires(router, Scope.ADMIN, Scope.AGENT))]
Anyone = Annotated[Principal, Depends(requires(router, *Scope))]
ERRORS = documented(400, 401, 403, 404, 409, 422)
ID = Annotated[str, Path(max_length=64)]


def _public_base_url() -> str | None:
    return get_settings().public_base_url


# --- the caller ----------------------------------------------------------------------------


@router.get("/api/me", tags=["api keys"], responses=documented(401, 404))
def get_me(catalog: Catalog, principal: Anyone) -> MeView:
    """The caller itself: its tenant, id, name and scopes (any scope), so a client such as the
    console can tell which screens it may use without trying them. For a person signed in through
    the user pool, `keyId` is `user:<sub>`, the name is their email and the attendant is their `sub`."""
    if principal.user:
        return MeView.of_person(principal)
    return MeView.of(catalog.get_api_key(principal, principal.key_id))


# --- API keys ------------------------------------------------------------------------------


@router.post("/api/api-keys", status_code=201, tags=["api keys"], responses=ERRORS)
def create_api_key(catalog: Catalog, body: CreateApiKey, principal: Admin) -> CreatedApiKeyView:
    """Create a key for this tenant. The key itself is in this response only."""
    created = catalog.create_api_key(
        principal,
        tenant=principal.tenant,
        name=body.name,
        environment=body.environment,
        scopes=[Scope(scope) for scope in body.scopes],
        attendant_id=body.attendant_id,
        default_number=body.default_number,
        webhook_url=body.webhook_url,
        at_least_once=body.at_least_once,
    )
    return CreatedApiKeyView.model_validate({**ApiKeyView.of(created.key).model_dump(), "key": created.plaintext})


@router.post("/api/tenants/<owner_tag>/api-keys", status_code=201, tags=["tenants"], responses=ERRORS)
def create_tenant_admin_key(
    catalog: Catalog, owner_tag: Annotated[OwnerTag, Path()], body: CreateAdminKey, principal: Platform
) -> CreatedApiKeyView:
    """A new `admin` key for an existing tenant (scope platform), e.g. when its admins lost theirs.
    The key itself is in this response only; 404 for an unknown tenant."""
    created = catalog.create_admin_key(principal, owner_tag, body.name)
    return CreatedApiKeyView.model_validate({**ApiKeyView.of(created.key).model_dump(), "key": created.plaintext})


@router.get("/api/api-keys", tags=["api keys"], responses=ERRORS)
def list_api_keys(catalog: Catalog, principal: Admin) -> list[ApiKeyView]:
    return [ApiKeyView.of(key) for key in catalog.list_api_keys(principal)]


@router.get("/api/api-keys/<key_id>", tags=["api keys"], responses=ERRORS)
def get_api_key(catalog: Catalog, key_id: ID, principal: Admin) -> ApiKeyView:
    return ApiKeyView.of(catalog.get_api_key(principal, key_id))


@router.patch("/api/api-keys/<key_id>", tags=["api keys"], responses=ERRORS)
def update_api_key(catalog: Catalog, key_id: ID, body: UpdateApiKey, principal: Admin) -> ApiKeyView:
    changes = body.model_dump(exclude_unset=True)
    if "scopes" in changes:
        changes["scopes"] = sorted({Scope(scope) for scope in changes["scopes"]})
    return ApiKeyView.of(catalog.update_api_key(principal, key_id, changes))


@router.delete("/api/api-keys/<key_id>", status_code=204, tags=["api keys"], responses=ERRORS)
def delete_api_key(catalog: Catalog, key_id: ID, principal: Admin) -> Response[None]:
    """Revoke a key: it stops working at once, and its number pool goes with it. The tenant's last
    admin key cannot be revoked (409 `last_admin_key`): create another one first."""
    catalog.delete_api_key(principal, key_id)
    return Response(status_code=204, content_type=content_types.APPLICATION_JSON)


# --- numbers -------------------------------------------------------------------------------


@router.post("/api/numbers", status_code=201, tags=["numbers"], responses=ERRORS)
def create_number(catalog: Catalog, body: CreateNumber, principal: Admin, defaults: Pacing) -> NumberView:
    number = catalog.create_number(principal, body.number, body.display_name, body.meta_phone_id, body.waba_id)
    return NumberView.of(number, catalog.number_connected(number), defaults)


@router.get("/api/numbers", tags=["numbers"], responses=ERRORS)
def list_numbers(catalog: Catalog, principal: Admin, defaults: Pacing) -> list[NumberView]:
    return [
        NumberView.of(number, catalog.number_connected(number), defaults) for number in catalog.list_numbers(principal)
    ]


@router.get("/api/numbers/<number_id>", tags=["numbers"], responses=ERRORS)
def get_number(catalog: Catalog, number_id: ID, principal: Admin, defaults: Pacing) -> NumberView:
    number = catalog.get_number(principal, number_id)
    return NumberView.of(number, catalog.number_connected(number), defaults)


@router.patch("/api/numbers/<number_id>", tags=["numbers"], responses=ERRORS)
def update_number(
    catalog: Catalog, number_id: ID, body: UpdateNumber, principal: Admin, defaults: Pacing
) -> NumberView:
    """Change a number's display name, Meta phone number id, WhatsApp Business Account id or its
    own pacing. `pacing` replaces the number's override as a whole: each field it sets replaces the
    deployment's default for this number only (`messagesPerMinute: 0` turns pacing off for it,
    above 0 turns it on even where the deployment's is off); a field left out follows the
    default; `"pacing": null` clears it."""
    changes = body.model_dump(exclude_unset=True, exclude={"pacing"})
    if "pacing" in body.model_fields_set:
        changes["pacing"] = body.pacing.override() if body.pacing is not None else None
    number = catalog.update_number(principal, number_id, changes)
    return NumberView.of(number, catalog.number_connected(number), defaults)


@router.delete("/api/numbers/<number_id>", status_code=204, tags=["numbers"], responses=ERRORS)
def delete_number(catalog: Catalog, number_id: ID, principal: Admin) -> Response[None]:
    catalog.delete_number(principal, number_id)
    return Response(status_code=204, content_type=content_types.APPLICATION_JSON)


# --- provider servers ----------------------------------------------------------------------


@router.post("/api/providers", status_code=201, tags=["providers"], responses=ERRORS)
def create_provider(catalog: Catalog, body: CreateProvider, principal: Admin) -> ProviderView:
    """Register a provider server. Its tokens, webhook secret and verify token are write-only."""
    provider = catalog.create_provider(
        principal,
        name=body.name,
        kind=body.kind,
        base_url=body.base_url,
        webhook_secret=body.webhook_secret,
        admin_token=body.admin_token,
        priority=body.priority,
        verify_token=body.verify_token,
        webhook_scheme=body.webhook_scheme,
    )
    return ProviderView.of(provider, _public_base_url())


@router.get("/api/providers", tags=["providers"], responses=ERRORS)
def list_providers(catalog: Catalog, principal: Admin) -> list[ProviderView]:
    return [ProviderView.of(provider, _public_base_url()) for provider in catalog.list_providers(principal)]


@router.get("/api/providers/<provider_id>", tags=["providers"], responses=ERRORS)
def get_provider(catalog: Catalog, provider_id: ID, principal: Admin) -> ProviderView:
    return ProviderView.of(catalog.get_provider(principal, provider_id), _public_base_url())


@router.patch("/api/providers/<provider_id>", tags=["providers"], responses=ERRORS)
def update_provider(catalog: Catalog, provider_id: ID, body: UpdateProvider, principal: Admin) -> ProviderView:
    changes = body.model_dump(exclude_unset=True, exclude={"webhook_secret", "admin_token", "verify_token"})
    provider = catalog.update_provider(
        principal,
        provider_id,
        changes,
        webhook_secret=body.webhook_secret,
        admin_token=body.admin_token,
        verify_token=body.verify_token,
    )
    return ProviderView.of(provider, _public_base_url())


@router.delete("/api/providers/<provider_id>", status_code=204, tags=["providers"], responses=ERRORS)
def delete_provider(catalog: Catalog, provider_id: ID, principal: Admin) -> Response[None]:
    catalog.delete_provider(principal, provider_id)
    return Response(status_code=204, content_type=content_types.APPLICATION_JSON)


# --- instances -----------------------------------------------------------------------------


@router.put("/api/instances/<name>", tags=["instances"], responses=ERRORS)
def put_instance(
    catalog: Catalog,
    setup: Setup,
    name: Annotated[InstanceName, Path()],
    body: PutInstance,
    principal: Admin,
) -> Response[InstanceView]:
    """Create (201) or replace (200) an instance. The name is unique in the deployment.

    On a plain wuzapi, switchboard then points the user's webhook at `/webhooks/{providerId}` with
    the events it maps and the provider's webhook secret as the HMAC key (best effort)."""
    instance, created = catalog.put_instance(
        principal,
        name=name,
        provider_id=body.provider_id,
        provider_instance_id=body.provider_instance_id,
        number_id=body.number_id,
        token=body.token,
        priority=body.priority,
        kind=body.kind,
        owner_tag=body.owner_tag,
        owner_tag_given="owner_tag" in body.model_fields_set,
        configuration={
            name: _configured(getattr(body, name)) for name in INSTANCE_CONFIGURATION if name in body.model_fields_set
        },
    )
    setup.configure(instance)
    return Response(
        status_code=201 if created else 200,
        content_type=content_types.APPLICATION_JSON,
        body=InstanceView.of(instance),
    )


def _configured(value: Any) -> Any:
    """A configuration field as the instance record stores it (a body model as its fields)."""
    if isinstance(value, TemplateRefBody):
        return TemplateRef(name=value.name, language=value.language)
    return value


@router.get("/api/instances", tags=["instances"], responses=ERRORS)
def list_instances(catalog: Catalog, principal: Admin) -> list[InstanceView]:
    return [InstanceView.of(instance) for instance in catalog.list_instances(principal)]


@router.get("/api/connections", tags=["calls"], responses=ERRORS)
def list_connections(catalog: Catalog, principal: AdminOrAgent) -> list[ConnectionView]:
    """The tenant's calls connections (instances of kind `calls`) with their number, for the calls panel."""
    numbers = {number.id: number for number in catalog.list_numbers(principal)}
    instances = sorted(
        (instance for instance in catalog.list_instances(principal) if instance.kind == "calls"),
        key=lambda instance: instance.name,
    )
    return [ConnectionView.of(instance, numbers.get(instance.number_id)) for instance in instances]


@router.get("/api/instances/<name>", tags=["instances"], responses=ERRORS)
def get_instance(catalog: Catalog, name: ID, principal: Admin) -> InstanceView:
    return InstanceView.of(catalog.get_instance(principal, name))


@router.delete("/api/instances/<name>", status_code=204, tags=["instances"], responses=ERRORS)
def delete_instance(catalog: Catalog, name: ID, principal: Admin) -> Response[None]:
    catalog.delete_instance(principal, name)
    return Response(status_code=204, content_type=content_types.APPLICATION_JSON)


# --- pairing an instance's number --------------------------------------------------------------

PAIRING_ERRORS = documented(401, 403, 404, 409, 422, 502, 504)


@router.get("/api/instances/<name>/qr", tags=["instances"], responses=PAIRING_ERRORS)
def get_pairing(pairings: Pairings, name: ID, principal: Admin) -> PairingView:
    """The code to scan on the phone, as the instance's provider draws it now (wuzapi's
    `/session/qr`, Evolution's `/instance/connect`). Read it again every few seconds until `state`
    is `paired`: the provider replaces the code as it expires. 422 `not_supported` for a kind that
    pairs its numbers elsewhere (the Meta Cloud API)."""
    return PairingView.of(pairings.pairing(principal, name))


@router.post("/api/instances/<name>/connect", tags=["instances"], responses=PAIRING_ERRORS)
def connect_instance(pairings: Pairings, name: ID, principal: Admin) -> PairingView:
    """Start (or restart) the instance's session at its provider and answer its first code; the
    provider's webhook is pointed at switchboard again. A paired session just reconnects."""
    return PairingView.of(pairings.start(principal, name))


@router.post("/api/instances/<name>/logout", tags=["instances"], responses=PAIRING_ERRORS)
def logout_instance(pairings: Pairings, name: ID, principal: Admin) -> InstanceView:
    """Unlink the phone from the instance: its session ends and pairing again needs a new code.
    409 `instance_disconnected` when no phone is linked."""
    return InstanceView.of(pairings.log_out(principal, name))


@router.post(
    "/api/instances/<name>/test-message",
    status_code=202,
    tags=["instances"],
    responses=documented(401, 403, 404, 409, 422, 429, 500),
)
def send_test_message(pairings: Pairings, name: ID, body: SendTestMessage, principal: Admin) -> TestMessageView:
    """Send a text through this instance alone to check it end to end: a message like any other
    (queued for the send worker, paced, traced, in the message log and the usage), tried through
    no other instance or number. Answers its id: read `GET /api/messages/{id}` until SENT or
    FAILED. 409 `instance_disconnected` at once when its number is not paired; 429
    `daily_quota_exceeded` when the tenant's day is spent."""
    message_id = pairings.send_test(principal, name, body.to, body.text)
    return TestMessageView.of(message_id, name, body.to)
