"""The observed state (plan/report/observed.py): one object the report, the capacity counts and the advisor read.

Its per-node views replace a scan of every pool for every node (2,000 nodes x 2,000 pools): these tests hold them to
the scan they replace, and the report built with capacity to the report built without it.
"""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpupool.core.plugins.module_utils.model.names import CD_DRIVER, DRIVER
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.devices import read_gpu_devices
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.observed import (
    Observed,
    allocated_devices,
    current_slices,
    node_devices,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.pool_report import build_report
from tests.unit.plugins.module_utils.plan.report.test_pool_report import claim, cluster, healthy

NODES = ["n0", "n1", "n2"]


@st.composite
def slice_sets(draw):
    """ResourceSlices of a few pools over a few nodes: pools named after a node or not, nodeName set or not (a
    pool without one, e.g. a network-attached device), several generations and slices per pool, two drivers."""
    out = []
    for k in range(draw(st.integers(0, 8))):
        pool = draw(st.sampled_from(NODES + ["shared", "other"]))
        node_name = draw(st.sampled_from(NODES + [None]))
        spec = {
            "driver": draw(st.sampled_from([DRIVER, DRIVER, CD_DRIVER])),
            "pool": {"name": pool, "generation": draw(st.integers(0, 2))},
            "devices": [{"name": "gpu-%d" % k, "attributes": {"type": {"string": "gpu"}}}],
        }
        if node_name is not None:
            spec["nodeName"] = node_name
        out.append({"metadata": {"name": "s%d" % k}, "spec": spec})
    return out


@settings(max_examples=200, deadline=None, derandomize=True)
@given(slice_sets())
def test_a_nodes_devices_are_those_the_scan_of_every_pool_finds(slices):
    observed = Observed(slices=slices)
    everything = current_slices(slices)
    for name in NODES + ["shared", "nobody"]:
        assert observed.devices_of(name) == node_devices(everything, name)
        assert observed.gpu_devices_of(name) == read_gpu_devices(node_devices(everything, name))


def test_each_view_is_read_once_and_shared():
    nodes, slices = healthy()
    claims = [claim("ml", "train", (DRIVER, "a100-0", "gpu-0-mig-3g20gb-9-4"))]
    observed = Observed(nodes, slices, claims)
    assert observed.slices_by_pool is observed.slices_by_pool
    assert observed.allocated is observed.allocated
    assert observed.allocated == allocated_devices(claims)
    assert observed.gpu_devices_of("a100-0") is observed.gpu_devices_of("a100-0")
    # the slices of the ComputeDomain driver are not GPU slices
    assert [pool for pool, _dev in observed.devices_of("a100-0")] == ["a100-0"] * 6  # 3 MIG devices on each GPU


def test_capacity_adds_to_the_report_and_changes_nothing_else():
    nodes, slices = healthy()
    claims = [claim("ml", "train", (DRIVER, "a100-0", "gpu-0-mig-3g20gb-9-4"))]
    plain = build_report(cluster(), Observed(nodes, slices, claims))
    full = build_report(cluster(), Observed(nodes, slices, claims), capacity=True)
    stripped = copy.deepcopy(full)
    for rep in stripped["pools"].values():
        assert set(rep.pop("capacity")) == {"allocatable", "templates", "left_out"}
        for row in rep["nodes"]:
            assert set(row) - set(plain["pools"]["a100"]["nodes"][0]) == {"allocatable", "gpu_devices"}
            del row["allocatable"], row["gpu_devices"]
    assert stripped == plain
    a100 = full["pools"]["a100"]
    assert a100["capacity"]["allocatable"] == {"3g.20gb": 3, "2g.10gb": 8}
    assert [g["index"] for g in a100["nodes"][0]["gpu_devices"]] == [0, 1]


def test_what_the_step_did_not_read_is_not_reported():
    """daemonsets / compute_domains None: the step did not read them, so no gate or ComputeDomain finding."""
    nodes, slices = healthy()
    rep = build_report(cluster(), Observed(nodes, slices))
    assert rep["driver"] is None
    assert all("compute_domain" not in r for r in rep["pools"].values())
    assert not [m for m in rep["mismatches"] if m["kind"] in ("gate_missing", "compute_domain_missing")]
