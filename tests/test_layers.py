"""The runtime's imports go one way, as the README's "How the code is layered" draws.

Read from the source with ``ast`` (imports inside functions count too), so a
new upward import fails here before anyone has to untangle it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The layers above the library, top first; each imports only those after it.
LAYERS = ("main", "run", "team_flow", "routing", "teamrunner")
NOT_RUNTIME = ("playground", "simulators", "bench", "tests", "examples")


def _runtime_files() -> Iterator[Path]:
    for name in ("main.py", "run.py", "team_flow.py"):
        yield ROOT / name
    yield from sorted((ROOT / "routing").rglob("*.py"))
    yield from sorted((ROOT / "teamrunner").rglob("*.py"))


def _imports(path: Path) -> Iterator[str]:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


def _layer(path: Path) -> str:
    return path.relative_to(ROOT).parts[0].removesuffix(".py")


def _unit(module: str) -> str:
    """The unit a library module belongs to: its package, or the root module itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _library_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sorted((ROOT / "teamrunner").rglob("*.py")):
        relative = path.relative_to(ROOT / "teamrunner")
        source = relative.parts[0].removesuffix(".py")
        for module in _imports(path):
            target = _unit(module)
            if module.startswith("teamrunner.") and target != source:
                graph.setdefault(source, set()).add(target)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of the graph, as a path that returns to its start; empty when there is none."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str]:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return []
        for target in sorted(graph.get(node, ())):
            found = visit(target, [*path, node])
            if found:
                return found
        done.add(node)
        return []

    for start in sorted(graph):
        found = visit(start, [])
        if found:
            return found
    return []


def test_each_layer_imports_only_the_layers_below_it() -> None:
    upward = []
    for path in _runtime_files():
        below = LAYERS[LAYERS.index(_layer(path)) + 1 :]
        for module in _imports(path):
            top = module.split(".")[0]
            if top in LAYERS and top != _layer(path) and top not in below:
                upward.append(f"{path.relative_to(ROOT)} imports {module}")
    assert not upward


def test_the_runtime_never_imports_the_designer_tools_simulators_or_tests() -> None:
    reaching_out = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in _runtime_files()
        for module in _imports(path)
        if module.split(".")[0] in NOT_RUNTIME
    ]
    assert not reaching_out


def test_the_library_packages_and_root_modules_import_without_a_cycle() -> None:
    assert _cycle(_library_graph()) == []


def test_a_cycle_between_two_library_packages_is_found() -> None:
    graph = {**_library_graph(), "journal_like": {"call"}, "call": {"journal_like"}}
    assert _cycle(graph) == ["call", "journal_like", "call"]
