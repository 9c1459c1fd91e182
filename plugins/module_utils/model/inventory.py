# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU-pool inventory model: the pydantic classes every role and module reads.

Inventory data (``gpupool_cluster`` in host_vars) is validated into a `Cluster` by model/load.py; the
shape (unknown keys, types, ranges) is checked here, what spans fields in model/checks.py.
"""
from __future__ import annotations

from typing import Dict, List, Literal, Optional, Union
import re

from ansible_collections.gpupool.core.plugins.module_utils.mig.catalog import find_gpu
from ansible_collections.gpupool.core.plugins.module_utils.model.names import GPU_TAINT
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import LABEL_KEY
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import LABEL_VALUE
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import QUANTITY


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


DRA_CHART = "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu"


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
