"""Catalog persistence: tenants, API keys (and their hash index), numbers, providers, instances
(their items are the models of `models.py`).

A tenant's admin keys are counted in one item (`AdminKeyCount`) that every write adding or
removing an admin key updates in the same transaction: revoking or demoting the last one is
refused by that item's condition, so two concurrent revocations of the last two admin keys
cannot both succeed.

Each provider has a stamp (`ProviderStamp`, a counter `rev`) that every write changing what a
webhook of that provider is checked and bound against bumps in the same transaction: the provider
itself (its secrets are rotated through it), its instances and their bindings, and the Meta phone
number ids of the numbers they are on. A container may then keep those records as long as the
stamp holds the revision it read them at, and a transaction that depends on them checks the stamp
instead of reading them again (`check_provider_unchanged`). The stamp outlives the provider, so a
revision never comes back.

A write naming another object of the tenant (an instance's provider and number, a key's default
number) checks in its transaction that the object is still the tenant's; those checks join first,
so a refused one answers UnknownReference whatever else the transaction ran into.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any, TypeVar, cast

from pynamodb.attributes import Attribute
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action

from switchboard.catalog.domain import ApiKey, Instance, Number, Provider, ProviderChanged, Record, Tenant, instance_key
from switchboard.catalog.models import (
    AdminKeyCount,
    ApiKeyItem,
    Binding,
    InstanceItem,
    KeyGrant,
    NumberDigits,
    NumberItem,
    ProviderItem,
    ProviderStamp,
    TenantItem,
    tenant_listing,
)
from switchboard.catalog.ports import KeyAttachment
from switchboard.core import store
from switchboard.core.clock import utcnow
from switchboard.core.errors import AlreadyExists, Conflict, LastAdminKey, NotFound, UnknownReference
from switchboard.core.identity import Principal, Scope
from switchboard.core.model import Model
from switchboard.core.store import Refused, TableItem, UnitOfWork

KEY_WRITE_ATTEMPTS = 3

RecordT = TypeVar("RecordT", bound=Model)
ItemT = TypeVar("ItemT", bound=TableItem)


class _KeyChanged(Exception):
    """The key's own write was refused: it changed since it was read (read it again)."""


class _AdminCountRefused(Exception):
    """The tenant's admin count refused the change: the last admin key, or no count yet."""


class _SchemeSettled(Exception):
    pass


