"""Real threads released together, for races against a real endpoint (one container each)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any


def at_once(tasks: Sequence[Callable[[], Any]]) -> list[Any]:
    """Run each task on its own thread, all released by one barrier; each one's result or error.

    Whatever a task needs of its own (a boto3 session, a repository, a replica) is built before,
    so the barrier releases requests, not set-up work.
    """
    barrier = threading.Barrier(len(tasks))
    results: list[Any] = [None] * len(tasks)

    def run(index: int) -> None:
        barrier.wait()
        try:
            results[index] = tasks[index]()
        except Exception as error:  # collected and asserted on by the caller
            results[index] = error

    threads = [threading.Thread(target=run, args=(index,)) for index in range(len(tasks))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results
