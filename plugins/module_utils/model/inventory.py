# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU-pool inventory model: the pydantic classes every role and module reads.

Inventory data (``gpupool_cluster`` in host_vars) is validated into a `Cluster` by model/load.py; the
shape (unknown keys, types, ranges) is checked by the classes, what spans fields in model/checks.py. Here: the
`Cluster`, its `Pool`s and the cluster-wide settings; a pool's parts are in pool_settings.py, the drain settings in
drain_settings.py, the tenants' in tenant_settings.py, and the base class with the pydantic import guard in strict.py.
"""

from __future__ import annotations

from typing import Dict, List, Literal, Optional, Union

from ansible_collections.gpupool.core.plugins.module_utils.mig.catalog import find_gpu
from ansible_collections.gpupool.core.plugins.module_utils.model.drain_settings import DrainPolicy, PoolDrain
from ansible_collections.gpupool.core.plugins.module_utils.model.names import GPU_TAINT, mig_config_name
from ansible_collections.gpupool.core.plugins.module_utils.model.pool_settings import (
    DeviceClasses,
    Gpu,
    Mig,
    Nodegroup,
    NvLink,
    Sharing,
    Taint,
)
from ansible_collections.gpupool.core.plugins.module_utils.model.strict import (
    Field,
    PrivateAttr,
    Strict,
    checked_labels,
    field_validator,
    model_validator,
)
from ansible_collections.gpupool.core.plugins.module_utils.model.tenant_settings import Tenant

DRA_CHART = "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu"


class Pool(Strict):
    """One GPU pool: a set of identical GPU nodes and how their GPUs are offered."""

    name: str = Field(..., description="DNS label; names the nodegroup, labels and classes.")
    state: Literal["present", "absent"] = "present"
    nodegroup: Optional[Nodegroup] = None
    node_selector: Dict[str, str] = Field(
        default_factory=dict, description="Find nodes by labels instead of the Magnum nodegroup label."
    )
    gpu: Gpu
    node_labels: Dict[str, str] = Field(default_factory=dict)
    gpu_taint: bool = Field(True, description="Taint nodes node-role.kubernetes.io/gpu=true:NoSchedule.")
    taints: List[Taint] = Field(default_factory=list, description="Extra taints.")
    mig: Mig = Field(default_factory=Mig)
    sharing: Sharing = Field(default_factory=Sharing)
    passthrough: bool = Field(False, description="Publish VFIO devices (DRA PassthroughSupport).")
    device_classes: DeviceClasses = Field(default_factory=DeviceClasses)
    nvlink: NvLink = Field(default_factory=NvLink)
    drain: Optional[PoolDrain] = Field(
        None, description="Changes to the cluster's drain policy for this pool's nodes (only the keys given)."
    )

    # Where the pool is in gpupool_cluster.pools, for messages; set when the cluster is validated.
    _index: Optional[int] = PrivateAttr(None)

    _v_labels = field_validator("node_labels", "node_selector")(classmethod(lambda cls, v: checked_labels(v)))

    @property
    def all_taints(self):
        extra = [t.model_dump() for t in self.taints]
        return ([dict(GPU_TAINT)] if self.gpu_taint else []) + [t for t in extra if t["key"] != GPU_TAINT["key"]]

    @property
    def catalog_gpu(self):
        return find_gpu(self.gpu.model)

    @property
    def product_names(self):
        """productName values the pool's devices publish: the inventory's override, else the catalog's."""
        if self.gpu.product_names:
            return list(self.gpu.product_names)
        gpu = self.catalog_gpu
        return list(gpu.product_names) if gpu else [self.gpu.model]

    @property
    def mig_config_name(self):
        return mig_config_name(self)

    def layout_for(self, index, group: Optional[str] = None):
        """MIG layout of GPU `index` on the pool's nodes (group None) or on the nodes of group `group`, or None when
        MIG is not statically set there."""
        if self.mig.mode != "static":
            return None
        holder = self.mig
        if group is not None:
            holder = next(g for k, g in enumerate(self.mig.groups) if self.mig.group_name(k) == group)
        if holder.layouts is not None:
            return holder.layouts.get(index)
        return holder.layout

    def group_names(self) -> List[str]:
        """The pool's MIG groups by name, in inventory order."""
        return [self.mig.group_name(k) for k in range(len(self.mig.groups))]


class DraDriver(Strict):
    """NVIDIA DRA driver chart settings; feature gates follow from the pools."""

    enabled: bool = True
    chart: str = Field(
        DRA_CHART,
        description="Chart reference: the OCI reference, the chart name in `repository`, "
        "or a local chart directory or archive.",
    )
    repository: Optional[str] = Field(
        None,
        description="HTTP(S) Helm repository URL (a mirror for air-gapped sites); "
        "`chart` is then the chart's name in it.",
    )
    version: str = Field("0.5.1", description="Chart version (no leading v).")
    release_name: str = "dra-driver-nvidia-gpu"
    namespace: str = Field("dra-driver-nvidia-gpu", description="Never `default` (the chart refuses it).")
    nvidia_driver_root: str = Field("/", description="`/run/nvidia/driver` with GPU Operator drivers.")
    feature_gates: Dict[str, bool] = Field(default_factory=dict, description="Explicit overrides of derived gates.")
    values: Dict[str, object] = Field(
        default_factory=dict,
        description="Extra chart values, merged last; keys gpupool derives are merged or refused "
        "(docs/modules/dra-driver.md).",
    )