class CatalogRepository:
    def __init__(self, table: Any) -> None:
        """`table`: the composition root's table, whose building bound the item models."""
        self._table = table

    # --- tenants -------------------------------------------------------------------------

    def create_tenant(self, tenant: Tenant) -> None:
        """The tenant and its admin-key count (zero), together."""
        exists = AlreadyExists(f"tenant {tenant.owner_tag} already exists")
        item = _item(TenantItem, tenant, TenantItem.pk_for(tenant.owner_tag), TenantItem.sk_for())
        item.gsi1pk, item.gsi1sk = TenantItem.ALL, tenant.owner_tag
        count = AdminKeyCount(
            AdminKeyCount.pk_for(tenant.owner_tag), AdminKeyCount.sk_for(), tenant=tenant.owner_tag, admin_keys=0
        )
        uow = store.unit_of_work()
        uow.put(item, TenantItem.pk.does_not_exist(), refused=exists)
        uow.put(count, AdminKeyCount.pk.does_not_exist(), refused=exists)
        uow.commit()

    def get_tenant(self, owner_tag: str) -> Tenant:
        item = _get(TenantItem, TenantItem.pk_for(owner_tag), TenantItem.sk_for())
        if item is None:
            raise NotFound("tenant not found")
        return _record(Tenant, item)

    def record_tenant_exists(self, uow: UnitOfWork, owner_tag: str, *, refused: BaseException) -> None:
        """The unit of work holds only while the tenant exists (`refused` otherwise)."""
        uow.check(
            TenantItem, TenantItem.pk_for(owner_tag), TenantItem.sk_for(), TenantItem.pk.exists(), refused=refused
        )

    def list_tenants(self) -> list[Tenant]:
        return [_record(Tenant, item) for item in store.query(TenantItem, TenantItem.ALL, index=TenantItem.listing)]

    # --- API keys ------------------------------------------------------------------------

    def create_api_key(self, key: ApiKey, digest: str) -> None:
        """The key record and its hash index are written together, or neither is (with the
        tenant's admin-key count for an admin key)."""

        def join(uow: UnitOfWork) -> None:
            if key.default_number:
                self._record_digits_owned(uow, key.tenant, key.default_number)
            uow.put(_key_item(key, digest), ApiKeyItem.pk.does_not_exist(), refused=_KeyChanged)
            if _is_admin(key.scopes):
                self._record_admin_count_change(uow, key.tenant, +1)
            uow.put(_grant(key, digest), KeyGrant.pk.does_not_exist(), refused=_KeyChanged)

        self._write_counting_admins(key.tenant, join, AlreadyExists("API key already exists"))

    def principal_for_digest(self, digest: str) -> Principal | None:
        item = _get(KeyGrant, KeyGrant.pk_for(digest), KeyGrant.sk_for())
        if item is None:
            return None
        return Principal(
            tenant=item.tenant,
            key_id=item.key_id,
            scopes=frozenset(Scope(str(scope)) for scope in item.scopes),
            attendant_id=item.attendant_id,
        )

    def get_api_key(self, tenant: str, key_id: str) -> ApiKey:
        return _record(ApiKey, self._key_item(tenant, key_id))

    def get_api_keys(self, tenant: str, key_ids: Collection[str]) -> dict[str, ApiKey]:
        """The tenant's keys among `key_ids`, by id (consistent batch reads): a revoked key, or
        another tenant's, is simply absent from the answer."""
        keys = (_record(ApiKey, item) for item in _batch_get(ApiKeyItem, key_ids, tenant))
        return {key.id: key for key in keys}

    def list_api_keys(self, tenant: str) -> list[ApiKey]:
        return [_record(ApiKey, item) for item in _listed(ApiKeyItem, ApiKeyItem.listing, tenant)]

    def save_api_key(self, key: ApiKey) -> None:
        """Rewrite an existing key (same tenant), keeping its hash index in step with its grants.

        Raises NotFound, or LastAdminKey when it would take `admin` from the tenant's last admin key.
        """

        def join(uow: UnitOfWork) -> None:
            current = self._key_item(key.tenant, key.id)
            was_admin = _is_admin(current.scopes)
            # A default number is checked when it is set; one deleted since does not block other edits.
            if key.default_number and key.default_number != current.default_number:
                self._record_digits_owned(uow, key.tenant, key.default_number)
            uow.put(_key_item(key, current.digest), _key_unchanged(key.tenant, admin=was_admin), refused=_KeyChanged)
            if was_admin != _is_admin(key.scopes):
                self._record_admin_count_change(uow, key.tenant, -1 if was_admin else +1)
            uow.put(_grant(key, current.digest))

        self._write_counting_admins(key.tenant, join, NotFound("API key not found"))

    def delete_api_key(self, tenant: str, key_id: str, attached: Sequence[KeyAttachment] = ()) -> None:
        """Revoke a key with its hash index and what other capabilities keep in its name
        (`attached`: the key's number pool), in one transaction.

        Raises NotFound, or LastAdminKey when it is the tenant's last admin key.
        """

        def join(uow: UnitOfWork) -> None:
            current = self._key_item(tenant, key_id)
            was_admin = _is_admin(current.scopes)
            uow.delete(current, _key_unchanged(tenant, admin=was_admin), refused=_KeyChanged)
            if was_admin:
                self._record_admin_count_change(uow, tenant, -1)
            uow.delete(KeyGrant(KeyGrant.pk_for(current.digest), KeyGrant.sk_for()))
            for attachment in attached:
                attachment.record_key_deleted(uow, key_id)

        self._write_counting_admins(tenant, join, NotFound("API key not found"))

    def record_key_held(self, uow: UnitOfWork, tenant: str, key_id: str, *, refused: Refused) -> None:
        """The transaction holds only while the API key exists in `tenant` (a write in the key's
        name, such as its pool, cannot land after the key was revoked)."""
        uow.check(
            ApiKeyItem, ApiKeyItem.pk_for(key_id), ApiKeyItem.sk_for(), ApiKeyItem.tenant == tenant, refused=refused
        )

    def _key_item(self, tenant: str, key_id: str) -> ApiKeyItem:
        return _owned(_get(ApiKeyItem, ApiKeyItem.pk_for(key_id), ApiKeyItem.sk_for()), tenant, "API key")

    def _record_admin_count_change(self, uow: UnitOfWork, tenant: str, delta: int) -> None:
        """One more admin key, or one fewer on the condition that another one remains."""
        count = AdminKeyCount(AdminKeyCount.pk_for(tenant), AdminKeyCount.sk_for())
        actions: list[Action]
        condition: Condition
        if delta > 0:
            actions, condition = [AdminKeyCount.admin_keys.add(1)], AdminKeyCount.pk.exists()
        else:
            actions = [AdminKeyCount.admin_keys.set(AdminKeyCount.admin_keys - 1)]
            condition = AdminKeyCount.admin_keys > 1
        uow.update(count, actions, condition, refused=_AdminCountRefused)

    def _write_counting_admins(
        self, tenant: str, join: Callable[[UnitOfWork], None], on_key_condition: Exception
    ) -> None:
        """Run one key transaction, joined by `join` (the key's own write refused as `_KeyChanged`,
        before the admin count's).

        `join` reads the key again on each attempt, so a key whose scopes changed between the
        read and the write is simply read again. A refused admin count is LastAdminKey, unless
        the tenant predates the count: it is then counted once and the write tried again.
        """
        last_error: Exception | None = None
        for _ in range(KEY_WRITE_ATTEMPTS):
            uow = store.unit_of_work()
            join(uow)
            try:
                uow.commit()
            except _KeyChanged as error:
                last_error = error
                continue
            except _AdminCountRefused as error:
                if _get(AdminKeyCount, AdminKeyCount.pk_for(tenant), AdminKeyCount.sk_for()) is not None:
                    raise LastAdminKey("this is the tenant's last admin key: create another admin key first") from error
                self._count_admin_keys(tenant)
                last_error = error
                continue
            return
        raise on_key_condition from last_error

    def _count_admin_keys(self, tenant: str) -> None:
        """Count the admin keys of a tenant created before the count existed (once, if still missing)."""
        count = sum(1 for key in self.list_api_keys(tenant) if _is_admin(key.scopes))
        item = AdminKeyCount(AdminKeyCount.pk_for(tenant), AdminKeyCount.sk_for(), tenant=tenant, admin_keys=count)
        with contextlib.suppress(store.ConditionFailed):  # counted meanwhile by another write
            store.put(item, AdminKeyCount.pk.does_not_exist())

    # --- numbers -------------------------------------------------------------------------

    def create_number(self, number: Number) -> None:
        exists = AlreadyExists(f"number {number.number} already exists")
        digits = NumberDigits(
            NumberDigits.pk_for(number.tenant),
            NumberDigits.sk_for(number.number),
            tenant=number.tenant,
            number_id=number.id,
        )
        uow = store.unit_of_work()
        uow.put(_number_item(number), NumberItem.pk.does_not_exist(), refused=exists)
        uow.put(digits, NumberDigits.pk.does_not_exist(), refused=exists)
        uow.commit()

    def get_number(self, tenant: str, number_id: str) -> Number:
        return _record(
            Number, _owned(_get(NumberItem, NumberItem.pk_for(number_id), NumberItem.sk_for()), tenant, "number")
        )

    def get_numbers(self, tenant: str, number_ids: Collection[str]) -> dict[str, Number]:
        """The tenant's numbers among `number_ids`, by id, read together (consistent batch reads).

        A deleted number, or another tenant's, is simply absent from the answer."""
        numbers = (_record(Number, item) for item in _batch_get(NumberItem, number_ids, tenant))
        return {number.id: number for number in numbers}

    def number_by_digits(self, tenant: str, digits: str) -> Number | None:
        unique = _get(NumberDigits, NumberDigits.pk_for(tenant), NumberDigits.sk_for(digits))
        number_id = unique.owner_id() if unique else None
        return self.get_number(tenant, number_id) if number_id else None

    def list_numbers(self, tenant: str) -> list[Number]:
        return [_record(Number, item) for item in _listed(NumberItem, NumberItem.listing, tenant)]

    def save_number(self, number: Number) -> None:
        """Rewrite a number; its Meta phone number id binds webhooks to its instances, so the
        stamps of their providers move with it."""
        providers = {instance.provider_id for instance in self.instances_of_number(number.id)}
        uow = store.unit_of_work()
        uow.put(_number_item(number), NumberItem.tenant == number.tenant, refused=NotFound("number not found"))
        for provider_id in sorted(providers):
            self._record_bump(uow, provider_id)
        uow.commit()

    def delete_number(self, tenant: str, number_id: str) -> None:
        number = self.get_number(tenant, number_id)
        if self.instances_of_number(number_id):
            raise Conflict("number still has instances: delete them first", code="number_in_use")
        uow = store.unit_of_work()
        uow.delete(
            NumberItem(NumberItem.pk_for(number_id), NumberItem.sk_for()),
            NumberItem.tenant == tenant,
            refused=NotFound("number not found"),
        )
        uow.delete(NumberDigits(NumberDigits.pk_for(tenant), NumberDigits.sk_for(number.number)))
        uow.commit()

    def record_number_held(self, uow: UnitOfWork, tenant: str, number_id: str, *, refused: Refused) -> None:
        """The transaction holds only while the number exists in `tenant` (a pool entry naming it
        cannot land after the number was deleted)."""
        uow.check(
            NumberItem, NumberItem.pk_for(number_id), NumberItem.sk_for(), NumberItem.tenant == tenant, refused=refused
        )

    def _record_digits_owned(self, uow: UnitOfWork, tenant: str, digits: str) -> None:
        """The tenant has a number with these digits (its uniqueness item exists): a `defaultNumber`."""
        pk, sk = NumberDigits.pk_for(tenant), NumberDigits.sk_for(digits)
        uow.check(NumberDigits, pk, sk, NumberDigits.tenant == tenant, refused=_unknown("defaultNumber", "number"))

    # --- providers -----------------------------------------------------------------------

    def create_provider(self, provider: Provider) -> None:
        uow = store.unit_of_work()
        uow.put(
            _provider_item(provider), ProviderItem.pk.does_not_exist(), refused=AlreadyExists("provider already exists")
        )
        self._record_bump(uow, provider.id)
        uow.commit()

    def get_provider(self, tenant: str, provider_id: str) -> Provider:
        item = _get(ProviderItem, ProviderItem.pk_for(provider_id), ProviderItem.sk_for())
        return _record(Provider, _owned(item, tenant, "provider"))

    def find_provider(self, provider_id: str) -> Provider | None:
        """Tenant-free lookup, for webhook ingest where the provider id is the only handle."""
        item = _get(ProviderItem, ProviderItem.pk_for(provider_id), ProviderItem.sk_for())
        return _record(Provider, item) if item else None

    def provider_and_rev(self, provider_id: str) -> tuple[Provider | None, int]:
        """The provider and its stamp's revision (0: never bumped), as of one moment.

        A transactional read: a write bumping the stamp lands wholly before or wholly after it,
        so the provider is never older than the revision returned with it."""
        with store.read_together() as read:
            provider = read.get(ProviderItem, ProviderItem.pk_for(provider_id), ProviderItem.sk_for())
            stamp = read.get(ProviderStamp, ProviderStamp.pk_for(provider_id), ProviderStamp.sk_for())
        try:
            found: Provider | None = _record(Provider, provider.get())
        except ProviderItem.DoesNotExist:
            found = None
        try:
            rev = stamp.get().rev or 0
        except ProviderStamp.DoesNotExist:
            rev = 0
        return found, rev

    def check_provider_unchanged(self, uow: UnitOfWork, provider_id: str, rev: int) -> None:
        """Join `uow` with a check that holds only while the provider's stamp is still at `rev`
        (refused: ProviderChanged)."""
        pk, sk = ProviderStamp.pk_for(provider_id), ProviderStamp.sk_for()
        uow.check(ProviderStamp, pk, sk, _stamp_at(rev), refused=ProviderChanged(provider_id))

    def list_providers(self, tenant: str) -> list[Provider]:
        return [_record(Provider, item) for item in _listed(ProviderItem, ProviderItem.listing, tenant)]

    def save_provider(self, provider: Provider) -> None:
        """Rewrite a provider (after its secrets were written: the stamp then tells every
        container to read them again)."""
        uow = store.unit_of_work()
        uow.put(
            _provider_item(provider), ProviderItem.tenant == provider.tenant, refused=NotFound("provider not found")
        )
        self._record_bump(uow, provider.id)
        uow.commit()

    def settle_webhook_scheme(self, provider_id: str, scheme: str) -> bool:
        """Store the webhook scheme of a provider saved before schemes were stored, once, with its
        stamp. True when this call stored it; False when the provider has one already (another
        delivery stored it first, or an admin did) or is gone."""
        uow = store.unit_of_work()
        uow.update(
            ProviderItem(ProviderItem.pk_for(provider_id), ProviderItem.sk_for()),
            [ProviderItem.webhook_scheme.set(scheme)],
            ProviderItem.pk.exists() & ProviderItem.webhook_scheme.does_not_exist(),
            refused=_SchemeSettled,
        )
        self._record_bump(uow, provider_id)
        try:
            uow.commit()
        except _SchemeSettled:
            return False
        return True

    def delete_provider(self, tenant: str, provider_id: str) -> None:
        self.get_provider(tenant, provider_id)
        if any(instance.provider_id == provider_id for instance in _listed(InstanceItem, InstanceItem.listing, tenant)):
            raise Conflict("provider still has instances: delete them first", code="provider_in_use")
        uow = store.unit_of_work()
        uow.delete(
            ProviderItem(ProviderItem.pk_for(provider_id), ProviderItem.sk_for()),
            ProviderItem.tenant == tenant,
            refused=NotFound("provider not found"),
        )
        self._record_bump(uow, provider_id)
        uow.commit()

    @staticmethod
    def _record_bump(uow: UnitOfWork, provider_id: str) -> None:
        """The provider's stamp moves on (see the module's docstring)."""
        stamp = ProviderStamp(ProviderStamp.pk_for(provider_id), ProviderStamp.sk_for())
        uow.update(stamp, [ProviderStamp.rev.add(1)])

    # --- instances -----------------------------------------------------------------------

    def put_instance(self, instance: Instance, previous: Instance | None) -> None:
        """Create an instance, or replace its configuration; its provider binding is unique.

        A replacement updates the configuration attributes only: the connection state (written
        by webhook events and status reads at any moment) and attributes owned by other areas are
        left as they are, unless the binding changed: another session's state starts over
        (DISCONNECTED, no provider `seq`, its revision moved on).
        """
        taken = AlreadyExists("instance name or provider binding already in use")
        binding = _binding_key(instance.provider_id, instance.provider_instance_id)
        old_binding = previous and _binding_key(previous.provider_id, previous.provider_instance_id)
        uow = store.unit_of_work()
        provider_key = (ProviderItem.pk_for(instance.provider_id), ProviderItem.sk_for())
        uow.check(
            ProviderItem,
            *provider_key,
            ProviderItem.tenant == instance.tenant,
            refused=_unknown("providerId", "provider"),
        )
        number_key = (NumberItem.pk_for(instance.number_id), NumberItem.sk_for())
        uow.check(NumberItem, *number_key, NumberItem.tenant == instance.tenant, refused=_unknown("numberId", "number"))
        item = _instance_item(instance)
        if previous is None:
            uow.put(item, InstanceItem.pk.does_not_exist(), refused=taken)
        else:
            actions = _configuration(item, reset_state=old_binding is not None and old_binding != binding)
            uow.update(item, actions, InstanceItem.tenant == instance.tenant, refused=taken)
        if old_binding != binding:
            bound = Binding(*binding, tenant=instance.tenant, instance=instance.key)
            uow.put(bound, Binding.pk.does_not_exist(), refused=taken)
            if old_binding:
                uow.delete(Binding(*old_binding))
        for provider_id in sorted({instance.provider_id, *([previous.provider_id] if previous else [])}):
            self._record_bump(uow, provider_id)
        uow.commit()

    def find_instance(self, key: str) -> Instance | None:
        """Tenant-free lookup by `Instance.key`, for work that carries the key (events, jobs)."""
        item = _get(InstanceItem, InstanceItem.pk_for(key), InstanceItem.sk_for())
        return _record(Instance, item) if item else None

    def get_instance(self, tenant: str, name: str) -> Instance:
        key = instance_key(tenant, name)
        item = _get(InstanceItem, InstanceItem.pk_for(key), InstanceItem.sk_for())
        return _record(Instance, _owned(item, tenant, "instance"))

    def instance_for_binding(self, provider_id: str, provider_instance_id: str) -> Instance | None:
        binding = _get(Binding, *_binding_key(provider_id, provider_instance_id))
        return self.find_instance(binding.instance) if binding else None

    def instance_for_meta_phone(self, provider_id: str, meta_phone_id: str) -> Instance | None:
        """The instance of `provider_id` on the number whose Meta phone number id is `meta_phone_id`."""
        provider = self.find_provider(provider_id)
        if provider is None:
            return None
        for number in self.list_numbers(provider.tenant):
            if number.meta_phone_id == meta_phone_id:
                for instance in self.instances_of_number(number.id):
                    if instance.provider_id == provider_id:
                        return instance
        return None

    def instance_for_waba(self, provider_id: str, waba_id: str) -> Instance | None:
        """An instance of `provider_id` on a number of the WhatsApp Business Account `waba_id`
        (an account's events, such as a template's status, are bound to it)."""
        provider = self.find_provider(provider_id)
        if provider is None:
            return None
        for number in self.list_numbers(provider.tenant):
            if number.waba_id == waba_id:
                for instance in self.instances_of_number(number.id):
                    if instance.provider_id == provider_id:
                        return instance
        return None

    def list_instances(self, tenant: str) -> list[Instance]:
        return [_record(Instance, item) for item in _listed(InstanceItem, InstanceItem.listing, tenant)]

    def instances_of_number(self, number_id: str) -> list[Instance]:
        relation = InstanceItem.number_relation(number_id)
        return [_record(Instance, item) for item in store.query(InstanceItem, relation, index=InstanceItem.by_number)]

    def delete_instance(self, tenant: str, name: str) -> None:
        instance = self.get_instance(tenant, name)
        uow = store.unit_of_work()
        uow.delete(
            InstanceItem(InstanceItem.pk_for(instance.key), InstanceItem.sk_for()),
            InstanceItem.tenant == tenant,
            refused=NotFound("instance not found"),
        )
        uow.delete(Binding(*_binding_key(instance.provider_id, instance.provider_instance_id)))
        self._record_bump(uow, instance.provider_id)
        uow.commit()


