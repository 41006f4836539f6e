"""Builds the template cache and the template service once per container."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from switchboard.bootstrap.catalog import catalog_repository
from switchboard.bootstrap.components import Components, component
from switchboard.bootstrap.core import secrets, table
from switchboard.bootstrap.pool import sending_config_source
from switchboard.bootstrap.providers import provider_client

if TYPE_CHECKING:
    from switchboard.providers.base import ProviderClient
    from switchboard.templates.service import TemplateService


@component
def template_service(c: Components) -> TemplateService:
    """The send API checks each template through it; the catalog API lists a number's; the
    webhook ingest applies the account's status changes."""
    from switchboard.templates.dynamo import TemplateCacheRepository
    from switchboard.templates.service import TemplateService

    client_for = provider_client(c)
    return TemplateService(
        catalog_repository(c),
        TemplateCacheRepository(table(c)),
        sending_config_source(c),
        secrets=secrets(c),
        # A route's kind is one the catalog accepted: a provider kind.
        client_for=cast("Callable[[str], ProviderClient]", client_for),
    )
