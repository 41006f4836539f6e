"""Pairing a phone by a code, as the real servers draw their codes.

A session that has no phone linked draws a series of codes once it is started, one after the
other, each shown for a while, until a phone scans the current one or the series runs out:

- wuzapi (whatsmeow's `GetQRChannel`, `qrchan.go`): the first code for 60 s, each next one for
  20 s, six in all; then the channel times out and wuzapi drops the client (`QRTimeout`);
- Evolution (Baileys with `qrTimeout: 45_000`): a new code every 45 s, counted in `count`; at
  `QRCODE_LIMIT` (30) codes it gives up (`qrcode.updated` "QR code limit reached" and
  `connection.update` `refused`).

The series is advanced when the server is asked (its routes and the control API run `advance`
under the state's lock), as if its timer had run meanwhile. A code's image is a small PNG drawn
from the code's text: it stands for the real servers' QR image and is not a scannable QR code;
`POST /_sim/instances/{id}/scan` is the phone scanning it.
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass

from devstack.simulator import files
from devstack.simulator.model import Instance


@dataclass(frozen=True)
class CodeSeries:
    first_seconds: float
    next_seconds: float
    limit: int


WHATSMEOW = CodeSeries(first_seconds=60.0, next_seconds=20.0, limit=6)
EVOLUTION = CodeSeries(first_seconds=45.0, next_seconds=45.0, limit=30)


def now() -> float:
    return time.monotonic()


def start(instance: Instance) -> None:
    """A new series: the first code is drawn at once (at the next `advance`)."""
    instance.pairing_since = now()
    instance.codes_drawn = 0
    instance.pairing_attempt += 1


def stop(instance: Instance) -> None:
    instance.pairing_since = None
    instance.codes_drawn = 0


def pairing(instance: Instance) -> bool:
    """A series is running: the session shows a code (or is about to)."""
    return instance.pairing_since is not None


def due(series: CodeSeries, elapsed: float) -> int:
    """How many codes the series has drawn `elapsed` seconds after it started."""
    if elapsed < series.first_seconds:
        return 1
    return 2 + int((elapsed - series.first_seconds) // series.next_seconds)


def advance(
    instance: Instance, series: CodeSeries, *, drawn: Callable[[int], None], ran_out: Callable[[], None]
) -> None:
    """Draw the codes due by now (`drawn(count)` for each), or end the series past its last one."""
    if instance.pairing_since is None:
        return
    wanted = due(series, now() - instance.pairing_since)
    while instance.codes_drawn < min(wanted, series.limit):
        instance.codes_drawn += 1
        drawn(instance.codes_drawn)
    if wanted > series.limit:
        stop(instance)
        ran_out()


def expire_current(instance: Instance, series: CodeSeries) -> None:
    """Move the series on to the moment the current code expires (the control API's shortcut)."""
    if instance.pairing_since is None:
        return
    shown_until = series.first_seconds + (max(instance.codes_drawn, 1) - 1) * series.next_seconds
    instance.pairing_since = now() - shown_until


def code_text(instance: Instance) -> str:
    """The current code's text, in the shape both libraries give it (`ref,noiseKey,identityKey,advSecret`)."""
    seed = f"{instance.id}/{instance.pairing_attempt}/{instance.codes_drawn}".encode()
    parts = [base64.b64encode(hashlib.sha256(seed + bytes([n])).digest()).decode() for n in range(4)]
    return "2@" + ",".join(parts)


def code_image(instance: Instance) -> str:
    """The current code as the servers hand it over: a PNG as a data URL."""
    return "data:image/png;base64," + base64.b64encode(files.code_png(code_text(instance))).decode()
