"""The cost arithmetic of `make bench` on small known inputs: billing units, then dollars."""

from __future__ import annotations

import pytest

from tools.bench import cost


def test_billing_units_round_up_per_unit_size() -> None:
    assert [cost.write_units(size) for size in (0, 1, 1024, 1025, 3000)] == [1, 1, 1, 2, 3]
    assert cost.write_units(1500, transactional=True) == 4
    assert [cost.read_units(size) for size in (10, 4096, 4097)] == [1, 1, 2]
    assert cost.read_units(4097, consistent=False) == 1
    assert cost.read_units(100, transactional=True) == 2
    assert [cost.sqs_requests(size) for size in (0, 65536, 65537, 200_000)] == [1, 1, 2, 4]
    assert cost.api_requests(512 * 1024 + 1) == 2
    assert cost.eventbridge_events(70_000) == 2


def test_item_size_counts_names_and_values_as_dynamodb_does() -> None:
    item = {
        "pk": {"S": "MESSAGE#m1"},  # 2 + 10
        "n": {"N": "12345"},  # 1 + ceil(5 / 2) + 1 = 5
        "ok": {"BOOL": True},  # 2 + 1
        "m": {"M": {"a": {"S": "xy"}}},  # 1 + 3 + (1 + 2 + 1)
        "l": {"L": [{"S": "abc"}]},  # 1 + 3 + (3 + 1)
    }

    assert cost.item_bytes(item) == 12 + 5 + 3 + 8 + 8


def test_the_memory_of_each_function_comes_from_the_template_globals() -> None:
    memory = cost.function_memory()

    assert memory["SendWorkerFunction"] == 512
    assert set(memory) >= {"AuthorizerFunction", "MessagesFunction", "ReconcileWorkerFunction"}


def test_cost_per_million_adds_each_line_from_the_usage_of_one_unit() -> None:
    usage = cost.Usage(
        functions={
            "api": cost.FunctionUse(invocations=1, billed_ms=100, memory_mb=1024),
            "worker": cost.FunctionUse(invocations=0.1, billed_ms=2000, memory_mb=512),
        },
        write_units=4,
        read_units=2,
        sqs_requests=3,
        api_requests=1,
        eventbridge_events=0.5,
        ssm_interactions=0.2,
        log_bytes=1000,
    )

    lines = cost.cost_per_million(usage)

    assert lines["Lambda requests"] == pytest.approx(1.1 * 0.20)
    # 1 x 0.1 s x 1 GB + 0.1 x 2 s x 0.5 GB = 0.2 GB-s per unit
    assert lines["Lambda duration"] == pytest.approx(0.2 * 0.0000133334 * 1e6)
    assert lines["DynamoDB writes"] == pytest.approx(4 * 0.625)
    assert lines["DynamoDB reads"] == pytest.approx(2 * 0.125)
    assert lines["SQS"] == pytest.approx(3 * 0.40)
    assert lines["API Gateway"] == pytest.approx(1.00)
    assert lines["EventBridge"] == pytest.approx(0.5)
    logged = 1000 + 1.1 * cost.PLATFORM_LOG_BYTES
    assert lines["CloudWatch Logs"] == pytest.approx(logged / 2**30 * 0.50 * 1e6)
    assert cost.ssm_per_million(usage) == pytest.approx(0.2 * 0.05 / 1e4 * 1e6)


def test_a_line_the_workload_does_not_use_is_left_out() -> None:
    usage = cost.Usage(functions={"api": cost.FunctionUse(invocations=1, billed_ms=1, memory_mb=128)})

    assert set(cost.cost_per_million(usage)) == {"Lambda requests", "Lambda duration", "CloudWatch Logs"}


def test_s3_is_priced_per_request_class_and_per_byte_kept_for_the_buckets_retention() -> None:
    kept = 100 * 1024
    usage = cost.Usage(s3_write_requests=1, s3_read_requests=2, s3_stored_bytes=kept, sqs_fifo_requests=2)

    lines = cost.cost_per_million(usage)

    retention = cost.media_retention_days()
    assert retention == 15  # the media bucket's lifecycle expiry in template.yaml
    stored = kept / 2**30 * 0.023 * retention / 30
    assert lines["S3"] == pytest.approx((0.005 / 1000 + 2 * 0.0004 / 1000 + stored) * 1e6)
    assert lines["SQS"] == pytest.approx(2 * 0.50)  # the FIFO rate
