"""Builds the media capability over the media bucket: the ingest's claim check and the
forwarder's resolver and reader (one `S3Media`), reaching an instance's provider through its
target (the catalog and the secrets)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.bootstrap.catalog import catalog_repository
from switchboard.bootstrap.components import Components, component
from switchboard.bootstrap.providers import targets

if TYPE_CHECKING:
    from switchboard.media.service import S3Media
    from switchboard.providers.base import ProviderClient, ProviderTarget


@component
def message_media(c: Components) -> S3Media:
    """`MediaIntake`, `MediaResolver` and `MediaReader`; needs `MEDIA_BUCKET`."""
    from switchboard.core.errors import NotFound
    from switchboard.media.service import S3Media

    bucket = c.settings.media_bucket
    if not bucket:
        raise RuntimeError("MEDIA_BUCKET is not set")

    def target_of(instance_key: str) -> tuple[ProviderClient, ProviderTarget]:
        instance = catalog_repository(c).find_instance(instance_key)
        if instance is None:
            raise NotFound("the instance is no longer in the catalog")
        return targets(c).target_for(instance)

    return S3Media(c.client("s3"), bucket, target_of)
