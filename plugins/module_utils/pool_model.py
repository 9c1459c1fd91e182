# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU-pool model: the one structure every role and module reads.

Inventory data (``gpupool_cluster`` in host_vars) -> `load_cluster()` ->
validated `Cluster` with defaults filled in, or `InventoryError` listing every
problem with the path of the bad key and a sentence a person can act on.

Two passes: pydantic checks shape (unknown keys, types, ranges), then
`semantic_problems()` checks what spans fields (node counts, MIG layouts
against the catalog, DRA feature-gate conflicts across pools). Nothing here
does I/O: validation always happens before anything is touched.
"""
from __future__ import annotations

import difflib
import re
from typing import Dict, List, Literal, Optional, Union

try:
    from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
    PYDANTIC_IMPORT_ERROR = None
except ImportError as _exc:  # modules report it with missing_required_lib()
    PYDANTIC_IMPORT_ERROR = _exc
    BaseModel, ValidationError = object, Exception

    def ConfigDict(**kwargs):  # noqa: N802 - stand-in keeps the module importable
        return kwargs

    def Field(default=None, **kwargs):  # noqa: N802
        return default

    def field_validator(*args, **kwargs):
        return lambda func: func

from ansible_collections.gpupool.core.plugins.module_utils.mig_catalog import find_gpu, profile_by_name
from ansible_collections.gpupool.core.plugins.module_utils.mig_planner import InfeasibleLayout, plan

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# Kubernetes label key: optional DNS-subdomain prefix + name (63 chars).
LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                       r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")
QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")

GPU_TAINT = {"key": "node-role.kubernetes.io/gpu", "value": "true", "effect": "NoSchedule"}
DRA_CHART = "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu"
MANAGED_BY = {"app.kubernetes.io/managed-by": "gpupool"}
POOL_LABEL = "gpupool.io/pool"


class InventoryError(ValueError):
    """Every problem found, each as (path, message)."""

    def __init__(self, problems):
        self.problems = list(problems)
        super().__init__(self.render())

    def render(self):
        lines = ["%d problem(s) in the GPU-pool inventory; nothing was changed:" % len(self.problems)]
        lines += ["  - %s: %s" % (p, m) for p, m in self.problems]
        return "\n".join(lines)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, validate_default=True)


def _labels(value):
    for key, val in (value or {}).items():
        if not LABEL_KEY.match(str(key)):
            raise ValueError("%r is not a valid Kubernetes label key" % key)
        if not LABEL_VALUE.match(str(val)):
            raise ValueError("label %s=%r: values are at most 63 characters of [A-Za-z0-9-_.], "
                             "starting and ending alphanumeric" % (key, val))
    return {str(k): str(v) for k, v in (value or {}).items()}


class Taint(Strict):
    key: str
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = "NoSchedule"

    @field_validator("key")
    @classmethod
    def _key(cls, v):
        if not LABEL_KEY.match(v):
            raise ValueError("%r is not a valid taint key" % v)
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
        default_factory=dict, description="Magnum labels, merged over the cluster's labels.")
    merge_labels: bool = Field(True, description="Without it Magnum drops every cluster label.")


class Gpu(Strict):
    """The pool's GPU."""
    model: str = Field(..., description="Catalog key (A100-40GB, H100-80GB, T4...) or a product name.")
    per_node: int = Field(1, ge=1, le=16, description="GPUs in each node.")


class Mig(Strict):
    """MIG: off, a static layout (planned and checked here), or dynamic (DRA DynamicMIG)."""
    mode: Literal["off", "static", "dynamic"] = Field("off", description="`dynamic` enables the DynamicMIG gate.")
    layout: Optional[Dict[str, int]] = Field(None, description="Same layout on every GPU: {profile: count}.")
    layouts: Optional[Dict[int, Dict[str, int]]] = Field(None, description="Per GPU index: {index: {profile: count}}.")
    config_name: Optional[str] = Field(None, description="mig-parted config name; default gpupool-<pool>.")


