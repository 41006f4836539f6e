"""What the simulator's servers answer to a status read: Meta's phone number node (and a number it
reports restricted), and connection changes whose webhook never arrives, read through the layer's
own clients."""

from __future__ import annotations

import httpx
import pytest

from devstack.simulator import SimulatorControl
from switchboard.core.errors import ProviderRejected
from switchboard.providers.base import ProviderClient
from switchboard.providers.kinds import spec_for
from switchboard.providers.meta import NUMBER_FIELDS
from tests.simulator.conftest import FlavourFactory, FlavourInstance

KIND_OF = {"calls": "wuzapi", "wuzapi": "wuzapi", "evolution": "evolution", "meta": "meta"}


def _client(instance: FlavourInstance) -> ProviderClient:
    return spec_for(KIND_OF[instance.flavour]).client(local_mode=True, read_timeout=5.0)


def _node(instance: FlavourInstance, fields: str | None, token: str | None = None) -> httpx.Response:
    params = {"fields": fields} if fields is not None else {}
    headers = {"Authorization": f"Bearer {token or instance.token}"}
    return httpx.get(f"{instance.base_url}/v25.0/{instance.meta_phone_id}", params=params, headers=headers)


def test_the_meta_node_answers_the_fields_asked_for_and_id(make_flavoured: FlavourFactory) -> None:
    instance = make_flavoured("meta", subscribed=False)

    answer = _node(instance, NUMBER_FIELDS)

    assert answer.status_code == 200
    assert answer.json() == {
        "status": "CONNECTED",
        "quality_rating": "GREEN",
        "whatsapp_business_manager_messaging_limit": "TIER_2K",
        "throughput": {"level": "STANDARD"},
        "code_verification_status": "VERIFIED",
        "id": instance.meta_phone_id,
    }


def test_without_fields_the_node_answers_its_defaults(make_flavoured: FlavourFactory) -> None:
    instance = make_flavoured("meta", subscribed=False)

    assert set(_node(instance, None).json()) == {"id", "display_phone_number", "verified_name", "quality_rating"}


def test_a_field_the_node_does_not_have_fails_the_whole_read_with_100(make_flavoured: FlavourFactory) -> None:
    instance = make_flavoured("meta", subscribed=False)

    answer = _node(instance, "status,messaging_tier")

    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == 100
    assert "(messaging_tier)" in answer.json()["error"]["message"]


def test_the_deprecated_tier_field_is_accepted_but_answers_nothing(make_flavoured: FlavourFactory) -> None:
    instance = make_flavoured("meta", subscribed=False)

    assert _node(instance, "messaging_limit_tier").json() == {"id": instance.meta_phone_id}


def test_the_node_checks_the_token_then_the_number(make_flavoured: FlavourFactory) -> None:
    instance, other = make_flavoured("meta", subscribed=False), make_flavoured("meta", subscribed=False)

    unknown = _node(instance, "status", token="not-a-token")
    foreign = httpx.get(
        f"{instance.base_url}/v25.0/{other.meta_phone_id}", headers={"Authorization": f"Bearer {instance.token}"}
    )

    assert (unknown.status_code, unknown.json()["error"]["code"]) == (401, 190)
    assert (foreign.status_code, foreign.json()["error"]["code"], foreign.json()["error"]["error_subcode"]) == (
        400,
        100,
        33,
    )
    assert foreign.json()["error"]["message"].startswith("Unsupported get request.")


def test_a_number_told_restricted_reads_restricted_through_the_meta_client(
    make_flavoured: FlavourFactory, control: SimulatorControl
) -> None:
    instance = make_flavoured("meta", subscribed=False)

    control.number_status(instance.id, status="RESTRICTED", qualityRating="RED")
    status = _client(instance).instance_status(instance.target())

    assert status.connected is True
    assert status.number is not None
    assert (status.number.status, status.number.quality_rating) == ("RESTRICTED", "RED")


def test_only_a_meta_number_has_a_standing_to_tell(make_flavoured: FlavourFactory, control: SimulatorControl) -> None:
    instance = make_flavoured("wuzapi", subscribed=False)

    with pytest.raises(httpx.HTTPStatusError) as refused:
        control.number_status(instance.id, status="RESTRICTED")

    assert refused.value.response.json()["error"] == "not_meta"


@pytest.mark.parametrize("flavour", ["calls", "wuzapi", "evolution"])
def test_a_connection_change_without_its_webhook_is_seen_only_by_the_status_read(
    flavour: str, make_flavoured: FlavourFactory, control: SimulatorControl
) -> None:
    instance = make_flavoured(flavour, subscribed=True)
    client = _client(instance)
    emitted = len(control.events(instance.id))

    control.set_connection(instance.id, False, notify=False)
    disconnected = client.instance_status(instance.target()).connected
    control.set_connection(instance.id, True, notify=False)
    connected = client.instance_status(instance.target()).connected

    assert (disconnected, connected) == (False, True)
    assert len(control.events(instance.id)) == emitted


def test_a_meta_number_refuses_a_read_for_a_version_that_is_not_one(make_flavoured: FlavourFactory) -> None:
    instance = make_flavoured("meta", subscribed=False)
    client = spec_for("meta").client(local_mode=True, read_timeout=5.0, api_version="latest")

    with pytest.raises(ProviderRejected):
        client.instance_status(instance.target())
