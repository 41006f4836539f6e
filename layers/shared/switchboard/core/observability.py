"""One Logger and one Metrics object per container, shared by every module.

Tracing is Lambda's active tracing (set in template.yaml) rather than Powertools' Tracer:
the X-Ray SDK costs about 0.25 s of cold start even when tracing is off.

Every log line goes through one redaction: a secret carried in a URL's query string (the
downstream's reply webhook authenticates with `?token=`) never reaches the logs, whatever
logged the URL.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

if TYPE_CHECKING:
    from aws_lambda_powertools.logging.types import LogRecord

_SECRET_IN_QUERY = re.compile(
    r"([?&](?:token|ticket|apikey|api_key|access_token|hub\.verify_token)=)[^&\s\"'\\]+", re.IGNORECASE
)


class RedactingFormatter(LambdaPowertoolsFormatter):
    def serialize(self, log: LogRecord) -> str:
        return _SECRET_IN_QUERY.sub(r"\1[redacted]", super().serialize(log))


logger = Logger(service="switchboard", logger_formatter=RedactingFormatter())
metrics = Metrics(namespace="Switchboard", service="switchboard")


def emit_metric(name: str, value: float = 1, **dimensions: str) -> None:
    """One metric in its own EMF line, written at once (whether or not the handler flushes
    `metrics`), with the service's dimension and `dimensions`. Every dimension must be bounded: a
    code from a fixed set, never a tenant, an instance or a value read from a payload (each distinct
    combination is a custom metric CloudWatch bills for)."""
    from aws_lambda_powertools.metrics import MetricUnit, single_metric  # noqa: PLC0415 - the first metric pays

    with single_metric(
        name=name, unit=MetricUnit.Count, value=value, namespace=metrics.namespace, default_dimensions={}
    ) as metric:
        for dimension, dimension_value in dimensions.items():
            metric.add_dimension(name=dimension, value=dimension_value)