# --- items and records -----------------------------------------------------------------------


def _get(model: type[ItemT], pk: str, sk: str) -> ItemT | None:
    try:
        return model.get(pk, sk, consistent_read=True)
    except model.DoesNotExist:
        return None


def _owned(item: ItemT | None, tenant: str, what: str) -> ItemT:
    """The item if it belongs to `tenant`; another tenant's item is indistinguishable from none."""
    if item is None or getattr(item, "tenant", None) != tenant:
        raise NotFound(f"{what} not found")
    return item


def _listed(model: type[ItemT], index: Any, tenant: str) -> Iterable[ItemT]:
    """The tenant's records of a kind, oldest first (GSI1)."""
    return store.query(model, tenant_listing(tenant, model.PREFIX), index=index)


def _batch_get(model: type[ItemT], ids: Collection[str], tenant: str) -> list[ItemT]:
    """The items of `model` among `ids` that belong to `tenant` (consistent batch reads, as many
    requests as DynamoDB's limit per request and its unprocessed keys take)."""
    keys = [(model.pk_for(identifier), model.sk_for()) for identifier in dict.fromkeys(ids)]
    if not keys:
        return []
    return [item for item in model.batch_get(keys, consistent_read=True) if getattr(item, "tenant", None) == tenant]


def _record(record: type[RecordT], item: TableItem) -> RecordT:
    """The domain record an item stores (its keys and indexes are no field of it)."""
    return record.model_validate({name: value for name, value in item.attribute_values.items() if value is not None})


