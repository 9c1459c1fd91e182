# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which Nodes an inventory may write: the owner label on a pool's nodes.

node_pool puts gpupool.io/owner=<gpupool_cluster.owner_id> on every node it puts in a pool, next to
gpupool.io/pool, and records it among its labels (gpupool.io/labels) so a release removes it. Two inventories
pointed at one Kubernetes cluster (two teams, or staging run against production by mistake) therefore never
orphan, cordon, relabel or uncordon each other's nodes. Per node (`classify_node`):

* OURS     gpupool.io/owner is this owner: this run manages it as before.
* FOREIGN  gpupool.io/owner is another owner: never written - not orphaned, not relabelled, no cordon lifted. A
           present pool of this inventory that selects it is refused before any write (`clash_message`).
* LEGACY   gpupool.io/pool names a pool of THIS inventory (present or absent) and there is no owner label: made
           before owner labels; adopted (the owner label is added) and said once (`adopted_message`).
* UNKNOWN  gpupool.io/pool names a pool this inventory does not declare, no owner label: it may be another
           inventory's, so it is left alone (not orphaned) with a warning (`unknown_message`) - unless a present
           pool of this inventory selects it (a renamed pool, the single-inventory case): then it is adopted.
* FREE     neither label: not gpupool's yet; a present pool that selects it takes it (with the owner label).

A legacy node of a pool that two inventories both declare by name is the one case this cannot tell apart: the
first inventory to run adopts it (and the adoption warning names it).
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Sequence

from ansible_collections.gpupool.core.plugins.module_utils.model.names import OWNER_LABEL, POOL_LABEL
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.pool_nodes import gpupool_label_keys

Node = Dict[str, Any]

OURS, FOREIGN, LEGACY, UNKNOWN, FREE = "ours", "foreign", "legacy", "unknown", "free"


def _name(node: Node) -> str:
    return (node.get("metadata") or {}).get("name") or ""


def _labels(node: Node) -> Dict[str, str]:
    return (node.get("metadata") or {}).get("labels") or {}


def node_owner(node: Node) -> Optional[str]:
    """The owner a node is labelled for (gpupool.io/owner), or None."""
    return _labels(node).get(OWNER_LABEL) or None


def classify_node(node: Node, owner: str, inventory_pools: Iterable[str]) -> str:
    """OURS, FOREIGN, LEGACY, UNKNOWN or FREE (see the module's docstring); inventory_pools: every pool name of
    this inventory, present or absent."""
    theirs = node_owner(node)
    if theirs is not None:
        return OURS if theirs == owner else FOREIGN
    pool = _labels(node).get(POOL_LABEL)
    if not pool:
        return FREE
    return LEGACY if pool in set(inventory_pools) else UNKNOWN


class NodeSplit(NamedTuple):
    """The cluster's nodes as one inventory sees them."""

    mine: List[Node]  # nodes this run may write: OURS, FREE, LEGACY, and UNKNOWN ones a present pool selects
    foreign: List[Node]  # another owner's: never written
    unknown: List[Node]  # UNKNOWN nodes no present pool selects: left alone, with a warning
    adopted: List[str]  # nodes among `mine` that node_pool labelled before owner labels (see made_before_owners)


def split_nodes(nodes: Iterable[Node], owner: str, inventory_pools: Iterable[str], selected: Iterable[str] = ()):
    """Split the cluster's nodes (sorted by name); selected: names of the nodes this inventory's present pools
    select now (node_pool's assignment)."""
    pools, picked = set(inventory_pools), set(selected)
    mine, foreign, unknown, adopted = [], [], [], []
    for node in sorted(nodes, key=_name):
        kind = classify_node(node, owner, pools)
        if kind == FOREIGN:
            foreign.append(node)
        elif kind == UNKNOWN and _name(node) not in picked:
            unknown.append(node)
        else:
            mine.append(node)
            if kind in (LEGACY, UNKNOWN) and made_before_owners(node):
                adopted.append(_name(node))
    return NodeSplit(mine, foreign, unknown, adopted)


