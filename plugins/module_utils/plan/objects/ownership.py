# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What makes an object ours: the ownership labels, and which live objects an inventory may adopt, prune or must
leave alone.

Every object gpupool makes carries app.kubernetes.io/managed-by=gpupool, gpupool.io/pool=<pool> and
gpupool.io/owner=<gpupool_cluster.owner, default its name>. Two inventories pointed at one Kubernetes cluster (two
teams, or staging run against production by mistake) therefore never prune or overwrite each other's objects.

The rule, per live object of a kind a step converges (`classify`):

* not managed-by=gpupool: someone else's; never pruned (a desired name that clashes is refused by the apply engine).
* gpupool.io/owner = this owner: ours; pruned when no longer desired (within the step's pool/namespace scope).
* gpupool.io/owner = another owner: FOREIGN; never pruned, never written. A desired object of the same name (and
  namespace) is refused before the step writes anything (`owner_clashes`), naming both owners.
* managed-by=gpupool without gpupool.io/owner: LEGACY, made before the owner label existed. Desired by this
  inventory (same name): adopted, i.e. the normal apply adds the owner label, and the step says so once (the next
  run sees it labelled). Not desired: pruned only when its gpupool.io/pool names a pool of THIS inventory (present
  or absent: the old single-inventory behaviour, which removed such objects); any other legacy object may be
  another inventory's, so it is left alone and reported. Deleting a legacy object of a pool that two inventories
  share by name is the one case this cannot tell apart; the warning names every such deletion.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model.names import MANAGED_BY, OWNER_LABEL, POOL_LABEL

OURS = "ours"
FOREIGN = "foreign"
LEGACY = "legacy"
NOT_GPUPOOL = "not-gpupool"

Obj = Dict[str, Any]
Key = Tuple[Optional[str], str]  # (namespace or None, name)


def ownership_labels(pool_name: str, owner: Optional[str] = None) -> Dict[str, str]:
    """The labels of an object gpupool makes for `pool_name` on behalf of `owner` (gpupool_cluster.owner_id)."""
    labels = dict(MANAGED_BY)
    labels[POOL_LABEL] = pool_name
    if owner:
        labels[OWNER_LABEL] = owner
    return labels


def owned_selector(pool_names=None):
    """Label selector of gpupool's objects (of some pools)."""
    key, value = list(MANAGED_BY.items())[0]
    sel = "%s=%s" % (key, value)
    if pool_names:
        sel += ",%s in (%s)" % (POOL_LABEL, ",".join(sorted(pool_names)))
    return sel


def _labels(obj: Optional[Obj]) -> Dict[str, str]:
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


def is_owned(obj):
    """Made by gpupool (any owner)."""
    labels = _labels(obj)
    return all(labels.get(k) == v for k, v in MANAGED_BY.items())


def pool_of(obj):
    return _labels(obj).get(POOL_LABEL)


def owner_of(obj: Optional[Obj]) -> Optional[str]:
    return _labels(obj).get(OWNER_LABEL) or None


def classify(obj: Obj, owner: str) -> str:
    """OURS, FOREIGN, LEGACY or NOT_GPUPOOL (see the module's docstring)."""
    if not is_owned(obj):
        return NOT_GPUPOOL
    other = owner_of(obj)
    if other is None:
        return LEGACY
    return OURS if other == owner else FOREIGN


def may_prune(obj: Obj, owner: str, inventory_pools: Iterable[str]) -> bool:
    """May this inventory delete `obj` when it no longer desires it? Ours, or legacy of one of its pools."""
    cls = classify(obj, owner)
    return cls == OURS or (cls == LEGACY and pool_of(obj) in set(inventory_pools))


def ref(kind: str, key: Key) -> str:
    namespace, name = key
    return "%s %s" % (kind, "%s/%s" % (namespace, name) if namespace else name)


def owner_clashes(desired: Mapping[Key, str], live: Mapping[Key, Obj]) -> List[Tuple[Key, str, str]]:
    """[(key, their owner, our owner)] for desired objects (key -> the owner they are desired for) whose live
    object of the same name belongs to another gpupool owner."""
    out = []
    for key in sorted(desired, key=lambda k: (k[0] or "", k[1])):
        obj = live.get(key)
        if obj is not None and classify(obj, desired[key]) == FOREIGN:
            out.append((key, owner_of(obj), desired[key]))
    return out


def clash_message(kind: str, key: Key, theirs: str, ours: str, pool: Optional[str] = None) -> str:
    """Five lines; only the first holds the object's name (owners are label values: at most 63 characters)."""
    fix = {
        "DeviceClass": "rename the pool or set its device_classes names",
        "ResourceClaimTemplate": "rename the template or use another tenant namespace",
        "ComputeDomain": "set the pool's nvlink.compute_domain name or namespace",
    }.get(kind, "rename it")
    return (
        "%s%s belongs to another gpupool inventory:\n"
        "  its owner is %r (label %s);\n"
        "  this inventory's owner is %r, so nothing was written.\n"
        "  Fix: %s so the names differ;\n"
        "  or, if this inventory made it under another name (a renamed cluster entry), set gpupool_cluster.owner: %s."
        % (ref(kind, key), " (pool %s)" % pool if pool else "", theirs, OWNER_LABEL, ours, fix, theirs)
    )


def adopted_message(refs: List[str]) -> str:
    shown = ", ".join(refs[:5]) + (" and %d more" % (len(refs) - 5) if len(refs) > 5 else "")
    return "adopted %d object(s) made before owner labels: %s (they now carry %s)" % (len(refs), shown, OWNER_LABEL)


def legacy_left_message(refs: List[str]) -> str:
    shown = ", ".join(refs[:5]) + (" and %d more" % (len(refs) - 5) if len(refs) > 5 else "")
    return (
        "left %d gpupool object(s) without an owner label alone: %s. Their pool is not in this inventory, so they "
        "may be another inventory's; delete them by hand if nobody uses them" % (len(refs), shown)
    )


def legacy_pruned_message(refs: List[str]) -> str:
    shown = ", ".join(refs[:5]) + (" and %d more" % (len(refs) - 5) if len(refs) > 5 else "")
    return (
        "deleted %d gpupool object(s) without an owner label: %s (made before owner labels, of a pool of this "
        "inventory that no longer wants them)" % (len(refs), shown)
    )
