"""The production image: the runtime only, neither the simulators nor the playground.

Docker cannot run here, so the test does what ``docker build`` would do
with this Dockerfile: it takes the build context (the repository less what
``.dockerignore`` excludes), copies into an empty image root exactly what
the Dockerfile's ``COPY`` lines copy, and builds there, with pip, the wheel
that its ``pip install .`` installs. It understands the Dockerfile syntax
the project uses (``WORKDIR``, ``COPY src... dest``, line continuations)
and ``.dockerignore`` patterns as Docker matches them.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from wheel_build import ROOT, build_wheel, imported_from, install, run, wheel_files

RUNTIME = [
    "main",
    "run",
    "team_flow",
    "routing",
    "teamrunner.contract",
    "teamrunner.lifecycle.registry",
]


@dataclass(frozen=True)
class Copy:
    """One ``COPY``: context paths, and where they land in the image (absolute)."""

    sources: tuple[str, ...]
    dest: str


@dataclass(frozen=True)
class Build:
    copies: tuple[Copy, ...]
    install_dir: str  # the WORKDIR of the RUN that pip-installs the project


def instructions(dockerfile: str) -> Iterator[tuple[str, str]]:
    """``(KEYWORD, arguments)`` of each instruction, continuation lines joined."""
    logical = ""
    for line in dockerfile.splitlines():
        if not logical and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            logical += line.rstrip()[:-1] + " "
            continue
        keyword, _, arguments = (logical + line).strip().partition(" ")
        logical = ""
        yield keyword.upper(), arguments.strip()


def parse(dockerfile: str) -> Build:
    workdir, copies, install_dir = "/", [], None
    for keyword, arguments in instructions(dockerfile):
        if keyword == "WORKDIR":
            workdir = posixpath.join(workdir, arguments)
        elif keyword in ("COPY", "ADD"):
            args = json.loads(arguments) if arguments.startswith("[") else shlex.split(arguments)
            assert not any(a.startswith("--from") for a in args), "multi-stage COPY: not modelled"
            *sources, dest = [a for a in args if not a.startswith("--")]
            copies.append(Copy(tuple(sources), posixpath.join(workdir, dest)))
        elif keyword == "RUN" and re.search(r"\bpip install\b", arguments):
            install_dir = workdir
    assert install_dir is not None, "the Dockerfile has no RUN pip install"
    return Build(tuple(copies), install_dir)


class DockerIgnore:
    """``.dockerignore`` as Docker applies it: the last pattern that matches a path wins.

    A pattern matches a path or any of its parent directories; ``*`` and
    ``?`` stay within one path segment, ``**`` spans any number of them, and
    a leading ``!`` makes an exception.
    """

    def __init__(self, text: str) -> None:
        self.rules: list[tuple[re.Pattern[str], bool]] = []
        for line in text.splitlines():
            pattern = line.strip()
            if not pattern or pattern.startswith("#"):
                continue
            keep = pattern.startswith("!")
            pattern = posixpath.normpath(pattern.removeprefix("!").strip()).lstrip("/")
            self.rules.append((re.compile(_regex(pattern)), keep))

    def excludes(self, path: str) -> bool:
        parts = path.split("/")
        candidates = ["/".join(parts[:end]) for end in range(1, len(parts) + 1)]
        excluded = False
        for pattern, keep in self.rules:
            if any(pattern.fullmatch(c) for c in candidates):
                excluded = not keep
        return excluded


def _regex(pattern: str) -> str:
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return out


def context_files(source: str, ignore: DockerIgnore) -> list[str]:
    """The files under context path ``source`` that the build context holds."""
    path = ROOT / source
    assert path.exists(), f"COPY {source}: no such path in the repository"
    found = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    kept = [f.relative_to(ROOT).as_posix() for f in found]
    kept = [f for f in kept if not ignore.excludes(f)]
    assert kept, f"COPY {source}: .dockerignore leaves nothing of it in the build context"
    return kept


def reproduce(image: Path) -> Path:
    """The image's files as the Dockerfile's COPY lines lay them out; returns the install dir."""
    build = parse((ROOT / "Dockerfile").read_text())
    ignore = DockerIgnore((ROOT / ".dockerignore").read_text())
    for copy in build.copies:
        into_dir = copy.dest.endswith("/") or len(copy.sources) > 1
        for source in copy.sources:
            for file in context_files(source, ignore):
                if (ROOT / source).is_dir():
                    target = posixpath.join(copy.dest, posixpath.relpath(file, source))
                elif into_dir:
                    target = posixpath.join(copy.dest, posixpath.basename(file))
                else:
                    target = copy.dest
                landed = image / posixpath.normpath(target).lstrip("/")
                landed.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / file, landed)
    return image / build.install_dir.lstrip("/")


@pytest.fixture(scope="module")
def image_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("image")
    return build_wheel(reproduce(base / "root"), base / "dist")


def test_the_image_wheel_has_the_runtime_and_neither_the_simulators_nor_the_playground(
    image_wheel: Path,
) -> None:
    files = wheel_files(image_wheel)

    assert {"main.py", "run.py", "team_flow.py"} <= files
    assert any(name.startswith("routing/") for name in files)
    assert any(name.startswith("teamrunner/") for name in files)
    assert "teamrunner/manager/client.py" in files  # a namespace package, found all the same
    assert not [name for name in files if name.startswith(("simulators/", "playground/"))]


def test_the_image_runtime_imports_without_the_simulators_or_the_playground(
    image_wheel: Path, tmp_path: Path
) -> None:
    installed = install(image_wheel, tmp_path / "venv")

    files, _ = imported_from(installed, RUNTIME, cwd=tmp_path)

    assert all(file.is_relative_to(installed.site) for file in files.values()), files
    for absent in ("simulators", "playground"):
        result = run([installed.python, "-c", f"import {absent}"], cwd=tmp_path)
        assert "ModuleNotFoundError" in result.stderr, absent


def test_dockerignore_patterns_match_as_docker_matches_them() -> None:
    ignore = DockerIgnore("*\n!routing\n**/__pycache__\n!keep/**/*.py\n")

    assert ignore.excludes("simulators/manager.py")
    assert ignore.excludes("README.md")
    assert not ignore.excludes("routing/router.py")
    assert ignore.excludes("routing/__pycache__/router.cpython-311.pyc")
    assert not ignore.excludes("keep/a/b/c.py")
    assert ignore.excludes("keep/a/b/c.txt")


def test_the_image_compiles_every_python_module_it_copies() -> None:
    # The runner runs as a user that cannot write to the working directory, where
    # `python main.py` imports it from: bytecode not made at build is made at every start.
    compiled: set[str] = set()
    for keyword, arguments in instructions((ROOT / "Dockerfile").read_text()):
        for command in arguments.split("&&") if keyword == "RUN" else ():
            words = shlex.split(command)
            if words[:3] == ["python", "-m", "compileall"]:
                compiled.update(posixpath.normpath(w) for w in words[3:] if not w.startswith("-"))
    copied = [
        source
        for copy in parse((ROOT / "Dockerfile").read_text()).copies
        for source in copy.sources
        if source.endswith(".py") or any((ROOT / source).rglob("*.py"))
    ]
    assert copied
    uncompiled = [
        source
        for source in copied
        if not any(
            posixpath.normpath(source) == path or posixpath.normpath(source).startswith(path + "/")
            for path in compiled
        )
    ]
    assert uncompiled == []
