"""The import graph of app/ and infra/: no circles, and every import points down.

    app.controller -> app.tools -> app.core
    app.controller -> app.report -> app.core (the run's pages read the run's documents alone)
    app.supplier_api -> app.core.ids (its image carries nothing else of the app's)
    app.tools.worker -> nothing of the app (it runs alone inside the sandbox)
    infra -> app.core (what it renders: the contracts and policies), never tools or controller
    rehearsal -> infra and app (it runs what infra renders with the app's stand-ins); nothing
                 imports it, and its container_init (run before a container exists) and
                 runtime_seccomp (run as a container starts) import nothing of the project

Every import statement counts, including those inside functions and TYPE_CHECKING blocks: a
circle hidden behind a lazy import is still a circle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core.repo import REPO_ROOT

PACKAGES = ("app", "infra", "rehearsal")
# Lower number, lower layer: a module may import only from its own rank or below.
RANKS = {
    "app.core": 0,
    "app.tools": 1,
    "app.report": 1,
    "app.controller": 2,
    "infra": 3,
    "rehearsal": 4,
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            found[_module_name(path)] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> Iterator[str]:
    """Every project module ``name`` imports, resolved to a module that exists."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            targets = [f"{stem}.{alias.name}" for alias in node.names] + [stem]
        for target in targets:
            # The longest prefix that is a module of ours: `from a.b import c` may name a
            # module (a.b.c) or an attribute of one (a.b).
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name:
                yield target


GRAPH = {name: sorted(set(_imports(name, path))) for name, path in MODULES.items()}


def _rank(module: str) -> int | None:
    for prefix, rank in sorted(RANKS.items(), key=lambda item: -len(item[0])):
        if module == prefix or module.startswith(prefix + "."):
            return rank
    return None


def _circles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in GRAPH[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in GRAPH:
        if node not in index:
            visit(node)
    return found


def test_the_walk_sees_the_packages_and_their_imports() -> None:
    # Guards the guard: a walk that found nothing would pass every test below.
    assert "app.controller.run" in GRAPH and "infra.components.jobs" in GRAPH
    assert "app.core.run" in GRAPH["app.controller.run"]
    assert "app.core.iam_policy" in GRAPH["infra.components.identity"]
    assert "infra.render_manifests" in GRAPH["rehearsal.objects"]


def test_there_is_no_import_circle() -> None:
    assert _circles() == []


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_every_import_points_down(module: str) -> None:
    rank = _rank(module)
    upward = [t for t in GRAPH[module] if rank is not None and (_rank(t) or 0) > rank]
    assert not upward, f"{module} imports from a higher layer: {upward}"


def test_the_worker_imports_nothing_of_the_app() -> None:
    for module, targets in GRAPH.items():
        if module.startswith("app.tools.worker"):
            outside = [t for t in targets if not t.startswith("app.tools.worker")]
            assert not outside, f"{module} imports {outside}"


def test_the_report_imports_only_the_shared_contracts() -> None:
    """The pages render any stored run from its documents: nothing of the layers or the
    controller, which would tie a page to the code that made the run."""
    assert "app.report.picture" in GRAPH["app.report.page"]  # guards the walk
    for module, targets in GRAPH.items():
        if module.startswith("app.report"):
            outside = [t for t in targets if not t.startswith(("app.report", "app.core"))]
            assert not outside, f"{module} imports {outside}"


def test_the_supplier_api_imports_only_the_id_rule() -> None:
    for module, targets in GRAPH.items():
        if module.startswith("app.supplier_api"):
            outside = [
                t for t in targets if not t.startswith("app.supplier_api") and t != "app.core.ids"
            ]
            assert not outside, f"{module} imports {outside}"


def test_infra_imports_only_the_shared_contracts() -> None:
    for module, targets in GRAPH.items():
        if module.startswith("infra"):
            outside = [t for t in targets if not t.startswith(("infra", "app.core"))]
            assert not outside, f"{module} imports {outside}"


def test_nothing_imports_the_rehearsal() -> None:
    for module, targets in GRAPH.items():
        if not module.startswith("rehearsal"):
            inward = [t for t in targets if t.startswith("rehearsal")]
            assert not inward, f"{module} imports {inward}"


@pytest.mark.parametrize("module", ["rehearsal.container_init", "rehearsal.runtime_seccomp"])
def test_the_container_start_imports_nothing_of_the_project(module: str) -> None:
    assert GRAPH[module] == []


def test_no_two_controller_modules_share_a_name() -> None:
    """A phase is named for its printed section; what it uses is named for what it does, never
    the same word in another folder (phases/report.py beside a report.py)."""
    stems: dict[str, list[str]] = {}
    for module in MODULES:
        if module.startswith("app.controller."):
            stem = module.rpartition(".")[2]
            stems.setdefault(stem, []).append(module)
    assert "model" in stems and "agent_turn" in stems  # guards the walk
    shared = {stem: found for stem, found in stems.items() if len(found) > 1}
    assert not shared
