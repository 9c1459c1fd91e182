"""Large GPU-pool inventories for `make bench`: N clusters, P pools, M GPU nodes, MIG on a share of them.

    plans = generate(clusters=10, pools=50, nodes=2000, magnum=True)
    for plan in plans: plan.cluster (the gpupool_cluster data), plan.nodes (the Nodes to register)

Pools rotate through four shapes modelled on inventories/example: T4 shared by time-slicing,
A100-40GB with a static MIG layout, whole H100s with an extra DeviceClass, GB200 with a
ComputeDomain. Every third pool is a MIG pool and the MIG pools together hold `mig_share` of the
nodes (a third by default), the other pools the rest. The clusters' `kubeconfig` and `magnum.cloud`
are filled in by the bench bed once its control planes and Magnum emulator run.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

# Node label the pools select their nodes by when the inventory has no Magnum (node_selector pools).
SELECTOR_LABEL = "bench.gpupool.io/pool"
NODEGROUP_LABEL = "magnum.openstack.org/nodegroup"
# The label the one-pool change adds (a new node label on every node of one pool).
CHANGE_LABEL = "bench.gpupool.io/generation"

SHAPES = {
    "t4": {
        "flavor": "g2.5xlarge",
        "gpu": {"model": "T4", "per_node": 1},
        "extra": {"sharing": {"time_slicing": {"interval": "Medium"}}},
    },
    "a100-mig": {
        "flavor": "g4.p2.40g",
        "gpu": {"model": "A100-40GB", "per_node": 2},
        "extra": {"mig": {"mode": "static", "layout": {"3g.20gb": 1, "2g.10gb": 2}}},
    },
    "h100": {
        "flavor": "g5.h100x4",
        "gpu": {"model": "H100-80GB", "per_node": 4},
        "extra": {"device_classes": {"extra": [{"name": "{pool}-big-memory", "min_memory": "80Gi"}]}},
    },
    "gb200": {
        "flavor": "g6.gb200x4",
        "gpu": {"model": "GB200", "per_node": 4},
        "extra": {"nvlink": {"mode": "compute_domain", "compute_domain": {"namespace": "default"}}},
    },
}
OTHER_SHAPES = ("t4", "h100", "gb200")


@dataclass
class NodeSpec:
    name: str
    flavor: str
    pool: str
    labels: dict


@dataclass
class ClusterPlan:
    """One generated cluster: its inventory data and the Nodes its control plane gets."""

    name: str
    cluster: dict  # gpupool_cluster without kubeconfig (and magnum.cloud) yet
    nodes: list[NodeSpec] = field(default_factory=list)

    @property
    def mig_nodes(self) -> int:
        mig_pools = {p["name"] for p in self.cluster["pools"] if p.get("mig", {}).get("mode") == "static"}
        return sum(1 for n in self.nodes if n.pool in mig_pools)

    def pool_nodes(self, pool: str) -> list[NodeSpec]:
        return [n for n in self.nodes if n.pool == pool]


def _split(total: int, parts: int) -> list[int]:
    """`total` spread over `parts` as evenly as possible (the first ones get the remainder)."""
    if parts <= 0:
        return []
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def generate(
    clusters: int = 1,
    pools: int = 6,
    nodes: int = 200,
    mig_share: float = 1 / 3,
    magnum: bool = False,
    waves_per_mig_pool: int = 2,
) -> list[ClusterPlan]:
    """`pools` pools over `clusters` clusters (round robin) and `nodes` GPU nodes over the pools.

    magnum: pools get Magnum nodegroups (and the clusters a `magnum` section); otherwise they find
    their nodes by a node_selector. waves_per_mig_pool sets mig_manager.max_unavailable so that the
    largest MIG pool of a cluster rolls out in that many waves (the default 1 would make one wave
    per node: thousands of sequential waits at full size).
    """
    if clusters < 1 or pools < clusters or pools < 2 or nodes < pools:
        raise ValueError("need 1 <= clusters <= pools, pools >= 2 and nodes >= pools")
    kinds = []
    others = 0
    for j in range(pools):
        if j % 3 == 1:
            kinds.append("a100-mig")
        else:
            kinds.append(OTHER_SHAPES[others % len(OTHER_SHAPES)])
            others += 1
    mig_total = max(kinds.count("a100-mig"), round(nodes * mig_share))
    mig_counts = iter(_split(mig_total, kinds.count("a100-mig")))
    other_counts = iter(_split(nodes - mig_total, pools - kinds.count("a100-mig")))
    # No DRA driver release: what helm reads and writes is helm's (its release records), not part of the converge
    # the physical limit models, and no chart could be pulled here; the bed plays the driver's slices instead.
    plans = [
        ClusterPlan("bench-c%d" % c, {"name": "bench-c%d" % c, "dra_driver": {"enabled": False}, "pools": []})
        for c in range(clusters)
    ]
    for j, kind in enumerate(kinds):
        plan = plans[j % clusters]
        shape = SHAPES[kind]
        name = "p%02d-%s" % (j, kind)
        count = next(mig_counts) if kind == "a100-mig" else next(other_counts)
        pool = {"name": name, "gpu": dict(shape["gpu"])}
        extra = copy.deepcopy(shape["extra"])
        for cls in extra.get("device_classes", {}).get("extra", []):
            cls["name"] = cls["name"].format(pool=name)
        pool.update(extra)
        if magnum:
            pool["nodegroup"] = {"flavor": shape["flavor"], "node_count": count, "max_node_count": count * 2}
            labels = {NODEGROUP_LABEL: name}
        else:
            pool["node_selector"] = {SELECTOR_LABEL: name}
            labels = {SELECTOR_LABEL: name}
        plan.cluster["pools"].append(pool)
        plan.nodes += [
            NodeSpec("%s-%s-%04d" % (plan.name, name, i), shape["flavor"], name, dict(labels)) for i in range(count)
        ]
    for plan in plans:
        biggest = max(
            [len(plan.pool_nodes(p["name"])) for p in plan.cluster["pools"] if p.get("mig", {}).get("mode") == "static"]
            or [1]
        )
        plan.cluster["mig_manager"] = {"max_unavailable": max(1, math.ceil(biggest / waves_per_mig_pool))}
        if magnum:
            plan.cluster["magnum"] = {"cloud": None, "cluster": plan.name, "labels": {"nvidia_gpu_enabled": "true"}}
    return plans


def changed_pool(plans: list[ClusterPlan]) -> tuple[str, str]:
    """(cluster, pool) the one-pool change touches: the first pool without MIG of the first cluster."""
    plan = plans[0]
    for pool in plan.cluster["pools"]:
        if pool.get("mig", {}).get("mode") != "static":
            return plan.name, pool["name"]
    raise ValueError("no pool without MIG in %s" % plan.name)


def with_one_pool_changed(cluster: dict, pool_name: str) -> dict:
    """The cluster data with one more node label on one pool: every node of that pool needs one write."""
    out = copy.deepcopy(cluster)
    for pool in out["pools"]:
        if pool["name"] == pool_name:
            pool.setdefault("node_labels", {})[CHANGE_LABEL] = "2"
    return out
