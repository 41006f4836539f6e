"""Where a message's file lives in the media bucket.

`<owner tag or _platform>/<instance>/<sha256 of the message id>/<sha256 of the bytes>`: the
tenant's prefix first (a lifecycle or an export per tenant), then one folder per message, so
that a message's file is found by its id alone (a retried download after a crash), and the
bytes' own digest last (a redelivery of the same bytes writes the same object). A key never
holds a secret, a phone number or a provider URL: the message id is hashed too.
"""

from __future__ import annotations

import hashlib
import re

PLATFORM_PREFIX = "_platform"
_SAFE = re.compile(r"[^A-Za-z0-9_.=-]")


def _segment(value: str) -> str:
    """`value` as one key segment: characters S3 keys keep readable, nothing that adds a level."""
    cleaned = _SAFE.sub("_", value)[:128]
    return cleaned or "_"


def message_prefix(owner_tag: str | None, instance: str, message_id: str) -> str:
    digest = hashlib.sha256(message_id.encode()).hexdigest()
    return f"{_segment(owner_tag or PLATFORM_PREFIX)}/{_segment(instance)}/{digest}/"


def media_key(owner_tag: str | None, instance: str, message_id: str, sha256: str) -> str:
    return message_prefix(owner_tag, instance, message_id) + sha256
