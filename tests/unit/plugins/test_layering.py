# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pipeline is visible in the folders, and imports only point down it.

    mig/  ->  model/  ->  plan/  ->  k8s/ | openstack/ | nvml/  ->  runners/  ->  module.py, argument_specs.py

A file may import from its own folder or from folders to its left, never to its right; the three I/O
folders do not import each other. Inside plan/, the sub-folders are in an order of their own (PLAN_RANK, read
from the imports when it was written down):

    kinds, progress, waiting, collector  ->  objects/  ->  nodes/  ->  mig/ | driver/ | magnum/  ->  report/  ->  advice/

The plugins above module_utils/ import only downwards too (PLUGIN_IMPORTS): a step in action/ imports
module_utils/ and plugin_utils/, never another step or a module; modules/ are doc stubs or modules that run on a
GPU node and import module_utils/ only; module_utils/ imports none of them. Libraries that talk to the outside world (kubernetes, urllib3,
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
# plan/'s sub-folders (and its top-level files), lowest first; one rank's folders do not import each other
PLAN_RANK = {
    "kinds": 0,
    "progress": 0,
    "waiting": 0,
    "collector": 0,
    "objects": 1,
    "nodes": 2,
    "mig": 3,
    "driver": 3,
    "magnum": 3,
    "report": 4,
    "advice": 5,
}
PLUGINS = ROOT.parent
COLLECTION = "ansible_collections.gpupool.core.plugins"
# which plugins folders each plugins folder may import from (module_utils: its own pipeline rule above as well)
PLUGIN_IMPORTS = {
    "module_utils": {"module_utils"},
    "plugin_utils": {"module_utils", "plugin_utils"},
    "action": {"module_utils", "plugin_utils"},
    "modules": {"module_utils"},
    "filter": {"module_utils", "plugin_utils"},
    "inventory": {"module_utils", "plugin_utils"},
    "doc_fragments": set(),
}


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
            if node.module in (PACKAGE, PACKAGE + ".plan", COLLECTION):  # "from <folder> import <sub-folder>"
                for alias in node.names:
                    yield node.lineno, "%s.%s" % (node.module, alias.name)
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
            elif here == target == "plan":
                bad += plan_order(path, root, line, name[start:].split("."))
        elif here not in IO_LAYERS and (name in IO_LIBRARIES or name.split(".")[0] in IO_LIBRARIES):
            bad.append(
                "line %d: %s imports the I/O library %s; only k8s/, openstack/, nvml/ and the module glue may"
                % (line, here, name)
            )
    return bad


def plan_order(path: pathlib.Path, root: pathlib.Path, line: int, target: list) -> list:
    """plan/X importing plan/Y: Y must rank below X (PLAN_RANK), or be X itself."""
    rel = path.relative_to(root / "plan")
    here = rel.parts[0] if len(rel.parts) > 1 else rel.stem
    there = target[1] if len(target) > 1 else None
    if there is None or there == here:
        return []
    if here not in PLAN_RANK or there not in PLAN_RANK:
        return [
            "line %d: plan/%s or plan/%s has no place in PLAN_RANK (add it where its imports put it)"
            % (line, here, there)
        ]
    if PLAN_RANK[there] >= PLAN_RANK[here]:
        return [
            "line %d: plan/%s (%s) imports plan/%s, which is above or beside it in plan's order"
            % (line, here, path.name, there)
        ]
    return []


def plugin_violations(path: pathlib.Path, plugins: pathlib.Path = PLUGINS) -> list:
    """A plugins file importing a plugins folder its own may not (PLUGIN_IMPORTS)."""
    here = path.relative_to(plugins).parts[0]
    allowed = PLUGIN_IMPORTS.get(here)
    if allowed is None:
        return ["%s: plugins/%s is not a known plugins folder (add it to PLUGIN_IMPORTS)" % (path.name, here)]
    bad = []
    for line, name in imports(path):
        if name.startswith(COLLECTION + "."):
            target = name[len(COLLECTION) + 1 :].split(".")[0]
            if target not in allowed:
                bad.append(
                    "line %d: plugins/%s (%s) imports plugins/%s, which is above or beside it"
                    % (line, here, path.name, target)
                )
    return bad


FILES = sorted(p for p in ROOT.rglob("*.py") if p.name != "__init__.py")
PLUGIN_FILES = sorted(p for p in PLUGINS.rglob("*.py") if p.name != "__init__.py")


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


@pytest.mark.parametrize("path", PLUGIN_FILES, ids=lambda p: str(p.relative_to(PLUGINS)))
def test_plugins_import_only_downwards(path):
    bad = plugin_violations(path)
    assert not bad, "\n".join(bad)


def test_plan_order_is_every_sub_folder_of_plan():
    """A new plan/ sub-folder (or top-level file) must be given its place in the order."""
    found = {p.stem for p in (ROOT / "plan").glob("*.py") if p.name != "__init__.py"}
    found |= {p.name for p in (ROOT / "plan").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert found == set(PLAN_RANK), "plan/ has %s; PLAN_RANK has %s" % (sorted(found), sorted(PLAN_RANK))


def test_the_rule_catches_upward_imports_in_plan_and_the_plugins(tmp_path):
    """The checkers can fail: plan/nodes importing plan/report, plan/mig importing plan/driver (same rank),
    a step importing another step, a node-side module importing plugin_utils, module_utils importing a step."""
    for folder in ("module_utils/plan/nodes", "module_utils/plan/mig", "action", "modules"):
        (tmp_path / folder).mkdir(parents=True)
    nodes = tmp_path / "module_utils" / "plan" / "nodes" / "bad.py"
    nodes.write_text(
        "from %s.plan.report.pool_report import pool_report\nfrom %s.plan.objects import kinds\n" % (PACKAGE, PACKAGE)
    )
    mig = tmp_path / "module_utils" / "plan" / "mig" / "bad.py"
    mig.write_text("from %s.plan.driver import values\nfrom %s.plan import kinds\n" % (PACKAGE, PACKAGE))
    nodes_bad = violations(nodes, tmp_path / "module_utils")
    assert len(nodes_bad) == 1 and "plan/nodes (bad.py) imports plan/report" in nodes_bad[0], nodes_bad
    mig_bad = violations(mig, tmp_path / "module_utils")
    assert len(mig_bad) == 1 and "imports plan/driver" in mig_bad[0], mig_bad
    step = tmp_path / "action" / "bad.py"
    step.write_text(
        "from %s.action.node_pool import NodePoolModule\nfrom %s.plugin_utils.step_action import StepAction\n"
        "from %s.modules import node_pool\n" % (COLLECTION, COLLECTION, COLLECTION)
    )
    step_bad = plugin_violations(step, tmp_path)
    assert len(step_bad) == 2 and "imports plugins/action" in step_bad[0] and "plugins/modules" in step_bad[1]
    module = tmp_path / "modules" / "bad.py"
    module.write_text("from %s.plugin_utils.step_action import StepAction\n" % COLLECTION)
    assert len(plugin_violations(module, tmp_path)) == 1
    util = tmp_path / "module_utils" / "bad.py"
    util.write_text("from %s.action import node_pool\n" % COLLECTION)
    assert "imports plugins/action" in plugin_violations(util, tmp_path)[0]
