# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpupool.core.device_class, run in the controller (its documentation: plugins/modules/device_class.py)."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.argument_specs import APPLY
from ansible_collections.gpupool.core.plugins.module_utils.k8s.apply_engine import PruneScope
from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import FieldNotInSchema
from ansible_collections.gpupool.core.plugins.module_utils.module import KubernetesModule
from ansible_collections.gpupool.core.plugins.module_utils.plan.kinds import DEVICE_CLASS
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.device_classes import (
    cluster_device_classes,
    without_extended_resource_names,
)
from ansible_collections.gpupool.core.plugins.plugin_utils.step_action import StepAction

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
    try:
        out = engine.apply(DEVICE_CLASS, probe, dry_run=True)
    except FieldNotInSchema:  # a release before the field (1.32, 1.33): its schema lacks it
        return False
    return bool((out.get("spec") or {}).get("extendedResourceName"))


class DeviceClassModule(KubernetesModule):
    shared = (APPLY,)
    argument_spec = dict(prune=dict(type="bool", default=True))

    def run(self):
        cluster, pools = self.cluster, self.pool_names
        wanted = cluster_device_classes(cluster, pools)  # once, before any request; the engine sets the apiVersion
        api_version = self.engine.api_version(DEVICE_CLASS)
        info = {"api_version": api_version, "extended_resource_names": None}
        with_ext = [d for d in wanted if d.obj["spec"].get("extendedResourceName")]
        if with_ext:
            supported = extended_resources_supported(self.engine, with_ext, api_version)
            info["extended_resource_names"] = supported
            if not supported:
                self.warn(
                    "the cluster does not keep DeviceClass extendedResourceName (Kubernetes before 1.34 lacks the field, "
                    "1.34 and 1.35 have it behind the feature gate DRAExtendedResource); classes %s are published "
                    "without it" % ", ".join(d.obj["metadata"]["name"] for d in with_ext)
                )
                wanted = without_extended_resource_names(wanted)
        self.converge(DEVICE_CLASS, wanted, prune=PruneScope.of(cluster, pools) if self.params["prune"] else None)
        return info


class ActionModule(StepAction):
    step = DeviceClassModule
