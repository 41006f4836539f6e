"""Write-only secrets (provider tokens, webhook secrets, downstream tokens) in SSM SecureString.

Values are encrypted at rest with the account's KMS key, read through Powertools Parameters
(cached per container for `max_age` seconds) and never returned by the API.

Every capability names the secrets it reads with the functions below, so this module is imported
by functions that never build a `SecretStore`: the store's AWS libraries are imported when one is
built, not at their cold start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from switchboard.core.ports import Secrets


def provider_secret_name(
    secrets: Secrets, provider_id: str, which: Literal["admin-token", "webhook-secret", "verify-token"]
) -> str:
    return secrets.name("providers", provider_id, which)


def instance_token_name(secrets: Secrets, tenant: str, instance_name: str) -> str:
    return secrets.name("instances", tenant, instance_name, "token")


class SecretStore:
    def __init__(self, ssm_client: Any, prefix: str, max_age: int) -> None:
        from aws_lambda_powertools.utilities import parameters  # noqa: PLC0415

        self._ssm = ssm_client
        self._prefix = prefix.rstrip("/")
        self._provider = parameters.SSMProvider(boto3_client=ssm_client)
        self._max_age = max_age

    def name(self, *parts: str) -> str:
        return "/".join([self._prefix, *parts])

    def put(self, name: str, value: str) -> None:
        self._ssm.put_parameter(Name=name, Value=value, Type="SecureString", Overwrite=True)
        # A write must be visible to this container's next read at once.
        self._provider.clear_cache()

    def get(self, name: str, *, fresh: bool = False) -> str:
        value = self._provider.get(name, decrypt=True, max_age=self._max_age, force_fetch=fresh)
        return str(value)

    def delete(self, name: str) -> None:
        from botocore.exceptions import ClientError  # noqa: PLC0415

        try:
            self._ssm.delete_parameter(Name=name)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ParameterNotFound":
                raise
        self._provider.clear_cache()
