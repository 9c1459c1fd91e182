"""An advised change as inventory: the file edited where its keys are (comments kept), the snippet, the model's check."""

from __future__ import annotations

import pathlib

import yaml

from ansible_collections.gpupool.core.plugins.module_utils.plan.advice import inventory_edit
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.candidates import Candidate
from tests.support import advice_beds as b

EXAMPLE = (
    pathlib.Path(__file__).resolve().parents[6] / "inventories" / "example" / "host_vars" / "cern-gpu" / "gpupool.yml"
)


def change(pool, changed=None, added=0):
    return Candidate(pool, dict(changed or {}), added, [], [], 0, 0.0, 0)


def example():
    text = EXAMPLE.read_text()
    return text, yaml.safe_load(text)["gpupool_cluster"]


def afters(raw, *candidates):
    cluster = b.load(raw)
    pools = {p["name"]: p for p in raw["pools"]}
    return {c.pool: inventory_edit.pool_after(cluster.pool(c.pool), pools[c.pool], c) for c in candidates}


def test_the_example_file_is_edited_in_place_and_keeps_its_comments():
    text, raw = example()
    a100 = change("gpu-a100-mig", {1: {"1g.10gb": 1, "3g.20gb": 1, "2g.10gb": 1}})
    h100 = change("gpu-h100", {3: {"3g.40gb": 2}}, added=1)
    diff, note = inventory_edit.file_diff(text, "gpupool.yml", afters(raw, a100, h100))
    assert note is None
    removed = [line[1:] for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    added = [line[1:] for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert removed == ["        layout: {3g.20gb: 1, 2g.10gb: 2}", "        node_count: 1"]
    assert added == [
        "        layouts:",
        "          0: {3g.20gb: 1, 2g.10gb: 2}",
        "          1: {3g.20gb: 1, 2g.10gb: 1, 1g.10gb: 1}",
        "        node_count: 2",
        "      mig:",
        "        mode: static",
        "        layouts:",
        "          3: {3g.40gb: 2}",
    ]
    assert " # Whole H100s for training." in diff  # a comment in the context, untouched


def test_a_flow_style_nodegroup_and_a_uniform_layout():
    raw = b.cluster_data(b.A100)
    text = (
        "gpupool_cluster:\n  name: c1\n  magnum: {cloud: c, cluster: k}\n  pools:\n"
        "    - name: a100  # the A100s\n"
        "      nodegroup: {flavor: g4.p2.40g, node_count: 1, max_node_count: 2}\n"
        "      gpu: {model: A100-40GB, per_node: 2}\n"
        "      mig: {mode: static, layout: {3g.20gb: 1, 2g.10gb: 2}}\n"
    )
    both = change("a100", {0: {"3g.20gb": 2}, 1: {"3g.20gb": 2}}, added=1)
    diff, note = inventory_edit.file_diff(text, "f.yml", afters(raw, both))
    assert note is None
    assert "+      nodegroup: {flavor: g4.p2.40g, node_count: 2, max_node_count: 2}" in diff
    assert "+      mig: {mode: static, layout: {3g.20gb: 2}}" in diff
    assert "    - name: a100  # the A100s" in diff


def test_a_file_without_the_pool_falls_back_to_a_diff_of_the_data():
    raw = b.cluster_data(b.A100)
    diff, note = inventory_edit.file_diff("other: {}\n", "f.yml", afters(raw, change("a100", added=1)))
    assert diff == "" and "could not be kept" in note


def test_snippet_and_the_models_check():
    raw = b.cluster_data(
        b.A100, tenants=[{"namespace": "ml", "templates": [{"name": "t", "pool": "a100", "mig_profile": "3g.20gb"}]}]
    )
    cluster = b.load(raw)
    good = change("a100", {1: {"3g.20gb": 2}}, added=1)
    data = inventory_edit.change_data(cluster.pool("a100"), raw["pools"][0], good)
    assert inventory_edit.snippet("c1", [data]).splitlines()[2:] == [
        "- name: a100",
        "  mig:",
        "    mode: static",
        "    layouts:",
        "      0: {3g.20gb: 1, 2g.10gb: 2}",
        "      1: {3g.20gb: 2}",
        "  nodegroup:",
        "    node_count: 2",
    ]
    assert inventory_edit.problems_of(inventory_edit.cluster_after(cluster, raw, [good])) == []
    # validate refuses a layout without the template's profile, and a node_count over max_node_count
    bad = change("a100", {0: {"7g.40gb": 1}, 1: {"7g.40gb": 1}}, added=2)
    messages = [m for _p, m in inventory_edit.problems_of(inventory_edit.cluster_after(cluster, raw, [bad]))]
    assert any("3g.20gb" in m for m in messages) and any("max_node_count 2" in m for m in messages)


def test_whole_gpus_everywhere_turns_mig_off():
    raw = b.cluster_data(b.A100)
    cluster = b.load(raw)
    after = inventory_edit.pool_after(cluster.pool("a100"), raw["pools"][0], change("a100", {0: None, 1: None}))
    assert after["mig"] == {"mode": "off"}
