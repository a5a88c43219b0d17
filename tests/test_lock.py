"""requirements.lock is the install CI tests and the README's commands use: it pins every
requirement of pyproject.toml (dev extras included) within its range, and both README
commands and CI install through it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements.lock"


def pins() -> dict[str, str]:
    found = {}
    for line in LOCK.read_text().splitlines():
        m = re.fullmatch(r"([A-Za-z0-9._-]+)==([^\s;]+).*", line)
        if m:
            found[canonicalize_name(m.group(1))] = m.group(2)
    return found


def requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [Requirement(r) for r in
            project["dependencies"] + project["optional-dependencies"]["dev"]]


def test_every_requirement_is_pinned_within_its_range() -> None:
    locked = pins()
    for req in requirements():
        name = canonicalize_name(req.name)
        assert name in locked, f"{req.name} is not in requirements.lock: run .ci/lock --keep"
        assert req.specifier.contains(locked[name], prereleases=True), (
            f"requirements.lock pins {req.name}=={locked[name]}, outside pyproject.toml's "
            f"{req.specifier}: run .ci/lock --keep")


def test_every_requirement_has_a_lower_and_an_upper_bound() -> None:
    for req in requirements():
        ops = {s.operator for s in req.specifier}
        assert ops & {">=", "~=", "=="} and ops & {"<", "~=", "=="}, (
            f"{req}: give the oldest version that works and stop before the next major")


def test_the_readme_commands_and_ci_install_through_the_lock() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```sh\n(.*?)\n```", section, re.S)
    assert len(commands) == 2
    for command in commands:
        assert command.startswith("pip install -c requirements.lock -e '.[dev]' && "), command
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python3 -m venv" in ci and "readme_commands" in ci
    assert "pip install" not in ci  # nothing installed by hand beside the README's command
