# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pipeline is visible in the folders, and imports only point down it.

    mig/  ->  model/  ->  plan/  ->  k8s/ | openstack/ | nvml/  ->  runners/  ->  module.py, argument_specs.py

A file may import from its own folder or from folders to its left, never to its right; the three I/O
folders do not import each other. Libraries that talk to the outside world (kubernetes, urllib3,
openstacksdk, pynvml, subprocess, sockets, HTTP clients) may only be imported by the I/O folders and
the module glue: everything below is pure and unit-tested without a server. runners/ sequences calls of
more than one I/O folder (a Magnum converge that drains Kubernetes nodes) through those folders only: it
imports no I/O library itself, and not the step base.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3] / "plugins" / "module_utils"
PACKAGE = "ansible_collections.gpupool.core.plugins.module_utils"
RANK = {
    "mig": 0,
    "model": 1,
    "plan": 2,
    "k8s": 3,
    "openstack": 3,
    "nvml": 3,
    "runners": 4,
    "module": 5,
    "run_cluster": 5,
    "argument_specs": 5,
}
IO_LIBRARIES = (
    "kubernetes",
    "urllib3",
    "openstack",
    "keystoneauth1",
    "pynvml",
    "subprocess",
    "socket",
    "requests",
    "http",
    "urllib.request",
    "ssl",
    "ansible",
)
IO_LAYERS = ("k8s", "openstack", "nvml", "module", "argument_specs")


def layer_of(path: pathlib.Path, root: pathlib.Path = ROOT) -> str:
    rel = path.relative_to(root)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def imports(path: pathlib.Path):
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == PACKAGE:
                for alias in node.names:
                    yield node.lineno, "%s.%s" % (PACKAGE, alias.name)
            else:
                yield node.lineno, node.module


def violations(path: pathlib.Path, root: pathlib.Path = ROOT) -> list:
    here = layer_of(path, root)
    bad = []
    for line, name in imports(path):
        if name.startswith(PACKAGE + "."):
            start = len(PACKAGE) + 1
            target = name[start:].split(".")[0]
            if target not in RANK:
                bad.append("line %d: %s is not in a pipeline folder" % (line, name))
            elif RANK[target] > RANK[here] or (RANK[target] == RANK[here] == 3 and target != here):
                bad.append("line %d: %s (%s) imports %s, which is above or beside it" % (line, here, path.name, target))
        elif here not in IO_LAYERS and (name in IO_LIBRARIES or name.split(".")[0] in IO_LIBRARIES):
            bad.append(
                "line %d: %s imports the I/O library %s; only k8s/, openstack/, nvml/ and the module glue may"
                % (line, here, name)
            )
    return bad


FILES = sorted(p for p in ROOT.rglob("*.py") if p.name != "__init__.py")


def test_every_file_lives_in_a_layer():
    stray = [str(p.relative_to(ROOT)) for p in FILES if layer_of(p) not in RANK]
    assert not stray, "files outside the pipeline folders (see docs/architecture.md): %s" % stray


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_down(path):
    bad = violations(path)
    assert not bad, "\n".join(bad)


def test_the_rule_catches_upward_sideways_and_io_imports(tmp_path):
    """The checker itself can fail: each kind of violation is reported."""
    (tmp_path / "model").mkdir()
    (tmp_path / "k8s").mkdir()
    model_file = tmp_path / "model" / "bad.py"
    model_file.write_text("from %s.k8s.client import connect\nimport pynvml\nfrom kubernetes import client\n" % PACKAGE)
    k8s_file = tmp_path / "k8s" / "bad.py"
    k8s_file.write_text("from %s.nvml import facts\nfrom %s.plan import nodes\n" % (PACKAGE, PACKAGE))
    model_bad = violations(model_file, tmp_path)
    assert len(model_bad) == 3 and "imports k8s" in model_bad[0] and "pynvml" in model_bad[1]
    k8s_bad = violations(k8s_file, tmp_path)
    assert len(k8s_bad) == 1 and "imports nvml" in k8s_bad[0]


def test_a_runner_reaches_the_outside_only_through_the_io_folders(tmp_path):
    """runners/ may use k8s/ and openstack/ together, but neither an I/O library nor the step base."""
    (tmp_path / "runners").mkdir()
    runner = tmp_path / "runners" / "bad.py"
    runner.write_text(
        "from %s.k8s.drain import Drain\nfrom %s.openstack.magnum import MagnumClient\n"
        "from %s.module import GpupoolModule\nimport openstack\n" % (PACKAGE, PACKAGE, PACKAGE)
    )
    bad = violations(runner, tmp_path)
    assert len(bad) == 2 and "imports module" in bad[0] and "I/O library openstack" in bad[1], bad
