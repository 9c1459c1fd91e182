"""The physical request limit of a converge: the fewest API requests that can do the job at all.

Defined per cluster (each cluster is its own apiserver), then summed. docs/performance.md explains
each term; in short:

no-op reads = one LIST per kind the converge must look at (Nodes, DeviceClasses, ComputeDomains,
    ResourceSlices, ResourceClaims and DaemonSets - the DRA driver's plugin - for the pool report), one GET of the MIG manager ConfigMap
    when a pool has a static MIG layout, and one discovery GET per API group whose version the
    client must learn (resource.k8s.io, resource.nvidia.com). A LIST counts once whatever its
    size: one request can carry every item, so paging shows as overhead.
no-op writes = 0.
first-converge writes = one per object created (DeviceClass, ComputeDomain, the MIG ConfigMap),
    one per pool node for its labels and taints together, and two per MIG node: a cordon that also sets
    the MIG config label (and records the cordon ledger's reason), and the uncordon once the MIG manager
    reports success - the cordon-aware limit. The drain policy changes nothing here: a node of a first
    converge has no GPU pod to evict, so its label need not wait for a drain (mig_layout reads the node's
    pods before the cordon to know; a node with GPU pods to evict gets its label in a third write).
first-converge reads = the no-op reads plus one per MIG wave (one label-selected LIST, or one
    watch, observes a whole wave).
one-pool change (one more node label on one pool) writes = one per node of that pool;
    reads = the no-op reads.
Magnum (when the inventory has it), once the nodegroups exist: one GET of the cluster's nodegroup list per
    cluster and run (its response headers also carry the microversion range), plus one GET of each present
    pool's nodegroup: Magnum's list view is abbreviated to uuid, name, flavor_id, node_count, role,
    is_default, image_id, status and stack_id (magnum api/controllers/v1/nodegroup.py get_all, expand=False;
    /work/shared/reference/magnum-nodegroups.md §1), so a pool's min/max_node_count, labels, node_labels
    and node_taints can only be compared through the nodegroup's own view. Keystone's token request is not
    a Magnum request and is not counted.
"""

from __future__ import annotations

import math

from bench.inventory_generator import ClusterPlan

# daemonsets: the pool report reads the DRA driver's kubelet plugin (which feature gates it runs with) since the
# driver became part of site.yml (issue #13); one cluster-wide LIST, as for the others.
READ_KINDS = ("nodes", "deviceclasses", "computedomains", "resourceslices", "resourceclaims", "daemonsets")
DISCOVERED_GROUPS = ("resource.k8s.io", "resource.nvidia.com")


def _objects(plan: ClusterPlan) -> int:
    """DeviceClasses + ComputeDomains + the MIG ConfigMap the cluster's pools want."""
    from ansible_collections.gpupool.core.plugins.module_utils.model.load import load_cluster
    from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.compute_domains import (
        cluster_compute_domains,
    )
    from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.device_classes import cluster_device_classes

    data = dict(plan.cluster)
    if "magnum" in data:
        data["magnum"] = dict(data["magnum"], cloud="limits")
    cluster = load_cluster(data)
    return len(cluster_device_classes(cluster)) + len(cluster_compute_domains(cluster)) + (1 if _has_mig(plan) else 0)


def _has_mig(plan: ClusterPlan) -> bool:
    return any(p.get("mig", {}).get("mode") == "static" for p in plan.cluster["pools"])


def waves(plan: ClusterPlan) -> int:
    per_wave = plan.cluster.get("mig_manager", {}).get("max_unavailable", 1)
    return sum(
        math.ceil(len(plan.pool_nodes(p["name"])) / per_wave)
        for p in plan.cluster["pools"]
        if p.get("mig", {}).get("mode") == "static"
    )


def mig_node_writes(plan: ClusterPlan) -> int:
    """Writes per MIG node on a first converge: the cordon with the config label, the uncordon - whatever the
    drain policy (a first converge's node has no GPU pod to evict before its label)."""
    return 2


def _nodegroups(plan: ClusterPlan) -> int:
    """The present pools with a Magnum nodegroup (each one's full view is read)."""
    return sum(1 for p in plan.cluster["pools"] if "nodegroup" in p and p.get("state", "present") == "present")


def noop_reads(plan: ClusterPlan) -> int:
    return len(READ_KINDS) + (1 if _has_mig(plan) else 0) + len(DISCOVERED_GROUPS)


def limits(plans: list[ClusterPlan], scenario: str, changed: tuple[str, str] | None = None) -> dict:
    """{"reads": n, "writes": n, "objects": n, "magnum_reads": n} for scenario first|noop|change."""
    reads = writes = objects = 0
    for plan in plans:
        reads += noop_reads(plan)
        if scenario == "first":
            reads += waves(plan)
            created = _objects(plan)
            writes += created + len(plan.nodes) + mig_node_writes(plan) * plan.mig_nodes
            objects += created + len(plan.nodes)
        elif scenario == "change" and changed and plan.name == changed[0]:
            writes += len(plan.pool_nodes(changed[1]))
            objects += len(plan.pool_nodes(changed[1]))
    magnum = sum(1 + _nodegroups(plan) for plan in plans) if "magnum" in plans[0].cluster else 0
    return {"reads": reads, "writes": writes, "objects": objects, "magnum_reads": magnum}


def object_count(plans: list[ClusterPlan]) -> int:
    """Objects a converge manages: Nodes plus the DeviceClasses, ComputeDomains and ConfigMaps."""
    return sum(len(p.nodes) + _objects(p) for p in plans)
