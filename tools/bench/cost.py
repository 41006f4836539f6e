"""Cost per million: what one unit of a measured workload costs on AWS list prices, line by line.

The arithmetic only: the request counts and sizes come from a run (`tools.bench.workloads`
measures them on the real handlers), the memory of each function from template.yaml, the prices
from the table below (us-east-1, on-demand, no free tier, the first volume tier of each service).
Billing units:

- Lambda: one request per invocation; duration rounded up to the millisecond, times the
  function's memory in GB (Arm, as `Architectures` in the template);
- DynamoDB on-demand: a write is one write request unit per KB of the item (rounded up), a
  strongly consistent read one read request unit per 4 KB returned, an eventually consistent one
  half that; items written or read in a transaction cost twice;
- SQS: one request per API call and per 64 KB of its payload (batch sends, receives and deletes
  are one request each), at the FIFO rate on a FIFO queue;
- S3 Standard: a PUT or LIST one write-class request, a GET or HEAD one read-class request; a
  stored byte for as long as the bucket's lifecycle keeps it (the media bucket's expiry, read
  from template.yaml);
- API Gateway HTTP API: one request per 512 KB; EventBridge: one event per 64 KB entry;
- Parameter Store: no charge at standard throughput (what the template uses); priced here at the
  higher-throughput rate to show what turning it on would add;
- CloudWatch Logs: every byte the functions print (log lines and EMF metrics), plus Lambda's own
  START/END/REPORT lines, ingested at the standard class;
- data transfer out: the bytes a function sends to a provider on the internet (a file's upload;
  base64 for wuzapi and Evolution), at the first tier; what the provider then sends WhatsApp is its own.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devstack import template

KB = 1024
READ_DATE = "2026-12-01"


@dataclass(frozen=True)
class Price:
    usd: float
    per: float  # how many units `usd` buys
    unit: str
    source: str

    def of(self, units: float) -> float:
        return self.usd * units / self.per


PRICES: dict[str, Price] = {
    "lambda_request": Price(0.20, 1e6, "Lambda requests", "https://aws.amazon.com/lambda/pricing/"),
    "lambda_gb_second": Price(
        0.0000133334, 1, "Lambda GB-seconds, Arm (first 7.5 billion a month)", "https://aws.amazon.com/lambda/pricing/"
    ),
    "dynamodb_write": Price(
        0.625, 1e6, "DynamoDB on-demand write request units", "https://aws.amazon.com/dynamodb/pricing/on-demand/"
    ),
    "dynamodb_read": Price(
        0.125, 1e6, "DynamoDB on-demand read request units", "https://aws.amazon.com/dynamodb/pricing/on-demand/"
    ),
    "sqs_request": Price(0.40, 1e6, "SQS standard requests (per 64 KB)", "https://aws.amazon.com/sqs/pricing/"),
    "sqs_fifo_request": Price(0.50, 1e6, "SQS FIFO requests (per 64 KB)", "https://aws.amazon.com/sqs/pricing/"),
    "s3_write_request": Price(
        0.005, 1e3, "S3 Standard PUT, COPY, POST, LIST requests", "https://aws.amazon.com/s3/pricing/"
    ),
    "s3_read_request": Price(
        0.0004, 1e3, "S3 Standard GET, SELECT and all other requests", "https://aws.amazon.com/s3/pricing/"
    ),
    "s3_gb_month": Price(
        0.023, 2**30, "S3 Standard storage, first 50 TB (per GB-month)", "https://aws.amazon.com/s3/pricing/"
    ),
    "api_request": Price(
        1.00,
        1e6,
        "API Gateway HTTP API requests (per 512 KB, first 300 million)",
        "https://aws.amazon.com/api-gateway/pricing/",
    ),
    "eventbridge_event": Price(
        1.00, 1e6, "EventBridge custom events (per 64 KB)", "https://aws.amazon.com/eventbridge/pricing/"
    ),
    "ssm_interaction": Price(
        0.05,
        1e4,
        "Parameter Store API interactions, higher throughput",
        "https://aws.amazon.com/systems-manager/pricing/",
    ),
    "log_byte": Price(
        0.50, 2**30, "CloudWatch Logs ingestion (standard class)", "https://aws.amazon.com/cloudwatch/pricing/"
    ),
    "transfer_out": Price(
        0.09,
        2**30,
        "Data transfer out to the internet (first 10 TB a month)",
        "https://aws.amazon.com/ec2/pricing/on-demand/",
    ),
}

# What Lambda itself prints per invocation: its START, END and REPORT lines (the last with the
# X-Ray trace id of active tracing), about 330 bytes by those lines' format.
PLATFORM_LOG_BYTES = 330


# --- billing units ---------------------------------------------------------------------------


def write_units(item_bytes: int, *, transactional: bool = False) -> int:
    """Write request units of one item written (put, update or delete; a refused condition too)."""
    return max(1, math.ceil(item_bytes / KB)) * (2 if transactional else 1)


def read_units(returned_bytes: int, *, consistent: bool = True, transactional: bool = False) -> float:
    """Read request units of one read returning `returned_bytes` (a query's items counted together)."""
    units = float(max(1, math.ceil(returned_bytes / (4 * KB))))
    if transactional:
        return units * 2
    return units if consistent else units / 2


def sqs_requests(payload_bytes: int) -> int:
    return max(1, math.ceil(payload_bytes / (64 * KB)))


def api_requests(payload_bytes: int) -> int:
    return max(1, math.ceil(payload_bytes / (512 * KB)))


def eventbridge_events(entry_bytes: int) -> int:
    return max(1, math.ceil(entry_bytes / (64 * KB)))


def item_bytes(item: Mapping[str, Any]) -> int:
    """DynamoDB's size of an item in its wire form (`{"name": {"S": "..."}}`): names plus values."""
    return sum(len(name.encode()) + _value_bytes(value) for name, value in item.items())


def _value_bytes(value: Mapping[str, Any]) -> int:
    (kind, data), *_ = value.items()
    if kind in ("S", "B"):
        return len(data.encode() if isinstance(data, str) else data)
    if kind == "N":
        digits = len(data.lstrip("-").replace(".", "").strip("0")) or 1
        return math.ceil(digits / 2) + 1
    if kind in ("BOOL", "NULL"):
        return 1
    if kind in ("SS", "BS"):
        return sum(len(element.encode()) for element in data)
    if kind == "NS":
        return sum(_value_bytes({"N": element}) for element in data)
    if kind == "M":
        return 3 + sum(len(name.encode()) + _value_bytes(element) + 1 for name, element in data.items())
    if kind == "L":
        return 3 + sum(_value_bytes(element) + 1 for element in data)
    raise ValueError(f"unknown DynamoDB type {kind}")


# --- template --------------------------------------------------------------------------------


def function_memory(path: Path = template.TEMPLATE) -> dict[str, int]:
    """Each function's MemorySize in MB: its own, else the template's Globals."""
    default = int(template.load(path).get("Globals", {}).get("Function", {}).get("MemorySize", 128))
    return {
        logical_id: int(properties.get("MemorySize", default))
        for logical_id, properties in template.resources("AWS::Serverless::Function", path).items()
    }


# --- one workload ----------------------------------------------------------------------------


@dataclass
class FunctionUse:
    invocations: float  # per unit of work
    billed_ms: float  # per invocation (already rounded up to the millisecond)
    memory_mb: int

    @property
    def gb_seconds(self) -> float:
        return self.invocations * self.billed_ms / 1000 * self.memory_mb / 1024


@dataclass
class Usage:
    """What one unit of a workload (one message, one reservation) uses, in billing units."""

    functions: dict[str, FunctionUse] = field(default_factory=dict)
    write_units: float = 0.0
    read_units: float = 0.0
    sqs_requests: float = 0.0
    sqs_fifo_requests: float = 0.0
    s3_write_requests: float = 0.0
    s3_read_requests: float = 0.0
    s3_stored_bytes: float = 0.0  # kept for the media bucket's retention
    api_requests: float = 0.0
    eventbridge_events: float = 0.0
    ssm_interactions: float = 0.0
    log_bytes: float = 0.0  # what the functions print; Lambda's own lines are added per invocation
    transfer_out_bytes: float = 0.0  # sent to providers on the internet (files uploaded)

    @property
    def invocations(self) -> float:
        return sum(use.invocations for use in self.functions.values())


def cost_per_million(usage: Usage, prices: Mapping[str, Price] = PRICES) -> dict[str, float]:
    """USD per million units of work, by line (an empty line is left out)."""
    logs = usage.log_bytes + usage.invocations * PLATFORM_LOG_BYTES
    lines = {
        "Lambda requests": prices["lambda_request"].of(usage.invocations),
        "Lambda duration": prices["lambda_gb_second"].of(sum(use.gb_seconds for use in usage.functions.values())),
        "DynamoDB writes": prices["dynamodb_write"].of(usage.write_units),
        "DynamoDB reads": prices["dynamodb_read"].of(usage.read_units),
        "SQS": prices["sqs_request"].of(usage.sqs_requests) + prices["sqs_fifo_request"].of(usage.sqs_fifo_requests),
        "S3": prices["s3_write_request"].of(usage.s3_write_requests)
        + prices["s3_read_request"].of(usage.s3_read_requests)
        + prices["s3_gb_month"].of(usage.s3_stored_bytes * media_retention_days() / 30),
        "API Gateway": prices["api_request"].of(usage.api_requests),
        "EventBridge": prices["eventbridge_event"].of(usage.eventbridge_events),
        "CloudWatch Logs": prices["log_byte"].of(logs),
        "Data transfer out": prices["transfer_out"].of(usage.transfer_out_bytes),
    }
    return {line: usd * 1e6 for line, usd in lines.items() if usd}


def media_retention_days(path: Path = template.TEMPLATE) -> int:
    """How long the media bucket keeps a file (its lifecycle rule's expiry)."""
    bucket = template.resources("AWS::S3::Bucket", path)["MediaBucket"]
    rules = bucket["LifecycleConfiguration"]["Rules"]
    return min(int(rule["ExpirationInDays"]) for rule in rules if "ExpirationInDays" in rule)


def ssm_per_million(usage: Usage, prices: Mapping[str, Price] = PRICES) -> float:
    """What Parameter Store would add per million at the higher-throughput rate (standard: nothing)."""
    return prices["ssm_interaction"].of(usage.ssm_interactions) * 1e6
