# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cordon ledger: every run re-checks each cordon gpupool made and lifts those whose reason no longer holds.

A gpupool cordon carries gpupool.io/cordoned-by (which step), gpupool.io/cordon-reason (why, a reason of
plan/nodes/cordon_reasons.py) and gpupool.io/cordon-run (which run, the run lease's holder). A run killed between
the cordon and the uncordon, followed by an inventory change, used to leave the node cordoned for good: mig_layout
skips a pool that is no longer static MIG, the nodegroup step forgets a shrink it no longer wants. node_pool runs
every run, after the nodegroup step and before mig_layout, and sees every node: it applies this plan.

A reason HOLDS (the cordon is kept) when:

  mig-layout:<pool>:<config>  the pool is present, static MIG, and still selects the node: mig_layout, later in the
                              same run, finishes the wave (or uncordons a node already done; a node the MIG manager
                              failed on stays cordoned for a person, and the step says so)
  shrink:<nodegroup>:<n>      a present pool still wants that nodegroup smaller than the nodes it has now
  delete:<nodegroup>          no present pool wants that nodegroup any more
  orphan:<pool>               the node is an orphan (node_pool's own orphan handling holds and lifts it)

and whatever the reason, a node that is an orphan now stays cordoned (node_pool holds orphans). Every other
gpupool cordon is lifted: its pool turned MIG off or dynamic, is absent or gone, the nodegroup is no longer
shrinking, or the reason is missing or not understood. A cordon of an older version without a reason is judged by
the reason its step would have written (mig-layout: the pool it is labelled for).

Never touched: a node of another owner (gpupool.io/owner names another inventory; plan/nodes/node_owners.py), or
one labelled for a pool this inventory does not declare without an owner label, a node that is not cordoned or
whose cordon has no gpupool.io/cordoned-by (a person's, or another tool's), a node outside a limited run's
pools, and a cordon made by another run while that run may still be writing (the caller says which runs may be:
none while this run holds the exclusive run lease; every run that recorded itself when the step runs without a
lease).

Never lifted: a cordon someone set after gpupool's. The annotations say gpupool cordoned the node once; the node's
managedFields say who set spec.unschedulable last (plan/nodes/cordon_owner.py). A run killed mid-wave leaves its
annotations, a person runs kubectl uncordon and kubectl cordon for maintenance: the cordon is the person's now. The
verdict is RELEASE: gpupool's record is removed (the person expects a node cordoned as they left it, not one a later
gpupool run may still think its own), the cordon stays, and the step warns naming the node and who cordoned it.
Every lift and release is sent with the resourceVersion it was decided from (ledger_patch); a node changed meanwhile
is read again and decided anew.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Set

from ansible_collections.gpupool.core.plugins.module_utils.model.names import (
    CORDON_ANNOTATION,
    CORDON_REASON_ANNOTATION,
    CORDON_RUN_ANNOTATION,
    CORDON_VALUE,
    FIELD_MANAGER,
    NODEGROUP_LABEL,
    ORPHAN_CORDON,
    POOL_LABEL,
    nodegroup_name,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import cordon_owner, cordon_reasons, node_owners
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import eviction as plan_eviction
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.cordon_reasons import Reason

Node = Dict[str, Any]

KEEP, LIFT = "keep", "lift"
RELEASE = "release"  # someone cordoned the node after gpupool: their cordon stays, gpupool's record goes

# gpupool.io/cordoned-by of the nodegroup step (runners/nodegroups.py CORDON_BY; runners sit above plan/)
NODEGROUP_CORDON = "nodegroup"


class Verdict(NamedTuple):
    """What the ledger decided for one gpupool cordon: keep or lift, and why (a short sentence)."""

    node: str
    by: str  # gpupool.io/cordoned-by
    reason: Optional[str]  # gpupool.io/cordon-reason as recorded
    run: Optional[str]  # gpupool.io/cordon-run as recorded
    action: str  # keep | lift | release
    why: str
    manager: Optional[str] = None  # release: who set spec.unschedulable after gpupool (their field manager)

    def as_dict(self) -> Dict[str, Any]:
        out = {"name": self.node, "cordoned_by": self.by, "reason": self.reason, "run": self.run, "why": self.why}
        if self.manager is not None:
            out["manager"] = self.manager
        return out


def _meta(node: Node) -> Dict[str, Any]:
    return node.get("metadata") or {}


def _labels(node: Node) -> Dict[str, str]:
    return _meta(node).get("labels") or {}


def _annotations(node: Node) -> Dict[str, str]:
    return _meta(node).get("annotations") or {}


def gpupool_cordon(node: Node) -> Optional[str]:
    """The step that cordoned the node (gpupool.io/cordoned-by), or None: not cordoned, or not by gpupool."""
    if not (node.get("spec") or {}).get("unschedulable"):
        return None
    return _annotations(node).get(CORDON_ANNOTATION) or None


def recorded_reason(node: Node) -> Optional[Reason]:
    """The cordon's reason: as recorded, or for a cordon without one (an older version's) the reason its step
    would have written; None when neither tells (the cordon is then lifted)."""
    ann = _annotations(node)
    text = ann.get(CORDON_REASON_ANNOTATION)
    if text:
        return cordon_reasons.parse(text)
    by, pool = ann.get(CORDON_ANNOTATION), _labels(node).get(POOL_LABEL)
    if by == CORDON_VALUE and pool:
        return Reason(cordon_reasons.MIG_LAYOUT, (pool, ""))
    if by == ORPHAN_CORDON and pool:
        return Reason(cordon_reasons.ORPHAN, (pool,))
    return None


def _reason_pool(reason: Optional[Reason], node: Node, by_nodegroup: Mapping[str, Any]) -> Optional[str]:
    """The pool a cordon concerns, for a run limited to some pools."""
    if reason is not None and reason.kind in (cordon_reasons.MIG_LAYOUT, cordon_reasons.ORPHAN):
        return reason.args[0]
    if reason is not None and reason.args[0] in by_nodegroup:
        return by_nodegroup[reason.args[0]].name
    return _labels(node).get(POOL_LABEL)


def _holds(
    reason: Optional[Reason],
    node: Node,
    pools: Mapping[str, Any],
    by_nodegroup: Mapping[str, Any],
    members: Mapping[str, str],
    orphans: Set[str],
    nodegroup_sizes: Mapping[str, int],
    nodegroup_label: str,
) -> Optional[str]:
    """Why the reason still holds (a sentence), or None: it does not, and the cordon is lifted."""
    name = _meta(node).get("name")
    if name in orphans:
        return "the node is an orphan: node_pool keeps it cordoned"
    if reason is None:
        return None
    kind, args = reason.kind, reason.args
    if kind == cordon_reasons.MIG_LAYOUT:
        pool = pools.get(args[0])
        if pool is not None and pool.state == "present" and pool.mig.mode == "static" and members.get(name) == args[0]:
            return "pool %s is static MIG and selects the node: mig_layout finishes its change" % args[0]
        return None
    if kind == cordon_reasons.SHRINK:
        pool = by_nodegroup.get(args[0])
        have = nodegroup_sizes.get(args[0], 0)
        if pool is not None and _labels(node).get(nodegroup_label) == args[0] and pool.nodegroup.node_count < have:
            return "nodegroup %s still shrinks (%d node(s) wanted, %d there)" % (
                args[0],
                pool.nodegroup.node_count,
                have,
            )
        return None
    if kind == cordon_reasons.DELETE:
        if args[0] not in by_nodegroup:
            return "no present pool wants nodegroup %s: it is being deleted" % args[0]
        return None
    return None  # orphan:<pool> of a node that is no orphan any more


def lift_why(reason: Optional[Reason], text: Optional[str]) -> str:
    """Why a cordon is lifted, in words."""
    if reason is None:
        return "its reason %r is missing or not understood" % text if text else "it records no reason"
    kind, args = reason.kind, reason.args
    if kind == cordon_reasons.MIG_LAYOUT:
        return "pool %s is no longer a static MIG pool that selects the node" % args[0]
    if kind == cordon_reasons.SHRINK:
        return "nodegroup %s is no longer shrinking" % args[0]
    if kind == cordon_reasons.DELETE:
        return "a present pool wants nodegroup %s again" % args[0]
    return "the node is no longer an orphan of pool %s" % args[0]


def plan_ledger(
    nodes: Iterable[Node],
    pools: Sequence[Any],
    members: Mapping[str, str],
    orphans: Iterable[str] = (),
    scope: Optional[Sequence[str]] = None,
    busy_runs: Optional[Set[str]] = frozenset(),
    nodegroup_label: str = NODEGROUP_LABEL,
    owner: Optional[str] = None,
    field_manager: str = FIELD_MANAGER,
) -> List[Verdict]:
    """A Verdict for every node cordoned by gpupool (sorted by node name); nodes not cordoned by gpupool are left out.

    pools: the inventory's pools (validated); members: {node name: present pool that selects it} (node_pool's
    assignment); orphans: nodes node_pool holds as orphans this run; scope: the pool names of a limited run (None:
    all); busy_runs: runs that may be writing now, whose cordons are kept (None: not known - every cordon that
    names a run is kept, for a step run without the lease); owner: this inventory's gpupool_cluster.owner_id - a node
    it may not write (node_owners.may_write: another owner's, or of a pool it does not declare) is left out;
    field_manager: gpupool's (a cordon is lifted only when it alone set spec.unschedulable last)."""
    nodes = list(nodes)
    if owner is not None:
        names = [pool.name for pool in pools]
        nodes = [node for node in nodes if node_owners.may_write(node, owner, names, members)]
    by_name = {pool.name: pool for pool in pools}
    by_nodegroup = {
        nodegroup_name(pool): pool for pool in pools if pool.state == "present" and nodegroup_name(pool) is not None
    }
    sizes: Dict[str, int] = {}
    for node in nodes:
        group = _labels(node).get(nodegroup_label)
        if group:
            sizes[group] = sizes.get(group, 0) + 1
    orphan_set = set(orphans)
    out = []
    for node in sorted(nodes, key=lambda n: _meta(n).get("name") or ""):
        by = gpupool_cordon(node)
        if by is None:
            continue
        name = _meta(node).get("name")
        ann = _annotations(node)
        text, run = ann.get(CORDON_REASON_ANNOTATION), ann.get(CORDON_RUN_ANNOTATION)
        reason = recorded_reason(node)
        if scope is not None and _reason_pool(reason, node, by_nodegroup) not in scope:
            continue
        if run and (busy_runs is None or run in busy_runs):
            out.append(Verdict(name, by, text, run, KEEP, "run %s may still be working on it" % run))
            continue
        if not cordon_owner.set_by_gpupool(node, field_manager):
            manager = cordon_owner.cordoned_by_whom(node, field_manager)
            why = "cordoned by %s after gpupool's cordon" % manager
            out.append(Verdict(name, by, text, run, RELEASE, why, manager))
            continue
        held = _holds(reason, node, by_name, by_nodegroup, members, orphan_set, sizes, nodegroup_label)
        if held is not None:
            out.append(Verdict(name, by, text, run, KEEP, held))
        else:
            out.append(Verdict(name, by, text, run, LIFT, lift_why(reason, text)))
    return out


def lifted_message(verdict: Verdict) -> str:
    """The step's warning for a lifted cordon: which node, whose cordon, and why it went."""
    return "node %s: lifted the cordon %s made (%s), because %s" % (
        verdict.node,
        verdict.by,
        verdict.reason or "no reason recorded",
        verdict.why,
    )


def ledger_patch(verdict: Verdict, node: Node) -> Optional[Dict[str, Any]]:
    """The merge patch a verdict sends, with the resourceVersion of the node it was decided from: a lift uncordons
    and removes gpupool's record, a release removes only the record; None for a cordon kept."""
    if verdict.action == LIFT:
        return plan_eviction.at_version(plan_eviction.uncordon_patch(), node)
    if verdict.action == RELEASE:
        return plan_eviction.at_version(plan_eviction.record_patch(), node)
    return None


def released_message(verdict: Verdict) -> str:
    """The step's warning for a cordon someone set after gpupool's: named, left cordoned."""
    return cordon_owner.persons_cordon_message(verdict.node, verdict.manager or "someone else")
