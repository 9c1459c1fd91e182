#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: device_class
short_description: Publish the DRA DeviceClasses of GPU pools
version_added: "0.1.0"
description:
  - Generates the C(resource.k8s.io) DeviceClasses of each pool from the validated GPU-pool inventory and converges
    them with server-side apply (field manager C(gpupool)).
  - "Per present pool with C(device_classes.defaults): C(<pool>) for full GPUs (driver C(gpu.nvidia.com), C(type == 'gpu'),
    the GPU's product names), C(<pool>-<profile>) for each MIG profile (static MIG: the layout's profiles; dynamic MIG:
    every profile of the GPU; C(+) in a profile becomes C(-)), C(<pool>-vfio) with C(passthrough), and each
    C(device_classes.extra) class under its own name (product, optional MIG profile, C(min_memory) as a capacity
    comparison, then the user's CEL selectors)."
  - The pool's sharing becomes opaque driver configuration in the class (C(GpuConfig) or C(MigDeviceConfig) with
    C(TimeSlicing) or C(MPS)). C(device_classes.extended_resource_names) sets C(extendedResourceName) to
    C(gpupool.io/<class>) where the cluster supports it (otherwise the field is left out, with a warning).
  - The API server validates the CEL selectors; a selector it rejects fails the task with the server's message, the
    class, the pool and the inventory key it came from.
  - Uses C(resource.k8s.io/v1), or C(v1beta2)/C(v1beta1) on clusters that do not serve v1.
  - Classes it creates carry C(app.kubernetes.io/managed-by=gpupool) and C(gpupool.io/pool=<pool>). A DeviceClass
    without these labels is never modified or deleted; a name clash with one fails.
  - With O(prune), gpupool's classes that are no longer wanted (pool removed, set to C(absent), profile dropped) are
    deleted.
  - A DeviceClass selects devices, not nodes; to keep a workload on a pool's nodes, also use the pool's node label
    (C(gpupool.io/pool)) and tolerate its taint (see M(gpupool.core.node_pool)).
author:
  - gpupool.core developers (@gpupool)
options:
  prune:
    description:
      - Delete gpupool's DeviceClasses of the pools in scope that are no longer wanted.
      - Without O(pools), every gpupool DeviceClass not wanted by a present pool is in scope.
    type: bool
    default: true
extends_documentation_fragment:
  - gpupool.core.k8s_auth
  - gpupool.core.k8s_auth.lease
  - gpupool.core.k8s_auth.pools
  - gpupool.core.k8s_auth.apply
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Every write is sent with C(dryRun=All), so the API server validates (CEL included) without persisting.
  diff_mode:
    support: full
  platform:
    platforms: all
"""

EXAMPLES = r"""
- name: Publish the DeviceClasses of every pool
  gpupool.core.device_class:
    cluster: "{{ gpupool_cluster }}"

- name: Only the A100 pool, with credentials from module_defaults
  module_defaults:
    group/gpupool.core.k8s:
      kubeconfig: ~/.kube/cern-gpu.conf
  gpupool.core.device_class:
    cluster: "{{ gpupool_cluster }}"
    pools: [gpu-a100-mig]
  register: classes

- name: Names of the classes
  ansible.builtin.debug:
    msg: "{{ classes.objects | map(attribute='name') | list }}"
"""

RETURN = r"""
objects:
  description: One entry per DeviceClass converged or pruned.
  returned: always
  type: list
  elements: dict
  contains:
    kind:
      description: C(DeviceClass).
      type: str
    name:
      description: Class name.
      type: str
    pool:
      description: Pool the class belongs to.
      type: str
    action:
      description: C(created), C(updated), C(unchanged), C(deleted) or C(failed).
      type: str
    changed:
      description: Whether the object changed (or would, in check mode).
      type: bool
    error:
      description: Why it failed.
      type: str
      returned: on failure of this object
  sample: [{kind: DeviceClass, name: gpu-t4, pool: gpu-t4, action: created, changed: true}]
api_version:
  description: The C(resource.k8s.io) version used.
  returned: success
  type: str
  sample: resource.k8s.io/v1
extended_resource_names:
  description: Whether the cluster keeps C(extendedResourceName) on DeviceClasses (null when no class asked for one).
  returned: success
  type: bool
  sample: true
diff:
  description: Before and after of each changed class (with C(--diff)).
  returned: when diff mode is on
  type: list
  elements: dict
"""

from ansible_collections.gpupool.core.plugins.module_utils.argument_specs import APPLY
from ansible_collections.gpupool.core.plugins.module_utils.k8s.apply_engine import PruneScope
from ansible_collections.gpupool.core.plugins.module_utils.module import KubernetesModule
from ansible_collections.gpupool.core.plugins.module_utils.plan.kinds import DEVICE_CLASS
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.device_classes import (
    cluster_device_classes,
    without_extended_resource_names,
)

PROBE_NAME = "gpupool-extended-resource-probe"


def extended_resources_supported(engine, desired, api_version):
    """Does the server keep DeviceClass.spec.extendedResourceName (DRAExtendedResource)?"""
    live = engine.live_by_name(DEVICE_CLASS, [None])
    for d in desired:
        obj = live.get((None, d.obj["metadata"]["name"]))
        if obj is not None and (obj.get("spec") or {}).get("extendedResourceName"):
            return True
    probe = {
        "apiVersion": api_version,
        "kind": "DeviceClass",
        "metadata": {"name": PROBE_NAME},
        "spec": {
            "selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}],
            "extendedResourceName": "gpupool.io/probe",
        },
    }
    out = engine.apply(DEVICE_CLASS, probe, dry_run=True)
    return bool((out.get("spec") or {}).get("extendedResourceName"))


class DeviceClassModule(KubernetesModule):
    shared = (APPLY,)
    argument_spec = dict(prune=dict(type="bool", default=True))

    def run(self):
        cluster, pools = self.cluster, self.pool_names
        cluster_device_classes(cluster, pools)  # inventory problems fail before any request
        api_version = self.engine.api_version(DEVICE_CLASS)
        wanted = cluster_device_classes(cluster, pools, api_version=api_version)
        info = {"api_version": api_version, "extended_resource_names": None}
        with_ext = [d for d in wanted if d.obj["spec"].get("extendedResourceName")]
        if with_ext:
            supported = extended_resources_supported(self.engine, with_ext, api_version)
            info["extended_resource_names"] = supported
            if not supported:
                self.warn(
                    "the cluster drops DeviceClass extendedResourceName (feature gate DRAExtendedResource is "
                    "off); classes %s are published without it" % ", ".join(d.obj["metadata"]["name"] for d in with_ext)
                )
                wanted = without_extended_resource_names(wanted)
        self.converge(DEVICE_CLASS, wanted, prune=PruneScope(pools=pools) if self.params["prune"] else None)
        return info


def main():
    DeviceClassModule()()


if __name__ == "__main__":
    main()
