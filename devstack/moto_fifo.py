"""FIFO queues on the embedded endpoint, as SQS keeps them: a group's order and deduplication.

moto (5.2.5) gets two things of SQS's FIFO queues wrong, and `install()` mends both:

- **Order after a failure.** A message whose visibility timeout ran out is still counted as
  in flight until moto's receive loop reaches it, so the group looks busy when the loop meets
  the group's first message, which it skips, and free by the time it meets a later one, which
  it hands out first: a forward that failed would be overtaken by the next message of its
  conversation. SQS hands the group out from its oldest message. Here every message visible
  again is released before the receive looks at the groups.
- **Deduplication.** SQS drops a message sent with a deduplication id it accepted in the last
  five minutes, whether that first message is still queued or was received and deleted since;
  moto compares with the messages still queued only, so a job queued again a second after its
  first copy was consumed would be delivered twice locally and once on AWS. Here each FIFO
  queue remembers the deduplication ids it accepted for the window.

moto already holds a group back while one of its messages is in flight, and hands a group's
messages out in the order they were sent.
"""

from __future__ import annotations

import threading
from typing import Any

from moto.sqs.models import DEDUPLICATION_TIME_IN_SECONDS, Message, Queue, SQSBackend

MOTO_ADD = Queue.add_message
MOTO_RECEIVE = SQSBackend.receive_message
_lock = threading.Lock()


def add_message(self: Queue, message: Message) -> None:
    """moto's `add_message`, except that a FIFO queue drops a deduplication id it accepted in the
    last five minutes (from its send), deleted messages included."""
    if self.fifo_queue and message.deduplication_id and message.sent_timestamp is not None:
        sent = message.sent_timestamp / 1000
        with _lock:
            accepted: dict[str, float] = self.__dict__.setdefault("_accepted_deduplication_ids", {})
            for known, at in list(accepted.items()):
                if sent - at >= DEDUPLICATION_TIME_IN_SECONDS:
                    del accepted[known]
            if message.deduplication_id in accepted:
                return
            accepted[message.deduplication_id] = sent
    MOTO_ADD(self, message)


def receive_message(self: SQSBackend, queue_name: str, *args: Any, **kwargs: Any) -> list[Message]:
    """moto's `receive_message`, after releasing a FIFO queue's messages visible again."""
    queue = self.get_queue(queue_name)
    if queue.fifo_queue:
        for message in [message for message in queue.pending_messages if message.visible]:
            queue.pending_messages.discard(message)
    received: list[Message] = MOTO_RECEIVE(self, queue_name, *args, **kwargs)
    return received


def install() -> None:
    """Every moto SQS queue of this process keeps FIFO order and deduplication as SQS does."""
    Queue.add_message = add_message  # type: ignore[method-assign]  # moto's queue method swapped process-wide, on purpose
    SQSBackend.receive_message = receive_message  # type: ignore[method-assign]  # likewise


def uninstall() -> None:
    Queue.add_message = MOTO_ADD  # type: ignore[method-assign]  # moto's own method put back
    SQSBackend.receive_message = MOTO_RECEIVE  # type: ignore[method-assign]  # likewise
