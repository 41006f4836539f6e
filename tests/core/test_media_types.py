"""A body is read only in a media type its route takes (RFC 9110: case-insensitive, parameters
aside); anything else, or a body without a Content-Type, is 415 `unsupported_media_type`. What
every provider and the helpdesk really send on their webhooks is taken."""

from __future__ import annotations

import json
from typing import Annotated, Any

import pytest
from aws_lambda_powertools.event_handler.openapi.params import Body as BodyParam
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from switchboard.core.api.app import create_api
from switchboard.core.api.validation import MediaTypeValidation
from switchboard.core.wire import Body
from tools.support.api import Client
from tools.support.provider_webhooks import Catalog, envelope, message_data, signed_headers

NUMBER = b'{"number": "5511999990042", "displayName": "Sales"}'
TAKEN = [
    "application/json",
    "APPLICATION/JSON; charset=utf-8",
    "Application/Json ;charset=UTF-8",
    "application/json;x=y",
]
REFUSED = [
    "application/jsonx",
    "application/json-patch+json",
    "application/merge-patch+json",
    "text/plain",
    "text/json",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "json",
    "application/",
]


@pytest.mark.parametrize("content_type", TAKEN)
def test_json_in_any_letter_case_with_parameters_is_read(client: Client, catalog: Catalog, content_type: str) -> None:
    answer = client.post("/api/numbers", key=catalog.tenant.admin, body=NUMBER, headers={"content-type": content_type})

    assert answer.status == 201, answer.body


@pytest.mark.parametrize("content_type", REFUSED)
def test_another_media_type_is_415_and_nothing_is_created(client: Client, catalog: Catalog, content_type: str) -> None:
    answer = client.post("/api/numbers", key=catalog.tenant.admin, body=NUMBER, headers={"content-type": content_type})

    assert (answer.status, answer.json()["error"]) == (415, "unsupported_media_type")
    assert "application/json" in answer.json()["message"]
    assert [n["number"] for n in client.get("/api/numbers", key=catalog.tenant.admin).json()] == ["5511999990001"]


def test_a_body_without_a_content_type_is_415(client: Client, catalog: Catalog) -> None:
    authorization = {"authorization": f"Bearer {catalog.tenant.admin}"}
    answer = client._api.handle("POST", "/api/numbers", headers=authorization, body=NUMBER)

    assert (answer.status, answer.json()["error"]) == (415, "unsupported_media_type")


def test_no_body_and_no_content_type_is_a_missing_body_not_a_media_type(client: Client, catalog: Catalog) -> None:
    authorization = {"authorization": f"Bearer {catalog.tenant.admin}"}
    answer = client._api.handle("POST", "/api/numbers", headers=authorization)

    assert (answer.status, answer.json()["error"]) == (422, "validation_error")


# --- a route that takes a `+json` type --------------------------------------------------------


class Patch(Body):
    name: str


def merge_patch_api() -> Any:
    router = APIGatewayHttpRouter()

    @router.patch("/things/<thing>")
    def patch_thing(
        thing: str, body: Annotated[Patch, BodyParam(media_type="application/merge-patch+json")]
    ) -> dict[str, str]:
        return {"thing": thing, "name": body.name}

    return create_api(router)


def event(content_type: str | None, body: str) -> dict[str, Any]:
    headers = {"content-type": content_type} if content_type else {}
    return {
        "version": "2.0",
        "routeKey": "PATCH /things/{thing}",
        "rawPath": "/things/t1",
        "rawQueryString": "",
        "headers": headers,
        "requestContext": {"http": {"method": "PATCH", "path": "/things/t1"}, "stage": "$default"},
        "body": body,
        "isBase64Encoded": False,
    }


def test_a_route_declaring_a_json_suffix_type_takes_it_and_refuses_plain_json() -> None:
    api = merge_patch_api()
    assert isinstance(api._request_validation_middleware, MediaTypeValidation)
    body = json.dumps({"name": "x"})

    taken = api.resolve(event("Application/Merge-Patch+JSON; charset=utf-8", body), None)
    plain = api.resolve(event("application/json", body), None)

    assert (taken["statusCode"], json.loads(taken["body"])) == (200, {"thing": "t1", "name": "x"})
    assert (plain["statusCode"], json.loads(plain["body"])["error"]) == (415, "unsupported_media_type")
    assert "application/merge-patch+json" in json.loads(plain["body"])["message"]
    document = api.get_openapi_schema().model_dump(by_alias=True, exclude_none=True)
    assert list(document["paths"]["/things/{thing}"]["patch"]["requestBody"]["content"]) == [
        "application/merge-patch+json"
    ]


# --- webhooks: what the providers and the helpdesk send -------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json",  # wuzapi WEBHOOK_FORMAT=json, Meta, the calls-capable server
        "application/json;charset=utf-8",  # Evolution API through older axios
        "application/x-www-form-urlencoded",  # wuzapi's default form mode (resty SetFormData)
    ],
)
def test_a_provider_webhook_in_a_media_type_a_provider_sends_is_not_refused_for_it(
    client: Client, catalog: Catalog, content_type: str
) -> None:
    body = envelope("message", catalog.provider_instance_id, message_data(), seq=1)

    answer = client.post(
        f"/webhooks/{catalog.provider_id}", body=body, headers={**signed_headers(body), "content-type": content_type}
    )

    assert answer.status != 415, answer.body


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/jsonx", "application/xml"])
def test_a_provider_webhook_in_another_media_type_or_none_is_415(
    client: Client, catalog: Catalog, content_type: str | None
) -> None:
    body = envelope("message", catalog.provider_instance_id, message_data(), seq=1)
    headers = {**signed_headers(body), **({"content-type": content_type} if content_type else {})}

    answer = client._api.handle("POST", f"/webhooks/{catalog.provider_id}", headers=headers, body=body)

    assert (answer.status, answer.json()["error"]) == (415, "unsupported_media_type")


def test_the_helpdesk_reply_webhook_takes_json_and_refuses_text(client: Client, catalog: Catalog) -> None:
    secret = client.post(f"/api/instances/{catalog.instance}/webhook-secret", key=catalog.tenant.admin).json()
    target = f"/api/tenants/acme/instances/{catalog.instance}/webhook?token={secret['secret']}"
    body = json.dumps({"event": "conversation_created"}).encode()

    as_chatwoot_sends = client.post(target, body=body, headers={"content-type": "application/json"})
    as_text = client.post(target, body=body, headers={"content-type": "text/plain"})

    assert as_chatwoot_sends.status == 200, as_chatwoot_sends.body
    assert (as_text.status, as_text.json()["error"]) == (415, "unsupported_media_type")
