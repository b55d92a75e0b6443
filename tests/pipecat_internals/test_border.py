"""Only ``teamrunner/pipecat_internals/`` touches pipecat's private names.

pipecat changes its private attributes and methods without notice, so every
use of one lives in that package, each guarded by a test of its own. This
test reads the rest of the runtime (``main.py``, ``run.py``, ``team_flow.py``,
``routing/``, ``teamrunner/``) and fails on any private use outside it:

- a class with a pipecat base that reads, writes or overrides a name
  starting with ``_`` that one of its pipecat bases defines or uses on
  ``self`` (this also catches our own private name colliding with one a
  newer pipecat starts using);
- a private name imported from a pipecat module;
- any code reaching into another object's private name (``obj._x``), which
  the style guide rules out anyway.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BORDER = ROOT / "teamrunner" / "pipecat_internals"
RUNTIME = ("main.py", "run.py", "team_flow.py", "routing", "teamrunner")


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.endswith("__")


def is_pipecat(cls: type) -> bool:
    return cls.__module__.split(".")[0] == "pipecat"


def runtime_files() -> list[Path]:
    files: list[Path] = []
    for entry in RUNTIME:
        path = ROOT / entry
        files.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    return [f for f in files if BORDER not in f.parents]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def names_used_by(cls: type) -> frozenset[str]:
    """The private names a pipecat class defines, and uses on any object in its source."""
    names = {name for name in vars(cls) if is_private(name)}
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):
        return frozenset(names)
    names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and is_private(n.attr)}
    return frozenset(names)


def pipecat_privates(cls: type) -> frozenset[str]:
    """Every private name of ``cls``'s pipecat bases."""
    return frozenset().union(*(names_used_by(base) for base in cls.__mro__ if is_pipecat(base)))


def on_self(node: ast.Attribute) -> bool:
    """``self._x``, ``cls._x`` or ``super()._x``."""
    value = node.value
    if isinstance(value, ast.Name):
        return value.id in ("self", "cls")
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "super"
    )


def own_names(node: ast.ClassDef) -> set[str]:
    """The private names a class body defines, or uses on itself."""
    names: set[str] = set()
    for child in node.body:
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) and is_private(child.name):
            names.add(child.name)
        targets = child.targets if isinstance(child, ast.Assign) else []
        if isinstance(child, ast.AnnAssign):
            targets = [child.target]
        names |= {t.id for t in targets if isinstance(t, ast.Name) and is_private(t.id)}
    names |= {
        n.attr
        for n in ast.walk(node)
        if isinstance(n, ast.Attribute) and is_private(n.attr) and on_self(n)
    }
    return names


def private_uses(path: Path) -> list[str]:
    module = importlib.import_module(module_name(path))
    tree = ast.parse(path.read_text())
    where = path.relative_to(ROOT)
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            cls = getattr(module, node.name, None)
            if isinstance(cls, type) and any(is_pipecat(base) for base in cls.__mro__):
                shared = own_names(node) & pipecat_privates(cls)
                found += [f"{where}: {node.name} uses pipecat's {n}" for n in sorted(shared)]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "pipecat":
            found += [
                f"{where}:{node.lineno} imports {alias.name} from {node.module}"
                for alias in node.names
                if is_private(alias.name)
            ]
        elif isinstance(node, ast.Attribute) and is_private(node.attr) and not on_self(node):
            found.append(f"{where}:{node.lineno} reaches into another object's {node.attr}")
    return found


def test_only_pipecat_internals_touches_pipecat_privates() -> None:
    found = [use for path in runtime_files() for use in private_uses(path)]

    assert found == []