class Magnum(Strict):
    """OpenStack Magnum cluster of the nodegroups."""

    cloud: Union[str, Dict[str, object]] = Field(..., description="clouds.yaml cloud name or a cloud dict.")
    cluster: str = Field(..., description="Magnum cluster name or UUID.")
    labels: Dict[str, Union[str, int, bool, float]] = Field(default_factory=dict)
    prune_nodegroups: bool = Field(
        False,
        description="Delete (after a drain) the nodegroups of pools removed from "
        "the inventory. Off: they stay, their nodes cordoned and reported as orphaned.",
    )


class MigManager(Strict):
    """MIG manager ConfigMap that receives the pools' mig-parted configs."""

    config_map: str = Field("gpupool-mig-parted-config", description="ConfigMap name (only our entries are managed).")
    namespace: str = "gpu-operator"
    max_unavailable: int = Field(1, ge=1, description="Nodes reconfigured at once in a rolling MIG change.")


class OrphanGuard(Strict):
    """How many of a pool's nodes one run may orphan (cordon and taint because the pool no longer selects them).

    A node_selector typo matches no node, and every node of the pool would be cordoned; node_pool refuses such a run
    before any write unless it is confirmed. Pools set to `state: absent` or removed from the inventory are explicit
    decisions and are not guarded."""

    max_share: float = Field(
        0.5,
        ge=0,
        le=1,
        description="Largest share of a present pool's nodes one run may orphan without confirmation; a run that "
        "would orphan more, or all of them, is refused. Default 0.5: losing a node or two to a relabel is routine, "
        "losing most of a pool at once is nearly always a selector or nodegroup mistake.",
    )
    confirm_pools: List[str] = Field(
        default_factory=list,
        description="Pools whose orphaning this inventory confirms (their selector change is intended); remove "
        "them after the run. A run confirms every pool with `-e gpupool_confirm_orphans=true`.",
    )


class Cluster(Strict):
    """A Kubernetes cluster and its GPU pools."""

    name: str = Field(
        ..., description="Cluster name, a DNS label (it names the run's report directory, the host and object names)."
    )
    owner: Optional[str] = Field(
        None,
        description="Owner identity of the objects gpupool makes on the Kubernetes cluster (label gpupool.io/owner); "
        "prune deletes only this owner's objects. Default: `name`. Set it when two inventories share one cluster "
        "name, or keep it when a cluster is renamed in the inventory.",
    )
    kubeconfig: Optional[str] = Field(None, description="kubeconfig path; default: the usual client lookup.")
    context: Optional[str] = Field(None, description="kubeconfig context.")
    magnum: Optional[Magnum] = Field(None, description="OpenStack Magnum cluster that hosts the nodegroups.")
    dra_driver: DraDriver = Field(default_factory=DraDriver, description="NVIDIA DRA driver Helm release.")
    mig_manager: MigManager = Field(default_factory=MigManager, description="Where static MIG configs go.")
    drain: DrainPolicy = Field(
        default_factory=DrainPolicy,
        description="How nodes are drained before they go away "
        "or their GPUs change; a pool's `drain` changes it for its nodes.",
    )
    orphan_guard: OrphanGuard = Field(
        default_factory=OrphanGuard,
        description="Refuse a run that would orphan (cordon) more than a share of a pool's nodes unless confirmed.",
    )
    pools: List[Pool] = Field(default_factory=list, description="The GPU pools.")
    tenants: Optional[List[Tenant]] = Field(
        None,
        description="Tenant namespaces and their ResourceClaimTemplates over the pools' DeviceClasses. Not set: "
        "gpupool leaves ResourceClaimTemplates alone; set (even []): it is the whole list, and "
        "gpupool's templates that it does not name are deleted.",
    )
    allow_empty: bool = Field(
        False,
        description="Accept a cluster without any present pool. Without it, `pools: []` "
        "(or every pool absent) is refused: the modules would prune every "
        "gpupool object of the cluster.",
    )

    @model_validator(mode="after")
    def _number_pools(self):
        for index, pool in enumerate(self.pools):
            pool._index = index
        return self

    @property
    def owner_id(self) -> str:
        """The value of gpupool.io/owner on this inventory's objects."""
        return self.owner or self.name

    def pool(self, name):
        for p in self.pools:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def present_pools(self):
        return [p for p in self.pools if p.state == "present"]
