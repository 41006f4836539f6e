"""A container's garbage collector: paused while its handler imports, running afterwards.

Each function's handler imports `switchboard.coldstart` first and calls `imported()` last: the
import must not be walked by collection after collection, and no container may go on serving
with the collector off (its cyclic garbage would never be freed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from devstack import template
from tools.coldstart import TEMPLATE_ENVIRONMENT

# Imports every handler of the template in one fresh interpreter (the first one pays the whole
# import, as a new container does) and reports, per handler, the collections its import ran and
# whether the collector runs afterwards.
PROBE = """
import gc, importlib.util, json, sys
collections = []
gc.callbacks.append(lambda phase, info: phase == "start" and collections.append(info["generation"]))
report = {}
for name, path in json.loads(sys.argv[1]).items():
    collections.clear()
    spec = importlib.util.spec_from_file_location(f"handler_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    report[name] = {"collections": list(collections), "enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}
print(json.dumps(report))
"""


def handler_sources() -> dict[str, str]:
    sources = {}
    for logical_id, properties in sorted(template.resources("AWS::Serverless::Function").items()):
        module = properties["Handler"].rpartition(".")[0]
        sources[logical_id] = str(template.ROOT / properties["CodeUri"] / f"{module}.py")
    return sources


def probe(sources: dict[str, str]) -> dict[str, dict[str, Any]]:
    environment = {
        **os.environ,
        "PYTHONPATH": str(template.ROOT / "layers" / "shared"),
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_TRACE_DISABLED": "true",
        **TEMPLATE_ENVIRONMENT,
    }
    done = subprocess.run(  # noqa: S603 - our own interpreter and code
        [sys.executable, "-c", PROBE, json.dumps(sources)], capture_output=True, text=True, check=True, env=environment
    )
    figures: dict[str, dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def test_a_handler_import_runs_one_collection_and_leaves_the_collector_running() -> None:
    sources = handler_sources()
    first = "CatalogFunction"
    report = probe({first: sources[first], **{name: path for name, path in sources.items() if name != first}})

    # The fresh import of a whole API function: a few young collections before the pause (finding
    # and loading switchboard itself), then only the final, full one of `imported()`. Without the
    # pause this import runs over a hundred.
    collections = report[first]["collections"]
    assert collections[-1] == 2 and collections.count(2) == 1 and len(collections) < 10, collections
    assert report[first]["frozen"] > 10_000
    # The docs function imports neither boto3 nor the API, and keeps the collector as it is.
    assert all(entry["enabled"] for entry in report.values()), report
