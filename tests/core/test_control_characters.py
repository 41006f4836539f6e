"""NUL and the other C0/C1 control characters are refused in names and texts (422); message
texts keep the line breaks and tabs WhatsApp carries."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from switchboard.catalog.schemas import (
    CreateApiKey,
    CreateNumber,
    CreateProvider,
    CreateTenant,
    PutInstance,
    UpdateApiKey,
)
from switchboard.messages.schemas import SendMessage
from switchboard.pool.schemas import AddPoolNumber
from switchboard.routing.reply_schemas import OutgoingWebhook
from tools.support.api import Client

CONTROLS = ["\x00", "\x01", "\x08", "\x0b", "\x1b", "\x7f", "\x85", "\x9b", "\ud800"]
PROVIDER = {"name": "zap", "kind": "wuzapi", "baseUrl": "https://zap.example", "webhookSecret": "s" * 32}
INSTANCE = {"providerId": "p1", "providerInstanceId": "inst-1", "numberId": "n1", "token": "t" * 16}
# (schema, a valid body, the field that gets the control character)
FIELDS: list[tuple[type[BaseModel], dict[str, Any], str]] = [
    (CreateTenant, {"ownerTag": "acme", "name": "Acme"}, "name"),
    (CreateApiKey, {"name": "web", "scopes": ["send"]}, "name"),
    (CreateApiKey, {"name": "agent", "scopes": ["agent"], "attendantId": "maria"}, "attendantId"),
    (UpdateApiKey, {"name": "web"}, "name"),
    (CreateNumber, {"number": "5511999990001", "displayName": "Main"}, "displayName"),
    (CreateProvider, PROVIDER, "name"),
    (CreateProvider, PROVIDER, "webhookSecret"),
    (PutInstance, INSTANCE, "providerInstanceId"),
    (PutInstance, INSTANCE, "token"),
    (AddPoolNumber, {"whatsappNumberId": "n1"}, "whatsappNumberId"),
    (SendMessage, {"to": "5511988887777", "text": "hello"}, "text"),
    (OutgoingWebhook, {"event": "message_created", "content": "hello"}, "content"),
]


@pytest.mark.parametrize("control", CONTROLS, ids=[f"U+{ord(c):04X}" for c in CONTROLS])
@pytest.mark.parametrize(("schema", "body", "name"), FIELDS, ids=[f"{s.__name__}.{n}" for s, _, n in FIELDS])
def test_a_control_character_in_a_name_or_text_is_refused(
    schema: type[BaseModel], body: dict[str, Any], name: str, control: str
) -> None:
    schema.model_validate(body)  # the body is valid without it

    with pytest.raises(ValidationError) as refused:
        schema.model_validate({**body, name: f"{body[name]}{control}x"})

    assert [error["loc"][-1] for error in refused.value.errors()] == [name]


def test_a_message_text_keeps_line_breaks_and_tabs_a_name_does_not() -> None:
    text = "Olá!\r\n\tLinha 2\n😀"

    assert SendMessage.model_validate({"to": "5511988887777", "text": text}).text == text
    assert OutgoingWebhook.model_validate({"event": "message_created", "content": text}).content == text
    with pytest.raises(ValidationError):
        CreateTenant.model_validate({"ownerTag": "acme", "name": "Acme\nCorp"})


def test_through_the_api_a_nul_in_a_name_is_422_validation_error(client: Client, platform_key: str) -> None:
    answer = client.post("/api/tenants", key=platform_key, json_body={"ownerTag": "acme", "name": "Ac\u0000me"})

    assert answer.status == 422
    assert answer.json()["error"] == "validation_error"
    assert "name" in answer.json()["message"]
    assert client.get("/api/tenants/acme", key=platform_key).status == 404
