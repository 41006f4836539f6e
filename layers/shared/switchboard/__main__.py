"""Operator CLI: bootstrap a deployment against any DynamoDB endpoint.

    make cli ARGS="create-platform-key [--value KEY]"
    make cli ARGS="create-tenant --owner-tag acme --name Acme"

(`make cli` runs `python -m switchboard` with the layer on the path.) Reads TABLE_NAME and
SECRETS_PREFIX (the stack's outputs `MainTableName` and `SecretsPrefix`) and the usual AWS
settings: AWS_PROFILE, the region from AWS_REGION or AWS_DEFAULT_REGION (or the profile), and
AWS_ENDPOINT_URL for a local endpoint. Keys are printed once, as JSON on stdout; a failure is
`{"error", "message"}` on stderr with exit status 1 (2 for bad arguments).
"""

from __future__ import annotations

import argparse
import json
import re
import sys

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, NoRegionError

from switchboard import bootstrap
from switchboard.catalog.domain import hash_key, looks_like_key
from switchboard.core.errors import SwitchboardError
from switchboard.core.identity import PLATFORM_TENANT, Scope
from switchboard.core.wire import OWNER_TAG_PATTERN


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m switchboard", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    platform = commands.add_parser("create-platform-key", help="create an operator (platform) key")
    platform.add_argument(
        "--value", help="use exactly this key (sb_live_... of 20+ characters) instead of a random one"
    )
    platform.add_argument("--name", default="operator")
    tenant = commands.add_parser("create-tenant", help="create a tenant and its first admin key")
    tenant.add_argument("--owner-tag", required=True, help="lower-case letters, digits and hyphens (2-63)")
    tenant.add_argument("--name", required=True)
    arguments = parser.parse_args(argv)
    if arguments.command == "create-platform-key" and arguments.value and not looks_like_key(arguments.value):
        parser.error("--value must look like sb_live_<20+ characters of [A-Za-z0-9_-]>")
    if arguments.command == "create-tenant" and not _is_owner_tag(arguments.owner_tag):
        parser.error("--owner-tag must be 2-63 lower-case letters, digits or hyphens, starting with a letter or digit")
    try:
        print(json.dumps(_run(arguments)))
    except NoRegionError:
        return _failed("no_region", "no AWS region: set AWS_REGION (or AWS_DEFAULT_REGION, or a profile's region)")
    except NoCredentialsError:
        return _failed("no_credentials", "no AWS credentials: set AWS_PROFILE or the AWS_* credential variables")
    except SwitchboardError as error:
        return _failed(error.code, error.message)
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "ClientError")
        return _failed(
            "aws_error", f"AWS refused the request ({code}): check TABLE_NAME, SECRETS_PREFIX and the region"
        )
    except BotoCoreError as error:
        return _failed("aws_error", f"AWS could not be reached ({type(error).__name__})")
    return 0


def _run(arguments: argparse.Namespace) -> dict[str, str]:
    service = bootstrap.catalog_service()
    if arguments.command == "create-platform-key":
        if arguments.value and service.authenticate(arguments.value):
            return {"key": "(unchanged: this key already exists)"}
        created = service.create_api_key(
            None,
            tenant=PLATFORM_TENANT,
            name=arguments.name,
            environment="LIVE",
            scopes=[Scope.PLATFORM],
            preset_key=arguments.value,
        )
        return {"id": created.key.id, "key": created.plaintext, "digestPrefix": hash_key(created.plaintext)[:8]}
    tenant_record, admin = service.create_tenant(None, arguments.owner_tag, arguments.name)
    return {"tenant": tenant_record.owner_tag, "adminKeyId": admin.key.id, "adminKey": admin.plaintext}


def _is_owner_tag(value: str) -> bool:
    return re.fullmatch(OWNER_TAG_PATTERN, value) is not None


def _failed(code: str, message: str) -> int:
    print(json.dumps({"error": code, "message": message}), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
