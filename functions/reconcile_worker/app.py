"""ReconcileQueue consumer: reconciles one instance per message; failed messages are retried alone."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from switchboard.coldstart import imported

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from switchboard import bootstrap
from switchboard.core.observability import logger

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse

reconciler = bootstrap.reconcile_worker()
processor = BatchProcessor(event_type=EventType.SQS)


def reconcile_one(record: SQSRecord) -> None:
    reconciler().reconcile_by_key(json.loads(record.body)["instance"])


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return process_partial_response(event=event, record_handler=reconcile_one, processor=processor, context=context)


imported()
