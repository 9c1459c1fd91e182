# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A picture of an advised change: per node, its GPUs now and after (the pool report's SVG style). Pure.

Only the nodes the change re-partitions are drawn (a MIG group: the nodes it names; a pool-wide layout change: the
nodes carrying the pool's layout), then the added nodes.

Drawn by plan/report/svg.py from rows shaped like the report's (``gpu_devices``): the "now" rows are the published
devices, the "after" rows put each changed GPU's new instances where the placement search (mig/placement.plan)
places them - the MIG manager may choose other starts for the same layout - and added nodes after them.
"""

from __future__ import annotations

from typing import Dict, List, Optional

from ansible_collections.gpupool.core.plugins.module_utils.mig.placement import plan
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.candidates import Candidate, current_layouts
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.layouts import Layout, describe
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.svg import pool_picture

MOST_NODES = 12  # nodes drawn; the title says how many more were left out


def planned_gpu(pool, index: int, layout: Layout) -> dict:
    """A GPU as the picture draws it, with `layout` placed by the placement search; nothing allocated."""
    model = pool.catalog_gpu
    slices = model.mig.memory_slices if model is not None and model.mig else None
    gpu = {"index": index, "memory_slices": slices, "full": None, "instances": [], "dynamic": False}
    if layout is None:
        gpu["full"] = {"device": "gpu", "claim": None}
        return gpu
    for instance in plan(model, layout):
        gpu["instances"].append(
            {
                "device": "",
                "profile": instance.profile,
                "slices": list(range(instance.start, instance.start + instance.size)),
                "claim": None,
            }
        )
    return gpu


def change_picture(pool, supply: dict, candidate: Candidate, title: Optional[str] = None) -> str:
    """SVG of the pool's nodes before and after `candidate` (at most MOST_NODES of them, then the added ones)."""
    current = current_layouts(pool)
    rows: List[dict] = []
    members = set(candidate.group_nodes)
    group_changes = {i: lay for i, lay in (candidate.group_layout or {}).items() if lay != current.get(i)}
    changing = [r for r in supply["nodes"] if r["name"] in members or (candidate.changed and r.get("group") is None)]
    shown = changing[:MOST_NODES]
    for row in shown:
        now = [row["gpus"][i]["device"] for i in sorted(row["gpus"])]
        after: List[dict] = []
        new = group_changes if row["name"] in members else candidate.changed
        for index in range(pool.gpu.per_node):
            if index in new:
                after.append(planned_gpu(pool, index, new[index]))
            elif index in row["gpus"]:
                after.append(row["gpus"][index]["device"])
        base = {"ready": row["why"] != "NotReady", "schedulable": row["why"] != "cordoned"}
        rows.append(dict(base, name="%s now" % row["name"], gpu_devices=now))
        rows.append(dict(base, name="%s after" % row["name"], gpu_devices=after))
    layouts: Dict[int, Layout] = {**current, **candidate.changed}
    for number in range(min(candidate.nodes_added, MOST_NODES)):
        rows.append(
            {
                "name": "new node %d" % (number + 1),
                "gpu_devices": [planned_gpu(pool, i, layouts[i]) for i in range(pool.gpu.per_node)],
            }
        )
    left = len(changing) - len(shown) + max(0, candidate.nodes_added - MOST_NODES)
    changes = ", ".join("GPU %d: %s" % (i, describe(lay)) for i, lay in sorted(candidate.changed.items()))
    if members:
        changes = "nodes %s: %s" % (
            ", ".join(candidate.group_nodes),
            ", ".join("GPU %d: %s" % (i, describe(lay)) for i, lay in sorted(group_changes.items())),
        )
    if candidate.nodes_added:
        changes = ", ".join(filter(None, [changes, "%d more node(s)" % candidate.nodes_added]))
    text = title or "pool %s now and after the advice (%s)%s" % (
        pool.name,
        changes or "no change",
        "; %d more node(s) not drawn" % left if left else "",
    )
    return pool_picture(pool.name, rows, title=text)
