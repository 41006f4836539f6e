"""Operator CLI: bootstrap a deployment against any DynamoDB endpoint.

    python -m switchboard create-platform-key [--value KEY]
    python -m switchboard create-tenant --owner-tag acme --name "Acme"

Reads TABLE_NAME and SECRETS_PREFIX (stack outputs) and the usual AWS settings
(AWS_PROFILE, AWS_REGION, AWS_ENDPOINT_URL for a local endpoint). Keys are printed once.
"""

from __future__ import annotations

import argparse
import json
import sys

from switchboard.catalog.domain import PLATFORM_TENANT, Scope, hash_key, looks_like_key
from switchboard.catalog.wiring import catalog_service


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m switchboard", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    platform = commands.add_parser("create-platform-key", help="create an operator (platform) key")
    platform.add_argument(
        "--value", help="use exactly this key (sb_live_... of 20+ characters) instead of a random one"
    )
    platform.add_argument("--name", default="operator")
    tenant = commands.add_parser("create-tenant", help="create a tenant and its first admin key")
    tenant.add_argument("--owner-tag", required=True)
    tenant.add_argument("--name", required=True)
    arguments = parser.parse_args(argv)

    service = catalog_service()
    if arguments.command == "create-platform-key":
        if arguments.value and not looks_like_key(arguments.value):
            parser.error("--value must look like sb_live_<20+ characters of [A-Za-z0-9_-]>")
        if arguments.value and service.authenticate(arguments.value):
            print(json.dumps({"key": "(unchanged: this key already exists)"}))
            return 0
        created = service.create_api_key(
            None,
            tenant=PLATFORM_TENANT,
            name=arguments.name,
            environment="LIVE",
            scopes=[Scope.PLATFORM],
            preset_key=arguments.value,
        )
        print(
            json.dumps(
                {"id": created.key.id, "key": created.plaintext, "digestPrefix": hash_key(created.plaintext)[:8]}
            )
        )
        return 0
    tenant_record, admin = service.create_tenant(None, arguments.owner_tag, arguments.name)
    print(json.dumps({"tenant": tenant_record.owner_tag, "adminKeyId": admin.key.id, "adminKey": admin.plaintext}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
