"""The stores behind the window and the menus, on moto: the heard marks an incoming message writes
are the window a contact lookup shows per number; an interactive message's options are kept per
(number, contact), a newer one replacing an older, never the reverse; each under its stored names."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from switchboard import bootstrap
from switchboard.bootstrap.messages import menu_repository, message_repository
from switchboard.core import store
from switchboard.core.clock import utcnow
from switchboard.messages.choices import OpenMenu
from switchboard.providers.content import Option
from tools.support.api import Client, TenantKeys

CONTACT = "5511988880001"


def test_a_contact_lookup_shows_each_numbers_window_from_the_heard_marks(
    client: Client, make_tenant: Callable[..., TenantKeys]
) -> None:
    tenant = make_tenant("acme")
    numbers = {}
    for digits, cloud in (("5511900000001", False), ("5511900000002", True), ("5511900000003", True)):
        body = {"number": digits, "displayName": digits} | ({"metaPhoneId": digits[-4:]} if cloud else {})
        numbers[digits] = client.post("/api/numbers", key=tenant.admin, json_body=body).json()["id"]
    heard = (utcnow() - timedelta(hours=2)).replace(microsecond=0)  # kept in whole seconds
    for digits, at in (("5511900000002", heard), ("5511900000003", heard - timedelta(days=1))):
        uow = store.unit_of_work()  # one incoming message each, as the ingest accepts them
        message_repository().record_heard(uow, "acme", CONTACT, numbers[digits], at)
        uow.commit()

    answer = client.get(f"/api/contacts/+{CONTACT}/window", key=tenant.admin)

    assert answer.status == 200, answer.body
    view = {item["number"]: item for item in answer.json()["numbers"]}
    assert answer.json()["contact"] == CONTACT
    assert [view[d]["serviceWindow"] for d in sorted(view)] == [False, True, True]
    assert (view["5511900000002"]["open"], view["5511900000003"]["open"]) == (True, False)
    assert view["5511900000002"]["windowOpenUntil"] == (heard + timedelta(hours=24)).isoformat().replace("+00:00", "Z")
    assert view["5511900000001"]["lastHeardAt"] is None
    other = make_tenant("other")
    assert all(
        item["lastHeardAt"] is None
        for item in client.get(f"/api/contacts/{CONTACT}/window", key=other.admin).json()["numbers"]
    )


def menu(message_id: str, sent_ago: timedelta) -> OpenMenu:
    return OpenMenu(
        tenant="acme",
        number_id="num_1",
        number="5511900000001",
        contact=CONTACT,
        message_id=message_id,
        api_key_id="key_1",
        kind="list",
        native=False,
        options=[Option(id="a", title="A", description="first"), Option(id="b", title="B")],
        sent_at=utcnow() - sent_ago,
    )


def test_the_open_menu_is_the_newest_and_reads_back_under_its_stored_names(client: Client) -> None:
    menus = menu_repository()

    menus.remember(menu("msg_new", timedelta(minutes=1)))
    menus.remember(menu("msg_old", timedelta(minutes=5)))  # a late write of an older menu

    kept = menus.open_menu("acme", "num_1", CONTACT)
    assert kept is not None and kept.message_id == "msg_new"
    assert kept.options == menu("x", timedelta(0)).options
    raw = bootstrap.table().get_item(Key={"pk": f"MENU#acme#num_1#{CONTACT}", "sk": "#META"})["Item"]
    assert set(raw) == {
        "pk",
        "sk",
        "tenant",
        "number_id",
        "number",
        "contact",
        "message_id",
        "api_key_id",
        "kind",
        "native",
        "options",
        "sent_at",
        "expiresAt",
    }
    assert menus.open_menu("acme", "num_2", CONTACT) is None
