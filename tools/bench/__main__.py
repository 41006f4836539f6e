"""`make bench`: runs every benchmark module in turn and prints its figures; `python -m tools.bench
pool shards` runs only those named."""

from __future__ import annotations

import sys
from importlib import import_module
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[2] / "layers" / "shared")]

BENCHMARKS = ("pool", "shards", "routing", "calls", "quotas", "workloads", "reconcile")


def main(names: list[str]) -> int:
    unknown = sorted(set(names) - set(BENCHMARKS))
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}", file=sys.stderr)
        return 2
    for name in names or BENCHMARKS:
        print(f"== {name}")
        import_module(f"tools.bench.{name}").main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
