"""The picture of an advised change: each node's GPUs now and after, in the pool report's SVG style."""

from __future__ import annotations

from xml.etree import ElementTree

from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.candidates import Candidate
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.picture import change_picture
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.supply import pool_supply
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.observed import current_slices, slices_by_node
from tests.support import advice_beds as b


def test_now_and_after_rows_with_the_new_instances_where_the_planner_places_them():
    cluster = b.load(b.cluster_data(b.A100))
    pool = cluster.pool("a100")
    by_node = slices_by_node(current_slices([b.rslice("a100-0", b.a100_gpu(0) + b.a100_gpu(1))]))
    allocated = {(b.DRIVER, "a100-0", "gpu-0-mig-3g20gb-9-4"): "ml/held"}
    supply = pool_supply(pool, [b.node("a100-0", "a100")], by_node, allocated)
    svg = change_picture(pool, supply, Candidate("a100", {1: {"3g.20gb": 2}}, 1, ["a100-0"], [], 2, 1.0, 2))
    assert ElementTree.fromstring(svg).tag == "{http://www.w3.org/2000/svg}svg"  # well-formed SVG
    assert "pool a100 now and after the advice (GPU 1: 2 x 3g.20gb, 1 more node(s))" in svg
    for label in (">a100-0 now<", ">a100-0 after<", ">new node 1<"):
        assert label in svg
    assert "a100-0 now GPU 0: 3g.20gb on memory slices 4-7, used by ml/held" in svg
    # after: GPU 1 holds two 3g.20gb at 0-3 and 4-7 (the A100 placement rule: starts 0 and 4)
    assert "a100-0 after GPU 1: 3g.20gb on memory slices 0-3, free" in svg
    assert "a100-0 after GPU 1: 3g.20gb on memory slices 4-7, free" in svg
    assert "a100-0 after GPU 1: 2g.10gb" not in svg
