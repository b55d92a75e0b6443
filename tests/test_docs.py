"""The docs are true to the code: README variables, modules, paths, links; errors; packages.

A clone has only this repository, so every link and every path the README
names must be a file or folder in it; an operator reads the README for the
variables, so each one the runner reads must be there; a newcomer reads its
layout table, so each module must be, and each file a row names must be in
that row's folder. The error hierarchy is read from its drawing in
``teamrunner/errors.py``, so the drawing must hold every ``RunnerError``; a
package is read from its ``__init__`` docstring, so that must name each module.
"""

from __future__ import annotations

import ast
import fnmatch
import os
import re
from itertools import takewhile
from pathlib import Path

import teamrunner.errors
from teamrunner.config import Settings
from teamrunner.providers import endpoint_variables, key_variables

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_every_variable_the_runner_reads_is_documented() -> None:
    variables = [*Settings.variables(), *key_variables(), *endpoint_variables()]
    missing = [v for v in variables if f"`{v}`" not in README]
    assert missing == []


def layout_rows() -> list[str]:
    """The layout table's rows, as lines of the README."""
    lines = README.splitlines()
    start = lines.index("| path | holds |") + 2
    return list(takewhile(lambda line: line.startswith("| "), lines[start:]))


def layout_table() -> dict[str, set[str]]:
    """The layout table's rows: each row's first cell, as the names written in it."""
    rows: dict[str, set[str]] = {}
    for line in layout_rows():
        first = line.split("|")[1]
        rows[first] = set(re.findall(r"`([^`]+)`", first))
    return rows


def test_every_module_and_package_of_the_library_is_in_the_layout_table() -> None:
    library = ROOT / "teamrunner"
    named = {name for names in layout_table().values() for name in names}
    modules = [p.name for p in library.iterdir() if p.suffix == ".py" and p.stem != "__init__"]
    packages = [p.name for p in library.iterdir() if (p / "__init__.py").exists()]
    missing = [m for m in modules if f"teamrunner/{m}" not in named and m not in named]
    missing += [f"{p}/" for p in packages if f"teamrunner/{p}/" not in named]
    assert missing == []
    for top in ("main.py", "run.py", "team_flow.py", "routing/", "playground/", "simulators/"):
        assert top in named


def test_the_library_root_holds_at_most_a_dozen_modules() -> None:
    modules = [p for p in (ROOT / "teamrunner").glob("*.py") if p.stem != "__init__"]
    assert len(modules) <= 12, sorted(p.name for p in modules)


def test_links_name_files_in_this_repository() -> None:
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    assert targets, "the README links some files of the repository"
    assert [t for t in targets if "://" in t or t.startswith(("..", "/"))] == []
    assert [t for t in targets if not (ROOT / t).exists()] == []


# A name in backticks that reads as a file or folder: parts joined by "/", or a file name.
PATH = re.compile(r"[\w.-]+(?:/[\w.-]+)*/?")
FILE = re.compile(r"[\w.-]+\.(?:py|md|toml|ya?ml|json|txt|wav|sh)")


def named_paths(text: str) -> list[str]:
    """Every name in backticks in ``text`` that reads as a path: with a "/", or a file name."""
    names = re.findall(r"`([^`\n]+)`", text)
    return [n for n in names if PATH.fullmatch(n) and ("/" in n or FILE.fullmatch(n))]


def made_by_commands(path: str) -> bool:
    """Whether ``path`` is under what .gitignore leaves out: what commands make, not the repo."""
    top = path.split("/")[0]
    patterns = [line.strip().strip("/") for line in (ROOT / ".gitignore").read_text().splitlines()]
    return any(p and fnmatch.fnmatch(top, p) for p in patterns)


def test_every_path_the_readme_names_exists() -> None:
    paths = [p for p in named_paths(README) if "/" in p and not made_by_commands(p)]
    assert paths, "the README names paths"
    assert [p for p in paths if not (ROOT / p).exists()] == []


def test_every_file_name_the_readme_names_is_a_file_of_the_repository() -> None:
    files: set[str] = set()
    for _, folders, names in os.walk(ROOT):
        folders[:] = [f for f in folders if f != ".git" and not made_by_commands(f)]
        files.update(names)
    names = [p for p in named_paths(README) if "/" not in p]
    assert [n for n in names if n not in files] == []


def test_each_file_a_layout_row_names_is_in_that_rows_folder() -> None:
    missing = []
    for line in layout_rows():
        first, *_ = named_paths(line.split("|")[1])
        folder = ROOT / first if first.endswith("/") else (ROOT / first).parent
        for name in named_paths(line):
            if "/" not in name and not (folder / name).exists():
                missing.append(f"{first}: {name}")
    assert missing == []


def runner_errors() -> set[str]:
    """Every class of the runtime that derives from ``RunnerError``, wherever it is defined."""
    sources = [*(ROOT / "teamrunner").rglob("*.py"), *(ROOT / "routing").rglob("*.py")]
    sources += [ROOT / "main.py", ROOT / "run.py", ROOT / "team_flow.py"]
    bases: dict[str, set[str]] = {}
    for source in sources:
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.ClassDef):
                bases[node.name] = {ast.unparse(b).split(".")[-1] for b in node.bases}
    errors = {"RunnerError"}
    while grown := {name for name, of in bases.items() if of & errors} - errors:
        errors |= grown
    return errors


def test_the_error_tree_draws_every_runner_error_and_no_other() -> None:
    assert teamrunner.errors.__doc__ is not None
    drawn = set(re.findall(r"(?:── |^    )(\w+)\*?\s", teamrunner.errors.__doc__, re.M))
    assert drawn == runner_errors()


def test_each_package_names_each_of_its_modules_and_packages() -> None:
    tops = [
        p
        for p in ROOT.iterdir()
        if p.is_dir() and not p.name.startswith(".") and not made_by_commands(p.name)
    ]
    missing = []
    for init in (init for top in tops for init in top.rglob("__init__.py")):
        package = init.parent
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        named = set(re.findall(r"(?<![\w/.])(\w+\.py|\w+/)", doc))
        modules = {p.name for p in package.glob("*.py") if p.stem not in ("__init__", "__main__")}
        packages = {f"{p.parent.name}/" for p in package.glob("*/__init__.py")}
        unnamed = (modules | packages) - named
        missing += [f"{package.relative_to(ROOT)}: {n}" for n in sorted(unnamed)]
    assert missing == []
