"""Domain events on the EventBridge bus, published after the change they describe is committed.

Publishing is best effort by design: the commit is the source of truth and stays whatever
happens here. A failure is logged (and counted) so live channels fall back to their next read.
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import BotoCoreError, ClientError

from switchboard.core.observability import logger, metrics

SOURCE = "switchboard"

# The domain events the console's live updates listen to (each detail carries `tenant`; see
# docs/live-updates.md). `connection.calls.config.changed` is the call limit's own.
INSTANCE_CONNECTION_CHANGED = "instance.connection.changed"
POOL_CHANGED = "pool.changed"
MESSAGE_STATUS_CHANGED = "message.status.changed"
CALL_STATE_CHANGED = "call.state.changed"
LINE_OCCUPANCY_CHANGED = "line.occupancy.changed"


class EventPublisher:
    def __init__(self, events_client: Any, bus_name: str | None) -> None:
        self._events = events_client
        self._bus_name = bus_name

    def publish(self, detail_type: str, detail: dict[str, Any]) -> bool:
        """Put one event on the bus; False (logged, never raised) when it could not be published."""
        if not self._bus_name:
            logger.warning("no event bus configured: event not published", extra={"detail_type": detail_type})
            return False
        entry = {
            "EventBusName": self._bus_name,
            "Source": SOURCE,
            "DetailType": detail_type,
            "Detail": json.dumps(detail),
        }
        try:
            answer = self._events.put_events(Entries=[entry])
        except (ClientError, BotoCoreError) as error:
            return self._failed(detail_type, type(error).__name__)
        if answer.get("FailedEntryCount"):
            code = (answer.get("Entries") or [{}])[0].get("ErrorCode", "unknown")
            return self._failed(detail_type, str(code))
        return True

    @staticmethod
    def _failed(detail_type: str, reason: str) -> bool:
        logger.warning("event not published", extra={"detail_type": detail_type, "reason": reason})
        metrics.add_metric(name="EventsNotPublished", unit=MetricUnit.Count, value=1)
        return False
