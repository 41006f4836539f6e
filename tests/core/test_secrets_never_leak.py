"""Secrets are write-only: never in a response, a log line or an error, and stored encrypted."""

from __future__ import annotations

from typing import Any

import boto3

from tools.support.api import SECRET_WATCH, Client
from tools.support.aws import AwsResources
from tools.support.provider_webhooks import build_catalog

WEBHOOK_SECRET = "whsec-very-secret-value-1"
ADMIN_TOKEN = "admin-token-very-secret-1"
INSTANCE_TOKEN = "instance-token-very-secret-1"
SECRETS = (WEBHOOK_SECRET, ADMIN_TOKEN, INSTANCE_TOKEN)


def test_secrets_are_write_only_and_stored_encrypted_outside_the_table(
    aws: AwsResources, client: Client, make_tenant: Any
) -> None:
    tenant = make_tenant("acme")
    created = build_catalog(
        client, tenant, webhook_secret=WEBHOOK_SECRET, admin_token=ADMIN_TOKEN, token=INSTANCE_TOKEN, kind="calls"
    ).answers

    bodies = [
        client.get(path, key=tenant.admin).body.decode()
        for path in (
            "/api/providers",
            f"/api/providers/{created['provider']['id']}",
            "/api/instances",
            "/api/instances/acme-main",
            "/api/api-keys",
        )
    ]
    assert created["provider"]["webhookSecretHint"] == "…ue-1"
    for body in bodies:
        for secret in (*SECRETS, tenant.admin):
            assert secret not in body

    items = boto3.resource("dynamodb").Table(aws.tables["MainTable"]).scan()["Items"]
    assert not [item for item in items if any(secret in str(item) for secret in (*SECRETS, tenant.admin))]
    parameters = boto3.client("ssm").describe_parameters()["Parameters"]
    assert {parameter["Type"] for parameter in parameters} == {"SecureString"}


def test_the_watch_catches_a_leak() -> None:
    SECRET_WATCH.secrets.add("a-secret-that-must-not-leak")
    try:
        SECRET_WATCH.assert_absent("oops a-secret-that-must-not-leak", "a test string")
    except AssertionError:
        return
    finally:
        SECRET_WATCH.secrets.discard("a-secret-that-must-not-leak")
    raise AssertionError("the watch did not notice the secret")


def test_a_secret_sent_in_a_bad_request_is_not_echoed(client: Client, make_tenant: Any) -> None:
    tenant = make_tenant("acme")
    answer = client.post(
        "/api/providers",
        key=tenant.admin,
        json_body={"name": "p", "kind": "nope", "baseUrl": "https://8.8.8.8", "webhookSecret": "leaky-secret-123456"},
    )
    assert answer.status == 422
    assert "leaky-secret-123456" not in answer.body.decode()
