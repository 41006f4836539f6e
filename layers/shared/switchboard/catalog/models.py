"""The catalog's items, one model per kind (the repository is `dynamo.py`).

TENANT#<tag>       / #META              a tenant (listed through GSI1 `TENANTS`)
TENANT#<tag>       / ADMINKEYS          how many admin keys the tenant has
TENANT#<tag>       / NUMBER#<digits>    the digits are taken in the tenant: the number's id
APIKEY#<id>        / #META              an API key (GSI1 `TENANT#<tag>#APIKEY`)
KEYHASH#<digest>   / #META              what a presented key grants, found by its hash
NUMBER#<id>        / #META              a number (GSI1 `TENANT#<tag>#NUMBER`)
PROVIDER#<id>      / #META              a provider server (GSI1 `TENANT#<tag>#PROVIDER`)
PROVIDER#<id>      / STAMP              the provider's revision (see `dynamo.py`)
INSTANCE#<key>     / #META              an instance (GSI1 `TENANT#<tag>#INSTANCE`, GSI2 its number's)
BINDING#<provider>#<provider instance> / #META   the provider session is bound to an instance

Every attribute is stored under the name the records have always had; the camel-case names of
the grant (`keyId`, `attendantId`) and of the admin count (`adminKeys`) are kept as stored.
"""

from __future__ import annotations

from pynamodb.attributes import BooleanAttribute, ListAttribute, UnicodeAttribute

from switchboard.core.store import (
    SEPARATOR,
    DocumentAttribute,
    IntegerAttribute,
    IsoDateTimeAttribute,
    RelationIndex,
    TableItem,
    TenantIndex,
)


def tenant_listing(tenant: str, kind: str) -> str:
    """GSI1's partition of one tenant's records of a kind: `TENANT#<tag>#<KIND>`."""
    return SEPARATOR.join(("TENANT", tenant, kind))


class _Listed(TableItem):
    """A record listed per tenant through GSI1, oldest first (`gsi1sk` is its creation time)."""

    tenant = UnicodeAttribute()
    created_at = IsoDateTimeAttribute()
    gsi1pk = UnicodeAttribute(null=True)
    gsi1sk = UnicodeAttribute(null=True)


class TenantItem(_Listed):
    PREFIX = "TENANT"
    ALL = "TENANTS"  # GSI1's partition of every tenant, sorted by tag

    owner_tag = UnicodeAttribute()
    name = UnicodeAttribute()
    listing = TenantIndex["TenantItem"]()


class AdminKeyCount(TableItem):
    """The tenant's admin keys, counted by every write adding or removing one (same transaction)."""

    PREFIX = "TENANT"
    SORT_PREFIX = "ADMINKEYS"

    tenant = UnicodeAttribute()
    admin_keys = IntegerAttribute(attr_name="adminKeys")


class NumberDigits(TableItem):
    """The digits of a number are unique in the tenant: this item exists while a number has them."""

    PREFIX = "TENANT"
    SORT_PREFIX = "NUMBER"

    tenant = UnicodeAttribute()
    number_id = UnicodeAttribute(null=True)
    # Where items written before the spelling was settled keep the id; read, never written.
    stored_number_id = UnicodeAttribute(attr_name="numberId", null=True)

    def owner_id(self) -> str | None:
        return self.number_id or self.stored_number_id


class ApiKeyItem(_Listed):
    PREFIX = "APIKEY"

    id = UnicodeAttribute()
    name = UnicodeAttribute()
    environment = UnicodeAttribute()
    scopes = ListAttribute(of=UnicodeAttribute)
    attendant_id = UnicodeAttribute(null=True)
    default_number = UnicodeAttribute(null=True)
    webhook_url = UnicodeAttribute(null=True)
    number_selection_mode = UnicodeAttribute(null=True)
    at_least_once = BooleanAttribute(null=True)
    prefix = UnicodeAttribute()
    digest = UnicodeAttribute()
    listing = TenantIndex["ApiKeyItem"]()


class KeyGrant(TableItem):
    """What a presented key grants, found by the key's hash alone."""

    PREFIX = "KEYHASH"

    tenant = UnicodeAttribute()
    key_id = UnicodeAttribute(attr_name="keyId")
    scopes = ListAttribute(of=UnicodeAttribute)
    attendant_id = UnicodeAttribute(attr_name="attendantId", null=True)


class NumberItem(_Listed):
    PREFIX = "NUMBER"

    id = UnicodeAttribute()
    number = UnicodeAttribute()
    display_name = UnicodeAttribute()
    meta_phone_id = UnicodeAttribute(null=True)
    waba_id = UnicodeAttribute(null=True)
    pacing = DocumentAttribute(null=True)
    listing = TenantIndex["NumberItem"]()


class ProviderItem(_Listed):
    PREFIX = "PROVIDER"

    id = UnicodeAttribute()
    name = UnicodeAttribute()
    kind = UnicodeAttribute()
    base_url = UnicodeAttribute()
    priority = IntegerAttribute(null=True)
    admin_token_hint = UnicodeAttribute(null=True)
    webhook_secret_hint = UnicodeAttribute()
    verify_token_hint = UnicodeAttribute(null=True)
    webhook_scheme = UnicodeAttribute(null=True)
    listing = TenantIndex["ProviderItem"]()


class ProviderStamp(TableItem):
    """The provider's revision, moved on by every write a webhook is checked or bound against."""

    PREFIX = "PROVIDER"
    SORT_PREFIX = "STAMP"

    rev = IntegerAttribute(null=True)


class InstanceItem(_Listed):
    """An instance: its configuration (the catalog's) and its connection state (`state`, `state_seq`,
    `state_rev`, `state_changed_at`), which the connection state's repository writes and the
    catalog only starts over when the instance is bound to another provider session."""

    PREFIX = "INSTANCE"

    name = UnicodeAttribute()
    provider_id = UnicodeAttribute()
    provider_instance_id = UnicodeAttribute()
    number_id = UnicodeAttribute()
    priority = IntegerAttribute(null=True)
    kind = UnicodeAttribute(null=True)
    owner_tag = UnicodeAttribute(null=True)
    token_hint = UnicodeAttribute()
    state = UnicodeAttribute(null=True)
    state_seq = IntegerAttribute(null=True)
    state_rev = IntegerAttribute(null=True)
    state_changed_at = IsoDateTimeAttribute(null=True)
    spamguard_enabled = BooleanAttribute(null=True)
    inbox_id = IntegerAttribute(null=True)
    events_webhook_url = UnicodeAttribute(null=True)
    reengagement_template = DocumentAttribute(null=True)
    gsi2pk = UnicodeAttribute(null=True)
    gsi2sk = UnicodeAttribute(null=True)
    listing = TenantIndex["InstanceItem"]()
    by_number = RelationIndex["InstanceItem"]()

    @staticmethod
    def number_relation(number_id: str) -> str:
        """GSI2's partition of a number's instances: `NUMBER#<id>#INSTANCE`, by priority then key."""
        return SEPARATOR.join((NumberItem.PREFIX, number_id, InstanceItem.PREFIX))


class Binding(TableItem):
    """A provider session (provider, provider instance id) belongs to at most one instance."""

    PREFIX = "BINDING"

    tenant = UnicodeAttribute()
    instance = UnicodeAttribute()