class TimeSlicing(Strict):
    interval: Literal["Default", "Short", "Medium", "Long"] = "Default"


class Mps(Strict):
    active_thread_percentage: Optional[int] = Field(None, ge=0, le=100)
    pinned_memory_limit: Optional[str] = None

    @field_validator("pinned_memory_limit")
    @classmethod
    def _quantity(cls, v):
        if v is not None and not QUANTITY.match(v):
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
        if v is not None and not re.match(r"^[0-9]+\.[0-9]+$", v):
            raise ValueError("%r is not a compute capability such as 8.0 or 9.0" % v)
        return v

    @field_validator("min_memory")
    @classmethod
    def _quantity(cls, v):
        if v is not None and not QUANTITY.match(v):
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
        "none", description="`host_imex` enables HostManagedIMEXDaemon (driver >= 0.5.0).")
    compute_domain: ComputeDomain = Field(default_factory=ComputeDomain)
    imex_nodes: List[str] = Field(default_factory=list, description="host_imex: member node addresses.")


class Pool(Strict):
    """One GPU pool: a set of identical GPU nodes and how their GPUs are offered."""
    name: str = Field(..., description="DNS label; names the nodegroup, labels and classes.")
    state: Literal["present", "absent"] = "present"
    nodegroup: Optional[Nodegroup] = None
    node_selector: Dict[str, str] = Field(default_factory=dict,
                                          description="Find nodes by labels instead of the Magnum nodegroup label.")
    gpu: Gpu
    node_labels: Dict[str, str] = Field(default_factory=dict)
    gpu_taint: bool = Field(True, description="Taint nodes node-role.kubernetes.io/gpu=true:NoSchedule.")
    taints: List[Taint] = Field(default_factory=list, description="Extra taints.")
    mig: Mig = Field(default_factory=Mig)
    sharing: Sharing = Field(default_factory=Sharing)
    passthrough: bool = Field(False, description="Publish VFIO devices (DRA PassthroughSupport).")
    device_classes: DeviceClasses = Field(default_factory=DeviceClasses)
    nvlink: NvLink = Field(default_factory=NvLink)

    _v_labels = field_validator("node_labels", "node_selector")(classmethod(lambda cls, v: _labels(v)))

    @property
    def all_taints(self):
        extra = [t.model_dump() for t in self.taints]
        return ([dict(GPU_TAINT)] if self.gpu_taint else []) + [t for t in extra if t["key"] != GPU_TAINT["key"]]

    @property
    def catalog_gpu(self):
        return find_gpu(self.gpu.model)

    @property
    def mig_config_name(self):
        return self.mig.config_name or "gpupool-%s" % self.name

    def layout_for(self, index):
        """MIG layout of GPU `index`, or None when MIG is not statically set there."""
        if self.mig.mode != "static":
            return None
        if self.mig.layouts is not None:
            return self.mig.layouts.get(index)
        return self.mig.layout


class DraDriver(Strict):
    """NVIDIA DRA driver chart settings; feature gates follow from the pools."""
    enabled: bool = True
    chart: str = Field(DRA_CHART, description="Chart reference (OCI or repo/name).")
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


class MigManager(Strict):
    """MIG manager ConfigMap that receives the pools' mig-parted configs."""
    config_map: str = Field("gpupool-mig-parted-config", description="ConfigMap name (only our entries are managed).")
    namespace: str = "gpu-operator"
    max_unavailable: int = Field(1, ge=1, description="Nodes reconfigured at once in a rolling MIG change.")


class Cluster(Strict):
    """A Kubernetes cluster and its GPU pools."""
    name: str = Field(..., description="Cluster name (reports, object names).")
    kubeconfig: Optional[str] = Field(None, description="kubeconfig path; default: the usual client lookup.")
    context: Optional[str] = Field(None, description="kubeconfig context.")
    magnum: Optional[Magnum] = Field(None, description="OpenStack Magnum cluster that hosts the nodegroups.")
    dra_driver: DraDriver = Field(default_factory=DraDriver, description="NVIDIA DRA driver Helm release.")
    mig_manager: MigManager = Field(default_factory=MigManager, description="Where static MIG configs go.")
    pools: List[Pool] = Field(default_factory=list, description="The GPU pools.")

    def pool(self, name):
        for p in self.pools:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def present_pools(self):
        return [p for p in self.pools if p.state == "present"]


