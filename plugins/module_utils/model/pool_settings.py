# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The parts of a pool: its nodegroup, GPU, MIG, sharing, DeviceClasses and NVLink settings, and its taints."""

from __future__ import annotations

import re
from typing import Dict, List, Literal, Optional, Pattern, Union

from ansible_collections.gpupool.core.plugins.module_utils.model.describe import cut
from ansible_collections.gpupool.core.plugins.module_utils.model.strict import (
    Field,
    Strict,
    field_validator,
    within_int32,
    within_node_bound,
)
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import (
    COMPUTE_CAPABILITY,
    LABEL_VALUE_RULE,
    QUANTITY,
    is_label_key,
    is_label_value,
    label_key_rule,
)


def matching(pattern: Pattern[str], what: str) -> classmethod:
    """A field validator: a value given must match `pattern` as a whole; `what` says what it should be."""

    def check(cls, v):
        if v is not None and not pattern.fullmatch(v):
            raise ValueError("%r is not %s" % (v, what))
        return v

    return classmethod(check)


class Taint(Strict):
    key: str
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = "NoSchedule"

    # The API server checks a taint key as a qualified name and its value as a label value (validateTaints).
    @field_validator("key")
    @classmethod
    def _key(cls, v):
        if not is_label_key(v):
            raise ValueError("%s is not a valid taint key: use %s" % (cut(v), label_key_rule(v)))
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
    adopt: bool = Field(
        False,
        description="Manage this pool's existing nodegroup although it carries no owner label (Magnum label "
        "`gpupool.io/owner`): one made before gpupool recorded owners in Magnum, or by hand. Magnum cannot add a label "
        "to an existing nodegroup, so keep it while that nodegroup lives. Never takes another owner's nodegroup; "
        "see docs/concurrency.md.",
    )

    _v_int32 = field_validator("docker_volume_size")(classmethod(lambda cls, v: within_int32(v)))
    _v_nodes = field_validator("node_count", "min_node_count", "max_node_count")(
        classmethod(lambda cls, v: within_node_bound(v))
    )


# A line of `nvidia-smi -L`: "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-5f6e...)"; its MIG lines start with "MIG".
SMI_LIST_LINE = re.compile(r"\A\s*(?:GPU \d+|MIG [^:]*Device \d+):\s*(?P<name>[^(]*?)\s*(?:\(UUID: [^)]*\))?\s*\Z")


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
        description="The productName values the DRA driver publishes for these GPUs (the name alone, as "
        "`nvidia-smi --query-gpu=name --format=csv,noheader` prints it, e.g. 'NVIDIA A100-SXM4-40GB'); replaces the "
        "catalog's list in DeviceClass selectors, for boards whose name the catalog does not know.",
    )

    @field_validator("product_names")
    @classmethod
    def _names(cls, v):
        if v is not None and any(not isinstance(n, str) or not n.strip() for n in v):
            raise ValueError("product names must be non-empty strings such as 'NVIDIA H100 80GB HBM3'")
        for index, name in enumerate(v or []):
            pasted = SMI_LIST_LINE.match(name)
            if pasted:
                raise ValueError(
                    "entry %d, %s, is a line of `nvidia-smi -L`, not a product name: write %r (the DRA driver publishes "
                    "the name alone as productName)" % (index, cut(name), pasted.group("name").strip())
                )
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

    _v_quantity = field_validator("pinned_memory_limit")(matching(QUANTITY, "a Kubernetes quantity such as 10Gi"))


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

    _v_cc = field_validator("min_compute_capability")(
        matching(COMPUTE_CAPABILITY, "a compute capability such as 8.0 or 9.0")
    )
    _v_quantity = field_validator("min_memory")(matching(QUANTITY, "a Kubernetes quantity such as 40Gi"))


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
