# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every label, annotation, taint, driver and field-manager name, and the object names derived from pools.

One place, so a module that writes a label and the report that reads it can never disagree on its spelling.
"""

from __future__ import annotations

import re
from typing import List, NamedTuple, Optional

from ansible_collections.gpupool.core.plugins.module_utils.mig.catalog import find_gpu

GPU_TAINT = {"key": "node-role.kubernetes.io/gpu", "value": "true", "effect": "NoSchedule"}


MANAGED_BY = {"app.kubernetes.io/managed-by": "gpupool"}


POOL_LABEL = "gpupool.io/pool"

# Which gpupool_cluster (its `owner`, by default its `name`) made an object: prune deletes only this owner's objects,
# so two inventories pointed at one cluster never delete each other's (docs/security.md, "Owners").
OWNER_LABEL = "gpupool.io/owner"


DRIVER = "gpu.nvidia.com"
# The DRA driver's kubelet plugin DaemonSet is <helm release>-kubelet-plugin (its chart's naming).
KUBELET_PLUGIN_SUFFIX = "-kubelet-plugin"
# Standard device attributes (KEP-4381) the driver publishes: a GPU's PCI bus ID and its PCIe root.
PCI_BUS_ID = "resource.kubernetes.io/pciBusID"
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"


CD_DRIVER = "compute-domain.nvidia.com"


NVIDIA_CONFIG_API = "resource.nvidia.com/v1beta1"


EXTENDED_RESOURCE_DOMAIN = "gpupool.io"


NODEGROUP_LABEL = "magnum.openstack.org/nodegroup"


GPU_PRESENT_LABEL = "nvidia.com/gpu.present"


# The DRA kubelet plugin's required node affinity matches ANY of these (reference §1.3).
DRA_PLUGIN_NODE_LABELS = (
    ("feature.node.kubernetes.io/pci-10de.present", "true"),
    ("feature.node.kubernetes.io/pci-0302_10de.present", "true"),
    ("feature.node.kubernetes.io/pci-0300_10de.present", "true"),
    ("feature.node.kubernetes.io/cpu-model.vendor_id", "NVIDIA"),
    (GPU_PRESENT_LABEL, "true"),
)


# Node taints are an atomic list (server-side apply cannot share it): the taints
# gpupool set are recorded here, so a later run removes only its own.
TAINTS_ANNOTATION = "gpupool.io/taints"
# The node labels node_pool set, recorded the same way, so labels and taints go in one merge patch
# (server-side apply would need a second request for the taints) and a later run removes only its own.
LABELS_ANNOTATION = "gpupool.io/labels"


def labels_annotation(field_manager=None):
    """Where a field manager's node label keys are recorded (another module labelling nodes with its own field
    manager keeps its own record, so neither removes the other's labels)."""
    if field_manager in (None, FIELD_MANAGER):
        return LABELS_ANNOTATION
    return "%s.%s" % (LABELS_ANNOTATION, dns_safe(field_manager)[:40])


def dns_safe(text):
    """A MIG profile name as part of an object name: 1g.5gb+me -> 1g.5gb-me."""
    return re.sub(r"[^a-z0-9.-]", "-", text.lower()).strip("-.")


def full_gpu_class_name(pool):
    return pool.name


def mig_class_name(pool, profile):
    return "%s-%s" % (pool.name, dns_safe(profile))


def vfio_class_name(pool):
    return "%s-vfio" % pool.name


def extended_resource_name(class_name):
    return "%s/%s" % (EXTENDED_RESOURCE_DOMAIN, class_name)


def compute_domain_name(pool):
    return pool.nvlink.compute_domain.name or pool.name


def channel_template_name(pool):
    return pool.nvlink.compute_domain.channel_template or "%s-channel" % compute_domain_name(pool)


def nodegroup_name(pool):
    return (pool.nodegroup.name or pool.name) if pool.nodegroup else None


def mig_config_name(pool, group: Optional[str] = None) -> str:
    """The mig-parted config a static-MIG pool's nodes are labelled with (nvidia.com/mig.config); a group's nodes
    get <pool's config>-<group name>."""
    base = pool.mig.config_name or "gpupool-%s" % pool.name
    return base if group is None else "%s-%s" % (base, group)


