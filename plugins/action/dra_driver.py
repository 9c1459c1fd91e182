# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpupool.core.dra_driver, run in the controller (its documentation: plugins/modules/dra_driver.py)."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.k8s.driver_release import DriverRelease, nothing_yet
from ansible_collections.gpupool.core.plugins.module_utils.module import KubernetesModule
from ansible_collections.gpupool.core.plugins.plugin_utils.step_action import StepAction


class DraDriverModule(KubernetesModule):
    required_libraries = ("pydantic", "yaml")
    argument_spec = dict(
        state=dict(type="str", default="present", choices=["present", "absent"]),
        helm_binary=dict(type="str", default="helm"),
        wait=dict(type="bool", default=True),
        wait_timeout=dict(type="int", default=600),
        wait_sleep=dict(type="float", default=5.0),
        purge_crds=dict(type="bool", default=False),
        gpu_operator=dict(type="str", default="refuse", choices=["refuse", "disable_device_plugin"]),
        registry_username=dict(type="str"),
        registry_password=dict(type="str", no_log=True),
    )

    def __init__(self, host=None):
        super().__init__(host)
        self.release = None

    def run(self):
        if self.params["pools"]:
            self.warn("pools is ignored by dra_driver: the driver is cluster-wide and every present pool counts")
        if not self.cluster.dra_driver.enabled:
            return dict(nothing_yet(), msg="dra_driver.enabled is false: the DRA driver is left alone")
        # helm, the GPU Operator, the CRDs, the upgrade and the rollout wait: k8s/driver_release.py
        self.release = DriverRelease(
            self.cluster, self.params, lambda: self.engine, self.check_mode, self.warn, self.wait_for, self.progress.say
        )
        return self.release.converge()

    def partial_result(self):
        out = super().partial_result()
        if self.release is None:
            return dict(out, **nothing_yet())
        return self.release.report(out, self.diff_mode)


class ActionModule(StepAction):
    step = DraDriverModule
