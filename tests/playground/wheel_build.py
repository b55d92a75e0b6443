"""Building the project's wheel as ``pip install .`` would, and installing it elsewhere.

For the packaging tests. The build runs in the test's own copy of a source
tree, never in the work tree: setuptools writes ``build/`` and
``*.egg-info`` beside the sources, and several test runs may build at once.
It uses this virtualenv's setuptools (``--no-build-isolation``) and no
index, so nothing is fetched.

``install`` puts a wheel, without its dependencies, into a fresh virtualenv.
The dependencies come from this virtualenv's site-packages, named in a
``.pth`` file: a directory named there is only appended to ``sys.path``, so
the ``.pth`` files inside it (among them the editable install's finder,
which maps the project's packages to the work tree) are not run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# What a source tree holds that is no part of the project's sources.
NOT_SOURCES = shutil.ignore_patterns(
    ".git",
    ".venv",
    "build",
    "dist",
    "out",
    "*.egg-info",
    "__pycache__",
    "*.pyc",
    ".*_cache",
)


def copy_sources(into: Path) -> Path:
    """A copy of the repository's sources (no virtualenv, no build output) at ``into``."""
    shutil.copytree(ROOT, into, ignore=NOT_SOURCES)
    return into


def build_wheel(source: Path, into: Path) -> Path:
    """The wheel pip builds from the project at ``source``, written into ``into``."""
    result = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"),
            *("--no-index", "--quiet", "--wheel-dir", str(into), str(source)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, (
        f"pip could not build the wheel:\n{result.stdout}{result.stderr}\n"
        "(\"invalid command 'bdist_wheel'\": the virtualenv's setuptools is older than 70.1 "
        "and has no `wheel` beside it; the dev extra needs setuptools>=70.1)"
    )
    [wheel] = into.glob("*.whl")
    return wheel


def wheel_files(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


@dataclass(frozen=True)
class Installed:
    """A fresh virtualenv with a wheel installed in it."""

    venv: Path
    site: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def command(self, name: str) -> Path:
        return self.venv / "bin" / name


def install(wheel: Path, venv: Path) -> Installed:
    """``wheel`` installed into a new virtualenv at ``venv``; dependencies from this one."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site = Path(run([python, "-c", purelib], cwd=venv).stdout.strip())
    subprocess.run(
        [
            *(sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet"),
            *("--no-deps", "--no-index", str(wheel)),
        ],
        check=True,
    )
    (site / "dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return Installed(venv, site)


def run(command: list[str | Path], cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    """``command`` in an environment that leads back to neither the work tree nor a key."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY") and k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
    }
    return subprocess.run(
        [str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def imported_from(
    installed: Installed, modules: list[str], cwd: Path
) -> tuple[dict[str, Path], list[str]]:
    """The file each of ``modules`` is imported from in ``installed``, and its ``sys.path``."""
    script = (
        "import importlib, json, sys; "
        f"files = {{n: importlib.import_module(n).__file__ for n in {modules!r}}}; "
        "print(json.dumps([files, sys.path]))"
    )
    result = run([installed.python, "-c", script], cwd=cwd)
    assert result.returncode == 0, result.stderr
    files, path = json.loads(result.stdout)
    return {name: Path(file) for name, file in files.items()}, path
