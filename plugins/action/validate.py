# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpupool.core.validate, run in the controller (its documentation: plugins/modules/validate.py)."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model.advisories import semantic_warnings
from ansible_collections.gpupool.core.plugins.module_utils.model.bounds import EXPANDED, MAX_DEPTH, nesting_depth
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.load import load_cluster
from ansible_collections.gpupool.core.plugins.module_utils.model.normalized import normalized_result
from ansible_collections.gpupool.core.plugins.module_utils.model.yaml_duplicates import problems_of
from ansible_collections.gpupool.core.plugins.module_utils.module import GpupoolModule
from ansible_collections.gpupool.core.plugins.plugin_utils.inventory_files import (
    inventory_var_files,
    keys_written_twice,
    text_reader,
)
from ansible_collections.gpupool.core.plugins.plugin_utils.step_action import StepAction


class ValidateModule(GpupoolModule):
    argument_spec = dict(
        cluster=dict(type="raw"),  # left out: ActionModule.run reads the variable var_name
        var_name=dict(type="str", default="gpupool_cluster"),
    )
    required_libraries = ("pydantic",)

    def run(self):
        """The model's checks, after the problems of the inventory's own files (a key written twice: YAML kept its last
        value only, so the model's problems may follow from the value it dropped); both are said together."""
        before = list(getattr(self.host, "file_problems", ()))
        if any(EXPANDED in message for _path, message in before):
            raise Problems(before)  # the model would copy every value of it first, and say the same
        try:
            cluster = load_cluster(self.params["cluster"], root=self.params["var_name"])
        except Problems as exc:
            raise Problems(before + exc.problems, subject=exc.subject) if before else exc
        for path, message in semantic_warnings(cluster, root=self.params["var_name"]):
            self.warn("%s: %s" % (path, message))
        if before:
            raise Problems(before)
        return normalized_result(cluster)


class ActionModule(StepAction):
    step = ValidateModule

    def step_args(self, task_vars: Dict[str, Any]) -> Dict[str, Any]:
        """Without `cluster`, the cluster is the host's variable `var_name`, read here: its nesting is checked before
        ansible-core templates it, whose recursion stops at about 200 levels with "Recursive loop detected" about
        an argument called `cluster`, naming neither the key nor the depth. The model names both (bounds.py)."""
        args = dict(self._task.args)
        name = args.get("var_name") or "gpupool_cluster"
        if "cluster" not in args and name in task_vars:
            raw = task_vars[name]
            # too deep: the model refuses the raw data with its key path, and nothing templates it
            args["cluster"] = raw if nesting_depth(raw) > MAX_DEPTH else self._templar.template(raw)
        return args

    def file_problems(self, task_vars: Dict[str, Any]) -> List[Tuple[str, str]]:
        """A key written twice in one mapping of the inventory's files (ansible.cfg lets ansible-core load `<<` merge
        overrides, which its own duplicate check cannot tell apart from a real duplicate; docs/inventory.md)."""
        files = inventory_var_files(
            list(task_vars.get("ansible_inventory_sources") or []) + [task_vars.get("inventory_file")],
            host=str(task_vars.get("inventory_hostname") or ""),
            groups=list(task_vars.get("group_names") or []),
            playbook_dir=task_vars.get("playbook_dir"),
        )
        return problems_of(keys_written_twice(files, text_reader(self._loader)))
