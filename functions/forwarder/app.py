"""Forward queue consumer: posts incoming messages to their tenant's downstream.

The queue is FIFO, one message group per conversation: a failed record returns to the queue with
the records of its group after it (retries, then the DLQ), while other groups go on
(`SqsFifoPartialProcessor`, `skip_group_on_error`). Each message is forwarded at most once per
provider event (Powertools idempotency keyed by the event id, built in the composition root's
routing components), by the end of the invocation (a file's fetch stops in time for its post).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from switchboard.coldstart import imported

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import SqsFifoPartialProcessor, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from switchboard import bootstrap
from switchboard.core.clock import Deadline
from switchboard.core.observability import logger, metrics
from switchboard.routing.domain import IncomingMessage

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse

forwarder = bootstrap.forwarder()
processor = SqsFifoPartialProcessor(skip_group_on_error=True)


def record_handler(record: SQSRecord, lambda_context: LambdaContext) -> None:
    received = int(record.attributes.approximate_receive_count or 1)
    ends = Deadline.after(lambda_context.get_remaining_time_in_millis() / 1000)
    forwarder.forward()(message=IncomingMessage.model_validate_json(record.body), receive_count=received, deadline=ends)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    forwarder.idempotency().register_lambda_context(context)
    metrics.add_metric(name="ForwardBatchRecords", unit=MetricUnit.Count, value=len(event.get("Records", [])))
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)


imported()
