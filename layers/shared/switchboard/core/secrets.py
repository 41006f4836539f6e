"""Write-only secrets (provider tokens, webhook secrets, downstream tokens) in SSM SecureString.

Values are encrypted at rest with the account's KMS key, read through Powertools Parameters
(cached per container for `max_age` seconds) and never returned by the API.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities import parameters
from botocore.exceptions import ClientError


class SecretStore:
    def __init__(self, ssm_client: Any, prefix: str, max_age: int) -> None:
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
        try:
            self._ssm.delete_parameter(Name=name)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ParameterNotFound":
                raise
        self._provider.clear_cache()
