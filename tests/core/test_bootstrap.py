"""The composition root: a profile checks its function's variables at cold start, replaces the
components it is handed by name, and provides every route dependency its resolver's routes take."""

from __future__ import annotations

from typing import Any, cast

import pytest

from switchboard import bootstrap
from switchboard.catalog import deps as catalog_deps
from switchboard.core.api.provided import NotProvided
from switchboard.core.settings import Settings


def test_a_profile_without_a_variable_it_needs_fails_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SEND_QUEUE_URL", raising=False)
    monkeypatch.setenv("CLIENT_WEBHOOK_QUEUE_URL", "https://queue/client-webhooks")

    with pytest.raises(bootstrap.MissingSetting, match="the send worker function needs SEND_QUEUE_URL set"):
        bootstrap.send_worker()


def test_given_settings_are_checked_like_the_environment() -> None:
    settings = Settings.model_validate({"SEND_QUEUE_URL": "https://queue/send"})

    with pytest.raises(bootstrap.MissingSetting, match="CLIENT_WEBHOOK_QUEUE_URL"):
        bootstrap.send_worker(settings=settings)


def test_an_override_replaces_the_component_of_that_name_in_those_components_only() -> None:
    sent: list[str] = []

    class Queue:
        def send(self, body: str) -> None:
            sent.append(body)

    settings = Settings.model_validate(
        {"SEND_QUEUE_URL": "https://queue/send", "CLIENT_WEBHOOK_QUEUE_URL": "https://queue/client-webhooks"}
    )
    queue = Queue()
    components = bootstrap.Components(settings, overrides={"send_queue": queue})

    assert bootstrap.send_queue(components) is cast("object", queue)
    assert "send_queue" not in bootstrap.current().overrides  # this process's components are not touched


def test_an_override_naming_no_component_is_refused() -> None:
    with pytest.raises(TypeError, match="no component is called send_queeu"):
        bootstrap.Components(overrides={"send_queeu": object()})


def test_an_api_profile_provides_its_routes_dependencies_and_a_bare_one_refuses() -> None:
    catalog = object()
    app = bootstrap.catalog_api(
        settings=Settings.model_validate({"CLIENT_WEBHOOK_QUEUE_URL": "https://q", "SEND_QUEUE_URL": "https://s"}),
        catalog_service=catalog,
    )
    provided: Any = app.dependency_overrides[catalog_deps.catalog_service]

    assert provided() is catalog
    with pytest.raises(NotProvided, match=r"switchboard\.catalog\.deps\.catalog_service is not provided"):
        catalog_deps.catalog_service()
