"""Revocation reaches open sockets: on the whole local stack (the WebSocket API and its
@connections served by the devstack), an admin's open console socket is closed as soon as its
key is deleted, or demoted to `send`, while another admin's socket goes on receiving frames."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from devstack.seed import SeededTenant
from tests.e2e.conftest import Stack
from tests.support.revocation import status_within

CLOSE_WITHIN_SECONDS = 5.0


@contextmanager
def live_socket(stack: Stack, key: str) -> Iterator[ClientConnection]:
    answer = stack.api("POST", "/api/live/tickets", key=key)
    assert answer.status_code == 201, answer.text
    ticket = answer.json()
    with connect(f"{ticket['url']}?ticket={ticket['ticket']}", open_timeout=10, close_timeout=2) as socket:
        yield socket


def poke(stack: Stack, tenant: SeededTenant) -> None:
    """A change that puts one `pool.changed` event of the tenant on the bus: the send key's
    selection mode, flipped."""
    current = stack.api("GET", f"/api/api-keys/{tenant.send_key_id}", key=tenant.admin_key).json()
    mode = "default" if current["numberSelectionMode"] == "pool" else "pool"
    answer = stack.api(
        "PUT",
        f"/api/api-keys/{tenant.send_key_id}/selection-mode",
        key=tenant.admin_key,
        json={"numberSelectionMode": mode},
    )
    assert answer.status_code == 200, answer.text


def next_pool_frame(socket: ClientConnection, timeout: float = 10.0) -> dict[str, Any]:
    """The next `pool.changed` frame (other events of the tenant may come first)."""
    deadline = time.monotonic() + timeout
    while True:
        frame = json.loads(socket.recv(timeout=max(0.1, deadline - time.monotonic())))
        if frame["type"] == "pool.changed":
            return dict(frame)


def closed_within(socket: ClientConnection, seconds: float) -> float:
    """Seconds until the server closed the socket (frames sent before the close are read past)."""
    started = time.monotonic()
    with pytest.raises(ConnectionClosed):
        while True:
            socket.recv(timeout=max(0.1, seconds - (time.monotonic() - started)))
    return time.monotonic() - started


@pytest.mark.parametrize("revocation", ["deleted", "demoted to send"])
def test_given_an_admins_open_socket_when_its_key_is_revoked_then_it_is_closed_and_gets_no_more_frames(
    stack: Stack, fresh_tenant: SeededTenant, revocation: str
) -> None:
    created = stack.api(
        "POST", "/api/api-keys", key=fresh_tenant.admin_key, json={"name": "leaving admin", "scopes": ["admin"]}
    )
    assert created.status_code == 201, created.text
    leaving, leaving_id = created.json()["key"], created.json()["id"]

    with live_socket(stack, leaving) as revoked, live_socket(stack, fresh_tenant.admin_key) as watcher:
        poke(stack, fresh_tenant)
        assert next_pool_frame(revoked)["detail"]["tenant"] == fresh_tenant.owner_tag
        assert next_pool_frame(watcher)["detail"]["tenant"] == fresh_tenant.owner_tag

        if revocation == "deleted":
            answer = stack.api("DELETE", f"/api/api-keys/{leaving_id}", key=fresh_tenant.admin_key)
            assert answer.status_code == 204, answer.text
        else:
            answer = stack.api(
                "PATCH", f"/api/api-keys/{leaving_id}", key=fresh_tenant.admin_key, json={"scopes": ["send"]}
            )
            assert answer.status_code == 200, answer.text
        took = closed_within(revoked, CLOSE_WITHIN_SECONDS)

        assert revoked.close_code == 1000
        poke(stack, fresh_tenant)
        assert next_pool_frame(watcher)["detail"]["tenant"] == fresh_tenant.owner_tag
        print(f"socket of a key {revocation}: closed {took * 1000:.0f} ms after the answer")
    refused = 401 if revocation == "deleted" else 403
    assert status_within(lambda: stack.api("POST", "/api/live/tickets", key=leaving).status_code, refused) == refused
