"""Downstream resolution: tenant mapping, global fallback, 30 s cache and cross-container version stamp."""

from __future__ import annotations

from switchboard.routing.domain import DownstreamMapping
from switchboard.routing.service import DownstreamResolver, GlobalDownstream
from tools.support.fakes import FakeClock, FakeMappingStore, FakeSecrets


def downstream_tokens() -> FakeSecrets:
    return FakeSecrets({"/sb/tenants/acme/downstream-token": "acme-token", "/sb/global": "global-token"}, prefix="/sb")


def mapping(inbox: int) -> DownstreamMapping:
    return DownstreamMapping(
        owner_tag="acme", base_url="https://acme.example", account_id=7, inbox_id=inbox, token_hint="…oken"
    )


GLOBAL = GlobalDownstream(base_url="https://global.example", account_id="1", inbox_id="3", token_parameter="/sb/global")


def test_given_a_tenant_mapping_then_it_wins_else_the_global_fallback() -> None:
    store, secrets = FakeMappingStore(), downstream_tokens()
    store.change(mapping(12))
    resolver = DownstreamResolver(store, secrets, GLOBAL)

    tenant = resolver.target_for("acme")
    unmapped = resolver.target_for("globex")
    untagged = resolver.target_for(None)

    assert tenant is not None and (tenant.source, tenant.inbox_id, tenant.api_token) == ("tenant", 12, "acme-token")
    assert unmapped is not None and (unmapped.source, unmapped.inbox_id, unmapped.owner_tag) == ("global", 3, "globex")
    assert untagged is not None and untagged.base_url == "https://global.example"


def test_given_no_mapping_and_an_incomplete_fallback_then_nothing() -> None:
    resolver = DownstreamResolver(
        FakeMappingStore(), downstream_tokens(), GlobalDownstream(base_url="https://global.example")
    )

    assert resolver.target_for("acme") is None


def test_given_a_cached_mapping_then_it_is_reused_for_30_seconds_and_read_again_after() -> None:
    store, clock = FakeMappingStore(), FakeClock(1000.0)
    store.change(mapping(12))
    resolver = DownstreamResolver(store, downstream_tokens(), GLOBAL, monotonic=clock)

    for _ in range(5):
        resolver.target_for("acme")
    clock.now += 29.9
    resolver.target_for("acme")
    reads_within_ttl = store.mapping_reads
    clock.now += 0.2
    resolver.target_for("acme")

    assert (reads_within_ttl, store.mapping_reads) == (1, 2)


def test_given_a_change_made_by_another_container_then_the_next_resolution_sees_it_despite_the_cache() -> None:
    store, secrets, clock = FakeMappingStore(), downstream_tokens(), FakeClock(1000.0)
    store.change(mapping(12))
    resolver = DownstreamResolver(store, secrets, GLOBAL, monotonic=clock)
    target = resolver.target_for("acme")
    assert target is not None
    assert target.inbox_id == 12

    store.change(mapping(13))  # elsewhere: the version stamp moves
    secrets.values["/sb/tenants/acme/downstream-token"] = "rotated-token"
    seen = resolver.target_for("acme")

    assert seen is not None and (seen.inbox_id, seen.api_token) == (13, "rotated-token")
    assert secrets.fresh_reads >= 1  # the token is re-read past the secret store's own cache
