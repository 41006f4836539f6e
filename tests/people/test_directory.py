"""The people directory stores one item per person under today's names, refuses a second add of
the same person, and refuses a save over a change it did not see."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import boto3
import pytest

from switchboard import bootstrap
from switchboard.core.errors import AlreadyExists, Conflict
from switchboard.people.domain import Role, User
from tools.support.aws import REGION, AwsResources

AT = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _user(**changes: object) -> User:
    fields: dict[str, object] = {
        "tenant": "acme",
        "id": "sub-1",
        "email": "ana@acme.example.com",
        "role": Role.ATTENDANT,
        "created_at": AT,
        "updated_at": AT,
    }
    fields.update(changes)
    return User.model_validate(fields)


def test_a_person_is_stored_under_todays_names_and_read_back(aws: AwsResources) -> None:
    directory = bootstrap.people_directory()
    directory.add_user(_user())

    raw = boto3.client("dynamodb", region_name=REGION).get_item(
        TableName=aws.tables["MainTable"], Key={"pk": {"S": "PEOPLE#acme"}, "sk": {"S": "USER#sub-1"}}
    )["Item"]
    assert raw["email"] == {"S": "ana@acme.example.com"}
    assert raw["role"] == {"S": "attendant"}
    assert raw["enabled"] == {"BOOL": True}
    assert directory.get_user("acme", "sub-1", consistent=True) == _user()
    assert directory.get_user("globex", "sub-1") is None
    assert directory.get_users("acme", ["sub-1", "sub-2"]) == {"sub-1": _user()}
    assert directory.list_users("acme") == [_user()]


def test_the_same_person_is_not_added_twice(aws: AwsResources) -> None:
    directory = bootstrap.people_directory()
    directory.add_user(_user())
    with pytest.raises(AlreadyExists):
        directory.add_user(_user(role=Role.ADMIN))


def test_a_save_over_a_change_it_did_not_see_is_refused(aws: AwsResources) -> None:
    directory = bootstrap.people_directory()
    seen = _user()
    directory.add_user(seen)
    directory.save_user(_user(enabled=False, updated_at=AT + timedelta(seconds=1)), seen)
    with pytest.raises(Conflict):
        directory.save_user(_user(role=Role.ADMIN, updated_at=AT + timedelta(seconds=2)), seen)
    assert directory.get_user("acme", "sub-1", consistent=True) == _user(
        enabled=False, updated_at=AT + timedelta(seconds=1)
    )
