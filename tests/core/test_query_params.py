"""The `status` parameter the listing routes (messages, webhook deliveries) read alike."""

from __future__ import annotations

import pytest

from switchboard.core.api.query import statuses
from switchboard.core.errors import InvalidInput

KNOWN = ("retrying", "delivered", "failed")


def test_statuses_are_read_in_any_case_and_given_back_spelled_and_ordered_as_known() -> None:
    assert statuses(" FAILED , Retrying,failed", KNOWN) == ("retrying", "failed")
    assert statuses("delivered", ("QUEUED", "DELIVERED")) == ("DELIVERED",)


def test_no_status_parameter_filters_nothing() -> None:
    assert statuses(None, KNOWN) is None


@pytest.mark.parametrize(("value", "named"), [("failed,lost", "lost"), (" , ", "' , '")])
def test_an_unknown_status_or_none_at_all_is_refused_by_name(value: str, named: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        statuses(value, KNOWN)
    assert refused.value.code == "invalid_status"
    assert named in str(refused.value)