def pool_mig_profiles(pool) -> List[str]:
    """MIG profiles that get a DeviceClass: static: those the layout(s) of the pool and its groups ask for, dynamic: all
    of the GPU's."""
    gpu = find_gpu(pool.gpu.model)
    if pool.mig.mode == "dynamic" and gpu is not None and gpu.mig:
        return [p.name for p in gpu.mig.profiles]
    if pool.mig.mode != "static":
        return []
    seen: List[str] = []
    layouts = []
    # the pool's own layout(s), then its MIG groups': a DeviceClass for every profile some node carries
    for holder in [pool.mig] + list(pool.mig.groups):
        layouts += [holder.layout] if holder.layout is not None else list((holder.layouts or {}).values())
    for layout in layouts:
        for name, count in (layout or {}).items():
            if count and name not in seen:
                seen.append(name)
    return seen


def pool_has_full_gpus(pool) -> bool:
    """Whether some GPU of the pool is left whole (no static MIG layout on it)."""
    if pool.mig.mode != "static":
        return True
    groups: List[Optional[str]] = [None]
    for group in groups + pool.group_names():  # a MIG group's nodes may keep a GPU whole too
        holder = pool.mig if group is None else pool.mig.groups[pool.group_names().index(group)]
        if holder.layout is not None:
            if not any(holder.layout.values()):
                return True
        elif any(not pool.layout_for(i, group) for i in range(pool.gpu.per_node)):
            return True
    return False


class ClassName(NamedTuple):
    """One DeviceClass a pool publishes: its name, what it offers and where in the pool it comes from."""

    name: str
    role: str  # gpu | mig | vfio | extra
    profile: Optional[str]
    where: str  # key path below the pool, e.g. ".mig" or ".device_classes.extra[0]"
    extended_resource_name: Optional[str]


def device_class_names(pool) -> List[ClassName]:
    """Every DeviceClass a present pool publishes, generated ones first, then its extra classes."""
    if pool.state != "present":
        return []
    ext = pool.device_classes.extended_resource_names
    out = []
    if pool.device_classes.defaults:
        if pool_has_full_gpus(pool):
            name = full_gpu_class_name(pool)
            out.append(ClassName(name, "gpu", None, "", extended_resource_name(name) if ext else None))
        for profile in pool_mig_profiles(pool):
            name = mig_class_name(pool, profile)
            out.append(ClassName(name, "mig", profile, ".mig", extended_resource_name(name) if ext else None))
        if pool.passthrough:
            name = vfio_class_name(pool)
            out.append(ClassName(name, "vfio", None, ".passthrough", extended_resource_name(name) if ext else None))
    for index, extra in enumerate(pool.device_classes.extra):
        out.append(
            ClassName(
                extra.name,
                "extra",
                extra.mig_profile,
                ".device_classes.extra[%d]" % index,
                extra.extended_resource_name,
            )
        )
    return out


FIELD_MANAGER = "gpupool"


CONFIG_LABEL = "nvidia.com/mig.config"


STATE_LABEL = "nvidia.com/mig.config.state"


DIGEST_ANNOTATION = "gpupool.io/mig-config-digest"


CORDON_ANNOTATION = "gpupool.io/cordoned-by"


CORDON_VALUE = "mig-layout"


# The cordon ledger (docs/operations.md, "Cordons"): besides gpupool.io/cordoned-by (which step), every cordon
# gpupool makes says why (a short reason a later run re-checks) and which run made it (the run lease's holder).
CORDON_REASON_ANNOTATION = "gpupool.io/cordon-reason"
CORDON_RUN_ANNOTATION = "gpupool.io/cordon-run"
# A per-GPU MIG change stops new allocations on the changing GPUs' devices with DeviceTaintRules (KEP-5055) that
# carry this taint key (plan/mig/per_gpu.py); the node they are for is in the rule's label (hashed when too long).
MIG_TAINT_KEY = "gpupool.io/mig-change"
MIG_TAINT_NODE_LABEL = "gpupool.io/mig-node"


# A node whose pool left the inventory (or is absent): node_pool keeps it cordoned (annotated with this module name)
# and tainted, and labels it so that people and the pool report find it; gpupool.io/pool keeps the pool it left.
ORPHANED_LABEL = "gpupool.io/orphaned"


ORPHAN_CORDON = "node-pool"


CONFIGS_ANNOTATION = "gpupool.io/mig-configs"  # on the ConfigMap: config names gpupool wrote there (before owners)
# On the ConfigMap, one per owner: mig-configs.gpupool.io/<owner> = the config names THAT owner wrote there. The owner
# is the key's name part (a DNS label: at most 63 characters, as a key's name part must be); plan/mig/config_map.py
# says why one annotation per owner.
OWNER_CONFIGS_PREFIX = "mig-configs.gpupool.io/"


def owner_configs_annotation(owner: str) -> str:
    """The ConfigMap annotation that records the MIG config names `owner` (gpupool_cluster.owner_id) wrote."""
    return OWNER_CONFIGS_PREFIX + owner
