"""The report's renderers: the SVG picture of a pool's GPUs and the Markdown report (pure, from plain report data).

The input is written out by hand in the shape plan/report/pool_report.build_report (capacity=True) returns, so
these tests fail on the rendering alone; the SVG is parsed as XML to check what each shape says.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ansible_collections.gpupool.core.plugins.module_utils.plan.report import markdown as plan_report_markdown
from ansible_collections.gpupool.core.plugins.module_utils.plan.report import svg as plan_report_svg

SVG = "{http://www.w3.org/2000/svg}"


def mig_gpu(index, used_claim=None):
    """A static A100 GPU: 2g.10gb at 0-1 and 2-3, 3g.20gb at 4-7 (the last one maybe used)."""
    return {
        "index": index,
        "minor": index,
        "memory_slices": 8,
        "full": None,
        "dynamic": False,
        "attributes": {},
        "instances": [
            {"device": "gpu-%d-mig-2g10gb-14-0" % index, "profile": "2g.10gb", "slices": [0, 1], "claim": None},
            {"device": "gpu-%d-mig-2g10gb-14-2" % index, "profile": "2g.10gb", "slices": [2, 3], "claim": None},
            {
                "device": "gpu-%d-mig-3g20gb-9-4" % index,
                "profile": "3g.20gb",
                "slices": [4, 5, 6, 7],
                "claim": used_claim,
            },
        ],
    }


def row(name, gpu_devices, ready=True, schedulable=True, allocatable=None, gpus=None, mig_devices=None):
    return {
        "name": name,
        "ready": ready,
        "schedulable": schedulable,
        "mig_config": "gpupool-a100",
        "mig_state": "success",
        "published": bool(gpu_devices),
        "layout": {},
        "allocated": [],
        "gpus": gpus or {"total": 0, "allocated": 0, "free": 0},
        "mig_devices": mig_devices or {},
        "gpu_devices": gpu_devices,
        "allocatable": allocatable or {},
    }


def shapes(svg):
    """[(fill, title)] of every drawn shape, in order."""
    root = ET.fromstring(svg)
    out = []
    for group in root.iter(SVG + "g"):
        rect = group.find(SVG + "rect")
        out.append((rect.get("fill"), group.find(SVG + "title").text))
    return out


def test_static_gpu_draws_each_instance_over_its_slices_used_or_free():
    svg = plan_report_svg.pool_picture("a100", [row("a100-0", [mig_gpu(0, "ml/train"), mig_gpu(1)])])
    drawn = shapes(svg)
    assert drawn[:3] == [
        (plan_report_svg.FREE, "a100-0 GPU 0: 2g.10gb on memory slices 0-1, free"),
        (plan_report_svg.FREE, "a100-0 GPU 0: 2g.10gb on memory slices 2-3, free"),
        (plan_report_svg.USED, "a100-0 GPU 0: 3g.20gb on memory slices 4-7, used by ml/train"),
    ]
    assert [fill for fill, _t in drawn[3:]] == [plan_report_svg.FREE] * 3
    root = ET.fromstring(svg)
    widths = [int(r.get("width")) for g in root.iter(SVG + "g") for r in g.findall(SVG + "rect")]
    assert widths[:3] == [
        2 * plan_report_svg.SLICE_WIDTH,
        2 * plan_report_svg.SLICE_WIDTH,
        4 * plan_report_svg.SLICE_WIDTH,
    ]
    texts = [t.text for t in root.iter(SVG + "text")]
    assert "a100-0" in texts and "GPU 1" in texts and "3g.20gb" in texts
    assert plan_report_svg.pool_picture("a100", [row("a100-0", [mig_gpu(0, "ml/train"), mig_gpu(1)])]) == svg


def test_slices_in_no_instance_dynamic_free_slices_and_whole_gpus():
    partial = mig_gpu(0)
    partial["instances"] = partial["instances"][2:]  # only the 3g.20gb: slices 0-3 in no instance
    dynamic = {
        "index": 1,
        "minor": 1,
        "memory_slices": 8,
        "full": {"device": "gpu-1", "claim": None},
        "dynamic": True,
        "attributes": {},
        "instances": [
            {"device": "gpu-1-mig-1g5gb-19-3", "profile": "1g.5gb", "slices": [3], "claim": "ml/a"},
            {"device": "gpu-1-mig-1g5gb-19-4", "profile": "1g.5gb", "slices": [4], "claim": None},
        ],
    }
    whole_used = {
        "index": 2,
        "minor": 2,
        "memory_slices": None,
        "full": {"device": "gpu-2", "claim": "ml/b"},
        "dynamic": False,
        "instances": [],
        "attributes": {},
    }
    drawn = shapes(plan_report_svg.pool_picture("mixed", [row("n0", [partial, dynamic, whole_used])]))
    assert drawn[0] == (plan_report_svg.FREE, "n0 GPU 0: 3g.20gb on memory slices 4-7, free")
    assert drawn[1:5] == [
        (plan_report_svg.UNUSED, "n0 GPU 0: memory slice %d in no MIG instance (usable after a layout change)" % i)
        for i in range(4)
    ]
    # dynamic: only allocated instances are drawn, every other slice can still host one
    assert drawn[5] == (plan_report_svg.USED, "n0 GPU 1: 1g.5gb on memory slices 3-3, used by ml/a")
    assert [f for f, _t in drawn[6:13]] == [plan_report_svg.CAN_CREATE] * 7
    assert drawn[13] == (plan_report_svg.USED, "n0 GPU 2: whole GPU, used by ml/b")
    assert len(drawn) == 14


def test_cordoned_node_is_dimmed_and_labelled_and_an_empty_pool_still_renders():
    svg = plan_report_svg.pool_picture(
        "a100", [row("a100-9", [mig_gpu(0)], schedulable=False), row("a100-8", [], ready=False)]
    )
    root = ET.fromstring(svg)
    texts = [t.text for t in root.iter(SVG + "text")]
    assert "a100-9 (cordoned)" in texts and "a100-8 (NotReady)" in texts and "no GPU devices published" in texts
    assert {g.get("opacity") for g in root.iter(SVG + "g")} == {"0.45"}
    assert "no nodes" in [t.text for t in ET.fromstring(plan_report_svg.pool_picture("x", [])).iter(SVG + "text")]
    # names that would break the markup are escaped
    ET.fromstring(plan_report_svg.pool_picture("x", [row("<n&1>", [mig_gpu(0, 'ns/"q"<x>')])]))


def report():
    rows = [
        row(
            "a100-0",
            [mig_gpu(0, "ml/train"), mig_gpu(1)],
            allocatable={"3g.20gb": 1, "2g.10gb": 4},
            mig_devices={
                "3g.20gb": {"total": 2, "allocated": 1, "free": 1},
                "2g.10gb": {"total": 4, "allocated": 0, "free": 4},
            },
        ),
        row("a100-1", [mig_gpu(0), mig_gpu(1)], schedulable=False, allocatable={"3g.20gb": 0, "2g.10gb": 0}),
    ]
    a100 = {
        "mig_mode": "static",
        "gpu_model": "A100-40GB",
        "gpus_per_node": 2,
        "selector": "gpu=a100",
        "config_name": "gpupool-a100",
        "expected_nodes": 2,
        "ready_nodes": 2,
        "nodes": rows,
        "gpus": {"total": 0, "allocated": 0, "free": 0},
        "mig_devices": {
            "3g.20gb": {"total": 4, "allocated": 1, "free": 3},
            "2g.10gb": {"total": 8, "allocated": 0, "free": 8},
        },
        "mismatches": [{"pool": "a100", "node": "a100-1", "kind": "node_not_ready", "message": "node a100-1 ..."}],
        "capacity": {
            "allocatable": {"3g.20gb": 1, "2g.10gb": 4},
            "left_out": [{"node": "a100-1", "why": "cordoned"}],
            "templates": [
                {"namespace": "ml", "name": "slice", "device_class": "a100-3g.20gb", "count": 1, "allocatable": 1}
            ],
        },
    }
    t4 = {
        "mig_mode": "off",
        "gpu_model": "T4",
        "gpus_per_node": 1,
        "selector": None,
        "config_name": None,
        "expected_nodes": None,
        "ready_nodes": 0,
        "nodes": [],
        "gpus": {"total": 0, "allocated": 0, "free": 0},
        "mig_devices": {},
        "mismatches": [],
        "capacity": {"allocatable": {"gpu": 0}, "left_out": [], "templates": []},
    }
    return {"pools": {"a100": a100, "t4": t4}, "mismatches": [], "totals": {}}


def test_markdown_has_the_capacity_table_per_pool_sections_and_pictures():
    text = plan_report_markdown.cluster_markdown("cern-gpu", report())
    lines = text.splitlines()
    assert lines[0] == "# GPU pools of cern-gpu"
    assert "| a100 | 2/2 (wants 2) | - | 2g.10gb 8/8, 3g.20gb 3/4 | 2g.10gb x4, 3g.20gb x1 |" in lines
    assert "| t4 | 0/0 | - | - | 0 whole GPU(s) |" in lines
    assert "Not counted: a100-1 (cordoned)." in lines
    assert "| a100-1 | Ready, cordoned | gpupool-a100 (success) | - | - | 2g.10gb x0, 3g.20gb x0 |" in lines
    assert "![GPUs and MIG slices of pool a100](a100.svg)" in lines
    assert "| ml/slice | a100-3g.20gb | 1 | 1 |  |" in lines
    assert "- `node_not_ready` node a100-1 ..." in lines
    assert "No node of this pool is in the cluster." in lines
    assert sorted(plan_report_markdown.pictures(report())) == ["a100.svg"]  # no picture for a pool without nodes


def test_capacity_lines_are_aligned_for_a_terminal():
    lines = plan_report_markdown.capacity_lines(report())
    assert lines[0].split()[:2] == ["pool", "nodes"]
    assert lines[1].startswith("a100  2/2 (wants 2)")
    assert lines[2].startswith("t4    0/0")
    assert len({line.index(" 2/2") if " 2/2" in line else line.index(" 0/0") for line in lines[1:]}) == 1
