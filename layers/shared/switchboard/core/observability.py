"""One Logger and one Metrics object per container, shared by every module.

Tracing is Lambda's active tracing (set in template.yaml) rather than Powertools' Tracer:
the X-Ray SDK costs about 0.25 s of cold start even when tracing is off.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics

logger = Logger(service="switchboard")
metrics = Metrics(namespace="Switchboard", service="switchboard")
