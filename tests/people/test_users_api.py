"""People sign in through the user pool (moto's Cognito IdP, served): their access token and an
API key both pass the one authorizer on the same routes, with the same scopes and tenant
isolation; admins manage their own tenant's users; a disabled person is refused at once, on the
API and on live updates, whatever tokens they still hold."""

from __future__ import annotations

import base64
import hmac
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from devstack import template
from devstack.apigw import HttpApi
from devstack.aws_endpoint import AwsEndpoint
from switchboard import bootstrap
from switchboard.core.errors import Unauthenticated
from switchboard.core.identity import user_principal
from tools.support.api import Client, TenantKeys, new_platform_key, new_tenant
from tools.support.aws import REGION, AwsResources

PASSWORD = "Sb-first-Pass1"
NEW_PASSWORD = "Sb-second-Pass2"


@dataclass
class Pool:
    id: str
    client_id: str
    cognito: Any

    def sign_in(self, email: str, password: str, new_password: str | None = None) -> str:
        """The access token of a person, through the console's flow (USER_PASSWORD_AUTH, then
        NEW_PASSWORD_REQUIRED for an invited person)."""
        answer = self.cognito.initiate_auth(
            ClientId=self.client_id,
            AuthFlow="USER_PASSWORD_AUTH",
            AuthParameters={"USERNAME": email, "PASSWORD": password},
        )
        if answer.get("ChallengeName") == "NEW_PASSWORD_REQUIRED":
            assert new_password, "an invited person sets a new password first"
            answer = self.cognito.respond_to_auth_challenge(
                ClientId=self.client_id,
                ChallengeName="NEW_PASSWORD_REQUIRED",
                Session=answer["Session"],
                ChallengeResponses={"USERNAME": email, "NEW_PASSWORD": new_password},
            )
        return str(answer["AuthenticationResult"]["AccessToken"])


@pytest.fixture
def pool(served_aws: AwsResources, aws_endpoint: AwsEndpoint, monkeypatch: pytest.MonkeyPatch) -> Iterator[Pool]:
    cognito = boto3.client("cognito-idp", region_name=REGION, endpoint_url=aws_endpoint.url)
    refs = template.create_user_pools(cognito, template.LocalNames())
    pool_id, client_id = refs["UserPool"], refs["ConsoleUserPoolClient"]
    monkeypatch.setenv("USER_POOL_ID", pool_id)
    monkeypatch.setenv("USER_POOL_CLIENT_ID", client_id)
    monkeypatch.setenv("USER_POOL_JWKS_URL", f"{aws_endpoint.url}/{pool_id}/.well-known/jwks.json")
    bootstrap.reset()
    yield Pool(pool_id, client_id, cognito)
    cognito.close()


@pytest.fixture
def api(pool: Pool) -> Client:
    return Client(HttpApi())


@pytest.fixture
def acme(api: Client) -> TenantKeys:
    return new_tenant(api, new_platform_key(), "acme")


def invite(api: Client, key: str, email: str, role: str, password: str = PASSWORD) -> dict[str, Any]:
    answer = api.post("/api/users", key=key, json_body={"email": email, "role": role, "temporaryPassword": password})
    assert answer.status == 201, answer.body
    body: dict[str, Any] = answer.json()
    return body


def test_an_invited_attendant_signs_in_and_a_token_and_a_key_both_work_on_the_same_route(
    api: Client, pool: Pool, acme: TenantKeys
) -> None:
    invited = invite(api, acme.admin, "Ana@Acme.example.com", "attendant")
    assert invited["user"]["email"] == "ana@acme.example.com"
    assert invited["invitation"] == "password"
    assert "temporaryPassword" not in invited and PASSWORD not in str(invited)

    token = pool.sign_in("ana@acme.example.com", PASSWORD, NEW_PASSWORD)
    me = api.get("/api/me", key=token)
    assert me.status == 200, me.body
    assert me.json()["scopes"] == ["agent"]
    assert me.json()["attendantId"] == invited["user"]["id"]
    assert me.json()["name"] == "ana@acme.example.com"

    # The calls panel's route takes an agent's token and an admin key alike.
    assert api.get("/api/connections", key=token).status == 200
    assert api.get("/api/connections", key=acme.admin).status == 200
    # An attendant holds no admin scope: the users and keys screens are refused.
    assert api.get("/api/users", key=token).status == 403
    assert api.get("/api/api-keys", key=token).status == 403


