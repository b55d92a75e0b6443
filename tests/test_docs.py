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


def test_every_module_of_the_runtime_is_in_the_layout_table() -> None:
    modules = [p.name for p in (ROOT / "teamrunner").iterdir() if p.suffix == ".py"]
    modules += [
        f"{p.name}/" for p in (ROOT / "teamrunner").iterdir() if (p / "__init__.py").exists()
    ]
    missing = [m for m in modules if m != "__init__.py" and m.removesuffix(".py") not in README]
    assert missing == []
    for top in ("main.py", "run.py", "team_flow.py", "routing/", "playground/", "simulators/"):
        assert f"`{top}`" in README


def test_links_name_files_in_this_repository() -> None:
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    local = [t for t in targets if not t.startswith(("http://", "https://"))]
    assert local, "the README links some files of the repository"
    assert [t for t in local if t.startswith("..")] == []
    assert [t for t in local if not (ROOT / t).exists()] == []