# ---- errors -------------------------------------------------------------------

def _path(root, loc):
    out = root
    for part in loc:
        out += "[%d]" % part if isinstance(part, int) else ("." + str(part) if re.match(r"^\w+$", str(part)) else "[%r]" % part)
    return out


def _model_at(loc):
    """The pydantic model class that owns the key at `loc` (for typo hints)."""
    model = Cluster
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(str(part))
        if field is None:
            return None
        ann = field.annotation
        for cand in (ann, *getattr(ann, "__args__", ())):
            for sub in (cand, *getattr(cand, "__args__", ())):
                if isinstance(sub, type) and issubclass(sub, BaseModel):
                    model = sub
                    break
            else:
                continue
            break
        else:
            return None
    return model


def _pydantic_problems(err, root):
    problems = []
    for e in err.errors():
        loc = tuple(p for p in e["loc"] if p not in ("function-after[_key(), str]",))
        if e["type"] == "extra_forbidden":
            owner = _model_at(loc)
            known = list(owner.model_fields) if owner else []
            close = difflib.get_close_matches(str(loc[-1]), known, n=1)
            msg = "unknown key %r" % loc[-1]
            msg += "; did you mean %r?" % close[0] if close else ""
            msg += " Allowed here: %s." % ", ".join(known) if known else ""
            problems.append((_path(root, loc), msg))
        elif e["type"] == "missing":
            problems.append((_path(root, loc), "required key is missing"))
        elif e["type"] == "literal_error":
            problems.append((_path(root, loc), "%r is not allowed: %s" % (e.get("input"), e["msg"].replace("Input should be", "use"))))
        else:
            msg = e["msg"].replace("Value error, ", "")
            problems.append((_path(root, loc), "%s (got %r)" % (msg, e.get("input"))))
    return problems


# ---- semantic checks ------------------------------------------------------------

# Rules of the DRA driver's ValidateFeatureGates() (nvidia-dra-mig-imex.md §1.8).
GATE_CONFLICTS = [
    ("DynamicMIG", "MPSSupport"), ("DynamicMIG", "PassthroughSupport"),
    ("DynamicMIG", "NVMLDeviceHealthCheck"), ("PassthroughSupport", "NVMLDeviceHealthCheck"),
]
GATE_REQUIRES = [("ComputeDomainCliques", "IMEXDaemonsWithDNSNames"), ("DeviceMetadata", "PassthroughSupport")]


def derived_gates(cluster):
    """DRA driver feature gates that follow from the pools, each with the pool paths that need it."""
    need = {}
    for i, pool in enumerate(cluster.pools):
        if pool.state != "present":
            continue
        where = "pools[%d] (%s)" % (i, pool.name)
        if pool.sharing.time_slicing:
            need.setdefault("TimeSlicingSettings", []).append(where + ".sharing.time_slicing")
        if pool.sharing.mps:
            need.setdefault("MPSSupport", []).append(where + ".sharing.mps")
        if pool.mig.mode == "dynamic":
            need.setdefault("DynamicMIG", []).append(where + ".mig.mode")
        if pool.passthrough:
            need.setdefault("PassthroughSupport", []).append(where + ".passthrough")
        if pool.nvlink.mode == "host_imex":
            need.setdefault("HostManagedIMEXDaemon", []).append(where + ".nvlink.mode")
    return need


def effective_gates(cluster):
    gates = {g: True for g in derived_gates(cluster)}
    gates.update(cluster.dra_driver.feature_gates)
    return gates


