"""infra/ imports only the shared contracts of app/ (app.core), never the controller or the tools:
it renders policies, pod specs and environment names, and runs none of the application."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.stack_run import REPO_ROOT


def _app_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return [name for name in names if name == "app" or name.startswith("app.")]


def test_infra_imports_only_app_core() -> None:
    files = sorted((REPO_ROOT / "infra").rglob("*.py"))
    assert files
    for path in files:
        for name in _app_imports(path):
            assert name == "app.core" or name.startswith("app.core."), (
                f"{path.relative_to(REPO_ROOT)} imports {name}"
            )


def test_the_check_sees_a_forbidden_import(tmp_path: Path) -> None:
    module = tmp_path / "bad.py"
    module.write_text("from app.controller.run import main\nimport app.tools.layer\n")
    assert _app_imports(module) == ["app.controller.run", "app.tools.layer"]