def test_an_admin_person_manages_users_and_the_audit_log_names_them(api: Client, pool: Pool, acme: TenantKeys) -> None:
    invite(api, acme.admin, "boss@acme.example.com", "admin")
    admin = pool.sign_in("boss@acme.example.com", PASSWORD, NEW_PASSWORD)
    attendant = invite(api, admin, "ana@acme.example.com", "attendant")["user"]

    promoted = api.patch(f"/api/users/{attendant['id']}", key=admin, json_body={"role": "admin"})
    assert promoted.status == 200, promoted.body
    assert promoted.json()["role"] == "admin"
    listed = api.get("/api/users", key=admin).json()["users"]
    assert [(user["email"], user["role"]) for user in listed] == [
        ("ana@acme.example.com", "admin"),
        ("boss@acme.example.com", "admin"),
    ]
    entries = api.get("/api/audit", key=acme.admin).json()
    mine = [entry for entry in entries if entry["actor"] == "boss@acme.example.com"]
    assert {entry["action"] for entry in mine} == {"user.invite", "user.update"}
    assert all(entry["actorKeyId"] is None and entry["actorUser"] for entry in mine)


def test_an_admin_cannot_disable_or_demote_themselves(api: Client, pool: Pool, acme: TenantKeys) -> None:
    me = invite(api, acme.admin, "boss@acme.example.com", "admin")["user"]
    admin = pool.sign_in("boss@acme.example.com", PASSWORD, NEW_PASSWORD)
    assert api.patch(f"/api/users/{me['id']}", key=admin, json_body={"enabled": False}).status == 409
    assert api.patch(f"/api/users/{me['id']}", key=admin, json_body={"role": "attendant"}).status == 409


def test_another_tenants_user_sees_nothing_of_this_one(api: Client, pool: Pool, acme: TenantKeys) -> None:
    globex = new_tenant(api, new_platform_key(), "globex")
    ana = invite(api, acme.admin, "ana@acme.example.com", "attendant")["user"]
    invite(api, globex.admin, "gus@globex.example.com", "admin")
    gus = pool.sign_in("gus@globex.example.com", PASSWORD, NEW_PASSWORD)

    assert api.get("/api/me", key=gus).json()["tenant"] == "globex"
    assert [user["email"] for user in api.get("/api/users", key=gus).json()["users"]] == ["gus@globex.example.com"]
    assert api.patch(f"/api/users/{ana['id']}", key=gus, json_body={"enabled": False}).status == 404
    assert api.get("/api/users?ownerTag=acme", key=gus).status == 404
    # An email signs in to one tenant: another tenant cannot invite it again.
    again = api.post("/api/users", key=globex.admin, json_body={"email": "ana@acme.example.com", "role": "admin"})
    assert again.status == 409


def test_a_disabled_person_is_refused_at_once_with_the_token_they_hold(
    api: Client, pool: Pool, acme: TenantKeys
) -> None:
    ana = invite(api, acme.admin, "ana@acme.example.com", "attendant")["user"]
    token = pool.sign_in("ana@acme.example.com", PASSWORD, NEW_PASSWORD)
    assert api.get("/api/connections", key=token).status == 200

    assert api.patch(f"/api/users/{ana['id']}", key=acme.admin, json_body={"enabled": False}).status == 200
    assert api.get("/api/connections", key=token).status == 401
    assert api.get("/api/me", key=token).status == 401

    assert api.patch(f"/api/users/{ana['id']}", key=acme.admin, json_body={"enabled": True}).status == 200
    assert api.get("/api/connections", key=token).status == 200


def test_a_disabled_person_loses_their_live_connection_and_their_unused_ticket(
    api: Client, pool: Pool, acme: TenantKeys
) -> None:
    ana = invite(api, acme.admin, "ana@acme.example.com", "attendant")["user"]
    token = pool.sign_in("ana@acme.example.com", PASSWORD, NEW_PASSWORD)
    first = api.post("/api/live/tickets", key=token)
    second = api.post("/api/live/tickets", key=token)
    assert first.status == 201, first.body
    connections = bootstrap.connection_service()
    connection = connections.connect("conn-1", first.json()["ticket"])
    assert connection.principal == user_principal(ana["id"])
    assert connection.attendant == ana["id"]

    assert api.patch(f"/api/users/{ana['id']}", key=acme.admin, json_body={"enabled": False}).status == 200
    # What the notifier checks before each frame: the connection's grant is gone.
    allowed, revoked = bootstrap.live_access().split("acme", [connection])
    assert allowed == []
    assert [c.connection_id for c in revoked] == ["conn-1"]
    # A ticket issued before the disable opens nothing after it.
    with pytest.raises(Unauthenticated):
        connections.connect("conn-2", second.json()["ticket"])