def _item(model: type[ItemT], record: Model, pk: str, sk: str) -> ItemT:
    """The item storing `record` (None left out: absent is not null)."""
    return model(pk, sk, **record.model_dump(exclude_none=True))


def _listing(item: ApiKeyItem | NumberItem | ProviderItem | InstanceItem, record: Record) -> None:
    item.gsi1pk, item.gsi1sk = tenant_listing(record.tenant, type(item).PREFIX), record.created_at.isoformat()


def _key_item(key: ApiKey, digest: str) -> ApiKeyItem:
    item = _item(ApiKeyItem, key, ApiKeyItem.pk_for(key.id), ApiKeyItem.sk_for())
    item.digest = digest
    _listing(item, key)
    return item


def _number_item(number: Number) -> NumberItem:
    item = _item(NumberItem, number, NumberItem.pk_for(number.id), NumberItem.sk_for())
    _listing(item, number)
    return item


def _provider_item(provider: Provider) -> ProviderItem:
    item = _item(ProviderItem, provider, ProviderItem.pk_for(provider.id), ProviderItem.sk_for())
    _listing(item, provider)
    return item


def _instance_item(instance: Instance) -> InstanceItem:
    item = _item(InstanceItem, instance, InstanceItem.pk_for(instance.key), InstanceItem.sk_for())
    _listing(item, instance)
    item.gsi2pk = InstanceItem.number_relation(instance.number_id)
    item.gsi2sk = f"{instance.priority:06d}#{instance.key}"
    return item


