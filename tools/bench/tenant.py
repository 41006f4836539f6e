"""The tenant the in-process benchmarks send and receive for: its stack's environment on moto, and
its catalog of one provider server with one instance."""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING

import boto3

from devstack import template
from switchboard import bootstrap
from switchboard.catalog.domain import Number, Provider
from switchboard.core.identity import Principal, Scope
from switchboard.providers.kinds import ProviderKind

if TYPE_CHECKING:
    from switchboard.catalog.service import CatalogService

REGION = "us-east-1"
TENANT = "bench"
ADMIN = Principal(tenant=TENANT, key_id="bench-admin", scopes=frozenset({Scope.ADMIN}))


def environment(*, secrets_prefix: str, queues: Mapping[str, str], endpoint: str | None = None) -> None:
    """A function's variables for the bench stack on moto (in-process, or served at `endpoint`),
    its tables made and the `queues` (variable: the template's queue it names) with them."""
    names = template.LocalNames(prefix=TENANT)
    os.environ.update(
        {
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_DEFAULT_REGION": REGION,
            "TABLE_NAME": names.table("MainTable"),
            "IDEMPOTENCY_TABLE_NAME": names.table("IdempotencyTable"),
            "SECRETS_PREFIX": secrets_prefix,
            "LOCAL_MODE": "true",
        }
    )
    if endpoint:
        os.environ["AWS_ENDPOINT_URL"] = endpoint
    else:
        os.environ.pop("AWS_ENDPOINT_URL", None)
    session = boto3.session.Session()
    template.create_tables(session.client("dynamodb", region_name=REGION), names)
    made = template.create_queues(session.client("sqs", region_name=REGION), names)
    os.environ.update({variable: made[queue].url for variable, queue in queues.items()})
    bootstrap.reset()


def made() -> CatalogService:
    """The bench tenant, made by the platform; returns the catalog to fill it with `ADMIN`."""
    service = bootstrap.catalog_service()
    platform = Principal(tenant="_platform", key_id="bench", scopes=frozenset({Scope.PLATFORM}))
    service.create_tenant(platform, TENANT, TENANT)
    return service


def one_instance(
    number: Number,
    *,
    provider: str,
    kind: ProviderKind,
    base_url: str,
    webhook_secret: str,
    instance: str,
    provider_instance_id: str,
) -> Provider:
    """The bench tenant's provider server `provider` and its instance `instance` holding `number`;
    returns the provider."""
    service = bootstrap.catalog_service()
    made = service.create_provider(
        ADMIN,
        name=provider,
        kind=kind,
        base_url=base_url,
        webhook_secret=webhook_secret,
        admin_token=None,
        priority=0,
    )
    service.put_instance(
        ADMIN,
        name=instance,
        provider_id=made.id,
        provider_instance_id=provider_instance_id,
        number_id=number.id,
        token=secrets.token_urlsafe(24),
        priority=0,
        kind="messages",
        owner_tag=TENANT,
        owner_tag_given=True,
    )
    return made