def semantic_problems(cluster, root="gpupool_cluster"):
    problems = []
    seen = {}
    for i, pool in enumerate(cluster.pools):
        at = "%s.pools[%d]" % (root, i)
        if not DNS_LABEL.match(pool.name) or len(pool.name) > 63:
            problems.append((at + ".name", "%r is not a DNS label: use at most 63 lowercase letters, digits "
                             "and '-', starting and ending with a letter or digit" % pool.name))
        if pool.name in seen:
            problems.append((at + ".name", "duplicate pool name %r (also pools[%d]); pool names must be unique"
                             % (pool.name, seen[pool.name])))
        seen.setdefault(pool.name, i)
        problems += _nodegroup_problems(cluster, pool, at)
        problems += _gpu_problems(pool, at)
    problems += _gate_problems(cluster, root)
    return problems


def _nodegroup_problems(cluster, pool, at):
    ng = pool.nodegroup
    out = []
    if ng is None:
        if cluster.magnum is not None and not pool.node_selector and pool.state == "present":
            out.append((at + ".nodegroup", "the cluster uses Magnum but this pool has neither a nodegroup "
                        "nor a node_selector; add one so its nodes can be found"))
        return out
    if cluster.magnum is None:
        out.append((at + ".nodegroup", "a nodegroup needs gpupool_cluster.magnum (cloud and cluster) to be set"))
    if ng.min_node_count > ng.node_count:
        out.append((at + ".nodegroup.min_node_count", "min_node_count %d is greater than node_count %d; "
                    "lower min_node_count or raise node_count" % (ng.min_node_count, ng.node_count)))
    if ng.max_node_count is not None and ng.node_count > ng.max_node_count:
        out.append((at + ".nodegroup.node_count", "node_count %d is greater than max_node_count %d; "
                    "raise max_node_count or lower node_count" % (ng.node_count, ng.max_node_count)))
    if ng.max_node_count is not None and ng.min_node_count > ng.max_node_count:
        out.append((at + ".nodegroup.min_node_count", "min_node_count %d is greater than max_node_count %d"
                    % (ng.min_node_count, ng.max_node_count)))
    return out


def _gpu_problems(pool, at):
    out = []
    gpu = pool.catalog_gpu
    mig = pool.mig
    if mig.mode != "off":
        if gpu is None:
            out.append((at + ".gpu.model", "MIG needs a GPU model from the catalog, %r is unknown; "
                        "use one of the catalog keys (see docs/mig-catalog.md)" % pool.gpu.model))
            return out
        if not gpu.mig:
            out.append((at + ".mig.mode", "%s has no MIG; set mig.mode: off (or share it with "
                        "sharing.time_slicing / sharing.mps)" % gpu.key))
            return out
    if mig.mode == "static":
        if (mig.layout is None) == (mig.layouts is None):
            out.append((at + ".mig", "static MIG needs exactly one of 'layout' (all GPUs) or 'layouts' (per GPU index)"))
        items = [("layout", mig.layout)] if mig.layout is not None else []
        items += [("layouts[%d]" % k, v) for k, v in sorted((mig.layouts or {}).items())]
        for key, layout in items:
            if key.startswith("layouts["):
                idx = int(key[8:-1])
                if idx >= pool.gpu.per_node:
                    out.append((at + ".mig." + key, "GPU index %d does not exist: the pool's nodes have %d GPU(s) "
                                "(indices 0..%d)" % (idx, pool.gpu.per_node, pool.gpu.per_node - 1)))
                    continue
            for name in layout:
                if profile_by_name(gpu, name) is None:
                    try:
                        plan(gpu, {name: 1})
                    except InfeasibleLayout as exc:
                        out.append((at + ".mig.%s[%r]" % (key, name), exc.reason))
                    break
            else:
                try:
                    plan(gpu, layout)
                except InfeasibleLayout as exc:
                    hint = ""
                    if exc.suggestions:
                        hint = "; nearest valid layout(s): " + " | ".join(
                            ", ".join("%s: %d" % kv for kv in sorted(s.items())) for s in exc.suggestions)
                    out.append((at + ".mig." + key, exc.reason + hint))
    elif mig.layout is not None or mig.layouts is not None:
        out.append((at + ".mig.mode", "a MIG layout is given but mig.mode is %r; set mig.mode: static "
                    "(dynamic MIG takes no layout: the DRA driver creates slices on demand)" % mig.mode))
    if pool.sharing.time_slicing and pool.sharing.mps:
        out.append((at + ".sharing", "time_slicing and mps cannot be used together on one pool; keep one"))
    if pool.sharing.mps and mig.mode == "dynamic":
        out.append((at + ".sharing.mps", "MPS cannot be combined with dynamic MIG (DRA driver gates MPSSupport "
                    "and DynamicMIG conflict); use static MIG or drop mps"))
    if pool.passthrough and mig.mode == "dynamic":
        out.append((at + ".passthrough", "passthrough (PassthroughSupport) cannot be combined with dynamic MIG"))
    if pool.nvlink.mode != "none" and (gpu is None or not gpu.multinode_nvlink):
        out.append((at + ".nvlink.mode", "%s has no multi-node NVLink, so ComputeDomains/IMEX do not apply; "
                    "set nvlink.mode: none (multi-node NVLink GPUs: GB200)" % (gpu.key if gpu else pool.gpu.model)))
    if pool.nvlink.mode == "host_imex" and not pool.nvlink.imex_nodes:
        out.append((at + ".nvlink.imex_nodes", "host_imex needs the member node addresses in imex_nodes"))
    for j, extra in enumerate(pool.device_classes.extra):
        if extra.mig_profile and (gpu is None or profile_by_name(gpu, extra.mig_profile) is None):
            out.append((at + ".device_classes.extra[%d].mig_profile" % j, "%s has no MIG profile %r"
                        % (gpu.key if gpu else pool.gpu.model, extra.mig_profile)))
    return out


