"""The ``teamrunner`` command as installed from the wheel, not from the work tree.

The wheel is built with pip and installed, without its dependencies, into a
fresh virtualenv whose dependencies come from this one (``wheel_build.py``
says how, and why that does not reach the work tree; the tests prove it).
The commands run from an empty working directory.
"""

from __future__ import annotations

import json
import re
import sysconfig
import zipfile
from pathlib import Path

import pytest

from wheel_build import (
    ROOT,
    Installed,
    build_wheel,
    copy_sources,
    imported_from,
    install,
    run,
    wheel_files,
)

# The project's own top-level modules and packages, as pyproject.toml names them.
MODULES = ["main", "run", "team_flow", "routing", "teamrunner.contract", "playground.cli"]


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("wheel")
    return build_wheel(copy_sources(base / "src"), base / "dist")


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    return install(wheel, tmp_path_factory.mktemp("installed") / "venv")


def test_the_wheel_holds_the_runtime_the_command_its_simulators_and_the_demo_team(
    wheel: Path,
) -> None:
    files = wheel_files(wheel)

    assert {"main.py", "run.py", "team_flow.py", "playground/teams/demo.yaml"} <= files
    assert "playground/talk.html" in files
    assert {"playground/scenarios/demo.yaml", "playground/scenarios/receptionist.yaml"} <= files
    for package in ("routing", "teamrunner", "teamrunner/manager", "simulators", "playground"):
        assert any(re.fullmatch(rf"{package}/[a-z_]+\.py", name) for name in files), package
    assert not any(name.startswith(("tests/", "bench/")) for name in files)
    [entry_points] = [name for name in files if name.endswith(".dist-info/entry_points.txt")]
    with zipfile.ZipFile(wheel) as archive:
        assert "teamrunner = playground.cli:main" in archive.read(entry_points).decode()


def test_the_installed_project_is_imported_from_the_new_virtualenv_not_the_work_tree(
    installed: Installed, tmp_path: Path
) -> None:
    files, path = imported_from(installed, [*MODULES, "pipecat"], cwd=tmp_path)

    for name in MODULES:
        assert files[name].is_relative_to(installed.site), (name, files[name])
    # The dependencies come from this virtualenv, through the .pth file.
    assert files["pipecat"].is_relative_to(sysconfig.get_path("purelib"))
    assert str(ROOT) not in path


def test_the_installed_command_checks_the_packaged_demo_team(
    installed: Installed, tmp_path: Path
) -> None:
    demo = installed.site / "playground" / "teams" / "demo.yaml"

    result = run([installed.command("teamrunner"), "check", demo], cwd=tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "```mermaid" in result.stdout
    assert "no problems found" in result.stdout


def test_the_installed_demo_runs_a_caller_line_from_an_empty_directory(
    installed: Installed, tmp_path: Path
) -> None:
    line = "Hi, I have a billing question."

    result = run(
        [installed.command("teamrunner"), "demo", "--say", line, "--out", "out"],
        cwd=tmp_path,
        timeout=120,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads((tmp_path / "out" / "demo.json").read_text())
    lines = report["lines"]
    assert [words(x["text"]) for x in lines if x["kind"] == "caller"] == [words(line)]
    assert [x["text"] for x in lines if x["kind"] == "switch"] == [
        "Greeter -> Billing (transfer_to_billing)"
    ]
    voices = [(x["member"], x["detail"]["voice"]) for x in lines if x["kind"] == "bot"]
    # The greeter's greeting (and handoff line), then billing's answer.
    assert voices[0] == ("Greeter", "piper")
    assert voices[-1] == ("Billing", "espeak en-us")
    assert (tmp_path / "out" / "demo.wav").stat().st_size > 44
