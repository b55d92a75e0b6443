"""The README is true to the code: every variable, every module, and links that resolve.

A clone has only this repository, so every link must name a file in it; an
operator reads the README for the variables, so each one the runner reads
must be there; a newcomer reads its layout table, so each module must be.
"""

from __future__ import annotations

import re
from pathlib import Path

from teamrunner.config import Settings
from teamrunner.providers import endpoint_variables, key_variables

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_every_variable_the_runner_reads_is_documented() -> None:
    variables = [*Settings.variables(), *key_variables(), *endpoint_variables()]
    missing = [v for v in variables if f"`{v}`" not in README]
    assert missing == []


def layout_table() -> dict[str, set[str]]:
    """The layout table's rows: each row's first cell, as the names written in it."""
    rows: dict[str, set[str]] = {}
    for line in README.splitlines():
        if line.startswith("| `"):
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
    local = [t for t in targets if not t.startswith(("http://", "https://"))]
    assert local, "the README links some files of the repository"
    assert [t for t in local if t.startswith("..")] == []
    assert [t for t in local if not (ROOT / t).exists()] == []
