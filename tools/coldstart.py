"""Prints each handler's cold import time as a ratio to `import boto3`, measured in the same run.

Each figure is the best of several fresh interpreters (what a new Lambda container pays before
the first event). Target: every ratio <= 2.0. Usage: `make coldstart`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent.parent)]

from devstack import template  # noqa: E402

ROOT = template.ROOT
RUNS = 5
TARGET = 2.0

BOTO3 = "import time; t = time.perf_counter(); import boto3; print(time.perf_counter() - t)"
HANDLER = """
import importlib.util, sys, time
t = time.perf_counter()
spec = importlib.util.spec_from_file_location("handler", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print(time.perf_counter() - t)
"""


def best_of(code: str, *arguments: str) -> float:
    environment = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "layers" / "shared"),
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_TRACE_DISABLED": "true",
    }
    timings = []
    for _ in range(RUNS):
        done = subprocess.run(  # noqa: S603 - our own interpreter and code
            [sys.executable, "-c", code, *arguments], capture_output=True, text=True, check=True, env=environment
        )
        timings.append(float(done.stdout.strip().splitlines()[-1]))
    return min(timings)


def main() -> int:
    boto3_seconds = best_of(BOTO3)
    print(f"import boto3: {boto3_seconds * 1000:.0f} ms (best of {RUNS})")
    print(f"{'function':32} {'import ms':>10} {'ratio':>7}")
    worst = 0.0
    for logical_id, properties in sorted(template.resources("AWS::Serverless::Function").items()):
        module = properties["Handler"].rpartition(".")[0]
        source = ROOT / properties["CodeUri"] / f"{module}.py"
        seconds = best_of(HANDLER, str(source))
        ratio = seconds / boto3_seconds
        worst = max(worst, ratio)
        flag = "" if ratio <= TARGET else "  <- over target"
        print(f"{logical_id:32} {seconds * 1000:10.0f} {ratio:7.2f}{flag}")
    print(f"worst ratio {worst:.2f} (target <= {TARGET})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
