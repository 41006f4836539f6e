"""Template use cases: a number's templates (listed, refreshed), a send checked against its
template before it is queued, and a template's status change from the account's webhook.

The Graph API is asked (`GET /{waba-id}/message_templates`, through the number's Cloud API route:
its instance's access token, else its provider's admin token) only when the cache has nothing
fresher than `ttl_seconds` for the account, or on a refresh asked for. Meta's status changes reach
the cache between reads (`on_status`), so a paused or disabled template is refused at once.

A key's templates are those of the business accounts of its Cloud API numbers (its default
number, or its pool): a send's template must be approved in one of them. A Graph API failure
when the cache holds the template, however old, checks against that copy: the send is not
refused for an outage of the listing.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Protocol

from switchboard.core.clock import utcnow
from switchboard.core.errors import (
    InvalidTemplate,
    NotFound,
    ProviderError,
    ProviderUnavailable,
    UnsupportedByProvider,
)
from switchboard.core.identity import Principal
from switchboard.core.observability import logger, metrics
from switchboard.core.secrets import instance_token_name, provider_secret_name
from switchboard.pool.service import routes_of
from switchboard.providers.base import ProviderTarget, TemplateDirectory
from switchboard.providers.kinds import spec_for
from switchboard.templates.domain import TemplateDefinition, TemplateList, problems

if TYPE_CHECKING:
    from switchboard.catalog.domain import Instance, Number, Provider
    from switchboard.core.ports import Secrets
    from switchboard.pool.domain import NumberRoutes, Route, SendingConfig
    from switchboard.providers.base import ProviderClient
    from switchboard.providers.content import Template

# Fresh enough to check a send against: a template's edit reaches a send within this, its
# status change at once (the webhook).
TEMPLATE_CACHE_SECONDS = 300


class Catalog(Protocol):
    def get_number(self, tenant: str, number_id: str) -> Number: ...
    def instances_of_number(self, number_id: str) -> list[Instance]: ...
    def list_providers(self, tenant: str) -> list[Provider]: ...


class Configs(Protocol):
    def get(self, tenant: str, api_key_id: str) -> SendingConfig: ...


class Cache(Protocol):
    def template(
        self, tenant: str, waba_id: str, name: str, language: str
    ) -> tuple[TemplateDefinition, datetime] | None: ...
    def listing(self, tenant: str, waba_id: str) -> TemplateList | None: ...
    def store(self, tenant: str, listing: TemplateList) -> None: ...
    def set_status(
        self, tenant: str, waba_id: str, *, name: str, language: str, status: str, category: str | None
    ) -> bool: ...


class TemplateService:
    def __init__(
        self,
        catalog: Catalog,
        cache: Cache,
        configs: Configs,
        *,
        secrets: Secrets,
        client_for: Callable[[str], ProviderClient],
        ttl_seconds: int = TEMPLATE_CACHE_SECONDS,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._catalog = catalog
        self._cache = cache
        self._configs = configs
        self._secrets = secrets
        self._client_for = client_for
        self._ttl = timedelta(seconds=ttl_seconds)
        self._clock = clock

    # --- a number's templates ---------------------------------------------------------------

    def for_number(self, principal: Principal, number_id: str, *, refresh: bool = False) -> tuple[Number, TemplateList]:
        """The templates of the number's business account: from the cache when fresh (unless
        `refresh`), else read from the Graph API and cached. Raises NotFound (the number),
        UnsupportedByProvider (not a Cloud API number with a `wabaId`), ProviderError."""
        number = self._catalog.get_number(principal.tenant, number_id)
        if number.waba_id is None:
            raise UnsupportedByProvider(
                "the number has no WhatsApp Business Account id (wabaId): only a Cloud API number has templates",
                code="no_business_account",
            )
        route = self._cloud_route(number)
        if route is None:
            raise UnsupportedByProvider(
                "the number has no Cloud API route (an instance or a provider with an admin token)",
                code="no_cloud_route",
            )
        cached = None if refresh else self._cache.listing(principal.tenant, number.waba_id)
        if cached is not None and self._fresh(cached.fetched_at):
            _count(hit=True)
            return number, cached
        return number, self._read(principal.tenant, number.waba_id, route)

    # --- a send's template --------------------------------------------------------------------

    def check(self, tenant: str, api_key_id: str, template: Template) -> None:
        """Raise InvalidTemplate unless `template` is approved in the business account of one of
        the key's Cloud API numbers and its parameters fit the definition."""
        accounts = self._accounts_of_key(tenant, api_key_id)
        if not accounts:
            raise InvalidTemplate(
                "none of this key's numbers is a Cloud API number with a WhatsApp Business Account id "
                "(wabaId): a template is sent only through one",
                code="no_template_number",
            )
        languages: list[str] = []
        for waba_id, route in accounts.items():
            definition = self._definition(tenant, waba_id, route, template.name, template.language)
            if isinstance(definition, list):
                languages += definition
                continue
            wrong = problems(definition, template)
            if wrong:
                raise InvalidTemplate(f"template {template.name} ({template.language}): {'; '.join(wrong)}")
            return
        other = f"; it exists in {', '.join(sorted(set(languages)))}" if languages else ""
        raise InvalidTemplate(
            f"no template {template.name} in {template.language} in this key's business accounts{other}",
            code="unknown_template",
        )

    def _definition(
        self, tenant: str, waba_id: str, route: Route, name: str, language: str
    ) -> TemplateDefinition | list[str]:
        """The template, or the languages the account has it in (none: it has no such name)."""
        cached = self._cache.template(tenant, waba_id, name, language)
        if cached is not None and self._fresh(cached[1]):
            _count(hit=True)
            return cached[0]
        if cached is None:
            # Not among the cached templates: unknown, if the account's list is fresh.
            listed = self._cache.listing(tenant, waba_id)
            if listed is not None and self._fresh(listed.fetched_at):
                _count(hit=True)
                return listed.find(name, language) or listed.languages_of(name)
        try:
            listing = self._read(tenant, waba_id, route)
        except ProviderError:
            if cached is None:
                raise
            logger.warning("template list unreadable: checked against the cached copy", extra={"waba_id": waba_id})
            return cached[0]
        found = listing.find(name, language)
        return found if found is not None else listing.languages_of(name)

    # --- the account's webhook ----------------------------------------------------------------

    def on_status(
        self, tenant: str, waba_id: str, *, name: str, language: str, status: str, category: str | None = None
    ) -> None:
        """A template's status changed (approved, rejected, paused, disabled, ...): the cached copy
        follows; an account the cache does not hold is read whole when first used."""
        if self._cache.set_status(tenant, waba_id, name=name, language=language, status=status, category=category):
            logger.info("template status changed", extra={"waba_id": waba_id, "template": name, "status": status})

    # --- helpers --------------------------------------------------------------------------------

    def _read(self, tenant: str, waba_id: str, route: Route) -> TemplateList:
        client = self._client_for(route.kind)
        if not isinstance(client, TemplateDirectory):
            raise UnsupportedByProvider(f"a {route.kind} provider lists no templates", code="no_cloud_route")
        raw = client.list_templates(self._target(tenant, route), waba_id)
        definitions = []
        for item in raw:
            try:
                definitions.append(TemplateDefinition.model_validate(item))
            except ValueError:
                logger.warning("template not in the Graph API's format skipped", extra={"waba_id": waba_id})
        listing = TemplateList(waba_id=waba_id, templates=definitions, fetched_at=self._clock())
        self._cache.store(tenant, listing)
        _count(hit=False)
        return listing

    def _fresh(self, fetched_at: datetime) -> bool:
        return self._clock() - fetched_at < self._ttl

    def _accounts_of_key(self, tenant: str, api_key_id: str) -> dict[str, Route]:
        """The business accounts of the key's Cloud API numbers, each with a route to read it."""
        try:
            config = self._configs.get(tenant, api_key_id)
        except NotFound:
            return {}
        numbers: Collection[NumberRoutes] = config.pool if config.mode == "pool" and config.pool else ()
        if not numbers and config.default is not None:
            numbers = (config.default,)
        accounts: dict[str, Route] = {}
        for number in numbers:
            route = next((r for r in number.routes if spec_for(r.kind).service_window), None)
            if number.waba_id is not None and route is not None:
                accounts.setdefault(number.waba_id, route)
        return accounts

    def _cloud_route(self, number: Number) -> Route | None:
        providers = {provider.id: provider for provider in self._catalog.list_providers(number.tenant)}
        routes = routes_of(number, self._catalog.instances_of_number(number.id), providers)
        return next((route for route in routes if spec_for(route.kind).service_window), None)

    def _target(self, tenant: str, route: Route) -> ProviderTarget:
        if route.instance is not None:
            name = instance_token_name(self._secrets, tenant, route.instance)
        else:
            name = provider_secret_name(self._secrets, route.provider_id, "admin-token")
        try:
            token = self._secrets.get(name)
        except Exception as exc:  # the secret store is down or the token is missing
            raise ProviderUnavailable(f"credentials of {route.instance or route.provider_id} unavailable") from exc
        return ProviderTarget(
            kind=route.kind,
            base_url=route.base_url,
            provider_instance_id=route.provider_instance_id,
            instance_token=token,
            meta_phone_id=route.meta_phone_id,
        )


def _count(*, hit: bool) -> None:
    metrics.add_metric(name="TemplateCacheHits" if hit else "TemplateCacheMisses", unit="Count", value=1)
