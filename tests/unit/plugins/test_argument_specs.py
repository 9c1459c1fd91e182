# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Argument-spec pieces and doc fragments say the same thing, option by option, and modules are built on the base."""

from __future__ import annotations

import ast
import pathlib

import pytest
import yaml

from ansible_collections.gpupool.core.plugins.doc_fragments import k8s_auth, openstack
from ansible_collections.gpupool.core.plugins.module_utils import argument_specs
from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import CONNECTION_OPTIONS

FRAGMENTS = {
    "AUTH": k8s_auth.ModuleDocFragment.DOCUMENTATION,
    "LEASE": k8s_auth.ModuleDocFragment.LEASE,
    "POOLS": k8s_auth.ModuleDocFragment.POOLS,
    "APPLY": k8s_auth.ModuleDocFragment.APPLY,
    "NODES": k8s_auth.ModuleDocFragment.NODES,
    "WAIT": k8s_auth.ModuleDocFragment.WAIT,
    "DRAIN": k8s_auth.ModuleDocFragment.DRAIN,
    "OPENSTACK": openstack.ModuleDocFragment.DOCUMENTATION,
}
MODULES = pathlib.Path(__file__).resolve().parents[3] / "plugins" / "modules"


def documented(option: dict) -> dict:
    return {key: option.get(key) for key in ("type", "default", "required", "aliases", "choices", "elements")}


def specified(option: dict) -> dict:
    out = {key: option.get(key) for key in ("type", "default", "required", "aliases", "choices", "elements")}
    out["type"] = out["type"] or "str"
    return out


def normalize(option: dict) -> dict:
    out = dict(option)
    out["required"] = bool(out.get("required"))
    out["aliases"] = sorted(out.get("aliases") or [])
    out["choices"] = sorted(out.get("choices") or [])
    return out


@pytest.mark.parametrize("piece", sorted(FRAGMENTS))
def test_every_piece_matches_its_doc_fragment(piece):
    doc = yaml.safe_load(FRAGMENTS[piece])["options"]
    spec = argument_specs.PIECES[piece]
    assert sorted(doc) == sorted(spec), "options differ between %s and its doc fragment" % piece
    for name in spec:
        assert normalize(documented(doc[name])) == normalize(specified(spec[name])), (piece, name)


def test_kubernetes_connection_options_are_the_auth_piece():
    assert tuple(argument_specs.AUTH) == CONNECTION_OPTIONS


def test_compose_allows_only_a_new_default_for_a_shared_option():
    spec = argument_specs.compose(argument_specs.WAIT, wait_timeout=dict(type="int", default=1800))
    assert spec["wait_timeout"] == {"type": "int", "default": 1800} and spec["wait"]["default"] is False
    with pytest.raises(ValueError, match="wait_timeout re-declares type"):
        argument_specs.compose(argument_specs.WAIT, wait_timeout=dict(type="str", default="1"))
    with pytest.raises(ValueError, match="in two shared pieces"):
        argument_specs.compose(argument_specs.WAIT, argument_specs.WAIT)


ACTIONS = MODULES.parent / "action"
BASES = {"GpupoolModule", "PoolModule", "KubernetesModule", "MagnumModule", "MagnumPoolModule", "NvmlModule"}
FRAGMENT_OF = {"gpupool.core.k8s_auth": "AUTH", "gpupool.core.openstack": "OPENSTACK"}
FRAGMENT_OF.update(
    ("gpupool.core.k8s_auth.%s" % piece.lower(), piece) for piece in FRAGMENTS if piece not in FRAGMENT_OF.values()
)


def step_classes(path: pathlib.Path) -> list:
    tree = ast.parse(path.read_text())
    return [
        n
        for n in tree.body
        if isinstance(n, ast.ClassDef) and any(isinstance(b, ast.Name) and b.id in BASES for b in n.bases)
    ]


def module_doc(path: pathlib.Path) -> dict:
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets] == ["DOCUMENTATION"]:
            return yaml.safe_load(node.value.value)
    raise AssertionError("%s has no DOCUMENTATION" % path.name)


@pytest.mark.parametrize("path", sorted(MODULES.glob("*.py")), ids=lambda p: p.stem)
def test_every_step_is_one_subclass_of_the_base_with_run(path):
    """A step that talks to an API is an action plugin (its module file only documents it); a step that runs on
    GPU nodes is a module. Either way: exactly one class on the base, with run(), and no AnsibleModule of its own."""
    action = ACTIONS / path.name
    code = action if action.exists() else path
    if action.exists():
        assert step_classes(path) == [], (
            "%s runs as an action plugin: its module file is documentation only" % path.name
        )
        assert "class ActionModule(StepAction)" in action.read_text()
    classes = step_classes(code)
    assert len(classes) == 1, "%s must define exactly one step class on the base" % code.name
    assert any(isinstance(n, ast.FunctionDef) and n.name == "run" for n in classes[0].body)
    assert "AnsibleModule(" not in code.read_text(), "%s builds its own AnsibleModule" % code.name


@pytest.mark.parametrize("path", sorted(ACTIONS.glob("*.py")), ids=lambda p: p.stem)
def test_an_action_plugins_options_are_the_ones_its_module_documents(path):
    """ansible-test validates a module's argument spec against its docs only for code it can run as a module;
    for a documentation stub this test does it: every option, with its type, default, choices and aliases."""
    import importlib

    action = importlib.import_module("ansible_collections.gpupool.core.plugins.action.%s" % path.stem)
    spec = action.ActionModule.step.full_argument_spec()
    doc = module_doc(MODULES / path.name)
    options = {}
    for fragment in doc.get("extends_documentation_fragment") or []:
        if fragment in FRAGMENT_OF:
            options.update(yaml.safe_load(FRAGMENTS[FRAGMENT_OF[fragment]])["options"])
    for name, option in (doc.get("options") or {}).items():  # as ansible-doc merges: the module's keys win
        options[name] = dict(options.get(name) or {}, **option)
    assert sorted(options) == sorted(spec), "options of %s differ between its docs and its argument spec" % path.stem
    for name in spec:
        assert normalize(documented(options[name])) == normalize(specified(spec[name])), (path.stem, name)