def made_before_owners(node: Node) -> bool:
    """A node node_pool labelled before owner labels existed: it records labels gpupool set (gpupool.io/labels, or
    managedFields of an older version) but no owner. A node born from a pool's nodegroup carries the pool label
    from Magnum and no record: it is new, and gets the owner label without an adoption warning."""
    return node_owner(node) is None and bool(gpupool_label_keys(node))


def may_write(node: Node, owner: str, inventory_pools: Iterable[str], selected: Iterable[str] = ()) -> bool:
    """May this inventory write the node at all (labels, taints, cordon)? See split_nodes."""
    kind = classify_node(node, owner, inventory_pools)
    return kind in (OURS, FREE, LEGACY) or (kind == UNKNOWN and _name(node) in set(selected))


class OwnerClash(NamedTuple):
    node: str
    theirs: str  # the node's owner
    pool: str  # the present pool of this inventory that selects it
    at: str  # that pool's key path
    selector: str  # how that pool selects nodes, in words


def owner_clashes(
    pools: Sequence[Any], assigned: Dict[str, List[Node]], owner: str, selectors: Dict[str, str]
) -> List[OwnerClash]:
    """[OwnerClash] for each node another owner labelled that a present pool of this inventory selects.

    pools: the inventory's pools (for key paths); assigned: {present pool: [nodes it selects]}."""
    at = {pool.name: "gpupool_cluster.pools[%d]" % i for i, pool in enumerate(pools)}
    out = []
    for pool_name in sorted(assigned):
        for node in assigned[pool_name]:
            theirs = node_owner(node)
            if theirs is not None and theirs != owner:
                out.append(
                    OwnerClash(
                        _name(node), theirs, pool_name, at.get(pool_name, "pools"), selectors.get(pool_name, "?")
                    )
                )
    return sorted(out)


def _cut(text: str, limit: int) -> str:
    shown = repr(text)[1:-1] if any(c in text for c in "\n\r\t") else text
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def clash_message(clashes: Sequence[OwnerClash], owner: str) -> str:
    """The refusal, before any write: each node, both owners, the pool and its selector, and the fix. Every line
    stays within 200 characters (names are cut: a node name may be 253 characters)."""
    lines = [
        "node_pool did not write anything: a pool of this inventory (owner %r) selects node(s) another gpupool "
        "inventory owns" % _cut(owner, 63)
    ]
    for clash in clashes[:5]:
        lines += [
            "  - node %s" % _cut(clash.node, 150),
            "    its owner is %r (label %s), not this inventory's %r"
            % (_cut(clash.theirs, 63), OWNER_LABEL, _cut(owner, 63)),
            "    pool %s (%s) selects it with %s" % (_cut(clash.pool, 63), clash.at, _cut(clash.selector, 70)),
        ]
    if len(clashes) > 5:
        lines.append("  - and %d more node(s)" % (len(clashes) - 5))
    lines += [
        "  Fix: narrow the pool's node_selector (or nodegroup) so it leaves the other inventory's nodes out;",
        "  or release the node from the other inventory first (its pool state: absent, then node_pool with "
        "release_orphans: true there).",
    ]
    return "\n".join(lines)


def adopted_message(names: Sequence[str], owner: str) -> str:
    """The warning, once a run, for the nodes it gave the owner label (two lines; names cut to stay within 200)."""
    shown = ", ".join(_cut(n, 50) for n in names[:3]) + (" and %d more" % (len(names) - 3) if len(names) > 3 else "")
    return "adopted %d node(s) made before owner labels (they now carry %s=%s):\n  %s" % (
        len(names),
        OWNER_LABEL,
        _cut(owner, 63),
        shown,
    )


def unknown_message(node: Node, owner: str) -> str:
    """The warning for a node of a pool this inventory does not declare, without an owner label (three lines)."""
    return (
        "node %s carries %s=%s\n"
        "  (a pool this inventory does not declare) and no owner label: left alone, as it may be another "
        "inventory's.\n"
        "  If it is this inventory's, add the pool back with state: absent for one run, or label the node %s=%s"
        % (
            _cut(_name(node), 100),
            POOL_LABEL,
            _cut(_labels(node).get(POOL_LABEL, ""), 63),
            OWNER_LABEL,
            _cut(owner, 63),
        )
    )
