"""The soak's own machinery, in a tiny soak (one stack process, a handful of messages, ~20 s):
what it counts is what happened. A customer's message the provider signs with a key switchboard
does not know never reaches the helpdesk: counted lost. A text the provider sends a second time
behind switchboard's back: counted doubled. A photo: ignored, not lost. The rest: delivered, and
the call line back at zero on both sides."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from devstack.simulator import SimulatorControl
from tools.soak.accounting import failing
from tools.soak.report import table, write_json
from tools.soak.run import Soak, SoakConfig
from tools.soak.stack import StackSettings
from tools.soak.traffic import Load

pytestmark = pytest.mark.stack

TINY = Load(live_sockets=0, kills=False, faults=False, call_seconds=(0.1, 0.3))


def sent(soak: Soak, text: str) -> list[dict[str, Any]]:
    assert soak.world is not None
    sim = SimulatorControl(soak.world.sim_url)
    try:
        return [message for message in sim.sent() if message["body"] == text]
    finally:
        sim.close()


def eventually(probe: Any, timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := probe()):
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.2)
    return value


def test_a_tiny_soak_counts_a_dropped_message_as_lost_and_a_second_copy_as_doubled(tmp_path: Path) -> None:
    soak = Soak(SoakConfig(minutes=0, load=TINY, stack=StackSettings(visibility_timeout=90), log_path=tmp_path / "log"))
    soak.start()
    try:
        assert soak.world is not None and soak.traffic is not None
        world, traffic = soak.world, soak.traffic
        sim = SimulatorControl(world.sim_url)
        sim.webhook_secrets("demo-4", "a-key-switchboard-was-never-given-0123456789")
        dropped = traffic.incoming_one("text", world.instance("demo-4"))
        arrived = traffic.incoming_one("text", world.instance("demo-1"))
        photo = traffic.incoming_one("image", world.instance("demo-5"))
        once = traffic.send_one("default-wuzapi")
        twice = traffic.send_one("default-evolution")
        [copy] = eventually(lambda: sent(soak, twice.text))
        httpx.post(  # the provider sends the same text again, as a second WhatsApp message
            f"{world.sim_url}/evolution/message/sendText/{copy['instance']}",
            headers={"apikey": world.instance(copy["instance"]).token},
            json={"number": twice.to, "text": twice.text},
        ).raise_for_status()
        traffic.dial_one(*next(iter(world.attendants.items())))
        soak.drain(max_seconds=3)  # the dropped message never settles: the drain ends at its bound
        report = soak.measure()
    finally:
        soak.stop(graceful=False)

    figures = report["figures"]
    assert figures["incoming"]["lost"] == 1
    assert figures["incoming"]["examples"]["lost"] == [f"i{dropped.serial} text via demo-4 (wuzapi): never accepted"]
    assert (figures["incoming"]["forwarded"], figures["incoming"]["ignored"]) == (2, 0)
    assert arrived.message_id and photo.message_id
    assert (figures["sends"]["accepted"], figures["sends"]["delivered"], figures["sends"]["doubled"]) == (2, 2, 1)
    assert figures["sends"]["examples"]["doubled"][0].startswith(f"s{twice.serial} (default-evolution): 2 copies")
    assert once.ids and figures["totals"]["stuck"] == 0
    assert figures["calls"]["dials"] == 1 and figures["totals"]["slotDrift"] == 0
    assert failing(figures)
    memory = report["memory"]
    assert memory["readyMb"] > 0 and memory["transactionBackup"] == "item"
    assert memory["store"]["items"]["end"] > memory["store"]["items"]["ready"] > 0
    heap = memory["heap"]
    assert all(heap[stage]["liveMb"] > 0 and heap[stage]["slackMb"] >= 0 for stage in ("ready", "end"))
    assert heap["end"]["gcEnabled"] == 1.0 and heap["end"]["gcFrozen"] == 0.0  # one collector for every container
    write_json(report, tmp_path / "report.json", world.secrets)
    written = (tmp_path / "report.json").read_text()
    assert not [secret for secret in world.secrets if secret in written]
    assert "messages lost" in table(report)
