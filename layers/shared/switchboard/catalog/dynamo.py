"""Catalog persistence: tenants, API keys (and their hash index), numbers, providers, instances.

A tenant's admin keys are counted in one item (pk `TENANT#<tag>`, sk `ADMINKEYS`) that every
write adding or removing an admin key updates in the same transaction: revoking or demoting
the last one is refused by that item's condition, so two concurrent revocations of the last
two admin keys cannot both succeed.

Each provider has a stamp (pk `PROVIDER#<id>`, sk `STAMP`, a counter `rev`) that every write
changing what a webhook of that provider is checked and bound against bumps in the same
transaction: the provider itself (its secrets are rotated through it), its instances and their
bindings, and the Meta phone number ids of the numbers they are on. A container may then keep
those records as long as the stamp holds the revision it read them at, and a transaction that
depends on them checks the stamp instead of reading them again (`provider_unchanged`). The stamp
outlives the provider, so a revision never comes back.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from boto3.dynamodb.conditions import Key
from botocore.exceptions import ClientError

from switchboard.catalog.domain import (
    ApiKey,
    Instance,
    Number,
    Provider,
    ProviderChanged,
    Record,
    Tenant,
    instance_key,
)
from switchboard.core.clock import utcnow
from switchboard.core.dynamo import (
    META,
    cancellation_codes,
    entity_key,
    from_item,
    is_condition_failure,
    owned_or_missing,
    query_all,
    tenant_index,
    to_item,
)
from switchboard.core.errors import AlreadyExists, Conflict, LastAdminKey, NotFound, UnknownReference
from switchboard.core.identity import Principal, Scope
from switchboard.core.store import IntegerAttribute, TableItem, UnitOfWork

NOT_EXISTS = "attribute_not_exists(pk)"
ADMIN_COUNT_SK = "ADMINKEYS"
STAMP_SK = "STAMP"
KEY_WRITE_ATTEMPTS = 3
BATCH_GET_KEYS = 100  # DynamoDB's limit per BatchGetItem
# Items other capabilities keep in an API key's partition (`APIKEY#<id>`), deleted with the key in
# the same transaction: the key's number pool (sk `POOL`). A pool write checks that its key still
# exists, so none can land after the delete.
KEY_ATTACHMENTS = ("POOL",)


class CatalogRepository:
    def __init__(self, table: Any) -> None:
        self._table = table
        self._client = table.meta.client
        self._name = table.name

    # --- tenants -------------------------------------------------------------------------

    def create_tenant(self, tenant: Tenant) -> None:
        """The tenant and its admin-key count (zero), together."""
        item = to_item(tenant, entity_key("TENANT", tenant.owner_tag), gsi1pk="TENANTS", gsi1sk=tenant.owner_tag)
        count = {**_admin_count_key(tenant.owner_tag), "tenant": tenant.owner_tag, "adminKeys": 0}
        self._transact([self._new(item), self._new(count)], AlreadyExists(f"tenant {tenant.owner_tag} already exists"))

    def get_tenant(self, owner_tag: str) -> Tenant:
        item = self._get(entity_key("TENANT", owner_tag))
        if not item:
            raise NotFound("tenant not found")
        return from_item(Tenant, item)

    def list_tenants(self) -> list[Tenant]:
        return [from_item(Tenant, item) for item in self._by_index("GSI1", "gsi1pk", "TENANTS")]

    # --- API keys ------------------------------------------------------------------------

    def create_api_key(self, key: ApiKey, digest: str) -> None:
        """The key record and its hash index are written together, or neither is (with the
        tenant's admin-key count for an admin key)."""
        writes = [
            self._new(to_item(key, entity_key("APIKEY", key.id), digest=digest, **self._listing(key, "APIKEY"))),
            self._new({**entity_key("KEYHASH", digest), **_grant(key)}),
        ]
        if _is_admin(key.scopes):
            writes.append(self._admin_count_change(key.tenant, +1))
        if key.default_number:
            writes.append(self._number_digits_owned(key.tenant, key.default_number))
        self._write_counting_admins(key.tenant, lambda: writes, AlreadyExists("API key already exists"))

    def principal_for_digest(self, digest: str) -> Principal | None:
        item = self._get(entity_key("KEYHASH", digest))
        if not item:
            return None
        return Principal(
            tenant=item["tenant"],
            key_id=item["keyId"],
            scopes=frozenset(Scope(scope) for scope in item["scopes"]),
            attendant_id=item.get("attendantId"),
        )

    def get_api_key(self, tenant: str, key_id: str) -> ApiKey:
        return from_item(ApiKey, self._owned(entity_key("APIKEY", key_id), tenant, "API key"))

    def get_api_keys(self, tenant: str, key_ids: Collection[str]) -> dict[str, ApiKey]:
        """The tenant's keys among `key_ids`, by id (consistent batch reads): a revoked key, or
        another tenant's, is simply absent from the answer."""
        return {key.id: key for key in (from_item(ApiKey, item) for item in self._batch_get("APIKEY", key_ids, tenant))}

    def list_api_keys(self, tenant: str) -> list[ApiKey]:
        return [from_item(ApiKey, item) for item in self._by_index("GSI1", "gsi1pk", tenant_index(tenant, "APIKEY"))]

    def save_api_key(self, key: ApiKey) -> None:
        """Rewrite an existing key (same tenant), keeping its hash index in step with its grants.

        Raises NotFound, or LastAdminKey when it would take `admin` from the tenant's last admin key.
        """

        def writes() -> list[dict[str, Any]]:
            current = self._owned(entity_key("APIKEY", key.id), key.tenant, "API key")
            was_admin = _is_admin(current["scopes"])
            item = to_item(key, entity_key("APIKEY", key.id), digest=current["digest"], **self._listing(key, "APIKEY"))
            changes = [
                {"Put": {"TableName": self._name, "Item": item, **_key_condition(key.tenant, admin=was_admin)}},
                {"Put": {"TableName": self._name, "Item": {**entity_key("KEYHASH", current["digest"]), **_grant(key)}}},
            ]
            if was_admin != _is_admin(key.scopes):
                changes.append(self._admin_count_change(key.tenant, -1 if was_admin else +1))
            # A default number is checked when it is set; one deleted since does not block other edits.
            if key.default_number and key.default_number != current.get("default_number"):
                changes.append(self._number_digits_owned(key.tenant, key.default_number))
            return changes

        self._write_counting_admins(key.tenant, writes, NotFound("API key not found"))

    def delete_api_key(self, tenant: str, key_id: str) -> None:
        """Revoke a key with its hash index and what is attached to it (its number pool).

        Raises NotFound, or LastAdminKey when it is the tenant's last admin key.
        """

        def writes() -> list[dict[str, Any]]:
            current = self._owned(entity_key("APIKEY", key_id), tenant, "API key")
            was_admin = _is_admin(current["scopes"])
            changes = [
                {
                    "Delete": {
                        "TableName": self._name,
                        "Key": entity_key("APIKEY", key_id),
                        **_key_condition(tenant, admin=was_admin),
                    }
                },
                {"Delete": {"TableName": self._name, "Key": entity_key("KEYHASH", current["digest"])}},
                *(
                    {"Delete": {"TableName": self._name, "Key": {"pk": f"APIKEY#{key_id}", "sk": sk}}}
                    for sk in KEY_ATTACHMENTS
                ),
            ]
            if was_admin:
                changes.append(self._admin_count_change(tenant, -1))
            return changes

        self._write_counting_admins(tenant, writes, NotFound("API key not found"))

    def _admin_count_change(self, tenant: str, delta: int) -> dict[str, Any]:
        """One more admin key, or one fewer on the condition that another one remains."""
        if delta > 0:
            expression, condition = "ADD adminKeys :one", "attribute_exists(pk)"
        else:
            expression, condition = "SET adminKeys = adminKeys - :one", "adminKeys > :one"
        return {
            "Update": {
                "TableName": self._name,
                "Key": _admin_count_key(tenant),
                "UpdateExpression": expression,
                "ConditionExpression": condition,
                "ExpressionAttributeValues": {":one": 1},
            }
        }

    def _write_counting_admins(
        self, tenant: str, writes: Callable[[], list[dict[str, Any]]], on_key_condition: Exception
    ) -> None:
        """Run one key transaction built by `writes`, whose first item is the key's own write.

        `writes` reads the key again on each attempt, so a key whose scopes changed between the
        read and the write is simply read again. A refused admin count is LastAdminKey, unless
        the tenant predates the count: it is then counted once and the write tried again.
        """
        counted = _admin_count_key(tenant)
        last_error: ClientError | None = None
        for _ in range(KEY_WRITE_ATTEMPTS):
            items = writes()
            try:
                self._client.transact_write_items(TransactItems=_sendable(items))
            except ClientError as error:
                codes = cancellation_codes(error)
                if "ConditionalCheckFailed" not in codes:
                    raise
                _raise_refused_reference(items, codes, error)
                count_refused = any(
                    code == "ConditionalCheckFailed" and item.get("Update", {}).get("Key") == counted
                    for item, code in zip(items, codes, strict=False)
                )
                if codes[0] == "ConditionalCheckFailed" or not count_refused:
                    last_error = error
                    continue
                if self._get(counted) is not None:
                    raise LastAdminKey("this is the tenant's last admin key: create another admin key first") from error
                self._count_admin_keys(tenant)
                last_error = error
                continue
            return
        raise on_key_condition from last_error

    def _count_admin_keys(self, tenant: str) -> None:
        """Count the admin keys of a tenant created before the count existed (once, if still missing)."""
        count = sum(1 for key in self.list_api_keys(tenant) if _is_admin(key.scopes))
        item = {**_admin_count_key(tenant), "tenant": tenant, "adminKeys": count}
        try:
            self._table.put_item(Item=item, ConditionExpression=NOT_EXISTS)
        except ClientError as error:
            if not is_condition_failure(error):
                raise

    # --- numbers -------------------------------------------------------------------------

    def create_number(self, number: Number) -> None:
        unique = {**_digits_key(number.tenant, number.number), "tenant": number.tenant, "numberId": number.id}
        self._transact(
            [
                self._new(to_item(number, entity_key("NUMBER", number.id), **self._listing(number, "NUMBER"))),
                self._new(unique),
            ],
            AlreadyExists(f"number {number.number} already exists"),
        )

    def get_number(self, tenant: str, number_id: str) -> Number:
        return from_item(Number, self._owned(entity_key("NUMBER", number_id), tenant, "number"))

    def get_numbers(self, tenant: str, number_ids: Collection[str]) -> dict[str, Number]:
        """The tenant's numbers among `number_ids`, by id, read together (consistent batch reads).

        A deleted number, or another tenant's, is simply absent from the answer."""
        return {
            number.id: number
            for number in (from_item(Number, item) for item in self._batch_get("NUMBER", number_ids, tenant))
        }

    def _batch_get(self, kind: str, ids: Collection[str], tenant: str) -> list[dict[str, Any]]:
        """The items of `kind` among `ids` that belong to `tenant` (consistent batch reads)."""
        wanted = list(dict.fromkeys(ids))
        found: list[dict[str, Any]] = []
        for start in range(0, len(wanted), BATCH_GET_KEYS):
            keys = [entity_key(kind, identifier) for identifier in wanted[start : start + BATCH_GET_KEYS]]
            request: dict[str, Any] = {self._name: {"Keys": keys, "ConsistentRead": True}}
            while request:
                answer = self._client.batch_get_item(RequestItems=request)
                found.extend(
                    item for item in answer.get("Responses", {}).get(self._name, []) if item.get("tenant") == tenant
                )
                request = answer.get("UnprocessedKeys") or {}
        return found

    def number_by_digits(self, tenant: str, digits: str) -> Number | None:
        unique = self._get(_digits_key(tenant, digits))
        return self.get_number(tenant, unique["numberId"]) if unique else None

    def list_numbers(self, tenant: str) -> list[Number]:
        return [from_item(Number, item) for item in self._by_index("GSI1", "gsi1pk", tenant_index(tenant, "NUMBER"))]

    def save_number(self, number: Number) -> None:
        """Rewrite a number; its Meta phone number id binds webhooks to its instances, so the
        stamps of their providers move with it."""
        item = to_item(number, entity_key("NUMBER", number.id), **self._listing(number, "NUMBER"))
        providers = {instance.provider_id for instance in self.instances_of_number(number.id)}
        self._transact(
            [self._put_if_owned(item), *(self._bump(provider_id) for provider_id in sorted(providers))],
            NotFound("number not found"),
        )

    def delete_number(self, tenant: str, number_id: str) -> None:
        number = self.get_number(tenant, number_id)
        if self.instances_of_number(number_id):
            raise Conflict("number still has instances: delete them first", code="number_in_use")
        self._transact(
            [
                self._delete_owned(entity_key("NUMBER", number_id), tenant),
                {"Delete": {"TableName": self._name, "Key": _digits_key(tenant, number.number)}},
            ],
            NotFound("number not found"),
        )

    # --- providers -----------------------------------------------------------------------

    def create_provider(self, provider: Provider) -> None:
        item = to_item(provider, entity_key("PROVIDER", provider.id), **self._listing(provider, "PROVIDER"))
        self._transact([self._new(item), self._bump(provider.id)], AlreadyExists("provider already exists"))

    def get_provider(self, tenant: str, provider_id: str) -> Provider:
        return from_item(Provider, self._owned(entity_key("PROVIDER", provider_id), tenant, "provider"))

    def find_provider(self, provider_id: str) -> Provider | None:
        """Tenant-free lookup, for webhook ingest where the provider id is the only handle."""
        item = self._get(entity_key("PROVIDER", provider_id))
        return from_item(Provider, item) if item else None

    def provider_and_rev(self, provider_id: str) -> tuple[Provider | None, int]:
        """The provider and its stamp's revision (0: never bumped), as of one moment.

        A transactional read: a write bumping the stamp lands wholly before or wholly after it,
        so the provider is never older than the revision returned with it."""
        answer = self._client.transact_get_items(
            TransactItems=[
                {"Get": {"TableName": self._name, "Key": entity_key("PROVIDER", provider_id)}},
                {"Get": {"TableName": self._name, "Key": _stamp_key(provider_id)}},
            ]
        )
        provider, stamp = (response.get("Item") for response in answer["Responses"])
        return (from_item(Provider, provider) if provider else None), int((stamp or {}).get("rev", 0))

    def check_provider_unchanged(self, uow: UnitOfWork, provider_id: str, rev: int) -> None:
        """Join `uow` with a check that holds only while the provider's stamp is still at `rev`
        (refused: ProviderChanged)."""
        unchanged = ProviderStamp.rev == rev if rev else ProviderStamp.rev.does_not_exist()
        stamp = _stamp_key(provider_id)
        uow.check(ProviderStamp, stamp["pk"], stamp["sk"], unchanged, refused=ProviderChanged(provider_id))

    def list_providers(self, tenant: str) -> list[Provider]:
        index = tenant_index(tenant, "PROVIDER")
        return [from_item(Provider, item) for item in self._by_index("GSI1", "gsi1pk", index)]

    def save_provider(self, provider: Provider) -> None:
        """Rewrite a provider (after its secrets were written: the stamp then tells every
        container to read them again)."""
        item = to_item(provider, entity_key("PROVIDER", provider.id), **self._listing(provider, "PROVIDER"))
        self._transact([self._put_if_owned(item), self._bump(provider.id)], NotFound("provider not found"))

    def settle_webhook_scheme(self, provider_id: str, scheme: str) -> bool:
        """Store the webhook scheme of a provider saved before schemes were stored, once, with its
        stamp. True when this call stored it; False when the provider has one already (another
        delivery stored it first, or an admin did) or is gone."""
        update = {
            "Update": {
                "TableName": self._name,
                "Key": entity_key("PROVIDER", provider_id),
                "UpdateExpression": "SET webhook_scheme = :scheme",
                "ConditionExpression": "attribute_exists(pk) AND attribute_not_exists(webhook_scheme)",
                "ExpressionAttributeValues": {":scheme": scheme},
            }
        }
        try:
            self._client.transact_write_items(TransactItems=[update, self._bump(provider_id)])
        except ClientError as error:
            if "ConditionalCheckFailed" in cancellation_codes(error):
                return False
            raise
        return True

    def delete_provider(self, tenant: str, provider_id: str) -> None:
        self.get_provider(tenant, provider_id)
        index = tenant_index(tenant, "INSTANCE")
        if any(item.get("provider_id") == provider_id for item in self._by_index("GSI1", "gsi1pk", index)):
            raise Conflict("provider still has instances: delete them first", code="provider_in_use")
        self._transact(
            [self._delete_owned(entity_key("PROVIDER", provider_id), tenant), self._bump(provider_id)],
            NotFound("provider not found"),
        )

    # --- instances -----------------------------------------------------------------------

    def put_instance(self, instance: Instance, previous: Instance | None) -> None:
        """Create an instance, or replace its configuration; its provider binding is unique.

        A replacement updates the configuration attributes only: the connection state (written
        by webhook events and status reads at any moment) and attributes owned by other areas are
        left as they are, unless the binding changed: another session's state starts over
        (DISCONNECTED, no provider `seq`, its revision moved on).
        """
        binding = _binding_key(instance.provider_id, instance.provider_instance_id)
        item = to_item(instance, entity_key("INSTANCE", instance.key), **self._instance_indexes(instance))
        old_binding = previous and _binding_key(previous.provider_id, previous.provider_instance_id)
        rebound = old_binding is not None and old_binding != binding
        writes = (
            [self._new(item)]
            if previous is None
            else [self._update_instance_configuration(instance, item, reset_state=rebound)]
        )
        if old_binding != binding:
            writes.append(self._new({**binding, "tenant": instance.tenant, "instance": instance.key}))
            if old_binding:
                writes.append({"Delete": {"TableName": self._name, "Key": old_binding}})
        providers = {instance.provider_id, *([previous.provider_id] if previous else [])}
        writes += [self._bump(provider_id) for provider_id in sorted(providers)]
        writes += [
            self._owned_check(entity_key("PROVIDER", instance.provider_id), instance.tenant, "providerId", "provider"),
            self._owned_check(entity_key("NUMBER", instance.number_id), instance.tenant, "numberId", "number"),
        ]
        self._transact(writes, AlreadyExists("instance name or provider binding already in use"))

    def _instance_indexes(self, instance: Instance) -> dict[str, str]:
        return {
            **self._listing(instance, "INSTANCE"),
            "gsi2pk": f"NUMBER#{instance.number_id}#INSTANCE",
            "gsi2sk": f"{instance.priority:06d}#{instance.key}",
        }

    def _update_instance_configuration(
        self, instance: Instance, item: dict[str, Any], *, reset_state: bool
    ) -> dict[str, Any]:
        configuration = [*_INSTANCE_CONFIGURATION, *self._instance_indexes(instance)]
        names = {f"#{index}": attribute for index, attribute in enumerate(configuration)}
        present = {f"#{index}": attribute for index, attribute in enumerate(configuration) if attribute in item}
        absent = [placeholder for placeholder in names if placeholder not in present]
        sets = [f"{placeholder} = :{placeholder[1:]}" for placeholder in present]
        values = {f":{placeholder[1:]}": item[attribute] for placeholder, attribute in present.items()}
        if reset_state:
            names |= {"#state": "state", "#changed": "state_changed_at", "#seq": "state_seq", "#rev": "state_rev"}
            sets += ["#state = :disconnected", "#changed = :changed"]
            values |= {":disconnected": "DISCONNECTED", ":changed": utcnow().isoformat(), ":one": 1}
            absent.append("#seq")
        expression = "SET " + ", ".join(sets)
        if absent:
            expression += " REMOVE " + ", ".join(absent)
        if reset_state:
            expression += " ADD #rev :one"
        return {
            "Update": {
                "TableName": self._name,
                "Key": entity_key("INSTANCE", instance.key),
                "UpdateExpression": expression,
                "ConditionExpression": "tenant = :tenant",
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": {**values, ":tenant": instance.tenant},
            }
        }

    def find_instance(self, key: str) -> Instance | None:
        """Tenant-free lookup by `Instance.key`, for work that carries the key (events, jobs)."""
        item = self._get(entity_key("INSTANCE", key))
        return from_item(Instance, item) if item else None

    def get_instance(self, tenant: str, name: str) -> Instance:
        return from_item(Instance, self._owned(entity_key("INSTANCE", instance_key(tenant, name)), tenant, "instance"))

    def instance_for_binding(self, provider_id: str, provider_instance_id: str) -> Instance | None:
        binding = self._get(_binding_key(provider_id, provider_instance_id))
        return self.find_instance(binding["instance"]) if binding else None

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

    def list_instances(self, tenant: str) -> list[Instance]:
        index = tenant_index(tenant, "INSTANCE")
        return [from_item(Instance, item) for item in self._by_index("GSI1", "gsi1pk", index)]

    def instances_of_number(self, number_id: str) -> list[Instance]:
        index = f"NUMBER#{number_id}#INSTANCE"
        return [from_item(Instance, item) for item in self._by_index("GSI2", "gsi2pk", index)]

    def delete_instance(self, tenant: str, name: str) -> None:
        instance = self.get_instance(tenant, name)
        self._transact(
            [
                self._delete_owned(entity_key("INSTANCE", instance.key), tenant),
                {
                    "Delete": {
                        "TableName": self._name,
                        "Key": _binding_key(instance.provider_id, instance.provider_instance_id),
                    }
                },
                self._bump(instance.provider_id),
            ],
            NotFound("instance not found"),
        )

    # --- helpers -------------------------------------------------------------------------

    def _get(self, key: dict[str, str]) -> dict[str, Any] | None:
        item: dict[str, Any] | None = self._table.get_item(Key=key, ConsistentRead=True).get("Item")
        return item

    def _owned(self, key: dict[str, str], tenant: str, what: str) -> dict[str, Any]:
        return dict(owned_or_missing(self._get(key), tenant, what))

    def _by_index(self, index: str, attribute: str, value: str) -> list[dict[str, Any]]:
        return list(query_all(self._table, IndexName=index, KeyConditionExpression=Key(attribute).eq(value)))

    @staticmethod
    def _listing(record: Record, kind: str) -> dict[str, str]:
        created = record.created_at.isoformat()
        return {"gsi1pk": tenant_index(record.tenant, kind), "gsi1sk": created}

    def _new(self, item: dict[str, Any]) -> dict[str, Any]:
        return {"Put": {"TableName": self._name, "Item": item, "ConditionExpression": NOT_EXISTS}}

    def _put_if_owned(self, item: dict[str, Any]) -> dict[str, Any]:
        return {
            "Put": {
                "TableName": self._name,
                "Item": item,
                "ConditionExpression": "tenant = :tenant",
                "ExpressionAttributeValues": {":tenant": item["tenant"]},
            }
        }

    def _bump(self, provider_id: str) -> dict[str, Any]:
        """The provider's stamp moves on (see the module's docstring)."""
        return {
            "Update": {
                "TableName": self._name,
                "Key": _stamp_key(provider_id),
                "UpdateExpression": "ADD rev :one",
                "ExpressionAttributeValues": {":one": 1},
            }
        }

    def _delete_owned(self, key: dict[str, str], tenant: str) -> dict[str, Any]:
        return {
            "Delete": {
                "TableName": self._name,
                "Key": key,
                "ConditionExpression": "tenant = :tenant",
                "ExpressionAttributeValues": {":tenant": tenant},
            }
        }

    def _transact(self, writes: list[dict[str, Any]], on_condition: Exception) -> None:
        """One transaction; a refused reference check (`_owned_check`) is its UnknownReference, any
        other refused condition `on_condition`."""
        try:
            self._client.transact_write_items(TransactItems=_sendable(writes))
        except ClientError as error:
            codes = cancellation_codes(error)
            if "ConditionalCheckFailed" in codes:
                _raise_refused_reference(writes, codes, error)
                raise on_condition from error
            raise

    def _owned_check(self, key: dict[str, str], tenant: str, field: str, what: str) -> dict[str, Any]:
        """A transaction entry that holds only while `key` is an item of `tenant`: the object a
        body's `field` names. Refused, the transaction raises UnknownReference (422), whether the
        object is missing or another tenant's (never told apart)."""
        return {
            "ConditionCheck": {
                "TableName": self._name,
                "Key": key,
                "ConditionExpression": "tenant = :tenant",
                "ExpressionAttributeValues": {":tenant": tenant},
            },
            REFERENCE: (field, what),
        }

    def _number_digits_owned(self, tenant: str, digits: str) -> dict[str, Any]:
        """The tenant has a number with these digits (its uniqueness item exists): a `defaultNumber`."""
        return self._owned_check(_digits_key(tenant, digits), tenant, "defaultNumber", "number")


# Marks a transaction entry built by `_owned_check` with the body field it checks; removed before
# the transaction is sent (`_sendable`).
REFERENCE = "__reference__"


def _sendable(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{name: part for name, part in item.items() if name != REFERENCE} for item in items]


def _raise_refused_reference(items: list[dict[str, Any]], codes: list[str], error: ClientError) -> None:
    for item, code in zip(items, codes, strict=False):
        if code == "ConditionalCheckFailed" and REFERENCE in item:
            field, what = item[REFERENCE]
            raise UnknownReference(f"{field} names no {what} of this tenant", code=f"unknown_{what}") from error


_INSTANCE_CONFIGURATION = (
    "provider_id",
    "provider_instance_id",
    "number_id",
    "priority",
    "kind",
    "owner_tag",
    "token_hint",
    "spamguard_enabled",
    "inbox_id",
    "events_webhook_url",
)


def _admin_count_key(tenant: str) -> dict[str, str]:
    return {"pk": f"TENANT#{tenant}", "sk": ADMIN_COUNT_SK}


def _is_admin(scopes: Any) -> bool:
    return Scope.ADMIN.value in {str(scope) for scope in scopes}


def _key_condition(tenant: str, *, admin: bool) -> dict[str, Any]:
    """The key is still the tenant's, with or without `admin` as read (the count depends on it)."""
    scope = "contains(scopes, :admin)" if admin else "NOT contains(scopes, :admin)"
    return {
        "ConditionExpression": f"tenant = :tenant AND {scope}",
        "ExpressionAttributeValues": {":tenant": tenant, ":admin": Scope.ADMIN.value},
    }


def _digits_key(tenant: str, digits: str) -> dict[str, str]:
    return {"pk": f"TENANT#{tenant}", "sk": f"NUMBER#{digits}"}


class ProviderStamp(TableItem):
    """The provider's stamp (`rev`), as the webhook ingest's check reads it."""

    PREFIX = "PROVIDER"
    SORT_PREFIX = STAMP_SK

    rev = IntegerAttribute(null=True)


def _stamp_key(provider_id: str) -> dict[str, str]:
    return {"pk": f"PROVIDER#{provider_id}", "sk": STAMP_SK}


def _binding_key(provider_id: str, provider_instance_id: str) -> dict[str, str]:
    return {"pk": f"BINDING#{provider_id}#{provider_instance_id}", "sk": META}


def _grant(key: ApiKey) -> dict[str, Any]:
    grant: dict[str, Any] = {"tenant": key.tenant, "keyId": key.id, "scopes": sorted(key.scopes)}
    if key.attendant_id:
        grant["attendantId"] = key.attendant_id
    return grant
