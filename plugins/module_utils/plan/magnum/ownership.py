# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whose a Magnum nodegroup is (pure): the owner gpupool wrote into its Magnum ``labels`` when it created it.

Why the nodegroup's ``labels``: Magnum keeps them with the nodegroup and shows them in its full view, and no PATCH
can change them afterwards (``/labels`` is among NodeGroupPatchType's internal attributes: a PATCH of it is a 400;
reference magnum-nodegroups.md §1, "PATCH: what can be changed"), so an owner once written stays, and no run of
another inventory can take the nodegroup over. The same fact means a nodegroup made before this version (or by
hand) can never be given the label: managing one is the pool's explicit ``nodegroup.adopt: true``, kept while that
nodegroup lives. (``node_labels``, from microversion 1.14, are patchable and master-only, so they prove nothing.)

The rule, for every action of every kind (create aside): a nodegroup is changed - resized, patched, drained or
deleted - only when its owner label is this run's owner, or it has none and the pool adopts it. Standalone use has
no owner: it changes only nodegroups without the label. docs/concurrency.md, "Owners: Magnum nodegroups".
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from ansible_collections.gpupool.core.plugins.module_utils.model.names import OWNER_LABEL

OURS, OTHER, UNOWNED = "ours", "other", "unowned"


def owner_of(nodegroup: Optional[Mapping[str, Any]]) -> Optional[str]:
    """The owner a nodegroup's Magnum labels name (None: no owner label, or an empty one)."""
    value = ((nodegroup or {}).get("labels") or {}).get(OWNER_LABEL)
    return None if value in (None, "") else str(value)


def verdict(nodegroup: Optional[Mapping[str, Any]], owner: Optional[str], adopt: bool = False) -> str:
    """OURS when this run (owner; None standalone) may change the nodegroup, else OTHER (another owner's) or
    UNOWNED (no owner label, not adopted)."""
    found = owner_of(nodegroup)
    if found == owner or (found is None and adopt):
        return OURS
    return UNOWNED if found is None else OTHER


def may_change(nodegroup: Optional[Mapping[str, Any]], owner: Optional[str], adopt: bool = False) -> bool:
    return verdict(nodegroup, owner, adopt) == OURS


def refusal(desired: Mapping[str, Any], observed: Mapping[str, Any], where: str) -> Optional[str]:
    """Why the run leaves a declared (or standalone) nodegroup as it is, or None when it may change it."""
    owner, found = desired.get("owner"), owner_of(observed)
    judged = verdict(observed, owner, bool(desired.get("adopt")))
    if judged == OURS:
        return None
    left = "%s was left as it is (no resize, patch, drain or delete)" % where
    if owner is None:  # standalone
        return (
            "%s: it is owned by '%s' (its Magnum label %s), an inventory's nodegroup; only that inventory's runs "
            '(cluster: "{{ gpupool_cluster }}") change it, never a standalone task' % (left, found, OWNER_LABEL)
        )
    if judged == OTHER:
        return (
            "%s: it is owned by '%s' (its Magnum label %s), not by this inventory's '%s'. Two inventories name "
            "the same nodegroup: give this pool another nodegroup.name, or remove the pool from one of them"
            % (left, found, OWNER_LABEL, owner)
        )
    return (
        "%s: it has no owner (no Magnum label %s: made before gpupool recorded owners in Magnum, or by hand), "
        "and Magnum cannot add the label to an existing nodegroup. If it is this inventory's, set %s; "
        "otherwise give the pool another nodegroup.name"
        % (left, OWNER_LABEL, desired.get("adopt_at") or "adopt: true in the pool's nodegroup")
    )


def leave_text(name: str, cluster: str, owner: Optional[str]) -> str:
    """The plan's line for a nodegroup no pool declares that is not this run's to prune."""
    if owner is None:
        return (
            "leave nodegroup '%s' of cluster '%s': it has no owner (no Magnum label %s), so prune_nodegroups "
            "does not delete it" % (name, cluster, OWNER_LABEL)
        )
    return "leave nodegroup '%s' of cluster '%s': owned by '%s'" % (name, cluster, owner)


def unowned_orphan_warning(name: str, cluster: str) -> str:
    return (
        "Magnum nodegroup %s of cluster %s is not pruned although prune_nodegroups is on: it has no owner "
        "(no Magnum label %s: made before gpupool recorded owners in Magnum, or by hand), and gpupool deletes only "
        "its own. To delete it, declare a pool with nodegroup {name: %s, adopt: true} and state: absent, or "
        "delete it yourself" % (name, cluster, OWNER_LABEL, name)
    )
