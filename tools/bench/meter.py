"""A meter for in-process runs of the real handlers: every AWS request in billing units, every
outbound HTTP request, every byte printed, and the time of each invocation, per label.

A label is the function being invoked (`Functions.invoke` is wrapped) or what the driver sets
(`meter.labelled("esm")` for the polling Lambda does on a queue). Every boto3 client is metered
(`BaseClient._make_api_call` is wrapped while the meter is on), except the meter's own one, which
reads item sizes: DynamoDB bills an update or a delete by the size of the item it touches, which
the request alone does not tell. Single-threaded drivers only: the label and the clocks are
process-wide.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
from botocore.client import BaseClient

from devstack.lambdas import Functions
from switchboard.core.observability import logger
from tools.bench import cost

# Round trips the in-process run does not have, added to each invocation's own compute time.
# Stated, not measured: typical in-region AWS latencies and a provider or helpdesk on the internet.
LATENCY_MS = {
    "dynamodb": 5.0,
    "dynamodb.TransactWriteItems": 12.0,
    "sqs": 8.0,
    "ssm": 10.0,
    "events": 15.0,
    "s3": 20.0,
    "http": 150.0,  # a client webhook or a Chatwoot request
    "provider": 250.0,  # a provider's send, dial or read
}


# S3's write-class requests (the rest, GET and HEAD among them, are read-class).
S3_WRITE_CLASS = frozenset({"PutObject", "CopyObject", "PostObject", "ListObjectsV2", "ListObjects"})


@dataclass
class Invocation:
    own_seconds: float  # in the handler, outside AWS calls and outbound HTTP
    latency_ms: float  # the stated round trips of its AWS and HTTP requests

    @property
    def billed_ms(self) -> int:
        return math.ceil(self.own_seconds * 1000 + self.latency_ms)


@dataclass
class Tally:
    requests: Counter[str] = field(default_factory=Counter)  # "dynamodb.GetItem" -> count
    writes: Counter[str] = field(default_factory=Counter)  # "UpdateItem MESSAGE" -> items written
    write_units: Counter[str] = field(default_factory=Counter)  # "UpdateItem MESSAGE" -> units
    read_units: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))  # eventual reads are halves
    sqs_requests: float = 0.0
    sqs_fifo_requests: float = 0.0
    s3_write_requests: float = 0.0
    s3_read_requests: float = 0.0
    s3_stored_bytes: float = 0.0
    eventbridge_events: float = 0.0
    ssm_interactions: float = 0.0
    transfer_out_bytes: int = 0  # bytes sent out of AWS to a provider (a file's upload)
    http: Counter[str] = field(default_factory=Counter)  # "provider" / "http" -> count
    log_bytes: int = 0
    invocations: list[Invocation] = field(default_factory=list)


class _Bytes:
    """A text stream that counts what is written to it (for the meter's label) and drops it."""

    def __init__(self, meter: Meter) -> None:
        self._meter = meter

    def write(self, text: str) -> int:
        self._meter.tally().log_bytes += len(text.encode())
        return len(text)

    def flush(self) -> None:
        return


class Meter:
    def __init__(self, sizes_client: Any, functions: Functions) -> None:
        self._sizes = sizes_client
        self._unmetered: set[int] = {id(sizes_client)}
        self._functions = functions
        self._schemas: dict[str, tuple[list[str], list[list[str]]]] = {}
        self._attached: set[int] = set()
        self._pending: dict[str, Any] = {}
        self.label = "driver"
        self.tallies: defaultdict[str, Tally] = defaultdict(Tally)
        self._aws_seconds = 0.0
        self._http_seconds = 0.0
        self._latency_ms = 0.0

    def tally(self) -> Tally:
        return self.tallies[self.label]

    def clear(self) -> None:
        self.tallies.clear()

    @contextlib.contextmanager
    def labelled(self, label: str) -> Iterator[None]:
        previous, self.label = self.label, label
        try:
            yield
        finally:
            self.label = previous

    @contextlib.contextmanager
    def on(self) -> Iterator[None]:
        """Meter every boto3 request, httpx request, print and invocation until the block ends."""
        original_call, original_send, original_invoke = BaseClient._make_api_call, httpx.Client.send, Functions.invoke
        meter = self
        sink = _Bytes(self)
        handlers = [h for h in logging.getLogger("switchboard").handlers if isinstance(h, logging.StreamHandler)]
        streams = [handler.stream for handler in handlers]
        level = logger.log_level
        logger.setLevel("INFO")  # the template's level: what the functions print is billed as logs

        def call(client: Any, operation: str, params: dict[str, Any]) -> Any:
            if id(client) in meter._unmetered:
                return original_call(client, operation, params)
            meter._attach(client)
            # What a put stores, read before botocore turns the body into a stream.
            body = params.get("Body")
            stored = len(body) if isinstance(body, bytes | bytearray) else 0
            started = time.perf_counter()
            try:
                return original_call(client, operation, params)
            finally:
                meter._aws_seconds += time.perf_counter() - started
                meter._count(client.meta.service_model.service_name, operation, params, stored)

        def send(client: httpx.Client, request: httpx.Request, **kwargs: Any) -> httpx.Response:
            started = time.perf_counter()
            try:
                return original_send(client, request, **kwargs)
            finally:
                meter._http_seconds += time.perf_counter() - started
                meter.outbound("http")

        def invoke(self: Functions, logical_id: str, event: Any) -> Any:
            with meter.labelled(logical_id), contextlib.redirect_stdout(sink):
                aws, http, latency = meter._aws_seconds, meter._http_seconds, meter._latency_ms
                started = time.perf_counter()
                try:
                    return original_invoke(self, logical_id, event)
                finally:
                    wall = time.perf_counter() - started
                    own = wall - (meter._aws_seconds - aws) - (meter._http_seconds - http)
                    meter.tally().invocations.append(Invocation(max(0.0, own), meter._latency_ms - latency))

        BaseClient._make_api_call = call
        httpx.Client.send = send  # type: ignore[method-assign,assignment]  # the metered send takes the real one's keywords as it gets them
        Functions.invoke = invoke  # type: ignore[method-assign]  # the metered invoke wraps the real one while the meter is on
        for handler in handlers:
            handler.setStream(sink)
        try:
            yield
        finally:
            BaseClient._make_api_call = original_call
            httpx.Client.send = original_send  # type: ignore[method-assign]  # the real method put back
            Functions.invoke = original_invoke  # type: ignore[method-assign]  # the real method put back
            for handler, stream in zip(handlers, streams, strict=True):
                handler.setStream(stream)
            logger.setLevel(level)

    def unmetered(self, client: Any) -> Any:
        """A client whose requests the meter ignores (the driver's own); returns it."""
        self._unmetered.add(id(client))
        return client

    def record(self, service: str, operation: str, params: dict[str, Any] | None = None) -> None:
        """Count a request the driver stands for (what the event source mapping's poller does)."""
        self._count(service, operation, params or {})

    def transfer_out(self, size: int) -> None:
        """Bytes the current label sends out of AWS (a file uploaded to a provider)."""
        self.tally().transfer_out_bytes += size

    def outbound(self, kind: str, *, replace_http: bool = False) -> None:
        """One outbound request of `kind` ("provider" or "http"); a provider call made over httpx
        (`replace_http`) swaps the generic HTTP latency just counted for the provider's."""
        tally = self.tally()
        if replace_http:
            tally.http["http"] -= 1
            self._latency_ms -= LATENCY_MS["http"]
        tally.http[kind] += 1
        self._latency_ms += LATENCY_MS[kind]

    # --- AWS requests ------------------------------------------------------------------------

    def _count(self, service: str, operation: str, params: dict[str, Any], stored: int = 0) -> None:
        tally = self.tally()
        tally.requests[f"{service}.{operation}"] += 1
        self._latency_ms += LATENCY_MS.get(f"{service}.{operation}", LATENCY_MS.get(service, 0.0))
        if service == "sqs" and str(params.get("QueueUrl", "")).endswith(".fifo"):
            tally.sqs_fifo_requests += _sqs_requests(operation, params)
        elif service == "sqs":
            tally.sqs_requests += _sqs_requests(operation, params)
        elif service == "s3" and operation in S3_WRITE_CLASS:
            tally.s3_write_requests += 1
            tally.s3_stored_bytes += stored
        elif service == "s3":
            tally.s3_read_requests += 1
        elif service == "events" and operation == "PutEvents":
            tally.eventbridge_events += sum(
                cost.eventbridge_events(len(json.dumps(entry).encode())) for entry in params.get("Entries", [])
            )
        elif service == "ssm":
            tally.ssm_interactions += 1

    def _attach(self, client: Any) -> None:
        if id(client) in self._attached or client.meta.service_model.service_name != "dynamodb":
            return
        self._attached.add(id(client))
        client.meta.events.register("before-call.dynamodb", self._before_dynamodb)
        client.meta.events.register("after-call.dynamodb", self._after_dynamodb)

    def _before_dynamodb(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        request = json.loads(params.get("body") or b"{}")
        before: dict[int, dict[str, Any] | None] = {}
        if model.name == "DeleteItem":
            before[0] = self._item(request["TableName"], request["Key"])
        elif model.name == "TransactWriteItems":
            for index, entry in enumerate(request["TransactItems"]):
                (kind, body), *_ = entry.items()
                if kind in ("Delete", "ConditionCheck"):
                    before[index] = self._item(body["TableName"], body["Key"])
        elif model.name == "BatchWriteItem":
            for table, writes in request["RequestItems"].items():
                for index, write in enumerate(writes):
                    if "DeleteRequest" in write:
                        before[hash((table, index))] = self._item(table, write["DeleteRequest"]["Key"])
        self._pending = {"request": request, "before": before}

    def _after_dynamodb(self, model: Any, http_response: Any, **_: Any) -> None:
        request, before = self._pending.get("request", {}), self._pending.get("before", {})
        answer = json.loads(http_response.content or b"{}") if http_response is not None else {}
        if model.name in ("GetItem", "Query", "Scan", "TransactGetItems", "BatchGetItem"):
            self._reads(self.tally(), model.name, request, answer)
        else:
            self._writes(self.tally(), model.name, request, before)

    def _reads(self, tally: Tally, name: str, request: dict[str, Any], answer: dict[str, Any]) -> None:
        if name == "GetItem":
            item = answer.get("Item") or {}
            tally.read_units[f"GetItem {_kind(item or request['Key'])}"] += cost.read_units(
                cost.item_bytes(item), consistent=bool(request.get("ConsistentRead"))
            )
        elif name in ("Query", "Scan"):
            items = answer.get("Items") or []
            consistent = bool(request.get("ConsistentRead")) and "IndexName" not in request
            label = f"{name} {request.get('IndexName', '')}".strip()
            tally.read_units[label] += cost.read_units(
                sum(cost.item_bytes(item) for item in items), consistent=consistent
            )
        elif name == "TransactGetItems":
            for entry in answer.get("Responses") or []:
                item = entry.get("Item") or {}
                tally.read_units[f"TransactGetItems {_kind(item)}"] += cost.read_units(
                    cost.item_bytes(item), transactional=True
                )
        elif name == "BatchGetItem":
            for items in (answer.get("Responses") or {}).values():
                for item in items:
                    tally.read_units[f"BatchGetItem {_kind(item)}"] += cost.read_units(cost.item_bytes(item))

    def _writes(self, tally: Tally, name: str, request: dict[str, Any], before: dict[int, Any]) -> None:
        if name == "PutItem":
            self._write(tally, "PutItem", request["TableName"], request["Item"], transactional=False)
        elif name == "UpdateItem":
            after = self._item(request["TableName"], request["Key"]) or request["Key"]
            self._write(tally, "UpdateItem", request["TableName"], after, transactional=False)
        elif name == "DeleteItem":
            self._write(tally, "DeleteItem", request["TableName"], before.get(0) or request["Key"], transactional=False)
        elif name == "TransactWriteItems":
            for index, entry in enumerate(request["TransactItems"]):
                (kind, body), *_ = entry.items()
                item = self._written(kind, body, before.get(index))
                self._write(tally, f"Transact{kind}", body["TableName"], item, transactional=True)
        elif name == "BatchWriteItem":
            for table, writes in request["RequestItems"].items():
                for index, write in enumerate(writes):
                    if "PutRequest" in write:
                        self._write(tally, "BatchPut", table, write["PutRequest"]["Item"], transactional=False)
                    else:
                        item = before.get(hash((table, index))) or write["DeleteRequest"]["Key"]
                        self._write(tally, "BatchDelete", table, item, transactional=False)

    def _written(self, kind: str, body: dict[str, Any], before: dict[str, Any] | None) -> dict[str, Any]:
        """The item a transaction's Put, Update, Delete or ConditionCheck is billed by."""
        if kind == "Put":
            return dict(body["Item"])
        if kind == "Update":
            return self._item(body["TableName"], body["Key"]) or dict(body["Key"])
        return before or dict(body["Key"])

    def _write(self, tally: Tally, operation: str, table: str, item: dict[str, Any], *, transactional: bool) -> None:
        """The item's write units, plus one write per global secondary index the item is in
        (on-demand bills index writes too; projections here are ALL, so the whole item)."""
        size = cost.item_bytes(item)
        units = cost.write_units(size, transactional=transactional)
        _, indexes = self._schema(table)
        for keys in indexes:
            if all(name in item for name in keys):
                units += cost.write_units(size)
        tally.writes[f"{operation} {_kind(item)}"] += 1
        tally.write_units[f"{operation} {_kind(item)}"] += units

    def _item(self, table: str, key: dict[str, Any]) -> dict[str, Any] | None:
        found = self._sizes.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
        return dict(found) if found else None

    def _schema(self, table: str) -> tuple[list[str], list[list[str]]]:
        if table not in self._schemas:
            described = self._sizes.describe_table(TableName=table)["Table"]
            keys = [part["AttributeName"] for part in described["KeySchema"]]
            indexes = [
                [part["AttributeName"] for part in index["KeySchema"]]
                for index in described.get("GlobalSecondaryIndexes", [])
            ]
            self._schemas[table] = (keys, indexes)
        return self._schemas[table]


def _sqs_requests(operation: str, params: dict[str, Any]) -> int:
    if operation == "SendMessage":
        return cost.sqs_requests(len(params.get("MessageBody", "").encode()) + _attributes_bytes(params))
    if operation == "SendMessageBatch":
        entries = params.get("Entries", [])
        return cost.sqs_requests(
            sum(len(entry.get("MessageBody", "").encode()) + _attributes_bytes(entry) for entry in entries)
        )
    return 1  # receive, delete, change visibility: one request (our payloads are far below 64 KB)


def _attributes_bytes(params: dict[str, Any]) -> int:
    return len(json.dumps(params.get("MessageAttributes") or {}).encode()) if params.get("MessageAttributes") else 0


def _kind(item: dict[str, Any]) -> str:
    """What an item is, from its key: the leading word of its partition key ("MSG", "LINE", ...)."""
    for name in ("pk", "id"):
        value = item.get(name, {})
        if isinstance(value, dict) and "S" in value:
            return str(value["S"]).split("#", 1)[0] if name == "pk" else "IDEMPOTENCY"
    return "?"


def usage_of(tallies: dict[str, Tally], units: int, memory: dict[str, int], *, api_requests: float) -> cost.Usage:
    """Per unit of work: every labelled tally of a run of `units` units, in billing units."""
    usage = cost.Usage(api_requests=api_requests / units)
    for label, tally in tallies.items():
        if tally.invocations:
            billed = sum(invocation.billed_ms for invocation in tally.invocations)
            usage.functions[label] = cost.FunctionUse(
                invocations=len(tally.invocations) / units,
                billed_ms=billed / len(tally.invocations),
                memory_mb=memory[label],
            )
        usage.write_units += sum(tally.write_units.values()) / units
        usage.read_units += sum(tally.read_units.values()) / units
        usage.sqs_requests += tally.sqs_requests / units
        usage.sqs_fifo_requests += tally.sqs_fifo_requests / units
        usage.s3_write_requests += tally.s3_write_requests / units
        usage.s3_read_requests += tally.s3_read_requests / units
        usage.s3_stored_bytes += tally.s3_stored_bytes / units
        usage.eventbridge_events += tally.eventbridge_events / units
        usage.ssm_interactions += tally.ssm_interactions / units
        usage.transfer_out_bytes += tally.transfer_out_bytes / units
        usage.log_bytes += tally.log_bytes / units
    return usage
