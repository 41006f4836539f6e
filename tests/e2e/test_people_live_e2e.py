"""A disabled person's open console socket is closed at once, on the whole local stack (the
devstack's WebSocket API and @connections, moto's user pool): the users function tells the live
access the person's grant changed, and the person's token opens no new socket after it."""

from __future__ import annotations

import secrets

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from devstack.seed import SeededTenant
from tests.e2e.conftest import Stack

CLOSE_WITHIN_SECONDS = 5.0


def _access_token(local_stack: Stack, email: str, password: str) -> str:
    answer = local_stack.api("POST", "/api/sign-in", json={"email": email, "password": password})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    if body.get("challenge"):
        chosen = f"Own{secrets.token_hex(6)}Z9"
        answer = local_stack.api(
            "POST",
            "/api/sign-in/new-password",
            json={"email": email, "session": body["session"], "newPassword": chosen},
        )
        assert answer.status_code == 200, answer.text
        body = answer.json()
    return str(body["accessToken"])


def test_a_disabled_attendants_open_socket_is_closed_and_their_token_opens_no_other(
    stack: Stack,
    fresh_tenant: SeededTenant,
) -> None:
    email = f"ana@{fresh_tenant.owner_tag}.example.com"
    temporary = f"Temp{secrets.token_hex(6)}A1"
    invited = stack.api(
        "POST",
        "/api/users",
        key=fresh_tenant.admin_key,
        json={"email": email, "role": "attendant", "temporaryPassword": temporary},
    )
    assert invited.status_code == 201, invited.text
    user_id = invited.json()["user"]["id"]
    token = _access_token(stack, email, temporary)

    ticket = stack.api("POST", "/api/live/tickets", key=token)
    assert ticket.status_code == 201, ticket.text
    with connect(
        f"{ticket.json()['url']}?ticket={ticket.json()['ticket']}", open_timeout=10, close_timeout=2
    ) as socket:
        disabled = stack.api("PATCH", f"/api/users/{user_id}", key=fresh_tenant.admin_key, json={"enabled": False})
        assert disabled.status_code == 200, disabled.text
        with pytest.raises(ConnectionClosed):
            while True:
                socket.recv(timeout=CLOSE_WITHIN_SECONDS)
    assert stack.api("POST", "/api/live/tickets", key=token).status_code == 401
    assert stack.api("GET", "/api/connections", key=token).status_code == 401
