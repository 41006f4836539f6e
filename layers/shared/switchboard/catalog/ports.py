"""The catalog as other capabilities read it."""

from __future__ import annotations

from typing import Protocol

from switchboard.catalog.domain import Instance


class Instances(Protocol):
    def find_instance(self, key: str) -> Instance | None: ...
    def get_instance(self, tenant: str, name: str) -> Instance: ...
