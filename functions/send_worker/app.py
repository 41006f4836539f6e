"""The send worker: SendQueue batches (partial batch responses), one message per record; the ban
watch's counts of the batch's sends are written once the batch is done."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from switchboard.coldstart import imported

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from switchboard import bootstrap
from switchboard.core.observability import logger, metrics

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse

sending = bootstrap.send_worker()
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


def record_handler(record: SQSRecord) -> None:
    receive_count = int(record.attributes.approximate_receive_count or 1)
    sending.worker().handle(record.body, record.receipt_handle, receive_count)


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    response = process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
    try:
        sending.flush()
    except Exception:  # the sends are made: their count by the ban watch never fails the batch
        logger.exception("the batch's sends not counted by the ban watch")
    return response


imported()
