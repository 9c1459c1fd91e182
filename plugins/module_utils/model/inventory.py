# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU-pool inventory model: the pydantic classes every role and module reads.

Inventory data (``gpupool_cluster`` in host_vars) is validated into a `Cluster` by model/load.py; the
shape (unknown keys, types, ranges) is checked here, what spans fields in model/checks.py.
"""

from __future__ import annotations

from typing import Dict, List, Literal, Optional, Union

from ansible_collections.gpupool.core.plugins.module_utils.mig.catalog import find_gpu
from ansible_collections.gpupool.core.plugins.module_utils.model.bounds import MAX_NODES_PER_POOL, nodes_problem
from ansible_collections.gpupool.core.plugins.module_utils.model.describe import cut
from ansible_collections.gpupool.core.plugins.module_utils.model.label_selector import parse as parse_selector
from ansible_collections.gpupool.core.plugins.module_utils.model.names import GPU_TAINT, mig_config_name
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import (
    COMPUTE_CAPABILITY,
    LABEL_KEY_RULE,
    LABEL_VALUE_RULE,
    QUANTITY,
    is_label_key,
    is_label_value,
)

try:
    # ValidationError is re-exported for model/load.py, so the one import guard stays here.
    from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator  # pylint: disable=unused-import

    PYDANTIC_IMPORT_ERROR = None
except ImportError as _exc:  # modules report it with missing_required_lib()
    PYDANTIC_IMPORT_ERROR = _exc
    BaseModel, ValidationError = object, Exception

    def ConfigDict(**kwargs):  # noqa: N802 - stand-in keeps the module importable
        return kwargs

    def Field(default=None, **kwargs):  # noqa: N802
        return default

    def PrivateAttr(default=None):  # noqa: N802
        return default

    def field_validator(*args, **kwargs):
        return lambda func: func

    def model_validator(*args, **kwargs):
        return lambda func: func


# Magnum stores node counts and volume sizes in Integer (int32) columns: a larger number fails in the database.
INT32_MAX = 2147483647


DRA_CHART = "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, validate_default=True)


def _labels(value):
    for key, val in (value or {}).items():
        if not is_label_key(str(key)):
            raise ValueError("%s is not a valid Kubernetes label key: use %s" % (cut(key), LABEL_KEY_RULE))
        if not is_label_value(str(val)):
            raise ValueError("label %s=%s: values are %s" % (key, cut(val), LABEL_VALUE_RULE))
    return {str(k): str(v) for k, v in (value or {}).items()}


def _int32(value):
    if value is not None and value > INT32_MAX:
        raise ValueError("%d is more than Magnum can store: at most %d (a 32-bit integer)" % (value, INT32_MAX))
    return value


def _nodes(value):
    if value is not None and value > MAX_NODES_PER_POOL:
        raise ValueError(nodes_problem(value))
    return value


class Taint(Strict):
    key: str
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = "NoSchedule"

    # The API server checks a taint key as a qualified name and its value as a label value (validateTaints).
    @field_validator("key")
    @classmethod
    def _key(cls, v):
        if not is_label_key(v):
            raise ValueError("%s is not a valid taint key: use %s" % (cut(v), LABEL_KEY_RULE))
        return v

    @field_validator("value")
    @classmethod
    def _value(cls, v):
        if not is_label_value(v):
            raise ValueError("%s is not a valid taint value: use %s" % (cut(v), LABEL_VALUE_RULE))
        return v


class Nodegroup(Strict):
    """Magnum nodegroup of a pool."""

    name: Optional[str] = Field(None, description="Nodegroup name; defaults to the pool name.")
    flavor: str = Field(..., min_length=1, description="Nova flavor, e.g. g4.p2.40g.")
    image: Optional[str] = Field(None, description="Glance image; defaults to the cluster template's.")
    node_count: int = Field(1, ge=0, description="Nodes wanted. 0 needs Magnum microversion >= 1.10.")
    min_node_count: int = Field(0, ge=0)
    max_node_count: Optional[int] = Field(None, ge=0)
    docker_volume_size: Optional[int] = Field(None, ge=1)
    role: str = "worker"
    labels: Dict[str, Union[str, int, bool, float]] = Field(
        default_factory=dict, description="Magnum labels, merged over the cluster's labels."
    )
    merge_labels: bool = Field(True, description="Without it Magnum drops every cluster label.")

    _v_int32 = field_validator("docker_volume_size")(classmethod(lambda cls, v: _int32(v)))
    _v_nodes = field_validator("node_count", "min_node_count", "max_node_count")(classmethod(lambda cls, v: _nodes(v)))


class Gpu(Strict):
    """The pool's GPU."""

    model: str = Field(
        ...,
        description="Catalog key (A100-40GB, H100-80GB, T4...), a MIG user guide designation "
        "(A100-SXM4-40GB) or what nvidia-smi prints (NVIDIA H100 80GB HBM3); see docs/mig-catalog.md.",
    )
    per_node: int = Field(1, ge=1, le=16, description="GPUs in each node.")
    not_in_catalog: bool = Field(
        False,
        description="The GPU is not in the catalog: `model` is then the exact "
        "product name the DRA driver publishes (no MIG, no NVLink).",
    )
    product_names: Optional[List[str]] = Field(
        None,
        min_length=1,
        description="The productName values the DRA driver publishes for these GPUs (what "
        "nvidia-smi -L prints); replaces the catalog's list in DeviceClass selectors, for boards whose name the "
        "catalog does not know.",
    )

    @field_validator("product_names")
    @classmethod
    def _names(cls, v):
        if v is not None and any(not isinstance(n, str) or not n.strip() for n in v):
            raise ValueError("product names must be non-empty strings such as 'NVIDIA H100 80GB HBM3'")
        return v


