"""`python -m devstack.simulator --port 3100`: a provider server for the local stack.

The admin token comes from `SIM_ADMIN_TOKEN` (or a fixed local value); it is never printed.
"""

from __future__ import annotations

import argparse
import logging
import threading

from devstack.simulator.server import Simulator


def main() -> None:
    parser = argparse.ArgumentParser(description="provider simulator: calls server, wuzapi, Evolution, Meta")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=3100)
    parser.add_argument("--media-port", type=int, default=0, help="the media WebSocket port (0: a free one)")
    parser.add_argument("--fault-delay", type=float, default=11.0, help="seconds a `timeout` fault sleeps")
    parser.add_argument("--webhook-retry-delay", type=float, default=0.5, help="first retry delay, doubled after")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    simulator = Simulator(fault_delay_seconds=args.fault_delay, webhook_retry_base_delay=args.webhook_retry_delay)
    print(f"provider simulator on {simulator.start(args.host, args.port, args.media_port)}", flush=True)
    print(f"media sockets on {simulator.media_url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        simulator.stop()


if __name__ == "__main__":
    main()
