"""Signed webhook delivery: one ordered lane (queue + thread) per instance, bounded retries.

Each attempt posts the same body and is signed again, the way its server signs:

- `envelope` (the calls server): `X-Webhook-Timestamp` and `X-Webhook-Signature: v1=<hex>[,v1=<hex>]`,
  one entry per secret while a secret is rotating, each `HMAC-SHA256(secret, f"{timestamp}." + body)`;
- `wuzapi`: `x-hmac-signature: <hex HMAC-SHA256(key, body)>`, no header without a key (as the real
  server, which then posts unsigned);
- `evolution`: `Authorization: Bearer <JWT HS256 {iat, exp: iat + 600, app, action}>` made with the
  `jwt_key` once per event, when it is first posted, and sent again unchanged by its retries (the
  real server builds the headers before its retry loop; `iat` is in whole seconds, so events
  posted within one second carry the same token); 400/401/403/404/422 answers are not retried;
- `meta`: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(app secret, body)>`.

A failing event delays the events queued behind it on the same instance, never other instances.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import queue
import threading
import time
from collections.abc import Callable

import httpx

from devstack.simulator import wire
from devstack.simulator.model import Delivery

logger = logging.getLogger(__name__)


EVOLUTION_FINAL_STATUSES = frozenset({400, 401, 403, 404, 422})


def signature_header(secrets: tuple[str, ...], timestamp: int, body: bytes) -> str:
    signed = f"{timestamp}.".encode() + body
    return ",".join(f"v1={hmac.new(s.encode(), signed, hashlib.sha256).hexdigest()}" for s in secrets)


def signed_headers(delivery: Delivery, now: int, first_posted: int | None = None) -> dict[str, str]:
    """The headers of one attempt at `now`, signed the way the delivery's server signs; an
    Evolution token is the one made when the event was first posted (`first_posted`)."""
    headers = {"Content-Type": delivery.content_type}
    secret = delivery.secrets[0] if delivery.secrets else None
    if delivery.scheme == "envelope":
        headers["X-Webhook-Timestamp"] = str(now)
        headers["X-Webhook-Signature"] = signature_header(delivery.secrets, now, delivery.body)
    elif secret is None:
        pass
    elif delivery.scheme == "wuzapi":
        headers["x-hmac-signature"] = wire.hex_hmac(secret, delivery.body)
    elif delivery.scheme == "evolution":
        issued = now if first_posted is None else first_posted
        headers["Authorization"] = f"Bearer {wire.evolution_jwt(secret, issued)}"
    elif delivery.scheme == "meta":
        headers["X-Hub-Signature-256"] = f"sha256={wire.hex_hmac(secret, delivery.body)}"
    return headers


class WebhookDispatcher:
    def __init__(
        self,
        *,
        timeout_seconds: float,
        retry_base_delay: float,
        max_attempts: int,
        transport: httpx.BaseTransport | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`clock` gives the epoch seconds each attempt is signed at (the retries still wait in real time)."""
        self._clock = clock
        self._retry_base_delay = retry_base_delay
        self._max_attempts = max_attempts
        self._client = httpx.Client(
            timeout=timeout_seconds, follow_redirects=False, trust_env=False, transport=transport
        )
        self._lanes: dict[str, queue.SimpleQueue[tuple[int, Delivery] | None]] = {}
        self._threads: list[threading.Thread] = []
        self._lanes_lock = threading.Lock()  # guards only the lanes; the state has its own lock
        self._generation = 0
        self._closed = threading.Event()

    def enqueue(self, delivery: Delivery) -> None:
        with self._lanes_lock:
            if self._closed.is_set():
                return
            lane = self._lanes.get(delivery.instance_id)
            if lane is None:
                lane = self._lanes[delivery.instance_id] = queue.SimpleQueue()
                thread = threading.Thread(target=self._run, args=(lane,), name="sim-webhooks", daemon=True)
                self._threads.append(thread)
                thread.start()
            lane.put((self._generation, delivery))

    def forget_pending(self) -> None:
        """Drop every queued or retrying delivery and retire the lanes (used by reset)."""
        with self._lanes_lock:
            self._generation += 1
            for lane in self._lanes.values():
                lane.put(None)
            self._lanes.clear()
            self._threads = [thread for thread in self._threads if thread.is_alive()]

    def close(self) -> None:
        with self._lanes_lock:
            self._closed.set()
            for lane in self._lanes.values():
                lane.put(None)
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout=5)
        self._client.close()

    def _run(self, lane: queue.SimpleQueue[tuple[int, Delivery] | None]) -> None:
        while (item := lane.get()) is not None:
            generation, delivery = item
            self._deliver(generation, delivery)

    def _deliver(self, generation: int, delivery: Delivery) -> None:
        first_posted = int(self._clock())
        for attempt in range(self._max_attempts):
            if self._closed.is_set() or generation != self._generation:
                return
            if self._post(delivery, first_posted):
                return
            if attempt + 1 < self._max_attempts:
                self._closed.wait(self._retry_base_delay * 2**attempt)
        logger.warning("webhook given up", extra={"event_id": delivery.event_id, "attempts": self._max_attempts})

    def _post(self, delivery: Delivery, first_posted: int) -> bool:
        """One attempt; True when done (accepted, or refused in a way its server does not retry)."""
        headers = signed_headers(delivery, int(self._clock()), first_posted)
        try:
            response = self._client.post(delivery.url, content=delivery.body, headers=headers)
        except httpx.HTTPError as exc:
            logger.info("webhook attempt failed", extra={"event_id": delivery.event_id, "error": type(exc).__name__})
            return False
        if response.is_success:
            return True
        logger.info("webhook refused", extra={"event_id": delivery.event_id, "status": response.status_code})
        return delivery.scheme == "evolution" and response.status_code in EVOLUTION_FINAL_STATUSES