class MigGroup(Strict):
    """N of the pool's nodes that carry another static layout than the pool's (the rest carry the pool's)."""

    name: Optional[str] = Field(
        None, description="Short name, part of the group's mig-parted config name; default g<position> (g1, g2, ...)."
    )
    nodes: int = Field(..., ge=1, description="How many of the pool's nodes carry this layout.")
    layout: Optional[Dict[str, int]] = Field(None, description="Same layout on every GPU of these nodes.")
    layouts: Optional[Dict[int, Dict[str, int]]] = Field(None, description="Per GPU index of these nodes.")
    prefer: Optional[List[str]] = Field(
        None,
        description="Nodes to take first when the group needs more (the advisor names the idle ones it chose); "
        "a node in the group stays there while the group keeps room for it.",
    )


class Mig(Strict):
    """MIG: off, a static layout (planned and checked here), or dynamic (DRA DynamicMIG)."""

    mode: Literal["off", "static", "dynamic"] = Field("off", description="`dynamic` enables the DynamicMIG gate.")
    layout: Optional[Dict[str, int]] = Field(None, description="Same layout on every GPU: {profile: count}.")
    layouts: Optional[Dict[int, Dict[str, int]]] = Field(None, description="Per GPU index: {index: {profile: count}}.")
    config_name: Optional[str] = Field(None, description="mig-parted config name; default gpupool-<pool>.")
    groups: List[MigGroup] = Field(
        default_factory=list,
        description="Groups of nodes with their own static layout, e.g. [{nodes: 2, layout: {1g.10gb: 7}}].",
    )

    def group_name(self, position: int) -> str:
        """The name of group `position` (0-based): its own, else g<position+1>."""
        return self.groups[position].name or "g%d" % (position + 1)

    @field_validator("mode", mode="before")
    @classmethod
    def _yaml_off(cls, v):
        # YAML 1.1 reads an unquoted off/no/false as the boolean false: `mig: {mode: off}` means off.
        if v is False:
            return "off"
        if v is True:
            raise ValueError("true is not a MIG mode (YAML reads an unquoted on/yes as true): use static or dynamic")
        return v


