"""The media capability's one metric: a file that could not be had, by reason and provider kind."""

from __future__ import annotations

from switchboard.core.observability import metrics
from switchboard.media.ports import UnavailableReason


def count_unavailable(reason: UnavailableReason, provider_kind: str) -> None:
    """One `MediaUnavailable`: its dimensions are bounded (never an instance or a tenant)."""
    from aws_lambda_powertools.metrics import MetricUnit, single_metric  # noqa: PLC0415 - cold start

    with single_metric(
        name="MediaUnavailable", unit=MetricUnit.Count, value=1, namespace=metrics.namespace, default_dimensions={}
    ) as metric:
        metric.add_dimension(name="reason", value=reason)
        metric.add_dimension(name="provider_kind", value=provider_kind)
