"""`make bench`: runs every benchmark module in turn and prints its figures."""

from __future__ import annotations

import sys
from importlib import import_module
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[2] / "layers" / "shared")]

BENCHMARKS = ("pool", "shards", "routing", "calls", "quotas", "workloads", "reconcile")


def main() -> int:
    for name in BENCHMARKS:
        print(f"== {name}")
        import_module(f"tools.bench.{name}").main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
