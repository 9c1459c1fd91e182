# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpupool.core.pool_advice, run in the controller (its documentation: plugins/modules/pool_advice.py)."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.argument_specs import NODES
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError
from ansible_collections.gpupool.core.plugins.module_utils.module import KubernetesModule
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.advise import advise
from ansible_collections.gpupool.core.plugins.module_utils.plan.kinds import (
    DEVICE_CLASS,
    NODE,
    POD,
    RESOURCE_CLAIM,
    RESOURCE_SLICE,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.observed import Observed
from ansible_collections.gpupool.core.plugins.plugin_utils.step_action import StepAction


class PoolAdviceModule(KubernetesModule):
    shared = (NODES,)
    required_libraries = ("pydantic", "yaml")  # the inventory file's diff is made from its YAML nodes
    argument_spec = dict(
        inventory_file=dict(type="path"),
        pictures=dict(type="bool", default=True),
        namespaces=dict(type="list", elements="str"),
    )

    def run(self):
        p = self.params
        text = None
        if p["inventory_file"]:
            try:
                with open(p["inventory_file"], encoding="utf-8") as handle:
                    text = handle.read()
            except OSError as exc:
                raise GpupoolError(
                    "inventory_file %s cannot be read (%s); give the host_vars file that holds gpupool_cluster, or "
                    "leave the option out for a diff of the pools' data" % (p["inventory_file"], exc.strerror)
                )
        result = advise(
            self.cluster,
            p["cluster"],
            Observed(
                *(self.engine.observe(kind) for kind in (NODE, RESOURCE_SLICE, RESOURCE_CLAIM, DEVICE_CLASS, POD))
            ),
            pools=self.selected,
            nodegroup_label=p["nodegroup_label"],
            name_pattern=p["name_pattern"],
            inventory_text=text,
            inventory_path=p["inventory_file"],
            pictures=p["pictures"],
            namespaces=p["namespaces"],
        )
        return dict(result, resource_api_version=self.engine.api_version(RESOURCE_CLAIM))

    def partial_result(self):
        return {"changed": False}  # advice: it reads, never writes


class ActionModule(StepAction):
    step = PoolAdviceModule
