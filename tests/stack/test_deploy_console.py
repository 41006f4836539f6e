"""`make deploy-console` (tools/deploy_console.py) on moto: every console file lands under the
bucket's `console/` prefix with the type a browser accepts and no-cache, files that are gone are
deleted, and the distribution is invalidated."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from tools import deploy_console
from tools.support.aws import REGION, fake_aws_environment

BUCKET = "switchboard-console-test"


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    fake_aws_environment(monkeypatch)
    with mock_aws():
        client = boto3.client("s3", region_name=REGION)
        client.create_bucket(Bucket=BUCKET)
        yield client


@pytest.fixture
def site(tmp_path: Path) -> Path:
    root = tmp_path / "console"
    (root / "i18n").mkdir(parents=True)
    (root / "index.html").write_text("<!doctype html><title>switchboard</title>")
    (root / "app.js").write_text("import './i18n/en.js';")
    (root / "style.css").write_text("body { margin: 0 }")
    (root / "i18n" / "en.js").write_text("export default {};")
    (root / ".DS_Store").write_bytes(b"\0")
    (root / "README.md").write_text("# notes for developers")
    return root


def stored(s3: Any) -> dict[str, dict[str, Any]]:
    keys = [item["Key"] for item in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])]
    return {key: s3.get_object(Bucket=BUCKET, Key=key) for key in keys}


def test_every_file_is_uploaded_with_its_type_and_no_cache(s3: Any, site: Path) -> None:
    deploy_console.upload(s3, BUCKET, deploy_console.console_files(site))

    objects = stored(s3)
    assert {key: item["ContentType"] for key, item in objects.items()} == {
        "console/index.html": "text/html; charset=utf-8",
        "console/app.js": "text/javascript; charset=utf-8",
        "console/style.css": "text/css; charset=utf-8",
        "console/i18n/en.js": "text/javascript; charset=utf-8",
    }
    assert {item["CacheControl"] for item in objects.values()} == {"no-cache"}
    assert objects["console/app.js"]["Body"].read() == b"import './i18n/en.js';"


def test_a_file_removed_from_console_is_removed_from_the_bucket_and_nothing_else_is(s3: Any, site: Path) -> None:
    s3.put_object(Bucket=BUCKET, Key="console/screens/old.js", Body=b"gone")
    s3.put_object(Bucket=BUCKET, Key="elsewhere/keep.txt", Body=b"not the console's")

    deleted = deploy_console.upload(s3, BUCKET, deploy_console.console_files(site))

    assert deleted == ["console/screens/old.js"]
    assert "console/screens/old.js" not in stored(s3)
    assert "elsewhere/keep.txt" in stored(s3)


def test_the_target_comes_from_the_stack_outputs_and_a_stack_without_them_is_refused() -> None:
    class Stacks:
        def __init__(self, outputs: dict[str, str]) -> None:
            self.outputs = outputs

        def describe_stacks(self, StackName: str) -> dict[str, Any]:
            listed = [{"OutputKey": key, "OutputValue": value} for key, value in self.outputs.items()]
            return {"Stacks": [{"StackName": StackName, "Outputs": listed}]}

    outputs = {"ConsoleBucketName": BUCKET, "ConsoleDistributionId": "E123", "ConsoleUrl": "https://d.example/console/"}
    assert deploy_console.stack_target(Stacks(outputs), "switchboard") == deploy_console.Target(
        BUCKET, "E123", "https://d.example/console/"
    )
    with pytest.raises(SystemExit, match="ConsoleDistributionId"):
        deploy_console.stack_target(Stacks({"ConsoleBucketName": BUCKET, "ConsoleUrl": "x"}), "switchboard")


def test_the_console_path_is_invalidated(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_aws_environment(monkeypatch)
    with mock_aws():
        cloudfront = boto3.client("cloudfront", region_name=REGION)
        distribution = cloudfront.create_distribution(
            DistributionConfig={
                "CallerReference": "test",
                "Origins": {"Quantity": 1, "Items": [{"Id": "console", "DomainName": f"{BUCKET}.s3.amazonaws.com"}]},
                "DefaultCacheBehavior": {"TargetOriginId": "console", "ViewerProtocolPolicy": "redirect-to-https"},
                "Comment": "",
                "Enabled": True,
            }
        )["Distribution"]["Id"]

        invalidation = deploy_console.invalidate(cloudfront, distribution)

        batch = cloudfront.get_invalidation(DistributionId=distribution, Id=invalidation)["Invalidation"]
        assert batch["InvalidationBatch"]["Paths"]["Items"] == ["/console/*"]
