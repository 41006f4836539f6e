"""Runs the template's functions in this process, as Lambda would run each one.

A function is `CodeUri` + `Handler` from template.yaml; its module is imported by path under a
unique name (every handler file is called app.py), once, like a warm container.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devstack import template

Handler = Callable[[Any, Any], Any]


@dataclass
class FakeLambdaContext:
    function_name: str
    memory_limit_in_mb: int = 512
    timeout_seconds: int = 29
    aws_request_id: str = ""
    invoked_function_arn: str = ""
    log_group_name: str = ""
    log_stream_name: str = ""
    function_version: str = "$LATEST"

    def get_remaining_time_in_millis(self) -> int:
        return self.timeout_seconds * 1000


def mount_layers(path: Path = template.TEMPLATE) -> None:
    """Put each layer's content on the import path, as Lambda mounts it on /opt/python."""
    for layer in template.resources("AWS::Serverless::LayerVersion", path).values():
        content = str((path.parent / layer["ContentUri"]).resolve())
        if content not in sys.path:
            sys.path.insert(0, content)


class Functions:
    """Loads and invokes the template's AWS::Serverless::Function resources by logical id."""

    def __init__(self, path: Path = template.TEMPLATE) -> None:
        self._path = path
        self._definitions = template.resources("AWS::Serverless::Function", path)
        self._loaded: dict[str, Handler] = {}
        self._lock = threading.Lock()
        mount_layers(path)

    @property
    def path(self) -> Path:
        return self._path

    def names(self) -> list[str]:
        return list(self._definitions)

    def definition(self, logical_id: str) -> dict[str, Any]:
        return self._definitions[logical_id]

    def handler(self, logical_id: str) -> Handler:
        with self._lock:
            if logical_id not in self._loaded:
                self._loaded[logical_id] = self._load(logical_id)
            return self._loaded[logical_id]

    def invoke(self, logical_id: str, event: Any) -> Any:
        properties = self._definitions[logical_id]
        context = FakeLambdaContext(
            function_name=logical_id,
            timeout_seconds=int(properties.get("Timeout", 29)),
            aws_request_id=str(uuid.uuid4()),
            invoked_function_arn=f"arn:aws:lambda:us-east-1:000000000000:function:{logical_id}",
        )
        return self.handler(logical_id)(event, context)

    def _load(self, logical_id: str) -> Handler:
        properties = self._definitions[logical_id]
        module_name, _, attribute = properties["Handler"].rpartition(".")
        source = self._path.parent / properties["CodeUri"] / f"{module_name.replace('.', '/')}.py"
        unique = f"lambda_{logical_id}_{module_name}"
        spec = importlib.util.spec_from_file_location(unique, source)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {source}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[unique] = module
        spec.loader.exec_module(module)
        handler: Handler = getattr(module, attribute)
        return handler
