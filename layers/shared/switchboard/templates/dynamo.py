"""The template cache: each WhatsApp Business Account's templates as last read from the Graph API.

Items (main table), one partition per (tenant, account), `TEMPLATES#<tenant>#<waba id>`:
- `#META` (`TemplateListItem`): when the list was last read (`fetched_at`), with the table's TTL
  (`expiresAt`) a day later, so an account no longer used leaves nothing behind;
- `T#<name>#<language>` (`TemplateItem`): one template, its definition as Meta gave it, the
  `fetched_at` of the read that wrote it, and the same TTL.

A send's check reads its one template (one `GetItem`: its `fetched_at` says whether it is fresh);
a listing reads the partition (one query). A refresh writes every template, deletes those the
account no longer has, then the `#META` item. A status change (`message_template_status_update`)
is one conditional update of the template's item: applied only while the item exists (an account
the cache has not read yet is read whole on first use).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pynamodb.attributes import UnicodeAttribute

from switchboard.core import store
from switchboard.core.store import DocumentAttribute, EpochAttribute, IsoDateTimeAttribute, TableItem
from switchboard.templates.domain import TemplateDefinition, TemplateList

KEEP_FOR = timedelta(days=1)


class TemplateListItem(TableItem):
    PREFIX = "TEMPLATES"  # pk: TEMPLATES#<tenant>#<waba id>, sk: #META

    tenant = UnicodeAttribute()
    waba_id = UnicodeAttribute()
    fetched_at = IsoDateTimeAttribute()
    expires_at = EpochAttribute(attr_name="expiresAt", null=True)


class TemplateItem(TableItem):
    PREFIX = "TEMPLATES"
    SORT_PREFIX = "T"  # sk: T#<name>#<language>

    tenant = UnicodeAttribute()
    name = UnicodeAttribute()
    language = UnicodeAttribute()
    status = UnicodeAttribute()  # kept apart from the definition: a status change updates it alone
    category = UnicodeAttribute(null=True)
    definition = DocumentAttribute()  # the template as the Graph API listed it
    fetched_at = IsoDateTimeAttribute()
    expires_at = EpochAttribute(attr_name="expiresAt", null=True)


class TemplateCacheRepository:
    def __init__(self, table: Any) -> None:
        """`table`: the composition root's table, whose building bound the item models."""
        self._table = table

    def template(
        self, tenant: str, waba_id: str, name: str, language: str
    ) -> tuple[TemplateDefinition, datetime] | None:
        """One cached template and when it was read; None when the cache does not hold it."""
        item = store.get(
            TemplateItem, TemplateItem.pk_for(tenant, waba_id), TemplateItem.sk_for(name, language), consistent=False
        )
        if item is None:
            return None
        return _definition(item), item.fetched_at

    def listing(self, tenant: str, waba_id: str) -> TemplateList | None:
        """The account's cached templates (as of the `#META` item's read); None when never read."""
        pk = TemplateListItem.pk_for(tenant, waba_id)
        meta = store.get(TemplateListItem, pk, TemplateListItem.sk_for())
        if meta is None:
            return None
        items = store.query(TemplateItem, pk, TemplateItem.sk.startswith(TemplateItem.sk_for("")))
        templates = [_definition(item) for item in items]
        return TemplateList(waba_id=waba_id, templates=templates, fetched_at=meta.fetched_at, from_cache=True)

    def store(self, tenant: str, listing: TemplateList) -> None:
        """The account's templates as just read: every one written, those it no longer has deleted,
        then when it was read."""
        pk = TemplateItem.pk_for(tenant, listing.waba_id)
        expires = listing.fetched_at + KEEP_FOR
        kept = {TemplateItem.sk_for(t.name, t.language) for t in listing.templates}
        stale = [
            TemplateItem(item.pk, item.sk)
            for item in store.query(TemplateItem, pk, TemplateItem.sk.startswith(TemplateItem.sk_for("")))
            if item.sk not in kept
        ]
        with TableItem.batch_write() as batch:
            for template in listing.templates:
                batch.save(
                    TemplateItem(
                        pk,
                        TemplateItem.sk_for(template.name, template.language),
                        tenant=tenant,
                        name=template.name,
                        language=template.language,
                        status=template.status,
                        category=template.category,
                        definition=template.model_dump(mode="json", exclude_none=True),
                        fetched_at=listing.fetched_at,
                        expires_at=expires,
                    )
                )
            for item in stale:
                batch.delete(item)
        store.put(
            TemplateListItem(
                pk,
                TemplateListItem.sk_for(),
                tenant=tenant,
                waba_id=listing.waba_id,
                fetched_at=listing.fetched_at,
                expires_at=expires,
            )
        )

    def set_status(
        self, tenant: str, waba_id: str, *, name: str, language: str, status: str, category: str | None
    ) -> bool:
        """The template's new status (and category), while the cache holds it; False when not."""
        item = TemplateItem(TemplateItem.pk_for(tenant, waba_id), TemplateItem.sk_for(name, language))
        actions = [TemplateItem.status.set(status)]
        if category is not None:
            actions.append(TemplateItem.category.set(category))
        try:
            store.update(item, actions, TemplateItem.pk.exists())
        except store.ConditionFailed:
            return False
        return True


def _definition(item: TemplateItem) -> TemplateDefinition:
    """The definition as read, with the status (and category) its last change set."""
    changed = {"status": item.status} | ({"category": item.category} if item.category else {})
    return TemplateDefinition.model_validate({**item.definition, **changed})
