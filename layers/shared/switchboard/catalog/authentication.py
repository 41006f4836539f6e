"""The authorizer's key lookups, kept per container for a few seconds.

Every API request passes the authorizer, and a warm container sees the same few keys again and
again, so it answers a key it looked up less than `ttl_seconds` ago from memory. That bounds
revocation: a deleted key, or one whose scopes changed, is answered as before for at most
`ttl_seconds` per container, then looked up again (the send worker's sending configuration has
the same bound). Only found keys are kept: an unknown key is looked up every time, so a flood of
made-up keys neither fills the cache nor delays a new key. The cache is keyed by the key's hash,
the same digest the table is keyed by, so the secret itself is never held past the call.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol

from switchboard.catalog.domain import hash_key, looks_like_key
from switchboard.core.identity import Principal
from switchboard.people.tokens import looks_like_token

MAX_KEYS = 1024  # far above the keys one container serves at once; the oldest goes first


class Grants(Protocol):
    def principal_for_digest(self, digest: str) -> Principal | None: ...


class KeyAuthenticator:
    def __init__(
        self,
        grants: Grants,
        *,
        ttl_seconds: float,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = MAX_KEYS,
    ) -> None:
        self._grants = grants
        self._ttl = ttl_seconds
        self._clock = clock
        self._max_keys = max_keys
        self._cache: OrderedDict[str, tuple[float, Principal]] = OrderedDict()
        self._lock = threading.Lock()

    def authenticate(self, bearer: str) -> Principal | None:
        """The principal a presented key stands for, or None. Only the key's hash is looked up."""
        if not looks_like_key(bearer):
            return None
        digest = hash_key(bearer)
        now = self._clock()
        with self._lock:
            cached = self._cache.get(digest)
        if cached is not None and now - cached[0] < self._ttl:
            return cached[1]
        principal = self._grants.principal_for_digest(digest)
        with self._lock:
            if principal is None or self._ttl <= 0:
                self._cache.pop(digest, None)
            else:
                self._cache[digest] = (now, principal)
                self._cache.move_to_end(digest)
                while len(self._cache) > self._max_keys:
                    self._cache.popitem(last=False)
        return principal


class TokenAuthenticator(Protocol):
    def authenticate(self, token: str) -> Principal | None: ...


class Authenticator:
    """Every request's credential: an API key (apps, the platform operator) or a person's access
    token from the user pool (the console). HTTP API gives each route one authorizer, so this one
    authorizer takes both rather than a JWT authorizer beside it: a route a scope allows then
    takes a key and a token alike, and both pass the same revocation checks."""

    def __init__(self, keys: KeyAuthenticator, users: TokenAuthenticator | None) -> None:
        self._keys = keys
        self._users = users

    def authenticate(self, bearer: str) -> Principal | None:
        if looks_like_key(bearer):
            return self._keys.authenticate(bearer)
        if self._users is not None and looks_like_token(bearer):
            return self._users.authenticate(bearer)
        return None
