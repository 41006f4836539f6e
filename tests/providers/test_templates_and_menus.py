"""Templates and interactive messages as each kind sends them, against the real contracts:
the Cloud API's bodies exactly as Meta documents them (tests/contracts/meta), its template list
read page by page, its 131047 and template status changes mapped; wuzapi's numbered text menu and
Evolution's `sendList` (tests/contracts SOURCES.md say why each)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import httpx
from hypothesis import given
from hypothesis import strategies as st

from switchboard.core.errors import ProviderRejected
from switchboard.providers import evolution_send, meta, meta_send, wuzapi_send
from switchboard.providers.base import OutgoingFile, ProviderTarget
from switchboard.providers.content import (
    Interactive,
    Media,
    Option,
    Section,
    Template,
    TemplateComponent,
    TemplateParameter,
)
from switchboard.providers.kinds import spec_for
from switchboard.providers.menu import choice_for, text_menu
from switchboard.providers.wuzapi_send import data_url

CONTRACTS = Path(__file__).parent.parent / "contracts" / "meta"
TARGET = ProviderTarget(
    kind="meta", base_url="https://graph.example.test", provider_instance_id="1065", instance_token="t"
)


def fixture(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((CONTRACTS / name).read_text())
    return loaded


def placeholders_list() -> Interactive:
    """The documented list example, its placeholders as our content."""
    sections = [
        Section(
            title=f"<LIST_SECTION_{s}_TITLE>",
            rows=[
                Option(
                    id=f"<LIST_SECTION_{s}_ROW_{r}_ID>",
                    title=f"<SECTION_{s}_ROW_{r}_TITLE>",
                    description=f"<SECTION_{s}_ROW_{r}_DESC>",
                )
                for r in (1, 2)
            ],
        )
        for s in (1, 2)
    ]
    return Interactive(
        kind="list",
        header="<HEADER_TEXT>",
        body="<BODY_TEXT>",
        footer="<FOOTER_TEXT>",
        button="<BUTTON_TEXT>",
        sections=sections,
    )


def test_templates_leave_exactly_as_metas_documented_examples() -> None:
    hello = meta_send.message_body("{{Recipient-Phone-Number}}", Template(name="hello_world", language="en_US"))
    promo = Template(
        name="2023_april_promo",
        language="en_US",
        components=[
            TemplateComponent(
                type="body",
                parameters=[TemplateParameter(type="text", text="Mark"), TemplateParameter(type="text", text="FALL25")],
            )
        ],
    )

    assert hello["template"] == fixture("send_template_hello_world_request.json")["template"]
    assert meta_send.message_body("{{Recipient-Phone-Number}}", promo) == fixture(
        "send_template_april_promo_request.json"
    )
    documented = fixture("send_template_interactive_request.json")["template"]["components"]
    buttons = [
        TemplateComponent(
            type="button", sub_type="quick_reply", index=i, parameters=[TemplateParameter(type="payload", payload=p)]
        )
        for i, p in enumerate(["aGlzIHRoaXMgaXMgY29v", "9rwnB8RbYmPF5t2Mn09x4h"])
    ]
    sent = meta_send.template_object(Template(name="template-name", language="x", components=buttons))
    assert sent["components"] == [c for c in documented if c["type"] == "button"]


def test_a_template_header_file_is_named_by_its_uploaded_id() -> None:
    header = TemplateComponent(
        type="header", parameters=[TemplateParameter(type="document", media=Media(kind="document", file_name="r.pdf"))]
    )

    sent = meta_send.template_object(Template(name="order_confirmation", language="en_US", components=[header]), "42")

    assert sent["components"] == [
        {"type": "header", "parameters": [{"type": "document", "document": {"id": "42", "filename": "r.pdf"}}]}
    ]


def test_a_list_and_reply_buttons_leave_as_metas_documented_examples() -> None:
    buttons = Interactive(
        kind="buttons",
        body="<BUTTON_TEXT>",
        buttons=[Option(id=f"<UNIQUE_BUTTON_ID_{i}>", title=f"<BUTTON_TITLE_{i}>") for i in (1, 2)],
    )

    assert meta_send.message_body("{{Recipient-Phone-Number}}", placeholders_list()) == fixture(
        "send_interactive_list_request.json"
    )
    assert meta_send.message_body("{{Recipient-Phone-Number}}", buttons) == fixture(
        "send_interactive_buttons_request.json"
    )


def test_the_template_list_is_read_page_after_page_with_the_access_token() -> None:
    listed = fixture("templates_list.json")
    asked: list[httpx.Request] = []

    def graph(request: httpx.Request) -> httpx.Response:
        asked.append(request)
        if "after" not in request.url.params:
            return httpx.Response(200, json={**listed, "paging": {**listed["paging"], "next": "https://graph/next"}})
        return httpx.Response(200, json={"data": listed["data"][:1], "paging": {"cursors": {"after": "x"}}})

    client = spec_for("meta").client(local_mode=False, read_timeout=5, transport=httpx.MockTransport(graph))
    templates = client.list_templates(TARGET, "102290129340398")  # type: ignore[attr-defined]

    assert [t["name"] for t in templates] == ["hello_world", "2023_april_promo", "hello_world"]
    assert [r.url.path for r in asked] == ["/v25.0/102290129340398/message_templates"] * 2
    assert asked[1].url.params["after"] == "MjQZD" and asked[0].headers["authorization"] == "Bearer t"
    assert asked[0].url.params["fields"] == meta.TEMPLATE_FIELDS


def test_131047_is_outside_the_service_window_as_a_send_error_or_a_failed_status() -> None:
    error = fixture("error_131047_reengagement.json")
    response = httpx.Response(400, json={"error": error}, request=httpx.Request("POST", "https://graph/x"))

    refused = meta.error_for(response, "POST /messages")

    assert isinstance(refused, ProviderRejected)
    assert (refused.code, refused.provider_code) == ("outside_service_window", "131047")
    status = fixture("webhook_status_failed_131049.json")
    failed = status["entry"][0]["changes"][0]["value"]["statuses"][0]
    failed["errors"] = [error]
    [event] = meta.map_events(json.dumps(status).encode())
    assert (event.name, event.data["status"], event.data["reason"]) == ("receipt", "failed", "outside_service_window")


def test_a_template_status_change_is_bound_to_its_business_account() -> None:
    examples = fixture("template_status_updates.json")

    [approved] = meta.map_events(json.dumps(examples["approved"]).encode())
    [rejected] = meta.map_events(json.dumps(examples["rejected"]).encode())

    assert (approved.name, approved.binding, approved.binding_field) == (
        "template_status",
        "102290129340398",
        "waba_id",
    )
    assert approved.data == {
        "wabaId": "102290129340398",
        "name": "order_confirmation",
        "language": "en_US",
        "status": "APPROVED",
        "id": "1689556908129832",
        "category": "UTILITY",
        "reason": "NONE",
    }
    assert (rejected.data["status"], rejected.data["reason"]) == ("REJECTED", "INVALID_FORMAT")
    assert approved.event_id != rejected.event_id


OPTIONS = [Option(id="slot-09", title="09:00", description="Corte"), Option(id="slot-15", title="15:00")]
MENU = Interactive(
    kind="list",
    header="Agenda",
    body="Qual horário?",
    footer="Barbearia",
    button="Ver",
    sections=[Section(title="Amanhã", rows=OPTIONS)],
)


def test_a_text_menu_numbers_the_options_and_reads_a_typed_number_back() -> None:
    assert text_menu(MENU) == "*Agenda*\n\nQual horário?\n\n*Amanhã*\n1. 09:00 — Corte\n2. 15:00\n\n_Barbearia_"


@given(st.integers(min_value=-3, max_value=12), st.sampled_from(["{}", " {} ", "{}.", "*{}*", "{})"]))
def test_only_an_options_number_alone_is_an_answer(number: int, form: str) -> None:
    chosen = choice_for(form.format(number), OPTIONS)

    assert chosen == (OPTIONS[number - 1] if 1 <= number <= len(OPTIONS) else None)
    assert choice_for(f"quero o {number}", OPTIONS) is None


def test_wuzapi_sends_the_text_menu_and_evolution_a_native_list_but_buttons_as_a_menu() -> None:
    buttons = Interactive(kind="buttons", body="Confirma?", buttons=[Option(id="y", title="Sim")])

    wuzapi = wuzapi_send.request_for("5511988887777", MENU, "msg_1")
    listed = evolution_send.request_for("5511988887777", MENU)
    menu = evolution_send.request_for("5511988887777", buttons)

    assert (wuzapi.route, wuzapi.body["Body"], wuzapi.body["Id"]) == ("/chat/send/text", text_menu(MENU), "msg_1")
    assert listed.action == "sendList"
    assert listed.body["sections"] == [
        {
            "title": "Amanhã",
            "rows": [
                {"title": "09:00", "rowId": "slot-09", "description": "Corte"},
                {"title": "15:00", "rowId": "slot-15"},
            ],
        }
    ]
    assert (listed.body["footerText"], listed.body["buttonText"], listed.body["description"]) == (
        "Barbearia",
        "Ver",
        "Qual horário?",
    )
    assert (menu.action, menu.body["text"]) == ("sendText", text_menu(buttons))
    assert spec_for("evolution").interactive_native == {"list"} and spec_for("wuzapi").interactive_native == set()
    assert spec_for("meta").interactive_native == {"buttons", "list"}


PHOTO = b"\x89PNG\r\n\x1a\nthe menu of the day"
PHOTO_FILE = OutgoingFile(data=PHOTO, mime_type="image/png", sha256=hashlib.sha256(PHOTO).hexdigest())
WITH_PHOTO = Interactive(
    kind="buttons",
    body="<BUTTON_TEXT>",
    header_media=Media(kind="image"),
    buttons=[Option(id=f"<UNIQUE_BUTTON_ID_{i}>", title=f"<BUTTON_TITLE_{i}>") for i in (1, 2)],
)


def test_reply_buttons_with_a_file_header_leave_as_metas_header_object_names_it() -> None:
    assert meta_send.message_body("{{Recipient-Phone-Number}}", WITH_PHOTO, media_id="MEDIA_OBJECT_ID") == fixture(
        "send_interactive_buttons_image_header_request.json"
    )
    document = WITH_PHOTO.model_copy(update={"header_media": Media(kind="document", file_name="menu.pdf")})
    assert meta_send.interactive_object(document, "42")["header"] == {
        "type": "document",
        "document": {"id": "42", "filename": "menu.pdf"},
    }


def recorded(kind: str) -> tuple[Any, list[httpx.Request]]:
    """`kind`'s real client over a transport that records each request and answers it as its server does."""
    asked: list[httpx.Request] = []

    def server(request: httpx.Request) -> httpx.Response:
        asked.append(request)
        if request.url.path.endswith("/media"):
            return httpx.Response(200, json={"id": "meta-media-7"})
        if kind == "wuzapi":
            sent_id = json.loads(request.content)["Id"]
            return httpx.Response(200, json={"code": 200, "data": {"Details": "Sent", "Id": sent_id}, "success": True})
        if kind == "evolution":
            return httpx.Response(
                201, json={"key": {"remoteJid": "x@s.whatsapp.net", "fromMe": True, "id": f"e{len(asked)}"}}
            )
        return httpx.Response(200, json={"messaging_product": "whatsapp", "messages": [{"id": "wamid.menu"}]})

    client = spec_for(kind).client(local_mode=False, read_timeout=5, transport=httpx.MockTransport(server))
    return client, asked


