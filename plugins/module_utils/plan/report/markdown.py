# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pool report as Markdown (what playbooks/report.yml writes), with one SVG picture per pool.

Pure text from the report of plan/report/pool_report.build_report (capacity=True): a capacity table over the
pools, then per pool its nodes, what more can be allocated now (per profile and per tenant template) and its
mismatches.
Also the few-line capacity table the end-of-run summary shows (`capacity_lines`).
"""

from __future__ import annotations

from typing import Dict, List, Optional

from ansible_collections.gpupool.core.plugins.module_utils.plan.report.capacity import FULL_GPU
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.svg import pool_picture


def picture_name(pool_name: str) -> str:
    """The picture's file name next to the Markdown file (pool names are DNS labels: safe as file names)."""
    return "%s.svg" % pool_name


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: List[str], rows: List[List[object]]) -> List[str]:
    out = ["| %s |" % " | ".join(header), "|%s|" % "|".join(["---"] * len(header))]
    out += ["| %s |" % " | ".join(_cell(c) for c in row) for row in rows]
    return out


def _free_total(bucket: Dict[str, int]) -> str:
    return "%d/%d" % (bucket["free"], bucket["total"]) if bucket["total"] else "-"


def mig_cell(mig_devices: Dict[str, Dict[str, int]]) -> str:
    """'3g.20gb 3/4, 2g.10gb 8/8' (free/total per profile) or '-'."""
    return ", ".join("%s %s" % (p, _free_total(b)) for p, b in sorted(mig_devices.items())) or "-"


def allocatable_cell(capacity: Optional[dict]) -> str:
    """'2 GPU, 3g.20gb x1' - what more can be allocated now, each count on its own."""
    if not capacity:
        return "-"
    parts = []
    # whole GPUs first, then the profiles by name (results pass through JSON, which may sort keys anyway)
    for unit, count in sorted(capacity["allocatable"].items(), key=lambda kv: (kv[0] != FULL_GPU, kv[0])):
        parts.append(("%d whole GPU(s)" % count) if unit == FULL_GPU else "%s x%d" % (unit, count))
    return ", ".join(parts) or "-"


def _nodes_cell(rep: dict) -> str:
    text = "%d/%d" % (rep["ready_nodes"], len(rep["nodes"]))
    if rep.get("expected_nodes") is not None:
        text += " (wants %d)" % rep["expected_nodes"]
    return text


def capacity_rows(report: dict) -> List[List[str]]:
    """One row per pool: pool, nodes Ready/found (wanted), whole GPUs free/total, MIG free/total, allocatable now."""
    rows = []
    for name, rep in report["pools"].items():
        rows.append(
            [
                name,
                _nodes_cell(rep),
                _free_total(rep["gpus"]),
                mig_cell(rep["mig_devices"]),
                allocatable_cell(rep.get("capacity")),
            ]
        )
    return rows


CAPACITY_HEADER = ["pool", "nodes Ready", "whole GPUs free/total", "MIG devices free/total", "allocatable now"]


def capacity_lines(report: dict) -> List[str]:
    """The capacity table as aligned plain-text lines (for the end-of-run summary in a terminal)."""
    rows = [CAPACITY_HEADER] + capacity_rows(report)
    widths = [max(len(r[i]) for r in rows) for i in range(len(CAPACITY_HEADER))]
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]


def _pool_section(name: str, rep: dict) -> List[str]:
    out = ["", "## Pool %s" % name, ""]
    facts = ["GPU %s x%d per node" % (rep["gpu_model"], rep["gpus_per_node"]), "MIG %s" % rep["mig_mode"]]
    if rep.get("config_name"):
        facts.append("mig-parted config `%s`" % rep["config_name"])
    if rep.get("selector"):
        facts.append("nodes: `%s`" % rep["selector"])
    out += [", ".join(facts) + ".", ""]
    capacity = rep.get("capacity") or {}
    out.append("Allocatable now: %s." % allocatable_cell(capacity))
    for left in capacity.get("left_out") or []:
        out.append("Not counted: %s (%s)." % (left["node"], left["why"]))
    out.append("")
    if rep["nodes"]:
        rows = []
        for row in rep["nodes"]:
            state = "Ready" if row["ready"] else "NotReady"
            if not row["schedulable"]:
                state += ", cordoned"
            mig = row.get("mig_config") or "-"
            if row.get("mig_state"):
                mig += " (%s)" % row["mig_state"]
            rows.append(
                [
                    row["name"],
                    state,
                    mig,
                    _free_total(row["gpus"]),
                    mig_cell(row["mig_devices"]),
                    allocatable_cell({"allocatable": row.get("allocatable") or {}}),
                ]
            )
        out += _table(
            ["node", "state", "MIG config", "whole GPUs free/total", "MIG devices free/total", "allocatable now"], rows
        )
        out += ["", "![GPUs and MIG slices of pool %s](%s)" % (name, picture_name(name))]
    else:
        out.append("No node of this pool is in the cluster.")
    templates = capacity.get("templates") or []
    if templates:
        out += ["", "Tenant templates (claims that could be allocated now, each template on its own):", ""]
        rows = [
            [
                "%s/%s" % (t["namespace"], t["name"]),
                t["device_class"] or "-",
                t["count"],
                "-" if t["allocatable"] is None else t["allocatable"],
                t.get("note", ""),
            ]
            for t in templates
        ]
        out += _table(["template", "DeviceClass", "devices per claim", "claims allocatable", "note"], rows)
    if rep["mismatches"]:
        out += ["", "Mismatches:", ""]
        out += ["- `%s` %s" % (m["kind"], m["message"]) for m in rep["mismatches"]]
    return out


def cluster_markdown(cluster_name: str, report: dict) -> str:
    """The whole report of one cluster; the pictures are `pictures(report)`, written next to it."""
    out = [
        "# GPU pools of %s" % cluster_name,
        "",
        "What the cluster offers now, read from its Nodes, the NVIDIA DRA driver's ResourceSlices and the "
        "allocated ResourceClaims (gpupool.core playbooks/report.yml). Counts of what is allocatable are "
        "fragmentation-aware: a MIG profile counts only where a free placement for it exists.",
        "",
    ]
    out += _table(CAPACITY_HEADER, capacity_rows(report))
    for name, rep in report["pools"].items():
        out += _pool_section(name, rep)
    if not report["pools"]:
        out += ["", "No pool in scope."]
    return "\n".join(out) + "\n"


def pictures(report: dict) -> Dict[str, str]:
    """{file name: SVG} for the pools with nodes."""
    return {
        picture_name(name): pool_picture(name, rep["nodes"]) for name, rep in report["pools"].items() if rep["nodes"]
    }
