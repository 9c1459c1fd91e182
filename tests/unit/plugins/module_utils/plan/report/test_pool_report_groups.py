"""Pool report of a pool with MIG groups: each node is expected to carry its group's layout and config."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.plan.report import pool_report as pr
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.observed import Observed
from tests.unit.plugins.module_utils.plan.report.test_pool_report import (
    A100,
    CFG,
    LAYOUT,
    NG,
    cluster,
    mig_devs,
    node,
    rslice,
)

SMALL = {"1g.5gb": 7}
GROUP_CFG = CFG + "-small"


def with_group(data):
    data["pools"][0]["mig"]["groups"] = [{"name": "small", "nodes": 1, "layout": SMALL}]


def devices(layout):
    return mig_devs(A100, 0, layout) + mig_devs(A100, 1, layout)


def test_each_node_is_checked_against_its_groups_layout_and_config():
    nodes = [
        node("a100-0", {NG: "a100"}, config=GROUP_CFG, state="success"),
        node("a100-1", {NG: "a100"}, config=CFG, state="success"),
    ]
    slices = [rslice("a100-0", devices(SMALL)), rslice("a100-1", devices(LAYOUT))]
    rep = pr.build_report(cluster(with_group), Observed(nodes, slices))
    a = rep["pools"]["a100"]
    assert a["mismatches"] == []
    rows = {row["name"]: row for row in a["nodes"]}
    assert rows["a100-0"]["mig_group"] == "small" and rows["a100-1"]["mig_group"] is None
    assert rows["a100-0"]["expected_layout"] == {"0": SMALL, "1": SMALL}
    assert rows["a100-1"]["expected_layout"] == {"0": LAYOUT, "1": LAYOUT}
    assert a["expected_layout"] == {"0": LAYOUT, "1": LAYOUT}  # the pool's own layout


def test_a_group_node_still_on_the_pools_layout_is_a_mismatch_naming_the_group():
    nodes = [
        node("a100-0", {NG: "a100"}, config=CFG, state="success"),
        node("a100-1", {NG: "a100"}, config=CFG, state="success"),
    ]
    slices = [rslice(n, devices(LAYOUT)) for n in ("a100-0", "a100-1")]
    a = pr.build_report(cluster(with_group), Observed(nodes, slices))["pools"]["a100"]
    kinds = {(m["node"], m["kind"]) for m in a["mismatches"]}
    assert kinds == {("a100-0", "mig_config_label"), ("a100-0", "wrong_layout")}
    label = next(m for m in a["mismatches"] if m["kind"] == "mig_config_label")
    assert "the MIG group small's config is gpupool-a100-small" in label["message"]
    wrong = next(m for m in a["mismatches"] if m["kind"] == "wrong_layout")
    assert wrong["expected"] == {"0": SMALL, "1": SMALL}


def test_without_groups_rows_are_as_before():
    nodes = [node("a100-0", {NG: "a100"}, config=CFG, state="success")]
    a = pr.build_report(cluster(), Observed(nodes, [rslice("a100-0", devices(LAYOUT))]))["pools"]["a100"]
    assert "mig_group" not in a["nodes"][0] and "expected_layout" not in a["nodes"][0]