def _gate_source(need, at, gate):
    return ", ".join(need.get(gate, [])) or "%s.%s" % (at, gate)


def _gate_problems(cluster, root):
    out = []
    need = derived_gates(cluster)
    gates = effective_gates(cluster)
    at = root + ".dra_driver.feature_gates"
    for gate, value in cluster.dra_driver.feature_gates.items():
        if value is False and gate in need:
            out.append(("%s.%s" % (at, gate), "set to false but %s need(s) it" % ", ".join(need[gate])))
    for a, b in GATE_CONFLICTS:
        if gates.get(a) and gates.get(b):
            out.append((at, "DRA feature gates %s (from %s) and %s (from %s) cannot be enabled together in "
                        "one cluster: the driver refuses to start"
                        % (a, _gate_source(need, at, a), b, _gate_source(need, at, b))))
    for a, b in GATE_REQUIRES:
        if gates.get(a) and gates.get(b) is False:
            out.append((at, "DRA feature gate %s requires %s" % (a, b)))
    return out


def load_cluster(data, root="gpupool_cluster"):
    """Validate inventory data; return the normalized Cluster or raise InventoryError."""
    if not isinstance(data, dict):
        raise InventoryError([(root, "must be a mapping with name and pools, got %s" % type(data).__name__)])
    try:
        cluster = Cluster.model_validate(data)
    except ValidationError as err:
        raise InventoryError(_pydantic_problems(err, root))
    problems = semantic_problems(cluster, root)
    if problems:
        raise InventoryError(problems)
    return cluster


def dump_cluster(cluster):
    """Normalized plain data (defaults filled in) for playbooks."""
    data = cluster.model_dump(mode="json")
    for pool, raw in zip(cluster.pools, data["pools"]):
        raw["taints_effective"] = pool.all_taints
        raw["mig"]["config_name"] = pool.mig_config_name
        raw["sharing"]["strategy"] = pool.sharing.strategy
        gpu = pool.catalog_gpu
        raw["gpu"]["catalog_key"] = gpu.key if gpu else None
        raw["nodegroup_name"] = (pool.nodegroup.name or pool.name) if pool.nodegroup else None
    data["dra_driver"]["feature_gates_effective"] = effective_gates(cluster)
    return data
