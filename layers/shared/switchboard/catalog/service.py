"""Catalog use cases: tenants, API keys, numbers, provider servers, instances.

Authorisation by scope happens in the API layer; tenant isolation happens here and in the
repository (every read is by the caller's tenant, and another tenant's object is NotFound).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal
from urllib.parse import urlsplit

from switchboard.audit.ports import Audit
from switchboard.catalog.domain import (
    ApiKey,
    Instance,
    Number,
    Provider,
    Tenant,
    generate_key,
    hash_key,
    instance_key,
    looks_like_key,
    secret_hint,
)
from switchboard.catalog.dynamo import CatalogRepository
from switchboard.catalog.ports import GrantChanges, KeyAttachment
from switchboard.core.clock import new_id, utcnow
from switchboard.core.errors import InvalidInput, NotFound
from switchboard.core.identity import Principal, Scope, key_principal
from switchboard.core.model import Model
from switchboard.core.ports import Secrets
from switchboard.core.secrets import instance_token_name, provider_secret_name
from switchboard.core.urls import check_outbound_url
from switchboard.providers.kinds import ProviderKind, WebhookScheme, spec_for


class CreatedKey(Model):
    key: ApiKey
    plaintext: str


def _check_verify_token_kind(kind: ProviderKind) -> None:
    """Only the Meta Cloud API checks a subscription with a verify token."""
    if kind != "meta":
        raise InvalidInput("verifyToken is only for providers of kind meta", code="verify_token_not_supported")


def _webhook_scheme(kind: ProviderKind, scheme: WebhookScheme | None) -> WebhookScheme | None:
    """The scheme a provider of `kind` is saved with: `scheme` if the kind has it; left out, the
    kind's only one, or none yet where the kind has several: its first authentic delivery then
    stores the one it came under (no delivery is authentic under two), so a plain wuzapi and a
    calls-capable one both work as registered, with no setting to get wrong."""
    schemes = spec_for(kind).schemes
    if scheme is None:
        return schemes[0] if len(schemes) == 1 else None
    if scheme not in schemes:
        raise InvalidInput(
            f"webhookScheme of a provider of kind {kind} is one of: {', '.join(schemes)}",
            code="webhook_scheme_not_supported",
        )
    return scheme


class CatalogService:
    def __init__(
        self,
        repository: CatalogRepository,
        secrets: Secrets,
        audit: Audit,
        *,
        local_mode: bool,
        status_read: Callable[[Instance], Instance] | None = None,
        grant_changes: GrantChanges | None = None,
        key_attachments: Sequence[KeyAttachment] = (),
    ) -> None:
        """`status_read` reads a saved instance's connection state from its provider and returns
        the instance as it then is (never raising: the save stands whatever the provider says).
        `grant_changes` hears of every key revoked, or whose scopes or attendant changed.
        `key_attachments` delete what they keep in a key's name with the key (its number pool)."""
        self._repository = repository
        self._secrets = secrets
        self._audit = audit
        self._local_mode = local_mode
        self._status_read = status_read
        self._grant_changes = grant_changes
        self._key_attachments = tuple(key_attachments)

    # --- authentication ------------------------------------------------------------------

    def authenticate(self, bearer: str) -> Principal | None:
        """The principal a presented key stands for, or None. Only the key's hash is looked up."""
        if not looks_like_key(bearer):
            return None
        return self._repository.principal_for_digest(hash_key(bearer))

    # --- tenants -------------------------------------------------------------------------

    def create_tenant(self, principal: Principal | None, owner_tag: str, name: str) -> tuple[Tenant, CreatedKey]:
        tenant = Tenant(tenant=owner_tag, owner_tag=owner_tag, name=name)
        self._repository.create_tenant(tenant)
        admin = self.create_api_key(
            principal, tenant=owner_tag, name=f"{name} admin", environment="LIVE", scopes=[Scope.ADMIN]
        )
        self._audit.record(principal, "tenant.created", owner_tag, after=tenant)
        return tenant, admin

    def get_tenant(self, principal: Principal, owner_tag: str) -> Tenant:
        if not principal.has(Scope.PLATFORM) and principal.tenant != owner_tag:
            raise NotFound("tenant not found")
        return self._repository.get_tenant(owner_tag)

    def list_tenants(self) -> list[Tenant]:
        return self._repository.list_tenants()

    # --- API keys ------------------------------------------------------------------------

    def create_api_key(
        self,
        principal: Principal | None,
        *,
        tenant: str,
        name: str,
        environment: Literal["LIVE", "TEST"],
        scopes: list[Scope],
        attendant_id: str | None = None,
        default_number: str | None = None,
        webhook_url: str | None = None,
        at_least_once: bool = False,
        preset_key: str | None = None,
    ) -> CreatedKey:
        if Scope.AGENT in scopes and not attendant_id:
            raise InvalidInput("an agent key needs an attendantId", code="attendant_required")
        if webhook_url:
            check_outbound_url(webhook_url, local_mode=self._local_mode)
        generated = generate_key(environment, preset_key)
        key = ApiKey(
            tenant=tenant,
            id=new_id("key"),
            name=name,
            environment=environment,
            scopes=sorted(set(scopes)),
            attendant_id=attendant_id,
            default_number=default_number,
            webhook_url=webhook_url,
            at_least_once=at_least_once,
            prefix=generated.prefix,
        )
        self._repository.create_api_key(key, generated.digest)
        self._audit.record(principal, "api_key.created", key.id, after=key)
        return CreatedKey(key=key, plaintext=generated.plaintext)

    def create_admin_key(self, principal: Principal, owner_tag: str, name: str | None) -> CreatedKey:
        """A new admin key for an existing tenant, minted by the platform (e.g. after its admins
        lost theirs). Raises NotFound for an unknown tenant; audited in the tenant's log."""
        tenant = self._repository.get_tenant(owner_tag)
        return self.create_api_key(
            principal, tenant=owner_tag, name=name or f"{tenant.name} admin", environment="LIVE", scopes=[Scope.ADMIN]
        )

    def get_api_key(self, principal: Principal, key_id: str) -> ApiKey:
        return self._repository.get_api_key(principal.tenant, key_id)

    def list_api_keys(self, principal: Principal) -> list[ApiKey]:
        return self._repository.list_api_keys(principal.tenant)

    def update_api_key(self, principal: Principal, key_id: str, changes: dict[str, Any]) -> ApiKey:
        current = self._repository.get_api_key(principal.tenant, key_id)
        if changes.get("webhook_url"):
            check_outbound_url(changes["webhook_url"], local_mode=self._local_mode)
        updated = current.model_copy(update=changes)
        if Scope.AGENT in updated.scopes and not updated.attendant_id:
            raise InvalidInput("an agent key needs an attendantId", code="attendant_required")
        self._repository.save_api_key(updated)
        self._audit.record(principal, "api_key.updated", key_id, before=current, after=updated)
        if (set(current.scopes), current.attendant_id) != (set(updated.scopes), updated.attendant_id):
            self._grant_changed(principal.tenant, key_id)
        return updated

    def delete_api_key(self, principal: Principal, key_id: str) -> None:
        """Revoke a key, and close what it holds open (live connections). Raises NotFound, or
        LastAdminKey for the tenant's last admin key."""
        current = self._repository.get_api_key(principal.tenant, key_id)
        self._repository.delete_api_key(principal.tenant, key_id, self._key_attachments)
        self._audit.record(principal, "api_key.deleted", key_id, before=current)
        self._grant_changed(principal.tenant, key_id)

    def _grant_changed(self, tenant: str, key_id: str) -> None:
        if self._grant_changes is not None:
            self._grant_changes.grant_changed(tenant, key_principal(key_id))

    # --- numbers -------------------------------------------------------------------------

    def create_number(
        self,
        principal: Principal,
        number: str,
        display_name: str,
        meta_phone_id: str | None,
        waba_id: str | None = None,
    ) -> Number:
        record = Number(
            tenant=principal.tenant,
            id=new_id("num"),
            number=number,
            display_name=display_name,
            meta_phone_id=meta_phone_id,
            waba_id=waba_id,
        )
        self._repository.create_number(record)
        self._audit.record(principal, "number.created", record.id, after=record)
        return record

    def get_number(self, principal: Principal, number_id: str) -> Number:
        return self._repository.get_number(principal.tenant, number_id)

    def list_numbers(self, principal: Principal) -> list[Number]:
        return self._repository.list_numbers(principal.tenant)

    def number_connected(self, number: Number) -> bool:
        """A number is connected when any of its instances is; a Meta Cloud number always is."""
        if number.meta_phone_id:
            return True
        return any(instance.connected for instance in self._repository.instances_of_number(number.id))

    def update_number(self, principal: Principal, number_id: str, changes: dict[str, Any]) -> Number:
        """Raises InvalidInput for an account id on a number that is not a Cloud API number."""
        current = self._repository.get_number(principal.tenant, number_id)
        updated = current.model_copy(update=changes)
        if updated.waba_id is not None and updated.meta_phone_id is None:
            raise InvalidInput("wabaId is a Cloud API number's: give metaPhoneId too", code="waba_without_phone_id")
        self._repository.save_number(updated)
        self._audit.record(principal, "number.updated", number_id, before=current, after=updated)
        return updated

    def delete_number(self, principal: Principal, number_id: str) -> None:
        current = self._repository.get_number(principal.tenant, number_id)
        self._repository.delete_number(principal.tenant, number_id)
        self._audit.record(principal, "number.deleted", number_id, before=current)

    # --- providers -----------------------------------------------------------------------

    def create_provider(
        self,
        principal: Principal,
        *,
        name: str | None,
        kind: ProviderKind,
        base_url: str,
        webhook_secret: str,
        admin_token: str | None,
        priority: int,
        verify_token: str | None = None,
        webhook_scheme: WebhookScheme | None = None,
    ) -> Provider:
        """Register a provider server; without a name it is named by its base URL's host.
        Raises InvalidInput: an outbound URL not allowed, a verify token or a webhook scheme the
        kind does not have."""
        check_outbound_url(base_url, local_mode=self._local_mode)
        name = name or urlsplit(base_url).hostname or kind
        if verify_token:
            _check_verify_token_kind(kind)
        provider = Provider(
            tenant=principal.tenant,
            id=new_id("prv"),
            name=name,
            kind=kind,
            base_url=base_url.rstrip("/"),
            priority=priority,
            webhook_scheme=_webhook_scheme(kind, webhook_scheme),
            webhook_secret_hint=secret_hint(webhook_secret),
            admin_token_hint=secret_hint(admin_token) if admin_token else None,
            verify_token_hint=secret_hint(verify_token) if verify_token else None,
        )
        self._secrets.put(provider_secret_name(self._secrets, provider.id, "webhook-secret"), webhook_secret)
        if admin_token:
            self._secrets.put(provider_secret_name(self._secrets, provider.id, "admin-token"), admin_token)
        if verify_token:
            self._secrets.put(provider_secret_name(self._secrets, provider.id, "verify-token"), verify_token)
        self._repository.create_provider(provider)
        self._audit.record(principal, "provider.created", provider.id, after=provider)
        return provider

    def get_provider(self, principal: Principal, provider_id: str) -> Provider:
        return self._repository.get_provider(principal.tenant, provider_id)

    def list_providers(self, principal: Principal) -> list[Provider]:
        return self._repository.list_providers(principal.tenant)

    def update_provider(
        self,
        principal: Principal,
        provider_id: str,
        changes: dict[str, Any],
        *,
        webhook_secret: str | None = None,
        admin_token: str | None = None,
        verify_token: str | None = None,
    ) -> Provider:
        current = self._repository.get_provider(principal.tenant, provider_id)
        if verify_token:
            _check_verify_token_kind(current.kind)
        if "webhook_scheme" in changes:
            changes["webhook_scheme"] = _webhook_scheme(current.kind, changes["webhook_scheme"])
        if "base_url" in changes:
            changes["base_url"] = check_outbound_url(changes["base_url"], local_mode=self._local_mode).rstrip("/")
        if webhook_secret:
            self._secrets.put(provider_secret_name(self._secrets, provider_id, "webhook-secret"), webhook_secret)
            changes["webhook_secret_hint"] = secret_hint(webhook_secret)
        if admin_token:
            self._secrets.put(provider_secret_name(self._secrets, provider_id, "admin-token"), admin_token)
            changes["admin_token_hint"] = secret_hint(admin_token)
        if verify_token:
            self._secrets.put(provider_secret_name(self._secrets, provider_id, "verify-token"), verify_token)
            changes["verify_token_hint"] = secret_hint(verify_token)
        updated = current.model_copy(update=changes)
        self._repository.save_provider(updated)
        self._audit.record(principal, "provider.updated", provider_id, before=current, after=updated)
        return updated

    def delete_provider(self, principal: Principal, provider_id: str) -> None:
        current = self._repository.get_provider(principal.tenant, provider_id)
        self._repository.delete_provider(principal.tenant, provider_id)
        for which in ("webhook-secret", "admin-token", "verify-token"):
            self._secrets.delete(provider_secret_name(self._secrets, provider_id, which))
        self._audit.record(principal, "provider.deleted", provider_id, before=current)

    # --- instances -----------------------------------------------------------------------

    def put_instance(
        self,
        principal: Principal,
        *,
        name: str,
        provider_id: str,
        provider_instance_id: str,
        number_id: str,
        token: str | None,
        priority: int,
        kind: Literal["messages", "calls"],
        owner_tag: str | None,
        owner_tag_given: bool,
        configuration: Mapping[str, Any] | None = None,
    ) -> tuple[Instance, bool]:
        """Create or replace an instance. Returns it (as its provider reports it now) and whether it
        was created.

        `configuration` holds the per-instance settings given (`spamguard_enabled`, `inbox_id`,
        `events_webhook_url`, `reengagement_template`); one left out keeps its current value. Bound to another session
        (another provider or `providerInstanceId`), its connection state starts over as
        DISCONNECTED. A new instance, a new binding or a new token is then read from its provider
        (best effort: a provider that cannot answer leaves the state to the reconciliation).
        Raises InvalidInput, or UnknownReference when the provider or the number is not the
        tenant's (checked by the write)."""
        configuration = dict(configuration or {})
        if configuration.get("events_webhook_url"):
            check_outbound_url(configuration["events_webhook_url"], local_mode=self._local_mode)
        if owner_tag not in (None, principal.tenant):
            raise InvalidInput("ownerTag must be your own tenant's tag, or null for the global downstream")
        previous = self._repository.find_instance(instance_key(principal.tenant, name))
        if token:
            token_hint = secret_hint(token)
        elif previous is None:
            raise InvalidInput("token is required when creating an instance", code="token_required")
        else:
            token_hint = previous.token_hint
        carried = (
            previous
            if previous is not None
            and (previous.provider_id, previous.provider_instance_id)
            == (
                provider_id,
                provider_instance_id,
            )
            else None
        )
        instance = Instance(
            tenant=principal.tenant,
            name=name,
            provider_id=provider_id,
            provider_instance_id=provider_instance_id,
            number_id=number_id,
            priority=priority,
            kind=kind,
            owner_tag=owner_tag if owner_tag_given else (previous.owner_tag if previous else principal.tenant),
            token_hint=token_hint,
            state=carried.state if carried else "DISCONNECTED",
            state_seq=carried.state_seq if carried else None,
            state_rev=carried.state_rev if carried else (previous.state_rev + 1 if previous else 0),
            state_changed_at=carried.state_changed_at if carried else (utcnow() if previous else None),
            spamguard_enabled=previous.spamguard_enabled if previous else False,
            inbox_id=previous.inbox_id if previous else None,
            events_webhook_url=previous.events_webhook_url if previous else None,
            reengagement_template=previous.reengagement_template if previous else None,
            **({"created_at": previous.created_at} if previous else {}),
        ).model_copy(update=configuration)
        if token:
            self._secrets.put(instance_token_name(self._secrets, principal.tenant, name), token)
        self._repository.put_instance(instance, previous)
        self._audit.record(
            principal,
            "instance.created" if previous is None else "instance.updated",
            name,
            before=previous,
            after=instance,
        )
        if self._status_read is not None and (carried is None or token):
            instance = self._status_read(instance)
        return instance, previous is None

    def get_instance(self, principal: Principal, name: str) -> Instance:
        return self._repository.get_instance(principal.tenant, name)

    def list_instances(self, principal: Principal) -> list[Instance]:
        return self._repository.list_instances(principal.tenant)

    def delete_instance(self, principal: Principal, name: str) -> None:
        current = self._repository.get_instance(principal.tenant, name)
        self._repository.delete_instance(principal.tenant, name)
        self._secrets.delete(instance_token_name(self._secrets, principal.tenant, name))
        self._audit.record(principal, "instance.deleted", name, before=current)