# The attributes a replacement of an instance writes (set, or removed when the record has none);
# the connection state is the connection state's, started over only on a new binding.
_INSTANCE_CONFIGURATION: tuple[Attribute[Any], ...] = (
    InstanceItem.provider_id,
    InstanceItem.provider_instance_id,
    InstanceItem.number_id,
    InstanceItem.priority,
    InstanceItem.kind,
    InstanceItem.owner_tag,
    InstanceItem.token_hint,
    InstanceItem.spamguard_enabled,
    InstanceItem.inbox_id,
    InstanceItem.events_webhook_url,
    InstanceItem.reengagement_template,
    InstanceItem.gsi1pk,
    InstanceItem.gsi1sk,
    InstanceItem.gsi2pk,
    InstanceItem.gsi2sk,
)


def _configuration(item: InstanceItem, *, reset_state: bool) -> list[Action]:
    actions: list[Action] = []
    for attribute in _INSTANCE_CONFIGURATION:
        value = getattr(item, attribute.attr_name)
        actions.append(attribute.remove() if value is None else attribute.set(value))
    if reset_state:
        actions += [
            InstanceItem.state.set("DISCONNECTED"),
            InstanceItem.state_changed_at.set(utcnow()),
            InstanceItem.state_seq.remove(),
            InstanceItem.state_rev.add(1),
        ]
    return actions


