"""Each function's profile names the variables it cannot run without (bootstrap/profiles.py
REQUIRED_SETTINGS) and checks them at cold start: the template gives every function what its
profile requires, and a function missing one fails at import naming that variable."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from devstack import template
from switchboard import bootstrap
from switchboard.bootstrap.profiles import REQUIRED_SETTINGS
from switchboard.core.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
PROFILE_CALL = re.compile(r"\bbootstrap\.(\w+)\(\)")


def profiles_of_functions() -> dict[str, tuple[str, set[str]]]:
    """Each template function calling a profile at import: its profile and the variables the
    template sets in its environment (Globals' and its own)."""
    document = template.load()
    shared = set(document["Globals"]["Function"]["Environment"]["Variables"])
    found: dict[str, tuple[str, set[str]]] = {}
    for name, properties in template.resources("AWS::Serverless::Function").items():
        module = ROOT / properties["CodeUri"] / f"{properties['Handler'].split('.')[0]}.py"
        profiles = PROFILE_CALL.findall(module.read_text())
        if profiles:
            (profile,) = profiles
            own = set((properties.get("Environment") or {}).get("Variables") or {})
            found[name] = (profile, shared | own)
    return found


FUNCTIONS = profiles_of_functions()


def test_every_profile_a_function_calls_names_its_required_settings_and_every_entry_is_called() -> None:
    called = {profile for profile, _ in FUNCTIONS.values()}

    assert called == set(REQUIRED_SETTINGS)


@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_the_template_gives_the_function_every_setting_its_profile_requires(function: str) -> None:
    profile, environment = FUNCTIONS[function]

    assert set(REQUIRED_SETTINGS[profile]) <= environment


@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_the_profile_starts_on_the_template_environment_and_fails_naming_each_variable_left_out(
    function: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    profile, environment = FUNCTIONS[function]
    start = getattr(bootstrap, profile)
    aliases = {field.alias for field in Settings.model_fields.values() if field.alias}
    for variable in aliases:
        monkeypatch.delenv(variable, raising=False)
    for variable in environment & aliases:
        monkeypatch.setenv(variable, f"https://{variable.lower()}.example")
    start()  # nothing is built at cold start: no AWS is reached

    label = profile.removesuffix("_api").replace("_", " ")
    for variable in REQUIRED_SETTINGS[profile]:
        monkeypatch.delenv(variable)
        with pytest.raises(bootstrap.MissingSetting, match=f"the {label} function needs {variable} set"):
            start()
        monkeypatch.setenv(variable, f"https://{variable.lower()}.example")
