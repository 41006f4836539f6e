"""What a test process may read once instead of once per Lambda container it runs.

The in-process API and the local stack start a fresh container for every function of every test,
as Lambda starts one per cold start, and each builds its own boto3 sessions: each session parses
botocore's service models again (JSON files that do not change while the process runs), and every
Cognito user pool moto creates imports the same RSA key, which validates it again (~0.15 s). Both
are pure reads of files inside installed packages; sharing them changes no behaviour under test,
only the seconds every test spends before it starts.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import botocore.loaders
import botocore.session
from joserfc import jwk
from moto.cognitoidp import models


def share_botocore_loader() -> None:
    """One botocore data loader (and its cache of parsed models) for every session."""
    loaders: dict[Any, botocore.loaders.Loader] = {}
    create = botocore.loaders.create_loader

    def shared(search_path_string: Any = None) -> botocore.loaders.Loader:
        key = search_path_string if isinstance(search_path_string, str | None) else tuple(search_path_string)
        if key not in loaders:
            loaders[key] = create(search_path_string)
        return loaders[key]

    botocore.session.create_loader = shared


def share_moto_cognito_key() -> None:
    """moto's user pools all sign with one bundled key (the only use moto makes of `jwk` is
    `jwk.RSAKey.import_key` of that file): import it once."""
    imported: dict[str, Any] = {}

    def import_key(data: Any) -> Any:
        key = json.dumps(data, sort_keys=True)
        if key not in imported:
            imported[key] = jwk.RSAKey.import_key(data)
        return imported[key]

    rsa_key = SimpleNamespace(import_key=import_key)
    setattr(models, "jwk", SimpleNamespace(RSAKey=rsa_key))  # noqa: B010 - moto does not export the name it reads


def install() -> None:
    share_botocore_loader()
    share_moto_cognito_key()
