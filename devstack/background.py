"""The local stack's background threads: started together, told to stop together, joined within
one deadline.

    threads = Background()
    threads.add(loop, argument, name="sqs-SendWorker")   # loop(argument) watches threads.stopping
    threads.start()
    ...
    threads.stop(timeout=5)                               # or stop(timeout, wake=server.shutdown)

Every thread is a daemon: one stuck in a call that outlives `stop()`'s deadline cannot keep the
process alive.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class Background:
    def __init__(self) -> None:
        self.stopping = threading.Event()
        self._threads: list[threading.Thread] = []

    def add(self, target: Callable[..., object], *args: object, name: str) -> None:
        self._threads.append(threading.Thread(target=target, args=args, name=name, daemon=True))

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def request_stop(self) -> None:
        """Tell the loops to stop, without waiting for them."""
        self.stopping.set()

    def stop(self, timeout: float, *, wake: Callable[[], None] | None = None) -> None:
        """Set `stopping`, call `wake` if a thread runs (for a loop that does not watch the event,
        e.g. `serve_forever`: its `shutdown`), and join every thread within `timeout` seconds."""
        self.stopping.set()
        if wake is not None and self.alive():
            wake()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            if thread.is_alive():
                thread.join(max(0.0, deadline - time.monotonic()))

    def alive(self) -> bool:
        return any(thread.is_alive() for thread in self._threads)