class TimeSlicing(Strict):
    interval: Literal["Default", "Short", "Medium", "Long"] = "Default"


class Mps(Strict):
    active_thread_percentage: Optional[int] = Field(None, ge=0, le=100)
    pinned_memory_limit: Optional[str] = None

    @field_validator("pinned_memory_limit")
    @classmethod
    def _quantity(cls, v):
        if v is not None and not QUANTITY.fullmatch(v):
            raise ValueError("%r is not a Kubernetes quantity such as 10Gi" % v)
        return v


class Sharing(Strict):
    """GPU sharing through the DRA driver's GpuConfig/MigDeviceConfig (one of the two)."""

    time_slicing: Optional[TimeSlicing] = Field(None, description="Enables the TimeSlicingSettings gate.")
    mps: Optional[Mps] = Field(None, description="Enables the MPSSupport gate.")

    @property
    def strategy(self):
        return "TimeSlicing" if self.time_slicing else "MPS" if self.mps else "none"


class ExtraDeviceClass(Strict):
    name: str
    selectors: List[str] = Field(default_factory=list, description="Extra CEL expressions, ANDed.")
    mig_profile: Optional[str] = None
    min_memory: Optional[str] = None
    min_compute_capability: Optional[str] = Field(None, description="CUDA compute capability floor, e.g. 9.0.")
    extended_resource_name: Optional[str] = None

    @field_validator("min_compute_capability")
    @classmethod
    def _cc(cls, v):
        if v is not None and not COMPUTE_CAPABILITY.fullmatch(v):
            raise ValueError("%r is not a compute capability such as 8.0 or 9.0" % v)
        return v

    @field_validator("min_memory")
    @classmethod
    def _quantity(cls, v):
        if v is not None and not QUANTITY.fullmatch(v):
            raise ValueError("%r is not a Kubernetes quantity such as 40Gi" % v)
        return v


class DeviceClasses(Strict):
    defaults: bool = Field(True, description="Publish the pool's generated classes.")
    extended_resource_names: bool = Field(False, description="Set extendedResourceName on generated classes.")
    extra: List[ExtraDeviceClass] = Field(default_factory=list)


class ComputeDomain(Strict):
    name: Optional[str] = None
    namespace: str = "default"
    channel_template: Optional[str] = None
    allocation_mode: Literal["Single", "All"] = "Single"


class NvLink(Strict):
    """Multi-node NVLink: driver-managed ComputeDomains or host-managed IMEX."""

    mode: Literal["none", "compute_domain", "host_imex"] = Field(
        "none", description="`host_imex` enables HostManagedIMEXDaemon (driver >= 0.5.0)."
    )
    compute_domain: ComputeDomain = Field(default_factory=ComputeDomain)
    imex_nodes: List[str] = Field(
        default_factory=list, description="host_imex: the members' IP addresses (at most 18)."
    )


def _selector(value):
    if value is not None:
        parse_selector(value)  # ValueError: the message names the requirement that is wrong
    return value


class DrainPolicy(Strict):
    """How nodes are drained before a shrink removes them, their MIG layout changes or their nodegroup is deleted.

    A drain cordons the nodes, evicts the pods that use GPUs (through the Eviction API, so PodDisruptionBudgets
    apply) and waits for them to go."""

    enabled: bool = Field(
        True, description="Drain first. Off: nodes are removed or reconfigured with their GPU pods still running."
    )
    timeout: int = Field(
        600,
        ge=1,
        le=86400,
        description="Seconds for one drain (the nodes a shrink or a delete "
        "removes, or one MIG wave): evictions a PodDisruptionBudget refuses and waiting for the "
        "evicted pods to go.",
    )
    grace_period: Optional[int] = Field(
        None,
        ge=0,
        le=86400,
        description="Grace period of evicted pods, in seconds; default: each pod's own terminationGracePeriodSeconds.",
    )
    skip_pods: Optional[str] = Field(
        None,
        description="Label selector (kubectl syntax, e.g. `gpupool.io/drain=skip` "
        "or `app in (monitor)`) of GPU pods never evicted: they are named in a warning "
        "and stay until their node goes or changes under them.",
    )
    when_budget_blocks: Literal["wait", "fail"] = Field(
        "wait",
        description="A PodDisruptionBudget refuses an eviction: `wait` tries again until `timeout`, then "
        "fails; `fail` fails at once. Either way the node stays cordoned and nothing is removed or reconfigured.",
    )

    _v_selector = field_validator("skip_pods")(classmethod(lambda cls, v: _selector(v)))


