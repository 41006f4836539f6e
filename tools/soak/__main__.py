"""`python -m tools.soak --minutes N --json report.json`: one soak; prints the table, writes the
figures as JSON, and exits 1 if anything was lost, doubled, stuck or left a call slot drifting
(2 if the soak itself could not run)."""

from __future__ import annotations

import argparse
import signal
import sys
from dataclasses import replace
from pathlib import Path

from tools.soak.accounting import failing
from tools.soak.report import table, write_json
from tools.soak.run import Soak, SoakConfig
from tools.soak.stack import StackFailed, StackSettings
from tools.soak.traffic import Load


def parse(argv: list[str]) -> tuple[SoakConfig, Path]:
    parser = argparse.ArgumentParser(prog="python -m tools.soak", description=__doc__)
    parser.add_argument("--minutes", type=float, default=30.0, help="minutes of traffic (default 30)")
    parser.add_argument("--json", type=Path, default=Path(".soak/report.json"), help="where the figures go")
    parser.add_argument("--seed", type=int, default=1, help="picks phones and the traffic mix")
    parser.add_argument("--load", type=float, default=1.0, help="scales every rate (1: ~1 send/s, 1 incoming/s)")
    parser.add_argument(
        "--visibility-timeout",
        type=int,
        default=None,
        help="every queue's visibility timeout in seconds (default: the template's, 180 s); keep it above "
        "the workers' 60 s leases, or a crashed worker's redelivery finds its message still leased",
    )
    parser.add_argument(
        "--drain-seconds", type=float, default=None, help="bound of the drain (default: visibility + 60)"
    )
    parser.add_argument(
        "--moto-table-copies",
        action="store_true",
        help="keep moto's whole-table copy per DynamoDB transaction (its cost grows with the table)",
    )
    parser.add_argument("--no-kills", action="store_true", help="no worker containers killed")
    parser.add_argument("--no-faults", action="store_true", help="no provider faults, disconnections or duplicates")
    args = parser.parse_args(argv)
    if args.visibility_timeout is not None and args.visibility_timeout <= 60:
        parser.error("--visibility-timeout must exceed the workers' 60 s leases")
    base = Load()
    load = replace(
        base,
        sends_per_second=base.sends_per_second * args.load,
        incoming_per_second=base.incoming_per_second * args.load,
        replies_per_second=base.replies_per_second * args.load,
        dial_interval=base.dial_interval / args.load,
        incoming_call_interval=base.incoming_call_interval / args.load,
        kills=not args.no_kills,
        faults=not args.no_faults,
    )
    config = SoakConfig(
        minutes=args.minutes,
        seed=args.seed,
        load=load,
        stack=StackSettings(visibility_timeout=args.visibility_timeout, moto_table_copies=args.moto_table_copies),
        drain_seconds=args.drain_seconds,
        log_path=args.json.with_suffix(".stack.log"),
    )
    return config, args.json


def main(argv: list[str]) -> int:
    config, json_path = parse(argv)
    # SIGTERM (a `timeout`, a CI runner) ends the soak through its cleanup, as Ctrl-C does.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    soak = Soak(config)
    try:
        print(f"soak: starting the local stack (log: {config.log_path})", flush=True)
        soak.start()
        print(f"soak: {config.minutes:g} min of traffic and faults", flush=True)
        soak.run_traffic(config.minutes * 60)
        print("soak: draining", flush=True)
        soak.drain(config.drain_seconds)
        report = soak.measure()
    except StackFailed as failed:
        print(f"soak: {failed}", file=sys.stderr)
        return 2
    finally:
        soak.stop()
    assert soak.world is not None
    write_json(report, json_path, soak.world.secrets)
    print(table(report))
    print(f"soak: figures in {json_path}")
    return 1 if failing(report["figures"]) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