def test_a_token_of_another_pool_client_or_a_forged_one_is_refused(api: Client, pool: Pool, acme: TenantKeys) -> None:
    invite(api, acme.admin, "ana@acme.example.com", "attendant")
    other = pool.cognito.create_user_pool_client(
        UserPoolId=pool.id, ClientName="other", ExplicitAuthFlows=["ALLOW_USER_PASSWORD_AUTH"]
    )["UserPoolClient"]["ClientId"]
    token = Pool(pool.id, other, pool.cognito).sign_in("ana@acme.example.com", PASSWORD, NEW_PASSWORD)
    assert api.get("/api/me", key=token).status == 401
    good = pool.sign_in("ana@acme.example.com", NEW_PASSWORD)
    head, body, signature = good.split(".")
    assert api.get("/api/me", key=f"{head}.{body}.{signature[:-4]}AAAA").status == 401


def test_the_console_signs_an_invited_person_in_on_the_apis_own_origin(api: Client, acme: TenantKeys) -> None:
    invite(api, acme.admin, "ana@acme.example.com", "attendant")
    wrong = api.post("/api/sign-in", json_body={"email": "ana@acme.example.com", "password": "not-it-at-all"})
    assert wrong.status == 401
    assert wrong.json()["error"] == "sign_in_refused"
    assert wrong.json()["field"] == "password"

    first = api.post("/api/sign-in", json_body={"email": "ana@acme.example.com", "password": PASSWORD})
    assert first.status == 200, first.body
    assert first.json()["challenge"] == "new_password_required"
    assert first.json()["accessToken"] is None
    signed = api.post(
        "/api/sign-in/new-password",
        json_body={"email": "ana@acme.example.com", "session": first.json()["session"], "newPassword": NEW_PASSWORD},
    )
    assert signed.status == 200, signed.body
    assert api.get("/api/me", key=signed.json()["accessToken"]).json()["scopes"] == ["agent"]

    refreshed = api.post("/api/sign-in/refresh", json_body={"refreshToken": signed.json()["refreshToken"]})
    assert refreshed.status == 200, refreshed.body
    assert api.get("/api/me", key=refreshed.json()["accessToken"]).status == 200


def test_a_disabled_person_cannot_sign_in_again(api: Client, pool: Pool, acme: TenantKeys) -> None:
    ana = invite(api, acme.admin, "ana@acme.example.com", "attendant")["user"]
    pool.sign_in("ana@acme.example.com", PASSWORD, NEW_PASSWORD)
    api.patch(f"/api/users/{ana['id']}", key=acme.admin, json_body={"enabled": False})
    again = api.post("/api/sign-in", json_body={"email": "ana@acme.example.com", "password": NEW_PASSWORD})
    assert again.status == 401
    assert again.json()["error"] == "sign_in_refused"


