"""The daily counter driven as the send API's acceptance drives it, for tests of the stored counter."""

from __future__ import annotations

from datetime import date

from switchboard.core import store
from switchboard.quotas.dynamo import DynamoQuotaStore


class _DayFull(Exception):
    pass


def counted_one(quotas: DynamoQuotaStore, tenant: str, day: date, limit: int) -> bool:
    """One message counted by a unit of work of its own, as the send API's acceptance counts it."""
    uow = store.unit_of_work()
    quotas.count_message_in(uow, tenant, day, limit, refused=_DayFull())
    try:
        uow.commit()
    except _DayFull:
        return False
    return True
