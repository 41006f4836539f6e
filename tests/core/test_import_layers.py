"""The capabilities import one another in one direction (pyproject.toml's import-linter contracts,
CONTRIBUTING's layout): the tree keeps the contracts, and a copy of it with one import planted
against them is refused, naming that import."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYER = ROOT / "layers" / "shared"


def lint_imports(config_root: Path, package_parent: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` as `make lint` runs it: the contracts of `config_root`'s pyproject.toml over
    the `switchboard` package found in `package_parent`."""
    command = [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"]
    command += ["--config", str(config_root / "pyproject.toml")]
    environment = {**os.environ, "PYTHONPATH": str(package_parent)}
    return subprocess.run(  # noqa: S603 - the venv's own lint-imports on our own files
        command, cwd=config_root, env=environment, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """The layer's package and the contracts, copied to plant imports in."""
    shutil.copytree(LAYER / "switchboard", tmp_path / "switchboard", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def plant(copy: Path, module: str, statement: str) -> None:
    path = copy / "switchboard" / module
    path.write_text(path.read_text() + f"\n{statement}\n")


def test_the_tree_keeps_the_import_contracts() -> None:
    result = lint_imports(ROOT, LAYER)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 2 kept, 0 broken." in result.stdout


def test_the_copy_keeps_them_before_anything_is_planted(copy: Path) -> None:
    result = lint_imports(copy, copy)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("module", "statement", "importer", "imported"),
    [
        # core at the bottom imports no capability.
        ("core/clock.py", "from switchboard.catalog.domain import Instance", "core.clock", "catalog.domain"),
        # a type imported only for annotations counts too: it is still a dependency.
        (
            "usage/service.py",
            "if TYPE_CHECKING:\n    from switchboard.routing.records import OutboxEntry",
            "usage.service",
            "routing.records",
        ),
        # one step up is as wrong as many.
        ("audit/ports.py", "import switchboard.providers.kinds", "audit.ports", "providers.kinds"),
    ],
)
def test_an_upward_import_breaks_the_order(
    copy: Path, module: str, statement: str, importer: str, imported: str
) -> None:
    plant(copy, module, statement)
    result = lint_imports(copy, copy)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "capabilities import downward only BROKEN" in result.stdout
    assert f"switchboard.{importer} -> switchboard.{imported}" in result.stdout


def test_a_cycle_through_a_module_outside_the_layers_breaks_the_cycle_check(copy: Path) -> None:
    """`coldstart` is in no layer, so only the cycle check sees core importing what imports core."""
    plant(copy, "coldstart.py", "import switchboard.core.model")
    plant(copy, "core/model.py", "import switchboard.coldstart")
    result = lint_imports(copy, copy)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "capabilities import downward only KEPT" in result.stdout
    assert "no import cycles between capabilities BROKEN" in result.stdout
