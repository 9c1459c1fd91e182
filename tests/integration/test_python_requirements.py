"""The documented Python requirements never replace the user's ansible-core.

A user installs ansible-core (or an execution environment brings it), then runs the documented
`pip install -r .../gpupool/core/requirements.txt`. pip must leave that ansible-core in place at both ends of
the supported range, meta/runtime.yml's `requires_ansible` (the one place the range is stated). The newest
release of the range depends on the Python: the checks ask pip's resolver, against PyPI, which ansible-core
is the newest (and the oldest) for this interpreter and for newer Pythons, where newer ansible-core releases
exist (2.20 and later need Python 3.12).

On this interpreter the check is the user's own sequence in a fresh venv: a real install of the newest
ansible-core, then `pip install --dry-run --report` of requirements.txt (pip resolves against what is
installed, downloads metadata only and writes nothing). For other Pythons, pip's resolver is asked the same
question with `--python-version`: ansible-core==<that release> together with requirements.txt.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.integration.playbook import ROOT

REQUIREMENTS = Path(ROOT, "requirements.txt")
# Newer Pythons than the test bed's 3.11, with ansible-core releases (2.20 and later) it cannot install.
OTHER_PYTHONS = ("3.12", "3.13")


def requires_ansible() -> str:
    return yaml.safe_load(Path(ROOT, "meta", "runtime.yml").read_text())["requires_ansible"]


def pip(*args: str, python: str | None = None, cwd: Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    if python:
        cmd += ["--python", python]
    proc = subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=300, cwd=cwd)
    assert proc.returncode == 0, "pip %s failed (the conflict below, or PyPI out of reach):\n%s" % (
        " ".join(args),
        (proc.stdout + proc.stderr)[-3000:],
    )
    return proc


def resolve(*requirements: str, tmp: Path, python: str | None = None, python_version: str | None = None) -> dict:
    """What `pip install` would install (name -> version): pip's resolver in dry-run mode, its JSON report."""
    report = tmp / ("report-%d.json" % len(list(tmp.glob("report-*.json"))))
    args = ["install", "--dry-run", "--quiet", "--report", str(report)]
    if python_version:
        # Another Python than this one: resolve from wheels for it, ignoring what this venv holds.
        args += ["--python-version", python_version, "--only-binary=:all:", "--ignore-installed"]
    pip(*args, *requirements, python=python, cwd=tmp)
    return {
        item["metadata"]["name"].lower(): item["metadata"]["version"]
        for item in json.loads(report.read_text())["install"]
    }


@functools.cache
def ansible_core_at(end: str, python_version: str) -> str:
    """The oldest or newest ansible-core release of the supported range on PyPI for that Python."""
    proc = pip("index", "versions", "ansible-core", "--python-version", python_version, "--only-binary=:all:", cwd=ROOT)
    (listed,) = [line for line in proc.stdout.splitlines() if line.startswith("Available versions:")]
    versions = sorted(
        SpecifierSet(requires_ansible()).filter(listed.split(":", 1)[1].replace(",", " ").split()), key=Version
    )
    assert versions, "no ansible-core release of %s on PyPI for Python %s" % (requires_ansible(), python_version)
    return versions[0] if end == "oldest" else versions[-1]


def current_python() -> str:
    return "%d.%d" % sys.version_info[:2]


def test_requirements_name_libraries_only():
    lines = [line.split("#")[0].strip() for line in REQUIREMENTS.read_text().splitlines()]
    names = [canonicalize_name(Requirement(line).name) for line in lines if line]
    assert "pydantic" in names, names
    tools = [name for name in names if name in ("ansible-core", "ansible-base", "ansible")]
    assert tools == [], "requirements.txt must name libraries only; the ansible-core range is meta/runtime.yml's"


def test_pip_install_of_the_requirements_leaves_the_newest_ansible_core_in_place(tmp_path):
    """The documented sequence in a fresh venv on this interpreter: ansible-core, then requirements.txt."""
    newest = ansible_core_at("newest", current_python())
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    pip("install", "--quiet", "ansible-core==%s" % newest, python=python, cwd=tmp_path)
    would_install = resolve("-r", str(REQUIREMENTS), tmp=tmp_path, python=python)
    assert "ansible-core" not in would_install and "ansible" not in would_install, (
        "pip install -r requirements.txt would replace ansible-core %s (the newest of %s for Python %s) with %s"
        % (
            newest,
            requires_ansible(),
            current_python(),
            would_install.get("ansible-core") or would_install.get("ansible"),
        )
    )
    assert "pydantic" in would_install, would_install  # the fresh venv has none of the libraries: pip resolved them


# The newest end on this Python is the fresh venv's test above.
@pytest.mark.parametrize(
    ("end", "python_version"), [("oldest", current_python())] + [("newest", python) for python in OTHER_PYTHONS]
)
def test_the_requirements_keep_either_end_of_the_range(tmp_path, end, python_version):
    """pip's resolver keeps ansible-core==<that end> when it installs requirements.txt too."""
    version = ansible_core_at(end, python_version)
    would_install = resolve(
        "ansible-core==%s" % version, "-r", str(REQUIREMENTS), tmp=tmp_path, python_version=python_version
    )
    assert would_install["ansible-core"] == version, would_install
