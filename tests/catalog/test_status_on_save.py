"""`PUT /api/instances/{name}` reads the instance's connection state from its provider: a number
already paired is connected at once, with no connection webhook; a Meta number is connected by
nature and its standing reaches the ban watch. The simulator answers as each real server does."""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from devstack.simulator import Simulator, SimulatorControl
from switchboard import bootstrap
from switchboard.connection_state.service import ConnectionStateService
from tests.support.kinds import KindsSetup
from tools.support.api import Client


@pytest.fixture
def setup(client: Client, make_tenant: Any, simulator: Simulator, control: SimulatorControl) -> KindsSetup:
    return KindsSetup(client, make_tenant("acme"), simulator, control)


@pytest.mark.parametrize("flavour", ["wuzapi", "evolution", "calls"])
def test_a_session_already_paired_is_connected_right_after_the_put(setup: KindsSetup, flavour: str) -> None:
    token = setup.paired(flavour, f"paired-{flavour}", "5511900001001")

    saved = setup.put(f"paired-{flavour}", flavour, setup.number("5511900001001"), token)

    assert saved["state"] == "CONNECTED"
    assert setup.listed(f"paired-{flavour}") == "CONNECTED"
    assert setup.control.events(f"paired-{flavour}") == []  # no webhook told it


@pytest.mark.parametrize("flavour", ["wuzapi", "evolution"])
def test_a_session_not_paired_stays_disconnected(setup: KindsSetup, flavour: str) -> None:
    token = setup.paired(flavour, f"unpaired-{flavour}", "5511900001002", connected=False)

    saved = setup.put(f"unpaired-{flavour}", flavour, setup.number("5511900001002"), token)

    assert saved["state"] == setup.listed(f"unpaired-{flavour}") == "DISCONNECTED"


def test_an_instance_the_provider_does_not_know_yet_is_saved_disconnected(setup: KindsSetup) -> None:
    """The session is created on the provider after the instance (the seed does it): the
    reconciliation reads it later; the save itself never fails on the provider."""
    saved = setup.put("not-there-yet", "wuzapi", setup.number("5511900001003"), secrets.token_urlsafe(24))

    assert saved["state"] == "DISCONNECTED"


def test_a_meta_number_is_connected_by_nature_and_a_restricted_one_is_paused_with_its_reason(
    setup: KindsSetup, client: Client
) -> None:
    phone_id = "106500000001004"
    token = setup.paired("meta", "meta-1", "5511900001004", metaPhoneId=phone_id)
    setup.control.number_status("meta-1", status="RESTRICTED")

    saved = setup.put(phone_id, "meta", setup.number("5511900001004", phone_id), token)

    assert saved["state"] == "CONNECTED"
    health = client.get(f"/api/instances/{phone_id}/health", key=setup.tenant.admin).json()
    assert health["state"] == "paused_for_new_contacts"
    assert [reason["code"] for reason in health["reasons"]] == ["meta_status_restricted"]


def test_a_meta_number_whose_graph_api_cannot_be_read_is_still_connected(setup: KindsSetup) -> None:
    """The token is not the number's: the Graph API refuses the read (190), the number still sends."""
    phone_id = "106500000001005"
    setup.paired("meta", "meta-2", "5511900001005", metaPhoneId=phone_id)

    saved = setup.put(phone_id, "meta", setup.number("5511900001005", phone_id), "EAAG-not-this-numbers-token")

    assert saved["state"] == "CONNECTED"


def test_bound_to_another_session_the_state_starts_over_from_the_new_sessions_read(setup: KindsSetup) -> None:
    number = setup.number("5511900001006")
    first = setup.paired("wuzapi", "first-session", "5511900001006")
    setup.put("line-1", "wuzapi", number, first, providerInstanceId="first-session")
    assert setup.listed("line-1") == "CONNECTED"
    second = setup.paired("wuzapi", "second-session", "5511900001007", connected=False)

    saved = setup.put("line-1", "wuzapi", number, second, providerInstanceId="second-session")

    assert saved["state"] == setup.listed("line-1") == "DISCONNECTED"
    stored = bootstrap.catalog_repository().find_instance("acme:line-1")
    assert stored is not None and stored.state_seq is None


def test_a_put_that_keeps_the_session_and_its_token_asks_the_provider_nothing(
    setup: KindsSetup, monkeypatch: pytest.MonkeyPatch
) -> None:
    number = setup.number("5511900001008")
    token = setup.paired("wuzapi", "keep-1", "5511900001008")
    setup.put("keep-1", "wuzapi", number, token)
    reads: list[str] = []
    after_save = ConnectionStateService.after_save

    def counted(self: ConnectionStateService, instance: Any) -> Any:
        reads.append(instance.name)
        return after_save(self, instance)

    monkeypatch.setattr(ConnectionStateService, "after_save", counted)

    setup.put("keep-1", "wuzapi", number, None, priority=7)
    setup.put("keep-1", "wuzapi", number, token)  # a new token (even the same one) is read again

    assert reads == ["keep-1"]
