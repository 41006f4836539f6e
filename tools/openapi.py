"""Writes the OpenAPI document the docs function serves, generated from every router.

The docs function serves `functions/docs/openapi.json` as it is, so that its cold start imports
none of the routes; tests/core/test_openapi_and_cli.py fails while the file differs from what
the routers produce. Usage: `make openapi` after changing a route, a schema or their docs.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCUMENT = ROOT / "functions" / "docs" / "openapi.json"


def generated() -> str:
    """The document the routers produce, as the file holds it."""
    from switchboard.core.api.openapi import build_documented_api, openapi_json  # noqa: PLC0415

    return openapi_json(build_documented_api()) + "\n"


def main() -> int:
    sys.path[:0] = [str(ROOT / "layers" / "shared")]
    DOCUMENT.write_text(generated(), encoding="utf-8")
    print(f"wrote {DOCUMENT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
