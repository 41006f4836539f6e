"""The scheduled reconciliation reads every instance's state from its provider (the wired worker,
in process, against the simulator): a session lost or back without a webhook is seen within one
period, a Meta number's standing is judged each period, and a calls instance still costs one
status read (its limit comes from the same answer)."""

from __future__ import annotations

from typing import Any

import pytest

from devstack.simulator import Simulator, SimulatorControl
from switchboard import bootstrap
from switchboard.providers.wuzapi import WuzapiClient
from tests.support.kinds import KindsSetup
from tools.support.api import Client


@pytest.fixture
def setup(client: Client, make_tenant: Any, simulator: Simulator, control: SimulatorControl) -> KindsSetup:
    return KindsSetup(client, make_tenant("acme"), simulator, control)


def reconcile(name: str) -> Any:
    report = bootstrap.reconciler().reconcile_by_key(f"acme:{name}")
    assert report is not None
    return report


@pytest.mark.parametrize("flavour", ["wuzapi", "evolution", "calls"])
def test_a_session_lost_and_back_without_any_webhook_is_seen_by_the_next_reconciliation(
    setup: KindsSetup, flavour: str
) -> None:
    name = f"silent-{flavour}"
    token = setup.paired(flavour, name, "5511900002001")
    setup.put(name, flavour, setup.number("5511900002001"), token)
    assert setup.listed(name) == "CONNECTED"

    setup.control.set_connection(name, False, notify=False)
    lost = reconcile(name)
    setup.control.set_connection(name, True, notify=False)
    back = reconcile(name)
    unchanged = reconcile(name)

    assert (lost.state, lost.state_changed) == ("DISCONNECTED", True)
    assert (back.state, back.state_changed) == ("CONNECTED", True)
    assert (unchanged.state, unchanged.state_changed) == ("CONNECTED", False)
    assert setup.listed(name) == "CONNECTED"


def test_a_reconnected_session_lifts_the_logout_pause_without_a_webhook(setup: KindsSetup, client: Client) -> None:
    token = setup.paired("wuzapi", "relogged", "5511900002002")
    setup.put("relogged", "wuzapi", setup.number("5511900002002"), token)
    instance = bootstrap.catalog_repository().find_instance("acme:relogged")
    assert instance is not None
    bootstrap.health_watch().connection(instance, connected=False, reason="logged_out:401")
    setup.control.set_connection("relogged", False, notify=False)
    reconcile("relogged")
    assert client.get("/api/instances/relogged/health", key=setup.tenant.admin).json()["state"] == "paused"

    setup.control.set_connection("relogged", True, notify=False)  # paired again by QR code
    reconcile("relogged")

    assert client.get("/api/instances/relogged/health", key=setup.tenant.admin).json()["state"] == "healthy"


def test_a_meta_number_restricted_later_is_paused_by_the_next_reconciliation_and_freed_when_meta_says_so(
    setup: KindsSetup, client: Client
) -> None:
    phone_id = "106500000002003"
    token = setup.paired("meta", "meta-later", "5511900002003", metaPhoneId=phone_id)
    setup.put(phone_id, "meta", setup.number("5511900002003", phone_id), token)

    def health() -> dict[str, Any]:
        answer: dict[str, Any] = client.get(f"/api/instances/{phone_id}/health", key=setup.tenant.admin).json()
        return answer

    assert health()["state"] == "healthy"
    setup.control.number_status("meta-later", status="FLAGGED", qualityRating="RED")
    report = reconcile(phone_id)
    assert report.state == "CONNECTED"
    assert (health()["state"], sorted(reason["code"] for reason in health()["reasons"])) == (
        "paused_for_new_contacts",
        ["meta_quality_red", "meta_status_flagged"],
    )

    setup.control.number_status("meta-later", status="CONNECTED", qualityRating="GREEN")
    reconcile(phone_id)

    assert (health()["state"], health()["reasons"]) == ("healthy", [])


def test_a_calls_instance_is_read_once_per_period_for_its_state_and_its_limit(
    setup: KindsSetup, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = setup.paired("calls", "line-calls", "5511900002004", kind="calls", callsMaxConcurrent=3)
    setup.put("line-calls", "calls", setup.number("5511900002004"), token, kind="calls")
    reads: list[str] = []
    status = WuzapiClient.instance_status

    def counted(self: WuzapiClient, target: Any) -> Any:
        reads.append(target.provider_instance_id)
        return status(self, target)

    monkeypatch.setattr(WuzapiClient, "instance_status", counted)
    setup.control.set_connection("line-calls", False, notify=False)

    report = reconcile("line-calls")

    assert reads == ["line-calls"]
    assert (report.state, report.limit) == ("DISCONNECTED", 3)
