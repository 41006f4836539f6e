"""`make local`'s logs: a short line per event on a terminal, Powertools' JSON otherwise."""

from __future__ import annotations

import io
import json
import logging

from aws_lambda_powertools import Logger

from devstack.logs import ConsoleFormatter, console_line, wants_console


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_short_lines_and_json_is_kept_elsewhere_or_on_request() -> None:
    assert wants_console(Terminal(), {}) is True
    assert wants_console(Terminal(), {"LOG_FORMAT": "json"}) is False
    assert wants_console(io.StringIO(), {}) is False


def test_a_line_names_the_function_where_the_message_and_the_events_own_fields() -> None:
    line = console_line(
        {
            "level": "WARNING",
            "location": "forward:119",
            "message": "no downstream configured; message dropped",
            "timestamp": "2026-12-02 20:21:45,648+0000",
            "service": "switchboard",
            "cold_start": False,
            "function_name": "ForwarderFunction",
            "function_request_id": "36958a24",
            "instance": "acme:acme-main",
        }
    )

    assert line == (
        "20:21:45 WARNING ForwarderFunction  forward:119  no downstream configured; message dropped"
        "  instance=acme:acme-main"
    )


def test_the_formatter_writes_one_redacted_line_per_event() -> None:
    stream = Terminal()
    local = Logger(
        service="switchboard-local-logs-test",
        logger_formatter=ConsoleFormatter(),
        logger_handler=logging.StreamHandler(stream),
    )

    local.info("posted", extra={"url": "https://cw.example/hook?token=s3cr3t", "attempt": 2})

    (line,) = stream.getvalue().splitlines()
    assert "s3cr3t" not in line
    assert line.endswith("posted  url=https://cw.example/hook?token=[redacted] attempt=2")
    assert not line.startswith("{")
    json.dumps(line)  # a plain string
