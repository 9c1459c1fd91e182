# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A picture (SVG) of one pool's nodes: each GPU as its memory slices, each MIG instance used or free.

Pure text rendering of the report rows plan/report/capacity.py fills (``row["gpu_devices"]``); no I/O, deterministic (the
same report draws the same bytes, so a report file in git only changes when the cluster did). Plain SVG 1.1
without scripts or external references: it renders in browsers, GitHub/GitLab Markdown and AWX artifacts.
"""

from __future__ import annotations

from typing import List, Optional
from xml.sax.saxutils import escape

# Colours with a text legend, so the picture does not depend on colour alone.
USED = "#d9534f"
FREE = "#5cb85c"
CAN_CREATE = "#c8e6c9"  # dynamic MIG: free slices where the driver creates instances on demand
UNUSED = "#e0e0e0"  # static MIG: slices no instance covers (usable only after a layout change)
FRAME = "#37474f"

SLICE_WIDTH = 22
WHOLE_WIDTH = 8 * SLICE_WIDTH  # a GPU without MIG geometry is drawn as wide as an 8-slice one
ROW_HEIGHT = 46
BAR_HEIGHT = 26
LABEL_WIDTH = 170
GPU_GAP = 14
MARGIN = 10
FONT = 'font-family="DejaVu Sans, Arial, sans-serif"'


def _rect(
    x: float, y: float, width: float, height: float, fill: str, title: str, label: str = "", dim: bool = False
) -> List[str]:
    out = [
        "<g%s>" % (' opacity="0.45"' if dim else ""),
        "<title>%s</title>" % escape(title),
        '<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="%s" stroke-width="1"/>'
        % (x, y, width, height, fill, FRAME),
    ]
    if label and width >= 8 * len(label) * 0.62:
        out.append(
            '<text x="%d" y="%d" %s font-size="10" text-anchor="middle" fill="#000">%s</text>'
            % (x + width / 2, y + height / 2 + 4, FONT, escape(label))
        )
    out.append("</g>")
    return out


def _gpu_width(gpu: dict) -> int:
    return SLICE_WIDTH * gpu["memory_slices"] if gpu.get("memory_slices") else WHOLE_WIDTH


def _gpu(x: int, y: int, gpu: dict, node: str, dim: bool) -> List[str]:
    """One GPU: its instances over their slices, or the whole GPU as one bar."""
    width = _gpu_width(gpu)
    where = "%s GPU %d" % (node, gpu["index"])
    out = ['<text x="%d" y="%d" %s font-size="10" fill="%s">GPU %d</text>' % (x, y - 3, FONT, FRAME, gpu["index"])]
    instances = gpu.get("instances") or []
    shown = [i for i in instances if i["claim"]] if gpu.get("dynamic") else instances
    if not shown and not gpu.get("dynamic"):
        full = gpu.get("full")
        if full is None:
            out += _rect(x, y, width, BAR_HEIGHT, UNUSED, "%s: no device published" % where, "nothing", dim)
        elif full["claim"]:
            out += _rect(
                x,
                y,
                width,
                BAR_HEIGHT,
                USED,
                "%s: whole GPU, used by %s" % (where, full["claim"]),
                "whole GPU (used)",
                dim,
            )
        else:
            out += _rect(x, y, width, BAR_HEIGHT, FREE, "%s: whole GPU, free" % where, "whole GPU (free)", dim)
        return out
    if gpu.get("full") and gpu["full"]["claim"]:
        return out + _rect(
            x,
            y,
            width,
            BAR_HEIGHT,
            USED,
            "%s: whole GPU, used by %s" % (where, gpu["full"]["claim"]),
            "whole GPU (used)",
            dim,
        )
    covered = set()
    for instance in shown:
        slices = instance["slices"]
        if not slices:
            continue
        covered.update(slices)
        used = bool(instance["claim"])
        title = "%s: %s on memory slices %d-%d, %s" % (
            where,
            instance["profile"],
            slices[0],
            slices[-1],
            "used by %s" % instance["claim"] if used else "free",
        )
        out += _rect(
            x + slices[0] * SLICE_WIDTH,
            y,
            len(slices) * SLICE_WIDTH,
            BAR_HEIGHT,
            USED if used else FREE,
            title,
            instance["profile"],
            dim,
        )
    for index in range(gpu.get("memory_slices") or 0):
        if index in covered:
            continue
        if gpu.get("dynamic"):
            out += _rect(
                x + index * SLICE_WIDTH,
                y,
                SLICE_WIDTH,
                BAR_HEIGHT,
                CAN_CREATE,
                "%s: memory slice %d free (instances are created on demand)" % (where, index),
                "",
                dim,
            )
        else:
            out += _rect(
                x + index * SLICE_WIDTH,
                y,
                SLICE_WIDTH,
                BAR_HEIGHT,
                UNUSED,
                "%s: memory slice %d in no MIG instance (usable after a layout change)" % (where, index),
                "",
                dim,
            )
    return out


def pool_picture(pool_name: str, rows: List[dict], title: Optional[str] = None) -> str:
    """SVG of the pool's node rows (report["pools"][pool]["nodes"] after plan/report/capacity.py)."""
    widest = max([sum(_gpu_width(g) + GPU_GAP for g in row.get("gpu_devices") or []) for row in rows] + [WHOLE_WIDTH])
    width = MARGIN * 2 + LABEL_WIDTH + widest
    legend_y = MARGIN + 22 + ROW_HEIGHT * max(len(rows), 1) + 6
    height = legend_y + 28
    body = [
        '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">'
        % (width, height, width, height),
        "<title>%s</title>" % escape(title or "GPU pool %s: GPUs and MIG slices per node" % pool_name),
        '<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>' % (width, height),
        '<text x="%d" y="%d" %s font-size="13" font-weight="bold" fill="%s">%s</text>'
        % (MARGIN, MARGIN + 12, FONT, FRAME, escape(title or "pool %s" % pool_name)),
    ]
    if not rows:
        body.append(
            '<text x="%d" y="%d" %s font-size="11" fill="%s">no nodes</text>' % (MARGIN, MARGIN + 40, FONT, FRAME)
        )
    for number, row in enumerate(rows):
        y = MARGIN + 22 + number * ROW_HEIGHT + 14
        state = [] if row.get("ready", True) else ["NotReady"]
        if not row.get("schedulable", True):
            state.append("cordoned")
        dim = bool(state)
        label = row["name"] + (" (%s)" % ", ".join(state) if state else "")
        body.append(
            '<text x="%d" y="%d" %s font-size="11" fill="%s">%s</text>'
            % (MARGIN, y + BAR_HEIGHT / 2 + 4, FONT, FRAME, escape(label))
        )
        x = MARGIN + LABEL_WIDTH
        gpus = row.get("gpu_devices") or []
        if not gpus:
            body.append(
                '<text x="%d" y="%d" %s font-size="11" fill="%s">no GPU devices published</text>'
                % (x, y + BAR_HEIGHT / 2 + 4, FONT, USED)
            )
        for gpu in gpus:
            body += _gpu(x, y, gpu, row["name"], dim)
            x += _gpu_width(gpu) + GPU_GAP
    x = MARGIN
    for colour, text in (
        (USED, "used"),
        (FREE, "free"),
        (CAN_CREATE, "free slice (dynamic MIG)"),
        (UNUSED, "in no MIG instance"),
    ):
        body.append(
            '<rect x="%d" y="%d" width="12" height="12" fill="%s" stroke="%s" stroke-width="1"/>'
            % (x, legend_y, colour, FRAME)
        )
        body.append(
            '<text x="%d" y="%d" %s font-size="10" fill="%s">%s</text>'
            % (x + 16, legend_y + 10, FONT, FRAME, escape(text))
        )
        x += 30 + 6 * len(text)
    body.append("</svg>")
    return "\n".join(body) + "\n"
