# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpupool.core.validate, run in the controller (its documentation: plugins/modules/validate.py)."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.model.advisories import semantic_warnings
from ansible_collections.gpupool.core.plugins.module_utils.model.load import load_cluster
from ansible_collections.gpupool.core.plugins.module_utils.model.normalized import normalized_result
from ansible_collections.gpupool.core.plugins.module_utils.module import GpupoolModule
from ansible_collections.gpupool.core.plugins.plugin_utils.step_action import StepAction


class ValidateModule(GpupoolModule):
    argument_spec = dict(
        cluster=dict(type="raw", required=True),
        var_name=dict(type="str", default="gpupool_cluster"),
    )
    required_libraries = ("pydantic",)

    def run(self):
        cluster = load_cluster(self.params["cluster"], root=self.params["var_name"])
        for path, message in semantic_warnings(cluster, root=self.params["var_name"]):
            self.warn("%s: %s" % (path, message))
        return normalized_result(cluster)


class ActionModule(StepAction):
    step = ValidateModule
