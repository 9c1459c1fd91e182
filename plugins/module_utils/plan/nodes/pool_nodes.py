# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Nodes: which pool a node belongs to, the labels and taints it should carry, and the one JSON merge
patch that sets them without touching anyone else's (``spec.taints`` is an atomic list in server-side
apply, so labels and taints go together in a merge patch; the keys gpupool set are recorded in
annotations so a later run removes only its own).
"""

from __future__ import annotations

import re

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.names import (
    DRA_PLUGIN_NODE_LABELS,
    FIELD_MANAGER,
    GPU_PRESENT_LABEL,
    NODEGROUP_LABEL,
    POOL_LABEL,
    TAINTS_ANNOTATION,
    labels_annotation,
    nodegroup_name,
)
from ansible_collections.gpupool.core.plugins.module_utils.model.nodegroup_checks import node_lookup_problem
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.ssa_compare import owned_label_keys


def node_labels_of(node):
    return dict((node.get("metadata") or {}).get("labels") or {})


def node_matcher(pool, nodegroup_label=NODEGROUP_LABEL, name_pattern=None):
    """A predicate over Node objects: is this node one of the pool's?

    Order: the pool's node_selector (all labels must match); else the Magnum nodegroup label;
    plus, when `name_pattern` is given (a regex with {pool}/{nodegroup} placeholders), nodes whose
    name matches it. A pool with none of these has no way to find its nodes: Problems.
    """
    pattern = None
    if name_pattern:
        ng = nodegroup_name(pool) or pool.name
        pattern = re.compile(name_pattern.replace("{pool}", re.escape(pool.name)).replace("{nodegroup}", re.escape(ng)))
    if pool.node_selector:
        wanted = dict(pool.node_selector)
    elif pool.nodegroup is not None:
        wanted = {nodegroup_label: nodegroup_name(pool)}
    else:
        wanted = None
    if wanted is None and pattern is None:
        # load_cluster refuses such a pool already; the same model rule keeps this builder safe on its own.
        raise Problems(
            [
                (
                    "pools[%s]" % pool.name,
                    (node_lookup_problem(pool) or "pool %s is absent" % pool.name)
                    + ", or give the module a name_pattern",
                )
            ]
        )

    def match(node):
        labels = (node.get("metadata") or {}).get("labels") or {}
        if wanted is not None and all(labels.get(k) == v for k, v in wanted.items()):
            return True
        return bool(pattern is not None and pattern.search(node["metadata"]["name"]))

    match.wanted, match.pattern = wanted, pattern  # match_nodes finds a label-only pool's nodes by an index
    match.describe = " or ".join(
        ([",".join("%s=%s" % kv for kv in sorted(wanted.items()))] if wanted else [])
        + (["name ~ /%s/" % pattern.pattern] if pattern else [])
    )
    return match


def _matches(matchers, ordered):
    """{node name: [positions in `matchers` of the pools matching it]}. A pool found by labels alone (node_matcher's
    `wanted`, no name pattern) looks only at the nodes carrying its first label, from one index over the nodes: 50
    pools over 2,000 nodes are 2,000 label reads, not 100,000 matcher calls."""
    label_only = {k: sorted(m.wanted)[0] for k, (_p, m) in enumerate(matchers) if _by_labels(m)}
    keys = set(label_only.values())
    index = {}
    for node in ordered if keys else ():
        labels = (node.get("metadata") or {}).get("labels") or {}
        for key in keys:
            if key in labels:
                index.setdefault((key, labels[key]), []).append(node)
    hits = {}
    for position, (_pool, match) in enumerate(matchers):
        key = label_only.get(position)
        for node in index.get((key, match.wanted[key]), ()) if key is not None else ordered:
            if match(node):
                hits.setdefault(node["metadata"]["name"], []).append(position)
    return hits


def _by_labels(match):
    return bool(getattr(match, "wanted", None)) and getattr(match, "pattern", None) is None


def match_nodes(matchers, nodes):
    """({pool name: [nodes]}, conflicts) for (pool, matcher) pairs; a node goes to the first pool that matches it.

    conflicts: [(pool name, node name, sentence)] for each further pool that matches a node already taken -
    node_pool refuses to act on those, the pool report lists them."""
    out = {pool.name: [] for pool, _match in matchers}
    ordered = sorted(nodes, key=lambda n: n["metadata"]["name"])
    hits = _matches(matchers, ordered)
    owner, conflicts = {}, []
    for node in ordered:
        name = node["metadata"]["name"]
        for position in hits.get(name, ()):
            pool = matchers[position][0]
            if name in owner:
                conflicts.append(
                    (
                        pool.name,
                        name,
                        "node %s matches pools %s and %s; make their node_selector or nodegroups disjoint"
                        % (name, owner[name], pool.name),
                    )
                )
                continue
            owner[name] = pool.name
            out[pool.name].append(node)
    return out, conflicts


def assign_nodes(pools, nodes, nodegroup_label=NODEGROUP_LABEL, name_pattern=None):
    """{pool name: [nodes]} for present pools; a node matched by two pools is an error."""
    matchers = [(p, node_matcher(p, nodegroup_label, name_pattern)) for p in pools if p.state == "present"]
    out, conflicts = match_nodes(matchers, nodes)
    if conflicts:
        raise Problems([("pools", text) for _pool, _node, text in conflicts])
    return out


def node_ready(node):
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def node_schedulable(node):
    return not (node.get("spec") or {}).get("unschedulable", False)


def needs_gpu_present_label(node, owned_label_keys=()):
    """True when no label the DRA kubelet plugin's affinity needs was set by someone else
    (NFD or GPU Feature Discovery): then gpupool sets nvidia.com/gpu.present=true itself."""
    labels = node_labels_of(node)
    for key, value in DRA_PLUGIN_NODE_LABELS:
        if labels.get(key) == value and key not in owned_label_keys:
            return False
    return True


def desired_node_labels(pool, node, owned_label_keys=(), set_gpu_present=True):
    labels = dict(pool.node_labels)
    labels[POOL_LABEL] = pool.name
    if set_gpu_present and needs_gpu_present_label(node, owned_label_keys):
        labels[GPU_PRESENT_LABEL] = "true"
    return labels


def desired_node_taints(pool):
    return [{k: v for k, v in t.items() if k in ("key", "value", "effect")} for t in pool.all_taints]


def taint_id(taint):
    return "%s:%s" % (taint["key"], taint.get("effect", ""))


def recorded_taints(node):
    text = ((node.get("metadata") or {}).get("annotations") or {}).get(TAINTS_ANNOTATION) or ""
    return [t for t in text.split(",") if t]


def merge_taints(live, ours_before, desired):
    """New taint list: others' taints kept (in order), ours removed when no longer wanted, ours added
    or updated. Returns (taints, changed). `ours_before`: taint ids ("key:effect") gpupool set before."""
    want = {taint_id(t): t for t in desired}
    out, changed, placed = [], False, set()
    for t in live or []:
        tid = taint_id(t)
        if tid in want:
            new = dict(t)
            new.update(want[tid])
            if new.get("value", "") != t.get("value", ""):
                changed = True
            if "value" in new and new["value"] == "":
                new.pop("value")
            out.append(new)
            placed.add(tid)
        elif tid in ours_before:
            changed = True  # ours, no longer wanted
        else:
            out.append(t)
    for tid, t in want.items():
        if tid not in placed:
            t = dict(t)
            if t.get("value", None) == "":
                t.pop("value")
            out.append(t)
            changed = True
    return out, changed


def taints_annotation(desired):
    return ",".join(sorted(taint_id(t) for t in desired))


def recorded_labels(node, field_manager=FIELD_MANAGER):
    text = ((node.get("metadata") or {}).get("annotations") or {}).get(labels_annotation(field_manager)) or ""
    return [k for k in text.split(",") if k]


def gpupool_label_keys(node, field_manager=FIELD_MANAGER):
    """Label keys node_pool set on the node: the recorded ones, plus those its server-side applies owned
    before labels were recorded (so the first run after an upgrade still removes labels it set)."""
    return set(recorded_labels(node, field_manager)) | owned_label_keys(node, field_manager)


def node_patch(node, labels, taints=None, field_manager=FIELD_MANAGER):
    """The one JSON merge patch that makes gpupool's labels on `node` exactly `labels` and gpupool's taints
    exactly `taints` (None: taints left alone), keeping everyone else's. Returns (patch, reasons); the patch
    is None when nothing differs. It carries the node's resourceVersion: if anyone changed the node since it
    was read, the API server refuses it (409) and the caller reads the node again. `field_manager`: whose
    labels these are (each records its own keys)."""
    meta = node.get("metadata") or {}
    live = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    set_labels = {k: v for k, v in sorted(labels.items()) if live.get(k) != v}
    dropped = sorted(k for k in gpupool_label_keys(node, field_manager) - set(labels) if k in live)
    reasons = ["metadata.labels.%s differs" % k for k in set_labels] + [
        "metadata.labels.%s no longer set" % k for k in dropped
    ]
    set_labels.update((k, None) for k in dropped)
    recorded = {labels_annotation(field_manager): ",".join(sorted(labels)) or None}
    spec = None
    if taints is not None:
        new_taints, changed = merge_taints((node.get("spec") or {}).get("taints"), set(recorded_taints(node)), taints)
        if changed:
            spec = {"taints": new_taints or None}
            reasons.append("spec.taints differs")
        recorded[TAINTS_ANNOTATION] = taints_annotation(taints) or None
    set_annotations = {k: v for k, v in recorded.items() if (annotations.get(k) or None) != v}
    if not (set_labels or set_annotations or spec):
        return None, []
    patch = {"metadata": {"resourceVersion": meta.get("resourceVersion")}}
    if set_labels:
        patch["metadata"]["labels"] = set_labels
    if set_annotations:
        patch["metadata"]["annotations"] = set_annotations
        reasons += ["metadata.annotations.%s differs" % k for k in sorted(set_annotations)]
    if spec is not None:
        patch["spec"] = spec
    return patch, reasons


# Labels a node can carry from birth: Magnum (node_labels, microversion 1.14) passes them to kubelet --node-labels,
# and Magnum refuses keys in the kubernetes.io / k8s.io namespaces except those kubelet may set on its own Node
# (reference magnum-nodegroups.md §1; the allowed ones as in k8s.io/kubelet/pkg/apis/well_known_labels.go:
# the [*.]kubelet.kubernetes.io and [*.]node.kubernetes.io namespaces and a few well-known keys).
KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")
KUBELET_LABELS = frozenset(
    (
        "kubernetes.io/hostname",
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
        "topology.kubernetes.io/region",
        "topology.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
    )
)


def kubelet_may_set(key):
    """Whether a label key can be set at registration (kubelet --node-labels), so Magnum accepts it in node_labels."""
    prefix = key.rsplit("/", 1)[0] if "/" in key else ""
    restricted = (
        prefix == "kubernetes.io"
        or prefix.endswith(".kubernetes.io")
        or prefix == "k8s.io"
        or prefix.endswith(".k8s.io")
    )
    if not restricted or key in KUBELET_LABELS:
        return True
    return any(prefix == ns or prefix.endswith("." + ns) for ns in KUBELET_LABEL_NAMESPACES)


def birth_node_labels(pool):
    """The Kubernetes labels a pool's Magnum nodegroup gives its nodes at creation: the pool label and the pool's
    node_labels that kubelet may set; the rest (and nvidia.com/gpu.present, which depends on what NFD finds) come
    from node_pool once the node has joined."""
    labels = {k: v for k, v in pool.node_labels.items() if kubelet_may_set(k)}
    labels[POOL_LABEL] = pool.name
    return labels


def birth_node_taints(pool):
    """The taints a pool's nodes carry from birth (kubelet --register-with-taints): all of the pool's, so no pod
    lands on a new GPU node before node_pool has run."""
    return desired_node_taints(pool)
