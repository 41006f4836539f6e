"""`make deploy-console`: publish console/ to the deployed stack's bucket and CloudFront.

    .venv/bin/python -m tools.deploy_console [--stack-name switchboard] [--region us-east-1]

Reads the stack's outputs (`ConsoleBucketName`, `ConsoleDistributionId`, `ConsoleUrl`), uploads
every file of console/ under the bucket's `console/` prefix with its content type, deletes the
objects of files that are gone, and invalidates `/console/*` so the next load gets the new files.
Defaults come from samconfig.toml (`stack_name`, `region`); AWS credentials as boto3 finds them.
"""

from __future__ import annotations

import argparse
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3

from devstack.console import content_type

ROOT = Path(__file__).resolve().parent.parent
CONSOLE = ROOT / "console"
PREFIX = "console/"
# The modules have no content hash in their names (no build step): every file is revalidated on
# each load (a 304 when unchanged), so a deploy is seen at once and never half-old.
CACHE_CONTROL = "no-cache"


@dataclass(frozen=True)
class Target:
    bucket: str
    distribution_id: str
    url: str


def stack_target(cloudformation: Any, stack_name: str) -> Target:
    stacks = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    outputs = {output["OutputKey"]: output["OutputValue"] for output in stacks[0].get("Outputs", [])}
    missing = {"ConsoleBucketName", "ConsoleDistributionId", "ConsoleUrl"} - outputs.keys()
    if missing:
        raise SystemExit(f"stack {stack_name} has no output {', '.join(sorted(missing))}: deploy the template first")
    return Target(outputs["ConsoleBucketName"], outputs["ConsoleDistributionId"], outputs["ConsoleUrl"])


def console_files(root: Path = CONSOLE) -> dict[str, Path]:
    """Object key -> file, for every file under `root` but hidden ones (editor and OS leftovers)
    and the developers' notes (Markdown), which the page never loads."""
    files = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        hidden = any(part.startswith(".") for part in relative.parts)
        if path.is_file() and not hidden and path.suffix != ".md":
            files[PREFIX + relative.as_posix()] = path
    if not files:
        raise SystemExit(f"nothing to upload: {root} has no files")
    return files


def upload(s3: Any, bucket: str, files: dict[str, Path]) -> list[str]:
    """Puts every file, then deletes the console's objects no file backs any more; returns the
    deleted keys. New files go up before old ones go, so a page loading meanwhile finds its modules."""
    for key, path in files.items():
        s3.put_object(
            Bucket=bucket,
            Key=key,
            Body=path.read_bytes(),
            ContentType=content_type(path.name),  # the local gateway's: browsers refuse others
            CacheControl=CACHE_CONTROL,
        )
    stale = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=PREFIX):
        stale += [item["Key"] for item in page.get("Contents", []) if item["Key"] not in files]
    for start in range(0, len(stale), 1000):
        batch = [{"Key": key} for key in stale[start : start + 1000]]
        s3.delete_objects(Bucket=bucket, Delete={"Objects": batch, "Quiet": True})
    return stale


def invalidate(cloudfront: Any, distribution_id: str) -> str:
    answer = cloudfront.create_invalidation(
        DistributionId=distribution_id,
        InvalidationBatch={
            "Paths": {"Quantity": 1, "Items": [f"/{PREFIX}*"]},
            "CallerReference": f"deploy-console-{time.time_ns()}",
        },
    )
    return str(answer["Invalidation"]["Id"])


def samconfig_defaults() -> dict[str, str]:
    config = tomllib.loads((ROOT / "samconfig.toml").read_text(encoding="utf-8"))
    default = config.get("default", {})
    return {
        "stack_name": default.get("global", {}).get("parameters", {}).get("stack_name", "switchboard"),
        "region": default.get("deploy", {}).get("parameters", {}).get("region", "us-east-1"),
    }


def main(argv: list[str] | None = None) -> int:
    defaults = samconfig_defaults()
    parser = argparse.ArgumentParser(description="Upload console/ to the stack's bucket and invalidate CloudFront.")
    parser.add_argument("--stack-name", default=defaults["stack_name"])
    parser.add_argument("--region", default=defaults["region"])
    args = parser.parse_args(argv)
    session = boto3.session.Session(region_name=args.region)
    target = stack_target(session.client("cloudformation"), args.stack_name)
    files = console_files()
    deleted = upload(session.client("s3"), target.bucket, files)
    invalidation = invalidate(session.client("cloudfront"), target.distribution_id)
    print(f"uploaded {len(files)} files to s3://{target.bucket}/{PREFIX}, deleted {len(deleted)}")
    print(f"invalidation {invalidation} of /{PREFIX}* on {target.distribution_id}")
    print(f"console: {target.url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