def _grant(key: ApiKey, digest: str) -> KeyGrant:
    return KeyGrant(
        KeyGrant.pk_for(digest),
        KeyGrant.sk_for(),
        tenant=key.tenant,
        key_id=key.id,
        scopes=sorted(key.scopes),
        attendant_id=key.attendant_id,
    )


def _is_admin(scopes: Iterable[object]) -> bool:
    return Scope.ADMIN.value in {str(scope) for scope in scopes}


def _key_unchanged(tenant: str, *, admin: bool) -> Condition:
    """The key is still the tenant's, with or without `admin` as read (the count depends on it)."""
    has_admin = ApiKeyItem.scopes.contains(Scope.ADMIN.value)
    unchanged: Condition = (ApiKeyItem.tenant == tenant) & (has_admin if admin else ~has_admin)
    return unchanged


def _stamp_at(rev: int) -> Condition:
    if rev:
        return cast(Condition, ProviderStamp.rev == rev)  # PynamoDB types `==` as object's
    return ProviderStamp.rev.does_not_exist()


def _unknown(field: str, what: str) -> UnknownReference:
    """A body's `field` names no `what` of the tenant, whether it is missing or another tenant's
    (never told apart)."""
    return UnknownReference(f"{field} names no {what} of this tenant", code=f"unknown_{what}")


def _binding_key(provider_id: str, provider_instance_id: str) -> tuple[str, str]:
    return Binding.pk_for(provider_id, provider_instance_id), Binding.sk_for()
