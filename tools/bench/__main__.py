"""`make bench`: runs every benchmark module in turn, prints its figures as it goes, records them in
docs/measurements.json and writes docs/measurements.md from that file; `python -m tools.bench pool
shards` (`make bench BENCH="pool shards"`) runs only those named and rewrites only their figures."""

from __future__ import annotations

import datetime
import os
import sys
import time
from importlib import import_module
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[2] / "layers" / "shared")]

from devstack import moto_transactions  # noqa: E402
from tools.bench import measurements  # noqa: E402

BENCHMARKS = measurements.BENCHMARKS


def main(names: list[str]) -> int:
    unknown = sorted(set(names) - set(BENCHMARKS))
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}", file=sys.stderr)
        return 2
    # moto backs a transaction up by copying every table it names, so the in-process benchmarks'
    # transactions slowed down with each item they wrote (minutes for `pool`); the local stack's
    # item-level backup is the same algorithm at the cost of the items touched. Requests and billing
    # units are unchanged; what depends on elapsed time (the ban watch's 5 s health reads) is
    # closer to a real run's.
    moto_transactions.install()
    recorded = measurements.load()
    for name in names or BENCHMARKS:
        print(f"== {name}")
        started = time.monotonic()
        figures = import_module(f"tools.bench.{name}").measure()
        recorded[name] = {
            "run": {
                "date": datetime.date.today().isoformat(),
                "seconds": round(time.monotonic() - started),
                "cores": os.cpu_count(),
            },
            "figures": figures,
        }
        # Written after each benchmark: a later one that fails leaves the earlier ones' figures.
        measurements.write(recorded)
    print(f"wrote {measurements.PAGE.relative_to(measurements.ROOT)} and {measurements.RECORD.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