class PoolDrain(Strict):
    """A pool's changes to the cluster's drain policy: only the keys given here differ from `drain` of the cluster."""

    enabled: Optional[bool] = Field(None, description="Default: the cluster's drain.enabled.")
    timeout: Optional[int] = Field(None, ge=1, le=86400, description="Default: the cluster's drain.timeout.")
    grace_period: Optional[int] = Field(
        None, ge=0, le=86400, description="Default: the cluster's drain.grace_period; null here: each pod's own."
    )
    skip_pods: Optional[str] = Field(
        None, description="Default: the cluster's drain.skip_pods; null here: no pod is skipped."
    )
    when_budget_blocks: Optional[Literal["wait", "fail"]] = Field(
        None, description="Default: the cluster's drain.when_budget_blocks."
    )

    _v_selector = field_validator("skip_pods")(classmethod(lambda cls, v: _selector(v)))


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

    _v_labels = field_validator("node_labels", "node_selector")(classmethod(lambda cls, v: _labels(v)))

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
    values: Dict[str, object] = Field(default_factory=dict, description="Extra chart values, merged last.")


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


class ClaimTemplate(Strict):
    """One ResourceClaimTemplate of a tenant: `count` devices of one of a pool's DeviceClasses."""

    name: str = Field(
        ...,
        description="Template name (a DNS subdomain), unique in its namespace; workloads name it "
        "in resourceClaims[].resourceClaimTemplateName.",
    )
    pool: str = Field(..., description="The pool whose devices the template asks for.")
    mig_profile: Optional[str] = Field(
        None,
        description="Ask for the pool's MIG class of this profile, e.g. 3g.20gb. Default: the pool's full-GPU class.",
    )
    device_class: Optional[str] = Field(
        None, description="Ask for this one of the pool's DeviceClasses (an extra class, say) instead of mig_profile."
    )
    count: int = Field(1, ge=1, description="Devices per claim (allocation_mode ExactCount).")
    allocation_mode: Literal["ExactCount", "All"] = Field(
        "ExactCount", description="ExactCount: `count` devices; All: every matching device of the node."
    )
    sharing: Optional[Sharing] = Field(
        None,
        description="Sharing of the claim's devices between its containers, in "
        "the pool's sharing form ({time_slicing: {}} or {mps: {}}).",
    )
    match_attribute: Optional[str] = Field(
        None,
        description="Every device of the claim has the same value of this "
        "attribute, e.g. resource.kubernetes.io/pcieRoot.",
    )

    @field_validator("match_attribute")
    @classmethod
    def _attribute(cls, v):
        if v is not None and not is_label_key(v):
            raise ValueError(
                "%s is not a qualified attribute name such as resource.kubernetes.io/pcieRoot (%s)"
                % (cut(v), LABEL_KEY_RULE)
            )
        return v


class Tenant(Strict):
    """A tenant namespace and the ResourceClaimTemplates gpupool keeps there."""

    namespace: str = Field(..., description="The tenant's namespace (it must exist; gpupool does not create it).")
    templates: Optional[List[ClaimTemplate]] = Field(
        None,
        description="The templates. Default: one per DeviceClass of every present pool, named like the class, "
        "one device each; [] keeps none (gpupool's templates there are deleted).",
    )


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