def test_the_cloud_api_uploads_a_file_header_and_names_it_in_one_message() -> None:
    client, asked = recorded("meta")

    sent = client.send_content(TARGET, "5511988887777", WITH_PHOTO, "msg_1", file=PHOTO_FILE)

    assert [r.url.path for r in asked] == ["/v25.0/1065/media", "/v25.0/1065/messages"]
    assert json.loads(asked[1].content)["interactive"]["header"] == {"type": "image", "image": {"id": "meta-media-7"}}
    assert sent.provider_message_id == "wamid.menu"


def test_an_unofficial_kind_sends_a_file_header_first_then_the_menu() -> None:
    wuzapi, to_wuzapi = recorded("wuzapi")
    evolution, to_evolution = recorded("evolution")
    listed = MENU.model_copy(update={"header": None, "header_media": Media(kind="image")})
    target = ProviderTarget(
        kind="wuzapi", base_url="https://wz.example.test", provider_instance_id="i", instance_token="t"
    )

    by_wuzapi = wuzapi.send_content(target, "5511988887777", WITH_PHOTO, "msg_2", file=PHOTO_FILE)
    by_evolution = evolution.send_content(
        target.model_copy(update={"kind": "evolution"}), "5511988887777", listed, "msg_3", file=PHOTO_FILE
    )

    image, menu = (json.loads(request.content) for request in to_wuzapi)
    assert [r.url.path for r in to_wuzapi] == ["/chat/send/image", "/chat/send/text"]
    assert image["Image"] == data_url(PHOTO_FILE) and image["Id"] == "msg_2-header"
    assert (menu["Body"], menu["Id"]) == (text_menu(WITH_PHOTO), "msg_2")
    assert by_wuzapi.provider_message_id == "msg_2"  # the menu's: the one a typed answer answers
    assert [r.url.path for r in to_evolution] == ["/message/sendMedia/i", "/message/sendList/i"]
    assert json.loads(to_evolution[0].content)["mediatype"] == "image"
    assert json.loads(to_evolution[1].content)["title"] == ""
    assert by_evolution.provider_message_id == "e2"
