"""The webhook of an instance on a real server (wuzapi, Evolution, Meta): one URL, one secret."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from devstack.simulator.model import Hook, Instance, SimError
from devstack.simulator.schemas import CreateInstanceBody


def initial_events(body: CreateInstanceBody, defaults: Sequence[str]) -> list[str]:
    """Default events only with a URL: a server user nobody configured subscribes to nothing."""
    given = body.webhook_events
    return list(given if given is not None else defaults if body.webhook_url else [])


def new_hook(body: CreateInstanceBody, events: list[str]) -> Hook:
    return Hook(url=body.webhook_url or "", events=events, live_events=list(events), secret=body.webhook_secret)


def hook_view(instance: Instance, webhook_format: str = "json") -> dict[str, Any]:
    """The control view's `webhook`: never the secret."""
    hook = instance.hook
    return {
        "url": hook.url,
        "events": list(hook.events),
        "liveEvents": list(hook.live_events),
        "format": webhook_format,
        "hasSecret": hook.secret is not None,
    }


def replace_secret(instance: Instance, secret: str, previous_secret: str | None) -> None:
    """The HMAC key, `jwt_key` or app secret: the new one at once (no rotation on these servers)."""
    if previous_secret is not None:
        raise SimError(400, "no_rotation", "this server signs with one secret at a time")
    instance.hook.secret = secret
