"""What a capability adds to the one transaction that accepts a provider event (an `AcceptWrite`
of webhooks/events.py): entries of a DynamoDB TransactWriteItems request, committed exactly once
with the event's acceptance."""

from __future__ import annotations

from typing import Any

TransactItem = dict[str, Any]  # one entry of a DynamoDB TransactWriteItems request
