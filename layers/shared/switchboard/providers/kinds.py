"""The provider kinds switchboard speaks: one module each, one line each in `MODULES`.

A kind's module owns everything that is specific to it: its outbound client, how its webhooks
are authenticated, how their payloads map to our events, and its capabilities (`KIND`, a
`ProviderKindSpec`). Nothing else in switchboard branches on a kind's name.
"""

from __future__ import annotations

from functools import cache
from importlib import import_module
from typing import TYPE_CHECKING, Literal, get_args

if TYPE_CHECKING:
    from switchboard.providers.base import ProviderKindSpec

ProviderKind = Literal["wuzapi", "evolution", "meta"]

# How a provider's deliveries are authenticated. A kind may have several; a provider uses exactly
# one, stored with it when it is saved, so a request can never choose how it is checked:
# - envelope: the calls-capable server, HMAC over `timestamp + "." + body`, `X-Webhook-Signature`;
# - wuzapi-hmac: a plain wuzapi, HMAC over the body, `x-hmac-signature`;
# - evolution-jwt: Evolution's `Authorization: Bearer` HS256 token made with the webhook's `jwt_key`;
# - evolution-apikey: Evolution's body `apikey`, the token of the instance it names;
# - meta-signature: the Cloud API's `X-Hub-Signature-256`, HMAC over the body with the app secret.
WebhookScheme = Literal["envelope", "wuzapi-hmac", "evolution-jwt", "evolution-apikey", "meta-signature"]

MODULES: dict[ProviderKind, str] = {
    "wuzapi": "switchboard.providers.wuzapi",
    "evolution": "switchboard.providers.evolution",
    "meta": "switchboard.providers.meta",
}
assert set(MODULES) == set(get_args(ProviderKind)), "every kind has its module"


@cache
def spec_for(kind: str) -> ProviderKindSpec:
    """The kind's spec, its module imported on first use (a function pays only for the kinds it meets)."""
    try:
        module = MODULES[kind]  # type: ignore[index]  # any string is looked up: an unknown kind is the KeyError below
    except KeyError:
        raise ValueError(f"unknown provider kind: {kind!r}") from None
    spec: ProviderKindSpec = import_module(module).KIND
    return spec
