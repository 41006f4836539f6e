"""The tools (benchmarks, soak, cold start) never import the tests: what both need lives in
tools/support, which the tests import in turn."""

from __future__ import annotations

import ast
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[2] / "tools"


def imported_modules(source: str) -> list[str]:
    modules: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.append(node.module)
    return modules


def test_imports_of_the_tests_are_found_in_every_form() -> None:
    source = "import tests.support.api\nfrom tests import support\nfrom tests.support.aws import REGION\n"

    assert [module for module in imported_modules(source) if module.split(".")[0] == "tests"] == [
        "tests.support.api",
        "tests",
        "tests.support.aws",
    ]


def test_no_tool_imports_the_tests() -> None:
    offenders = [
        f"{path.relative_to(TOOLS)}: {module}"
        for path in sorted(TOOLS.rglob("*.py"))
        for module in imported_modules(path.read_text())
        if module.split(".")[0] == "tests"
    ]

    assert offenders == []
