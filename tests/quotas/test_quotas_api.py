"""Quotas through the gateway emulator and the template's functions, on moto: a flooding tenant is
refused with 429 and Retry-After while another keeps being served, the platform's overrides and
their audit, and the messages per day on POST /api/messages."""

from __future__ import annotations

from collections.abc import Callable

from tools.support.api import Client, TenantKeys
from tools.support.aws import AwsResources


def send_key(client: Client, tenant: TenantKeys) -> str:
    created = client.post("/api/api-keys", key=tenant.admin, json_body={"name": "app", "scopes": ["send"]})
    assert created.status == 201, created.body
    return str(created.json()["key"])


def test_a_flood_from_one_tenant_is_refused_with_retry_after_while_another_tenant_is_served(
    client: Client, platform_key: str, make_tenant: Callable[..., TenantKeys]
) -> None:
    flood, quiet = make_tenant("flood"), make_tenant("quiet")
    limited = client.put(
        "/api/tenants/flood/quotas", key=platform_key, json_body={"requestsPerSecond": 0.5, "burst": 5}
    )
    assert limited.status == 200, limited.body

    flood_answers, quiet_answers = [], []
    for _ in range(20):
        flood_answers.append(client.get("/api/numbers", key=flood.admin))
        quiet_answers.append(client.get("/api/numbers", key=quiet.admin))

    assert [answer.status for answer in flood_answers[:5]] == [200] * 5
    refused = [answer for answer in flood_answers if answer.status == 429]
    assert len(refused) >= 10  # 20 asked, 5 of burst and a token every 2 s
    for answer in refused:
        assert answer.json()["error"] == "rate_limited"
        assert answer.json()["message"]
        assert int(answer.headers["retry-after"]) >= 1
    assert {answer.status for answer in quiet_answers} == {200}


def test_a_refused_scope_counts_against_the_rate_too(
    client: Client, platform_key: str, make_tenant: Callable[..., TenantKeys]
) -> None:
    tenant = make_tenant("acme")
    client.put("/api/tenants/acme/quotas", key=platform_key, json_body={"keyRequestsPerSecond": 0.1, "keyBurst": 3})

    statuses = [client.get("/api/tenants", key=tenant.admin).status for _ in range(5)]  # platform-only route

    assert statuses == [403, 403, 403, 429, 429]


def test_the_platform_overrides_a_tenants_quotas_its_admin_reads_them_and_the_change_is_audited(
    client: Client, platform_key: str, make_tenant: Callable[..., TenantKeys]
) -> None:
    acme = make_tenant("acme")
    make_tenant("other")

    defaults = client.get("/api/tenants/acme/quotas", key=platform_key)
    assert defaults.status == 200, defaults.body
    assert defaults.json() == {
        "requestsPerSecond": 50.0,
        "burst": 300,
        "keyRequestsPerSecond": 25.0,
        "keyBurst": 150,
        "messagesPerDay": 100_000,
        "messagesToday": 0,
        "overridden": [],
    }

    changed = client.put("/api/tenants/acme/quotas", key=platform_key, json_body={"burst": 500, "messagesPerDay": 10})
    assert changed.status == 200, changed.body
    assert changed.json()["burst"] == 500
    assert changed.json()["requestsPerSecond"] == 50.0
    assert changed.json()["overridden"] == ["burst", "messagesPerDay"]
    assert client.get("/api/tenants/acme/quotas", key=acme.admin).json() == changed.json()

    audit = client.get("/api/audit", key=acme.admin).json()
    entry = next(entry for entry in audit if entry["action"] == "quotas.updated")
    assert entry["target"] == "acme"
    assert entry["before"] is None
    assert entry["after"]["overrides"]["burst"] == 500

    reset = client.put("/api/tenants/acme/quotas", key=platform_key, json_body={})
    assert reset.json()["overridden"] == []
    assert reset.json()["burst"] == 300


def test_only_the_platform_changes_quotas_and_an_admin_reads_only_its_own(
    client: Client, platform_key: str, make_tenant: Callable[..., TenantKeys]
) -> None:
    acme, other = make_tenant("acme"), make_tenant("other")

    assert client.put("/api/tenants/acme/quotas", key=acme.admin, json_body={"burst": 10_000}).status == 403
    assert client.get("/api/tenants/acme/quotas", key=other.admin).status == 404
    assert client.get("/api/tenants/nobody/quotas", key=platform_key).status == 404
    assert client.put("/api/tenants/nobody/quotas", key=platform_key, json_body={"burst": 5}).status == 404
    for invalid in ({"burst": 0}, {"requestsPerSecond": -1}, {"messagesPerDay": "10"}, {"unknown": 1}):
        assert client.put("/api/tenants/acme/quotas", key=platform_key, json_body=invalid).status == 422, invalid


def test_sends_over_the_daily_quota_are_refused_until_the_next_utc_day_and_replays_are_not_counted(
    client: Client, platform_key: str, make_tenant: Callable[..., TenantKeys], aws: AwsResources
) -> None:
    tenant = make_tenant("acme")
    key = send_key(client, tenant)
    client.put("/api/tenants/acme/quotas", key=platform_key, json_body={"messagesPerDay": 2})

    def send(number: int, idempotency_key: str | None = None) -> tuple[int, dict[str, str], dict[str, str]]:
        headers = {"idempotency-key": idempotency_key} if idempotency_key else {}
        answer = client.post(
            "/api/messages", key=key, json_body={"to": f"551198888000{number}", "text": "hi"}, headers=headers
        )
        return answer.status, answer.json(), answer.headers

    assert send(1, "first")[0] == 202
    assert send(1, "first")[0] == 202  # the same Idempotency-Key: answered again, not counted again
    assert send(2)[0] == 202
    status, body, headers = send(3)
    assert status == 429
    assert body["error"] == "daily_quota_exceeded"
    assert 1 <= int(headers["retry-after"]) <= 24 * 3600
    assert client.get("/api/tenants/acme/quotas", key=tenant.admin).json()["messagesToday"] == 2
    assert len(aws.queue_messages("SendQueue")) == 2  # the refused one was neither stored nor queued
