"""The README's "Provision a tenant" block, read from README.md and run as printed against the
local stack: each command through bash (`make cli`, `curl`), its `<...>` filled in the way its
reader would, from the stack's outputs, the answer just printed, the wuzapi user it names and
their Chatwoot (a fake helpdesk served on loopback). What the block promises then holds: the
message leaves through the key's pool, the recipient's answer reaches the mapped inbox, and the
`webhookUrl` pasted into Chatwoot sends an agent's reply through the instance."""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import Stack
from tools.support.downstream import FakeDownstream, agent_reply

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


@pytest.fixture
def chatwoot() -> Iterator[tuple[FakeDownstream, str]]:
    """The reader's Chatwoot: a fake helpdesk on a loopback port, and its URL."""
    fake = FakeDownstream()
    served = fake.serve()
    yield fake, served.url
    served.stop()


def test_the_readme_provisioning_block_runs_as_printed_and_its_tenant_sends_receives_and_replies(
    stack: Stack, chatwoot: tuple[FakeDownstream, str]
) -> None:
    commands = provisioning_block()
    assert any(command.startswith("make cli") for command in commands) and any("curl" in c for c in commands)
    user, token = "support-readme", secrets.token_urlsafe(24)
    stack.sim.create_instance(id=user, token=token, flavour="wuzapi", number="5511999990001")
    helpdesk, url = chatwoot
    # What the reader fills in: the stack's outputs, their wuzapi server and its (paired) user,
    # their Chatwoot account and inbox.
    yours = {
        "MainTableName": stack.local.environment["TABLE_NAME"],
        "SecretsPrefix": stack.local.environment["SECRETS_PREFIX"],
        "region": "us-east-1",
        "ApiUrl": stack.api_url,
        "your wuzapi URL": f"{stack.sim_url}/wuzapi",
        "32+ characters": secrets.token_urlsafe(32),
        "the wuzapi user name": user,
        "the wuzapi user token": token,
        "your Chatwoot URL": url,
        "account id": "3",
        "inbox id": "7",
        "user access token": "cw-readme-user-token",
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

    # The send key's sends go through its pool, which holds the block's number.
    key = next(answer for answer in answers if answer.get("scopes") == ["send"] and "key" in answer)
    mode = next(answer for answer in answers if answer.get("id") == key["id"] and answer is not key)
    assert mode["numberSelectionMode"] == "pool"
    pool = next(answer for answer in answers if answer.get("apiKeyId") == key["id"])
    assert (pool["whatsappNumberId"], pool["connected"]) == (instance["numberId"], True)
    [resolved] = [step["data"] for step in sent["trace"] if step["stage"] == "pool.number.resolved"]
    assert (resolved["selectionMode"], resolved["poolSize"]) == ("pool", 1), sent["trace"]
    # The tenant is mapped to the Chatwoot inbox (its token never comes back), and the URL
    # to paste into the inbox carries the instance's secret.
    mapped = next(answer for answer in answers if answer.get("downstream"))["downstream"]
    assert (mapped["downstreamBaseUrl"], mapped["downstreamAccountId"], mapped["downstreamInboxId"]) == (url, 3, 7)
    assert all("cw-readme-user-token" not in json.dumps(answer) for answer in answers)
    # The provider's answer carries the URL its webhooks go to; the inbox's is the instance's.
    provider = next(answer for answer in answers if answer.get("kind") == "wuzapi")
    assert provider["webhookUrl"].startswith(f"{stack.api_url}/webhooks/")
    webhook_url = next(answer for answer in answers if "token=" in (answer.get("webhookUrl") or ""))["webhookUrl"]
    assert webhook_url.startswith(f"{stack.api_url}/api/tenants/acme/instances/support-1/webhook?token=")

    stack.sim.incoming_message(user, "5511988887777", "oi, recebi")
    [forwarded] = stack.wait_for(
        lambda: [m for m in helpdesk.messages() if m.body and m.body.get("content") == "oi, recebi"], timeout=15
    )
    assert (forwarded.origin, forwarded.token) == (url, "cw-readme-user-token")
    opened = ("POST", "/api/v1/accounts/3/conversations")
    [conversation] = [r for r in helpdesk.requests if (r.method, r.path) == opened]
    assert conversation.body is not None and conversation.body["inbox_id"] == 7

    reply = agent_reply(4242, "obrigado!", conversation=1, phone="5511988887777")
    answered = httpx.post(webhook_url, json=reply, timeout=30, trust_env=False)
    assert answered.status_code == 200, answered.text
    replied = stack.wait_for(
        lambda: [m for m in stack.sim.sent() if m["instance"] == user and m["body"] == "obrigado!"], timeout=15
    )
    assert [m["phone"] for m in replied] == ["5511988887777"]
