# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpupool.core.validate, run in the controller (its documentation: plugins/modules/validate.py)."""

from __future__ import annotations

from typing import Any, Dict, Optional

from ansible_collections.gpupool.core.plugins.module_utils.model.advisories import semantic_warnings
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.load import load_cluster
from ansible_collections.gpupool.core.plugins.module_utils.model.normalized import normalized_result
from ansible_collections.gpupool.core.plugins.module_utils.model.yaml_duplicates import problems_of
from ansible_collections.gpupool.core.plugins.module_utils.module import GpupoolModule
from ansible_collections.gpupool.core.plugins.plugin_utils.inventory_files import (
    inventory_var_files,
    keys_written_twice,
)
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

    def run(self, tmp: Optional[str] = None, task_vars: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """The model's checks, and before them the inventory's own files: a key written twice in one mapping
        loaded as its last value only (ansible.cfg lets ansible-core load `<<` merge overrides, which its own
        duplicate check cannot tell apart from a real duplicate; docs/inventory.md)."""
        task_vars = task_vars or {}
        files = inventory_var_files(
            list(task_vars.get("ansible_inventory_sources") or []) + [task_vars.get("inventory_file")],
            host=str(task_vars.get("inventory_hostname") or ""),
            groups=list(task_vars.get("group_names") or []),
            playbook_dir=task_vars.get("playbook_dir"),
        )
        twice = problems_of(keys_written_twice(files, self._loader.get_text_file_contents))
        result = super().run(tmp, task_vars)
        if not twice:
            return result
        # Said together with the model's own problems (those may follow from the value YAML dropped).
        refused = Problems(twice + [(p["path"], p["message"]) for p in result.get("problems") or []])
        failed = {"failed": True, "changed": False, "msg": refused.render(), "problems": refused.as_list()}
        if result.get("warnings"):
            failed["warnings"] = result["warnings"]
        return failed
