"""The runtime's code stays small enough to read: no function of it grows past 60 lines.

The runtime is what the production image holds (README, "How the code is
layered"): ``main.py``, ``run.py``, ``team_flow.py``, ``routing/`` and
``teamrunner/``. A function is counted from its ``def`` to its last line,
docstring and nested functions included, as a reader scrolls through it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNTIME = ("main.py", "run.py", "team_flow.py", "routing", "teamrunner")
MAX_FUNCTION_LINES = 60


def runtime_files() -> Iterator[Path]:
    for name in RUNTIME:
        path = ROOT / name
        yield from sorted(path.rglob("*.py")) if path.is_dir() else [path]


def function_lengths(path: Path) -> Iterator[tuple[str, int]]:
    """Each function of ``path`` (methods and nested ones too), as ``file:line name`` and length."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            assert node.end_lineno is not None
            where = f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"
            yield where, node.end_lineno - node.lineno + 1


def test_the_runtime_is_all_there_to_measure() -> None:
    files = list(runtime_files())
    assert ROOT / "main.py" in files and ROOT / "teamrunner" / "serving" / "app.py" in files
    assert len(files) > 50


def test_no_runtime_function_is_over_60_lines() -> None:
    too_long = {
        where: lines
        for path in runtime_files()
        for where, lines in function_lengths(path)
        if lines > MAX_FUNCTION_LINES
    }
    assert too_long == {}
