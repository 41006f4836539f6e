"""The local stack's background threads: started together, told to stop together, joined within
one deadline.

    threads = Background()
    threads.add(loop, argument, name="sqs-SendWorker")   # loop(argument) watches threads.stopping
    threads.start()
    ...
    threads.stop(timeout=5)                               # or stop(timeout, wake=server.shutdown)

Every thread is a daemon: one stuck in a call that outlives `stop()`'s deadline cannot keep the
process alive.

Every thread starts with SIGINT and SIGTERM blocked (`start_in_background`), and so does every
thread it starts in turn (a thread inherits its creator's signal mask): the kernel hands a signal
sent to the process (Ctrl-C, `kill`) to any thread that does not block it, while Python runs the
handler only in the main thread and only once that thread runs bytecode again. A Ctrl-C taken by a
server's thread while the main thread waited on a lock was never handled; with the main thread
the only one left to take it, its wait is interrupted and the handler runs at once.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable

MAIN_THREAD_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})


def start_in_background(thread: threading.Thread) -> None:
    """Start `thread` with the main thread's signals (SIGINT, SIGTERM) blocked in it; the calling
    thread's own mask is as before once this returns (a signal that came meanwhile is pending
    on the process, and then delivered)."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, MAIN_THREAD_SIGNALS)
    try:
        thread.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


class Background:
    def __init__(self) -> None:
        self.stopping = threading.Event()
        self._threads: list[threading.Thread] = []

    def add(self, target: Callable[..., object], *args: object, name: str) -> None:
        self._threads.append(threading.Thread(target=target, args=args, name=name, daemon=True))

    def start(self) -> None:
        for thread in self._threads:
            start_in_background(thread)

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
