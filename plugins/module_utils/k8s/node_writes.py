# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node writes over the apply engine: gpupool's labels and taints on one Node, as ONE JSON merge patch that carries
the resourceVersion it was decided from (Nodes are shared with kubelet and every other controller, so they are
patched, not server-side applied). `decide_node` needs no request and runs in the step's thread; `send_node` only
touches its own Result, so the node-pool runner sends many at once (k8s/workers.py)."""

from __future__ import annotations

from typing import Any, Optional

from ansible_collections.gpupool.core.plugins.module_utils.k8s.apply_engine import Result
from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import Conflict, K8sError, NotFound
from ansible_collections.gpupool.core.plugins.module_utils.plan.kinds import NODE
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.pool_nodes import gpupool_label_keys, node_patch
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.ssa_compare import label_owners, node_view


def converge_node(
    engine: Any, node: dict, labels: dict, taints: Optional[list] = None, pool: Optional[str] = None, attempts: int = 5
) -> Result:
    """Make gpupool's labels on one Node exactly `labels` and gpupool's taints exactly `taints` (None:
    leave taints alone), keeping everyone else's: ONE JSON merge patch per node that differs (labels,
    taints and the annotations recording gpupool's keys together), none for a node already right.

    The patch carries the resourceVersion the node was read at: a node changed meanwhile (409) is read
    again and the patch recomputed; a node deleted meanwhile is reported as vanished, never re-created.
    Returns a Result whose before/after are node_view()s. `decide_node` + `send_node`, in one call.
    """
    res, patch, reasons = decide_node(engine, node, labels, taints, pool)
    if patch is not None:
        send_node(engine, res, node, labels, taints, patch, reasons, attempts)
    return res


def decide_node(
    engine: Any, node: dict, labels: dict, taints: Optional[list] = None, pool: Optional[str] = None
) -> tuple:
    """(Result, patch, reasons) for one Node as read: no request. patch None: the node is right already (the
    Result is final). Raises K8sError for a label another field manager owns (see _refuse_label_conflicts)."""
    res = Result("Node", node["metadata"]["name"], None, pool)
    res.before, res.after = node_view(node), node_view(node)  # two: a cordon changes one of them
    patch, reasons = node_patch(node, labels, taints, engine.field_manager)
    if patch is not None and not engine.force_conflicts:
        refuse_label_conflicts(engine, node, patch, pool)
    return res, patch, reasons


def send_node(
    engine: Any,
    res: Result,
    node: dict,
    labels: dict,
    taints: Optional[list],
    patch: dict,
    reasons: list,
    attempts: int = 5,
) -> Result:
    """Send a patch `decide_node` made (thread-safe: it only touches `res`); a 409 reads the node again and
    decides anew, up to `attempts` times. Fills `res` in."""
    name, pool = node["metadata"]["name"], res.pool
    for attempt in range(attempts):
        try:
            out = engine.merge_patch(NODE, name, patch)
        except NotFound:
            res.action, res.notes = "vanished", ["node was deleted meanwhile"]
            return res
        except Conflict:
            if attempt + 1 == attempts:
                raise K8sError(
                    "Node %s kept changing while gpupool updated its labels and taints (%d attempts)"
                    % (name, attempts),
                    hint="rerun; if it persists, find the controller rewriting the node",
                )
            current = engine.get(NODE, name)
            if current is None:
                res.action, res.notes = "vanished", ["node was deleted meanwhile"]
                return res
            patch, reasons = node_patch(current, labels, taints, engine.field_manager)
            if patch is not None and not engine.force_conflicts:
                refuse_label_conflicts(engine, current, patch, pool)
            if patch is None:
                res.after = node_view(current)
                break
            continue
        res.after, res.notes = node_view(out), reasons
        break
    res.changed = res.before != res.after
    res.action = "updated" if res.changed else "unchanged"
    return res


def refuse_label_conflicts(engine: Any, node: dict, patch: dict, pool: Optional[str]) -> None:
    """A label another field manager set to another value is not taken over silently (as server-side apply
    would refuse it): the same sentence as an apply conflict, unless force_conflicts."""
    live = (node.get("metadata") or {}).get("labels") or {}
    owned = gpupool_label_keys(node, engine.field_manager)
    clashes = []
    for key, value in sorted(((patch.get("metadata") or {}).get("labels") or {}).items()):
        if value is None or key in owned or live.get(key) in (None, value):
            continue
        for manager in label_owners(node, key, engine.field_manager):
            clashes.append("metadata.labels.%s=%s owned by field manager %r" % (key, live[key], manager))
    if clashes:
        ref = "Node %s%s" % (node["metadata"]["name"], " (pool %s)" % pool if pool else "")
        raise K8sError(
            "%s: %s, not by %r. Another tool manages these labels; gpupool will not take them over "
            "silently. Either stop managing them there, or rerun with force_conflicts: true to make "
            "gpupool set them" % (ref, "; ".join(clashes), engine.field_manager),
            status=409,
        )