def totp(secret: str, at: float) -> str:
    """RFC 6238 (SHA-1, 30 s, 6 digits) from the base32 secret an authenticator app is given."""
    key = base64.b32decode(secret + "=" * (-len(secret) % 8), casefold=True)
    digest = hmac.new(key, (int(at) // 30).to_bytes(8, "big"), "sha1").digest()
    offset = digest[-1] & 15
    return f"{(int.from_bytes(digest[offset : offset + 4], 'big') & 0x7FFFFFFF) % 10**6:06d}"


def test_a_person_turns_on_an_authenticator_app_then_signs_in_with_its_code_and_turns_it_off(
    api: Client, pool: Pool, acme: TenantKeys, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MOTO_COGNITO_IDP_USER_POOL_ENABLE_TOTP", "true")  # moto then checks the codes
    invite(api, acme.admin, "ana@acme.example.com", "attendant")
    token = pool.sign_in("ana@acme.example.com", PASSWORD, NEW_PASSWORD)
    assert api.get("/api/me/authenticator", key=token).json() == {"enabled": False}
    # A key has no authenticator app.
    assert api.get("/api/me/authenticator", key=acme.admin).json()["error"] == "not_a_person"

    # The token alone makes no secret: the password proves the person first.
    assert api.post("/api/me/authenticator", key=token).status == 422
    wrong = api.post("/api/me/authenticator", key=token, json_body={"password": PASSWORD})
    assert (wrong.status, wrong.json()["error"], wrong.json()["field"]) == (403, "proof_refused", "password")
    made = api.post("/api/me/authenticator", key=token, json_body={"password": NEW_PASSWORD})
    assert made.status == 200, made.body
    secret = made.json()["secret"]
    assert made.json()["uri"] == (
        f"otpauth://totp/switchboard:ana@acme.example.com?secret={secret}"
        "&issuer=switchboard&algorithm=SHA1&digits=6&period=30"
    )
    wrong_code = f"{(int(totp(secret, time.time())) + 1) % 10**6:06d}"
    refused = api.post("/api/me/authenticator/confirm", key=token, json_body={"code": wrong_code})
    assert refused.status == 400
    assert (refused.json()["error"], refused.json()["field"]) == ("mfa_code_refused", "code")
    assert api.get("/api/me/authenticator", key=token).json() == {"enabled": False}
    confirmed = api.post("/api/me/authenticator/confirm", key=token, json_body={"code": totp(secret, time.time())})
    assert confirmed.json() == {"enabled": True}, confirmed.body

    first = api.post("/api/sign-in", json_body={"email": "ana@acme.example.com", "password": NEW_PASSWORD})
    assert first.status == 200, first.body
    assert (first.json()["challenge"], first.json()["accessToken"]) == ("software_token_mfa", None)
    body = {"email": "ana@acme.example.com", "session": first.json()["session"], "code": wrong_code}
    refused = api.post("/api/sign-in/mfa", json_body=body)
    assert refused.status == 401
    assert (refused.json()["error"], refused.json()["field"]) == ("mfa_code_refused", "code")
    signed = api.post("/api/sign-in/mfa", json_body=body | {"code": totp(secret, time.time())})
    assert signed.status == 200, signed.body
    second_token = signed.json()["accessToken"]
    assert api.get("/api/me", key=second_token).json()["scopes"] == ["agent"]

    # Replacing the app that is on needs its current code too, before a new secret is made.
    replace = api.post("/api/me/authenticator", key=second_token, json_body={"password": NEW_PASSWORD})
    assert (replace.status, replace.json()["error"], replace.json()["field"]) == (403, "proof_refused", "code")
    replace = api.post(
        "/api/me/authenticator", key=second_token, json_body={"password": NEW_PASSWORD, "code": wrong_code}
    )
    assert (replace.status, replace.json()["field"]) == (403, "code")
    replaced = api.post(
        "/api/me/authenticator",
        key=second_token,
        json_body={"password": NEW_PASSWORD, "code": totp(secret, time.time())},
    )
    assert replaced.status == 200, replaced.body

    # Turning it off: the token with a wrong password or code changes nothing.
    for proof, field in (
        ({"password": PASSWORD, "code": totp(secret, time.time())}, "password"),
        ({"password": NEW_PASSWORD, "code": wrong_code}, "code"),
    ):
        off = api.delete("/api/me/authenticator", key=second_token, json_body=proof)
        assert (off.status, off.json()["error"], off.json()["field"]) == (403, "proof_refused", field), off.body
    assert api.delete("/api/me/authenticator", key=second_token).status == 422
    assert api.get("/api/me/authenticator", key=second_token).json() == {"enabled": True}
    off = api.delete(
        "/api/me/authenticator",
        key=second_token,
        json_body={"password": NEW_PASSWORD, "code": totp(secret, time.time())},
    )
    assert off.json() == {"enabled": False}, off.body
    again = api.post("/api/sign-in", json_body={"email": "ana@acme.example.com", "password": NEW_PASSWORD})
    assert again.json()["accessToken"] and again.json()["challenge"] is None

    # The audit log names the person, never the password, the code or the secret.
    entries = api.get("/api/audit", key=acme.admin).json()
    actions = [entry["action"] for entry in entries]
    assert {"user.authenticator.enable", "user.authenticator.disable"} <= set(actions)
    logged = str(entries)
    assert NEW_PASSWORD not in logged and secret not in logged


def test_signing_out_refuses_every_token_of_the_person_at_once(api: Client, acme: TenantKeys) -> None:
    invite(api, acme.admin, "ana@acme.example.com", "attendant")
    first = api.post("/api/sign-in", json_body={"email": "ana@acme.example.com", "password": PASSWORD})
    signed = api.post(
        "/api/sign-in/new-password",
        json_body={"email": "ana@acme.example.com", "session": first.json()["session"], "newPassword": NEW_PASSWORD},
    ).json()
    token = signed["accessToken"]
    assert api.get("/api/me", key=token).status == 200

    assert api.post("/api/sign-out", key=token).status == 204

    assert api.get("/api/me", key=token).status == 401
    refreshed = api.post("/api/sign-in/refresh", json_body={"refreshToken": signed["refreshToken"]})
    assert (refreshed.status, refreshed.json()["error"]) == (401, "sign_in_refused")
    # A key is revoked, never signed out; the tenant's keys go on working.
    by_key = api.post("/api/sign-out", key=acme.admin)
    assert (by_key.status, by_key.json()["error"]) == (400, "not_a_person")
    assert api.get("/api/me", key=acme.admin).status == 200
