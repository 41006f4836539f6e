"""API Gateway (HTTP API) Lambda authorizer: `Authorization: Bearer <key or access token>` ->
tenant and scopes.

Simple responses; an unknown or malformed key, or a token that is invalid or whose person is
disabled, raises "Unauthorized", which API Gateway answers with 401. API Gateway's own authorizer
cache is off in template.yaml; the function keeps each found key for `KEY_CACHE_SECONDS` (5 s)
per container, so a revoked key fails within that; a person is read on every request.
"""

from __future__ import annotations

from typing import Any

from switchboard.coldstart import imported

from aws_lambda_powertools.utilities.typing import LambdaContext

from switchboard import bootstrap
from switchboard.core.observability import logger

credentials = bootstrap.authorizer()


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    header = (event.get("headers") or {}).get("authorization", "")
    scheme, _, credential = header.partition(" ")
    principal = credentials().authenticate(credential.strip()) if scheme.lower() == "bearer" else None
    if principal is None:
        logger.info("request refused: unknown API key or token")
        raise Exception("Unauthorized")  # noqa: TRY002 - the exact message API Gateway maps to 401
    return {
        "isAuthorized": True,
        "context": {
            "tenant": principal.tenant,
            "keyId": principal.key_id,
            "scopes": ",".join(sorted(principal.scopes)),
            "attendantId": principal.attendant_id or "",
            "user": principal.user or "",
            "email": principal.email or "",
        },
    }


imported()
