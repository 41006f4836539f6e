"""How `make local` logs: one short line per event on a terminal, Powertools' JSON otherwise.

On a terminal (and unless `LOG_FORMAT=json`) every log event of the functions becomes
`HH:MM:SS LEVEL  Function  where  message  key=value ...`: the function whose invocation logged
it (the one the local gateway or poller is running, from the Lambda context Powertools keeps),
where in the code, and the event's own fields, without the context fields every line repeats.
The redaction of secrets in URLs still applies: the line is made from the redacted JSON.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import IO, TYPE_CHECKING, Any

from switchboard.core.observability import RedactingFormatter, logger

if TYPE_CHECKING:
    from aws_lambda_powertools.logging.types import LogRecord

# Fields of every Powertools line that say nothing of the event itself.
CONTEXT_FIELDS = frozenset(
    {
        "level",
        "location",
        "message",
        "timestamp",
        "service",
        "cold_start",
        "function_name",
        "function_memory_size",
        "function_arn",
        "function_request_id",
        "correlation_id",
        "xray_trace_id",
        "sampling_rate",
        "exception",
        "exception_name",
        "stack_trace",
    }
)
MAX_VALUE_CHARS = 80


class ConsoleFormatter(RedactingFormatter):
    """Powertools' formatter, writing one short line instead of the JSON document."""

    def serialize(self, log: LogRecord) -> str:
        return console_line(json.loads(super().serialize(log)))


def console_line(fields: dict[str, Any]) -> str:
    """One log event as a short line (`fields`: the event as Powertools serialises it)."""
    stamp = str(fields.get("timestamp", ""))
    clock = stamp[11:19] if len(stamp) >= 19 else stamp
    function = str(fields.get("function_name") or fields.get("service") or "-")
    extras = " ".join(
        f"{name}={_short(value)}" for name, value in fields.items() if name not in CONTEXT_FIELDS and value is not None
    )
    line = (
        f"{clock} {fields.get('level', '')!s:<7} {function}  {fields.get('location', '')}  {fields.get('message', '')}"
    )
    if extras:
        line += f"  {extras}"
    if fields.get("exception"):
        line += "\n" + str(fields["exception"])
    return line


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), default=str)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def wants_console(stream: IO[str], environ: dict[str, str] | None = None) -> bool:
    """Short lines on a terminal; JSON when written elsewhere or asked for with `LOG_FORMAT=json`."""
    env = os.environ if environ is None else environ
    if env.get("LOG_FORMAT", "").strip().lower() == "json":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def configure() -> bool:
    """Set up the stack's logging: the functions' lines (Powertools' handler, on stdout) and the
    stack's own (stderr), each short when its stream is a terminal. Whether the functions' are."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(levelname)-7s devstack  %(message)s", "%H:%M:%S")
        if wants_console(sys.stderr)
        else logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s")
    )
    logging.getLogger("devstack").addHandler(handler)
    # One line per request from every embedded server would bury what matters.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    powertools = logger.registered_handler
    console = wants_console(getattr(powertools, "stream", sys.stdout))
    if console:
        powertools.setFormatter(ConsoleFormatter())
    return console
