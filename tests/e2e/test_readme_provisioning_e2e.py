"""The README's "Provision a tenant" block, read from README.md and run as printed against the
local stack: each command through bash (`make cli`, `curl`), its `<...>` filled in the way its
reader would, from the stack's outputs, the answer just printed, and the wuzapi user it names."""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

from tests.e2e.conftest import Stack

ROOT = Path(__file__).resolve().parents[2]
PLACEHOLDER = re.compile(r"<([^<>]+)>")


def provisioning_block() -> list[str]:
    """The block's commands, continuation lines joined."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("### Provision a tenant", 1)[1]
    block = section.split("```bash\n", 1)[1].split("\n```", 1)[0]
    return [command.strip() for command in block.replace("\\\n", " ").splitlines() if command.strip()]


def bash(command: str, environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """One of the README's commands, run as its reader would: in the repository, by bash."""
    shell = shutil.which("bash")
    assert shell is not None
    return subprocess.run(  # noqa: S603 - the README's own command
        [shell, "-c", command], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_readme_provisioning_block_runs_as_printed_and_its_message_is_sent(stack: Stack) -> None:
    commands = provisioning_block()
    assert any(command.startswith("make cli") for command in commands) and any("curl" in c for c in commands)
    user, token = "support-readme", secrets.token_urlsafe(24)
    stack.sim.create_instance(id=user, token=token, flavour="wuzapi", number="5511999990001")
    # What the reader fills in: the stack's outputs, their wuzapi server and its (paired) user.
    yours = {
        "MainTableName": stack.local.environment["TABLE_NAME"],
        "SecretsPrefix": stack.local.environment["SECRETS_PREFIX"],
        "region": "us-east-1",
        "ApiUrl": stack.api_url,
        "your wuzapi URL": f"{stack.sim_url}/wuzapi",
        "32+ characters": secrets.token_urlsafe(32),
        "the wuzapi user name": user,
        "the wuzapi user token": token,
    }
    # The shell the README's reader types into: the local endpoint and test credentials, and
    # none of the variables the stack set in this process (the block exports what it needs).
    environment = {
        name: value for name, value in os.environ.items() if name not in stack.local.environment or name == "PATH"
    }
    environment |= {
        "AWS_ENDPOINT_URL": stack.aws_url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }
    environment.pop("AWS_DEFAULT_REGION", None)  # the block's AWS_REGION alone must name the region
    # Nor the make that runs this suite: a nested make prints "Entering directory" around the answer.
    for name in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS"):
        environment.pop(name, None)
    printed: dict[str, Any] = {}
    answers: list[dict[str, Any]] = []

    def fill(text: str) -> str:
        def value(found: re.Match[str]) -> str:
            name = found.group(1)
            if name in yours:
                return yours[name]
            assert name in printed, f"the README asks for <{name}>, which neither the reader nor an answer has"
            return str(printed[name])

        return PLACEHOLDER.sub(value, text)

    for command in commands:
        if command.startswith("export "):
            for assignment in shlex.split(fill(command))[1:]:
                name, _, assigned = assignment.partition("=")
                environment[name] = assigned
            continue
        result = bash(fill(command), environment)
        assert result.returncode == 0, f"{command}\n{result.stderr}"
        printed = json.loads(result.stdout)
        answers.append(printed)

    instance = next(answer for answer in answers if answer.get("providerInstanceId") == user)
    assert instance["state"] == "CONNECTED"
    assert answers[1]["tenant"] == "acme" and answers[1]["adminKey"].startswith("sb_live_")

    def message() -> dict[str, Any] | None:
        read = bash(fill(commands[-1]), environment)  # the block's last command, again until it is sent
        assert read.returncode == 0, read.stderr
        body: dict[str, Any] = json.loads(read.stdout)
        return body if body["status"] in ("SENT", "FAILED") else None

    sent = stack.wait_for(message, timeout=30)
    assert (sent["status"], sent["instance"], sent["sourceNumber"]) == ("SENT", "support-1", "5511999990001"), sent
    [delivered] = [m for m in stack.sim.sent() if m["instance"] == user]
    assert (delivered["phone"], delivered["body"]) == ("5511988887777", "hello from switchboard")
