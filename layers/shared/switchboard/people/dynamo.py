"""The people directory: one item per person of a tenant, read by the authorizer on every
request of theirs (consistently: a disable must count at the very next request).

PEOPLE#<tenant>   / USER#<sub>   a person: email, role, enabled, when added and last changed, when
                                 they last signed out
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from pynamodb.attributes import BooleanAttribute, UnicodeAttribute

from switchboard.core import store
from switchboard.core.errors import AlreadyExists, Conflict, NotFound
from switchboard.core.store import IsoDateTimeAttribute, TableItem
from switchboard.people.domain import Role, User


class UserItem(TableItem):
    PREFIX = "PEOPLE"  # pk: PEOPLE#<tenant>
    SORT_PREFIX = "USER"  # sk: USER#<sub>

    tenant = UnicodeAttribute()
    id = UnicodeAttribute()
    email = UnicodeAttribute()
    role = UnicodeAttribute()
    enabled = BooleanAttribute()
    created_at = IsoDateTimeAttribute()
    updated_at = IsoDateTimeAttribute()
    signed_out_at = IsoDateTimeAttribute(null=True)


class PeopleDirectory:
    def __init__(self, table: Any) -> None:
        """`table`: the composition root's table, whose building bound the item models."""
        self._table = table

    def add_user(self, user: User) -> None:
        try:
            store.put(_item(user), UserItem.pk.does_not_exist())
        except store.ConditionFailed as exc:
            raise AlreadyExists("this user is already in the directory") from exc

    def get_user(self, tenant: str, user: str, *, consistent: bool = False) -> User | None:
        item = store.get(UserItem, UserItem.pk_for(tenant), UserItem.sk_for(user), consistent=consistent)
        return _record(item) if item is not None else None

    def get_users(self, tenant: str, users: Collection[str]) -> dict[str, User]:
        keys = [(UserItem.pk_for(tenant), UserItem.sk_for(user)) for user in dict.fromkeys(users)]
        if not keys:
            return {}
        return {item.id: _record(item) for item in UserItem.batch_get(keys, consistent_read=True)}

    def list_users(self, tenant: str) -> list[User]:
        items = store.query(UserItem, UserItem.pk_for(tenant), UserItem.sk.startswith(UserItem.sk_for("")))
        return sorted((_record(item) for item in items), key=lambda user: user.email)

    def record_sign_out(self, tenant: str, user: str, at: datetime) -> None:
        """Their tokens issued until `at` are refused from now on. It moves `updated_at` too, so an
        admin's change read before it is refused (Conflict) rather than erasing it. Raises NotFound."""
        item = UserItem(UserItem.pk_for(tenant), UserItem.sk_for(user))
        try:
            store.update(item, [UserItem.signed_out_at.set(at), UserItem.updated_at.set(at)], UserItem.pk.exists())
        except store.ConditionFailed as exc:
            raise NotFound("user not found") from exc

    def save_user(self, user: User, expected: User) -> None:
        try:
            store.put(_item(user), UserItem.updated_at == expected.updated_at)
        except store.ConditionFailed as exc:
            raise Conflict("the user changed meanwhile: read it again") from exc


def _item(user: User) -> UserItem:
    return UserItem(
        UserItem.pk_for(user.tenant),
        UserItem.sk_for(user.id),
        tenant=user.tenant,
        id=user.id,
        email=user.email,
        role=str(user.role),
        enabled=user.enabled,
        created_at=user.created_at,
        updated_at=user.updated_at,
        signed_out_at=user.signed_out_at,
    )


def _record(item: UserItem) -> User:
    return User(
        tenant=item.tenant,
        id=item.id,
        email=item.email,
        role=Role(item.role),
        enabled=item.enabled,
        created_at=item.created_at,
        updated_at=item.updated_at,
        signed_out_at=item.signed_out_at,
    )
