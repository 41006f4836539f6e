"""The operator CLI reads the region as the AWS CLI and Lambda do (AWS_REGION first, then what
boto3 reads), and says in JSON why it cannot proceed instead of a traceback."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from switchboard.__main__ import main as cli
from switchboard.bootstrap import current, reset
from switchboard.core.settings import get_settings


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    get_settings.cache_clear()
    reset()
    yield monkeypatch
    get_settings.cache_clear()
    reset()


@pytest.mark.parametrize(
    ("environment", "region"),
    [
        ({"AWS_REGION": "sa-east-1"}, "sa-east-1"),
        ({"AWS_DEFAULT_REGION": "eu-west-1"}, "eu-west-1"),
        ({"AWS_REGION": "sa-east-1", "AWS_DEFAULT_REGION": "eu-west-1"}, "sa-east-1"),
        ({"AWS_REGION": "", "AWS_DEFAULT_REGION": "eu-west-1"}, "eu-west-1"),
    ],
)
def test_the_region_is_aws_region_else_what_boto3_finds(
    clean: pytest.MonkeyPatch, environment: dict[str, str], region: str
) -> None:
    for name, value in environment.items():
        clean.setenv(name, value)

    assert current().session.region_name == region


def test_without_a_region_the_cli_says_so_in_json_and_exits_1(
    clean: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(["create-tenant", "--owner-tag", "acme", "--name", "Acme"]) == 1

    failure = json.loads(capsys.readouterr().err)
    assert failure["error"] == "no_region"
    assert "AWS_REGION" in failure["message"]


def test_a_bad_owner_tag_is_refused_before_any_aws_request(
    clean: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli(["create-tenant", "--owner-tag", "Acme Inc", "--name", "Acme"])

    assert exited.value.code == 2
    assert "--owner-tag" in capsys.readouterr().err
