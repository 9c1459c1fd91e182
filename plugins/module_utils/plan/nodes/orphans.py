# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Nodes and nodegroups of pools that left the inventory: how they are recognised and what is kept on them.

A pool's nodes carry ``gpupool.io/pool=<pool>`` (node_pool sets it, and Magnum from birth where it can). A node
that carries it although no present pool of the inventory claims it any more (the pool was removed, set to
``state: absent``, or its node_selector no longer matches) is an ORPHAN: it still has GPUs set up for a pool
nobody declares, so it must never become schedulable for ordinary pods on its own. node_pool keeps gpupool's
labels and taints on it, adds ``gpupool.io/orphaned=true`` and cordons it (annotated
``gpupool.io/cordoned-by=node-pool``); the pool report lists it on every run. It leaves that state when a present
pool claims it again (adopted: the orphan label goes and node_pool's own cordon is lifted), when its nodegroup is
deleted, or when node_pool runs with ``release_orphans`` (the old behaviour: labels, taints and cordon removed).

A Magnum nodegroup no pool declares may be pruned only when it is this inventory's: its Magnum label
``gpupool.io/owner`` names this owner (plan/magnum/ownership.py; a nodegroup of another owner or of none is left and
reported). ``nodegroup_pool`` then only names the pool it was made for: its ``node_labels`` carry the pool label
(Magnum >= 1.14, set at creation), or every Kubernetes node of it carries ``gpupool.io/pool=<nodegroup name>``.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model.names import (
    CORDON_ANNOTATION,
    CORDON_REASON_ANNOTATION,
    CORDON_RUN_ANNOTATION,
    NODEGROUP_LABEL,
    ORPHAN_CORDON,
    ORPHANED_LABEL,
    OWNER_LABEL,
    POOL_LABEL,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import cordon_owner, cordon_reasons
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.eviction import (
    uncordon_patch as eviction_uncordon_patch,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.pool_nodes import node_labels_of, recorded_taints

Node = Dict[str, Any]


def _name(node: Node) -> str:
    return (node.get("metadata") or {}).get("name")


def _annotations(node: Node) -> Dict[str, str]:
    return (node.get("metadata") or {}).get("annotations") or {}


def former_pool(node: Node) -> Optional[str]:
    """The pool a node was labelled for (gpupool.io/pool), or None: not a gpupool node."""
    return node_labels_of(node).get(POOL_LABEL) or None


def orphan_reason(pool_name: str, cluster) -> str:
    """Why a node of `pool_name` is an orphan, in words."""
    for pool in cluster.pools:
        if pool.name == pool_name:
            if pool.state != "present":
                return "pool %s is absent" % pool_name
            return "pool %s no longer selects it (its node_selector or nodegroup changed)" % pool_name
    return "pool %s is no longer in the inventory" % pool_name


def find_orphans(
    nodes: Iterable[Node], members: Iterable[str], scope: Optional[Sequence[str]] = None
) -> List[Tuple[Node, str]]:
    """[(node, the pool it left)] for nodes labelled for a pool that no present pool claims now.

    members: names of the nodes the present pools in scope claim (plan/nodes.assign_nodes). scope: the pool
    names of a run limited with `pools` (None: every pool): a limited run only looks at nodes of the pools it was
    asked about, so a node of a pool gone from the inventory is only found when every pool is in scope."""
    claimed = set(members)
    out = []
    for node in sorted(nodes, key=_name):
        pool = former_pool(node)
        if pool is None or _name(node) in claimed:
            continue
        if scope is not None and pool not in scope:
            continue
        out.append((node, pool))
    return out


def orphan_labels(node: Node, owned_keys: Iterable[str], pool: str, owner: Optional[str] = None) -> Dict[str, str]:
    """The labels gpupool keeps applying on an orphan: the ones it owns with their current values (so nothing
    the pool set is dropped), the pool label, the owner label (adds it to a node made before owner labels) and
    gpupool.io/orphaned=true."""
    labels = node_labels_of(node)
    out = {key: labels[key] for key in owned_keys if key in labels}
    out[POOL_LABEL] = pool
    if owner:
        out[OWNER_LABEL] = owner
    out[ORPHANED_LABEL] = "true"
    return out


def kept_taints(node: Node) -> List[Dict[str, str]]:
    """The taints gpupool set on a node (recorded in its gpupool.io/taints annotation), as they are now."""
    ours = set(recorded_taints(node))
    return [
        {k: v for k, v in t.items() if k in ("key", "value", "effect")}
        for t in (node.get("spec") or {}).get("taints") or []
        if "%s:%s" % (t.get("key"), t.get("effect")) in ours
    ]


def cordoned_by(node: Node) -> Optional[str]:
    return _annotations(node).get(CORDON_ANNOTATION)


def is_cordoned(node: Node) -> bool:
    return bool((node.get("spec") or {}).get("unschedulable"))


def orphan_cordon_patch(pool: Optional[str] = None, run: Optional[str] = None) -> Dict[str, Any]:
    """Merge patch that cordons an orphan and records that node_pool did it (so only node_pool lifts it), why (the
    cordon ledger's reason orphan:<pool>) and by which run (the run lease's holder)."""
    annotations: Dict[str, Any] = {CORDON_ANNOTATION: ORPHAN_CORDON}
    if pool:
        annotations[CORDON_REASON_ANNOTATION] = cordon_reasons.orphan(pool)
    if run:
        annotations[CORDON_RUN_ANNOTATION] = run
    return {"metadata": {"annotations": annotations}, "spec": {"unschedulable": True}}


def needs_orphan_cordon(node: Node) -> bool:
    """An orphan not cordoned yet; one cordoned by someone else (a drain, a person) is left as it is."""
    return not is_cordoned(node)


def lifts_orphan_cordon(node: Node) -> bool:
    """A node node_pool cordoned as an orphan that is claimed again (or released): node_pool uncordons it; one
    someone cordoned after node_pool (plan/nodes/cordon_owner.py) is left to the cordon ledger, which keeps it."""
    return is_cordoned(node) and cordoned_by(node) == ORPHAN_CORDON and cordon_owner.set_by_gpupool(node)


def uncordon_patch() -> Dict[str, Any]:
    return eviction_uncordon_patch()  # the cordon's whole record goes with it (who, why, which run)


# ---- the pool report ------------------------------------------------------------------------------------------
def orphan_rows(
    cluster, nodes: Iterable[Node], members: Iterable[str], scope: Optional[Sequence[str]] = None
) -> List[Dict[str, Any]]:
    """One row per orphaned node for the pool report: the pool it left, why, and whether it is held safely
    (cordoned, gpupool's taints still on it, labelled orphaned). members and scope as for find_orphans."""
    rows = []
    for node, pool in find_orphans(nodes, members, scope):
        rows.append(
            {
                "name": _name(node),
                "pool": pool,
                "reason": orphan_reason(pool, cluster),
                "schedulable": not is_cordoned(node),
                "cordoned_by": cordoned_by(node),
                "labelled": node_labels_of(node).get(ORPHANED_LABEL) == "true",
                "taints": sorted("%s=%s:%s" % (t["key"], t.get("value", ""), t["effect"]) for t in kept_taints(node)),
                "nodegroup": node_labels_of(node).get(NODEGROUP_LABEL),
            }
        )
    return rows


def orphan_message(row: Dict[str, Any]) -> str:
    """The pool report's sentence for an orphaned node: what holds it, and how to end that."""
    where = "node %s (%s)" % (row["name"], row["reason"])
    if row["schedulable"]:
        return (
            "%s is SCHEDULABLE: ordinary pods can land on a GPU node nobody declares; run site.yml (or "
            "gpupool.core.node_pool) to cordon it, or cordon it now with kubectl cordon %s" % (where, row["name"])
        )
    ends = (
        "set gpupool_cluster.magnum.prune_nodegroups: true to drain and delete its nodegroup %s" % row["nodegroup"]
        if row["nodegroup"]
        else "remove the machine"
    )
    return (
        "%s is kept cordoned with gpupool's taints and the label %s=true; to give it up, %s; to use it again, "
        "declare a pool that selects it (or run gpupool.core.node_pool with release_orphans: true to hand it "
        "back untainted)" % (where, ORPHANED_LABEL, ends)
    )


# ---- nodegroups -------------------------------------------------------------------------------------------------
def nodegroup_pool(nodegroup: Dict[str, Any], nodes: Iterable[Node]) -> Optional[str]:
    """The pool gpupool created a Magnum nodegroup for, or None when neither its node_labels nor its nodes say it
    (whose the nodegroup is, its owner label says: plan/magnum/ownership.py).

    nodegroup: Magnum's full view (node_labels from microversion 1.14); nodes: the cluster's Kubernetes Nodes."""
    pool = (nodegroup.get("node_labels") or {}).get(POOL_LABEL)
    if pool:
        return pool
    name = nodegroup.get("name")
    members = [n for n in nodes if node_labels_of(n).get(NODEGROUP_LABEL) == name]
    if members and all(former_pool(n) == name for n in members):
        return name
    return None


# ---- the orphan guard ---------------------------------------------------------------------------------------------
# A node_selector typo (a trailing newline, a wrong key) matches no node, and every node of the pool would be
# orphaned - cordoned and tainted - in one run. So a run that would orphan more than `max_share` of a PRESENT pool's
# nodes, or all of them, is refused before any write unless confirmed (gpupool_cluster.orphan_guard.confirm_pools
# or the run's confirm_orphans). A pool set to `state: absent` or removed from the inventory is an explicit decision
# and is not guarded; nodes orphaned by an earlier (confirmed) run are not counted again.
class OrphanGuardHit(NamedTuple):
    pool: str
    at: str  # the pool's key path
    selector: str  # how the pool finds its nodes, in words
    orphaned: List[str]  # node names this run would orphan
    members: int  # nodes labelled for the pool before this run (not already orphans)


def guard_hits(
    cluster,
    nodes: Iterable[Node],
    members: Iterable[str],
    selectors: Dict[str, str],
    scope: Optional[Sequence[str]] = None,
    confirmed: bool = False,
) -> List[OrphanGuardHit]:
    """The present pools in scope this run would orphan too many nodes of, unconfirmed (empty: go ahead).

    members: names of the nodes the present pools claim now; selectors: {pool: how it selects nodes};
    confirmed: the run confirms every pool (node_pool's confirm_orphans)."""
    guard = cluster.orphan_guard
    if confirmed:
        return []
    claimed = set(members)
    by_pool: Dict[
        str, List[str]
    ] = {}  # former pool -> its nodes not already orphans (one pass: 50 pools x 2,000 nodes)
    for node in nodes:
        labels = (node.get("metadata") or {}).get("labels") or {}
        if labels.get(POOL_LABEL) and labels.get(ORPHANED_LABEL) != "true":
            by_pool.setdefault(labels[POOL_LABEL], []).append(_name(node))
    hits = []
    for index, pool in enumerate(cluster.pools):
        if (
            pool.state != "present"
            or pool.name in guard.confirm_pools
            or (scope is not None and pool.name not in scope)
        ):
            continue
        labelled = by_pool.get(pool.name, [])
        lost = sorted(name for name in labelled if name not in claimed)
        if lost and (len(lost) == len(labelled) or len(lost) > guard.max_share * len(labelled)):
            at = "gpupool_cluster.pools[%d]" % index
            hits.append(OrphanGuardHit(pool.name, at, selectors.get(pool.name, "?"), lost, len(labelled)))
    return hits


def guard_message(hits: Sequence[OrphanGuardHit], max_share: float) -> str:
    """The refusal: each pool, its selector and the nodes it no longer matches (a few by name), then how to confirm.
    Every line stays under 200 characters for names Kubernetes accepts."""
    lines = ["node_pool did not write anything: this run would orphan (cordon and taint) too many nodes of a pool"]
    for hit in hits:
        shown = ", ".join(hit.orphaned[:3]) + (
            " and %d more" % (len(hit.orphaned) - 3) if len(hit.orphaned) > 3 else ""
        )
        share = "all" if len(hit.orphaned) == hit.members else "%d of %d" % (len(hit.orphaned), hit.members)
        lines.append(
            "  - pool %s (%s): its selector %s no longer matches %s of its nodes: %s"
            % (hit.pool, hit.at, cut(hit.selector), share, shown)
        )
    lines += [
        "  The limit is gpupool_cluster.orphan_guard.max_share = %g (and never all of a pool's nodes)." % max_share,
        "  Fix: if the selector or nodegroup is wrong (a typo, a trailing newline), correct it in the inventory.",
        "  If the change is intended, confirm it: run with -e gpupool_confirm_orphans=true (node_pool option "
        "confirm_orphans: true),",
        "  or list the pool in gpupool_cluster.orphan_guard.confirm_pools; or set the pool to state: absent.",
    ]
    return "\n".join(lines)


def cut(text: str, limit: int = 80) -> str:
    """A selector as one short line (a trailing newline shown as \\n, not as a line break)."""
    shown = repr(text)[1:-1] if any(c in text for c in "\n\r\t") else text
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."
