"""Prints each handler's cold import time as a ratio to `import boto3`, measured in the same run.

Each figure is the best of several fresh interpreters (what a new Lambda container pays before
the first event). Target: every ratio <= 2.0. Usage: `make coldstart`.

On a busy machine the timings move by a third from run to run. `--instructions` counts instead
the instructions each import executes (valgrind's cachegrind, net of the interpreter's own
start-up): slower, but the same figure whatever else the machine runs.

The layer and the handlers are compiled to bytecode first, as `make build` ships them: a Lambda
container loads .pyc files, and with PYTHONDONTWRITEBYTECODE set (or a read-only tree) every
measured import would otherwise compile switchboard from source, about a quarter of `import boto3`
that no deployed function pays.
"""

from __future__ import annotations

import compileall
import os
import re
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


# What template.yaml gives every function's environment: each profile checks at import that the
# variables it needs are set (placeholders: an import reaches no AWS service).
TEMPLATE_ENVIRONMENT = {
    "SEND_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/000000000000/send",
    "FORWARD_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/000000000000/forward",
    "CLIENT_WEBHOOK_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/000000000000/client-webhooks",
    "RECONCILE_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/000000000000/reconcile",
    "MEDIA_BUCKET": "switchboard-media",
    "LIVE_URL": "wss://live.example/live",
    "LIVE_MANAGEMENT_URL": "https://live.example/live",
}
ENVIRONMENT = {
    **os.environ,
    "PYTHONPATH": str(ROOT / "layers" / "shared"),
    "AWS_DEFAULT_REGION": "us-east-1",
    "POWERTOOLS_TRACE_DISABLED": "true",
    **TEMPLATE_ENVIRONMENT,
}
START_UP = "import importlib.util, sys, time"
CACHEGRIND = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]


def best_of(code: str, *arguments: str) -> float:
    timings = []
    for _ in range(RUNS):
        done = subprocess.run(  # noqa: S603 - our own interpreter and code
            [sys.executable, "-c", code, *arguments], capture_output=True, text=True, check=True, env=ENVIRONMENT
        )
        timings.append(float(done.stdout.strip().splitlines()[-1]))
    return min(timings)


def instructions(code: str, *arguments: str) -> float:
    """Instructions the interpreter executes for `code`, start-up included (subtract START_UP's)."""
    command = [*CACHEGRIND, sys.executable, "-c", code, *arguments]
    done = subprocess.run(  # noqa: S603 - valgrind on our own interpreter and code
        command, capture_output=True, text=True, check=True, env=ENVIRONMENT
    )
    counted = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if counted is None:
        raise RuntimeError(f"no instruction count in valgrind's output: {done.stderr[-500:]}")
    return float(counted.group(1).replace(",", ""))


def compile_bytecode() -> None:
    """Write the .pyc files each import will load (timestamp-checked, so an edit is recompiled)."""
    for folder in (ROOT / "layers" / "shared", ROOT / "functions"):
        if not compileall.compile_dir(folder, quiet=1):
            raise RuntimeError(f"could not compile {folder}")


def main() -> int:
    compile_bytecode()
    if "--instructions" in sys.argv[1:]:
        start_up = instructions(START_UP)

        def measure(code: str, *arguments: str) -> float:
            return instructions(code, *arguments) - start_up

        unit, scale, label = "M instr", 1e-6, "M instructions"
    else:
        measure, unit, scale, label = best_of, "import ms", 1000, f"ms (best of {RUNS})"
    boto3_cost = measure(BOTO3)
    print(f"import boto3: {boto3_cost * scale:.0f} {label}")
    print(f"{'function':32} {unit:>10} {'ratio':>7}")
    worst = 0.0
    for logical_id, properties in sorted(template.resources("AWS::Serverless::Function").items()):
        module = properties["Handler"].rpartition(".")[0]
        source = ROOT / properties["CodeUri"] / f"{module}.py"
        cost = measure(HANDLER, str(source))
        ratio = cost / boto3_cost
        worst = max(worst, ratio)
        flag = "" if ratio <= TARGET else "  <- over target"
        print(f"{logical_id:32} {cost * scale:10.0f} {ratio:7.2f}{flag}")
    print(f"worst ratio {worst:.2f} (target <= {TARGET})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
