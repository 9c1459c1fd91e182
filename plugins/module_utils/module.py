# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Ansible glue: the one module base every gpupool module subclasses.
"""
from __future__ import annotations

import copy

from ansible_collections.gpupool.core.plugins.module_utils.k8s.apply_engine import ApplyEngine
from ansible_collections.gpupool.core.plugins.module_utils.k8s.apply_engine import ApplyError
from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import K8sError


def module_argument_spec(apply=True, **extra):
    """cluster + pools (+ force_conflicts for modules that apply) + the connection options + the module's own."""
    from ansible_collections.gpupool.core.plugins.module_utils.argument_specs import AUTH_ARG_SPEC
    spec = dict(
        cluster=dict(type="dict", required=True),
        pools=dict(type="list", elements="str"),
    )
    if apply:
        spec["force_conflicts"] = dict(type="bool", default=False)
    spec.update(copy.deepcopy(AUTH_ARG_SPEC))
    spec.update(extra)
    return spec


class ModuleRunner(object):
    """Inventory validation, client, engine and result shaping for one module run."""

    def __init__(self, module):
        self.module = module
        self.cluster = None
        self.client = None
        self.engine = None
        self.results = []

    def fail(self, msg, **extra):
        extra.setdefault("changed", any(r.changed for r in self.results))
        if self.results:
            extra.setdefault("objects", [r.as_dict() for r in self.results])
        if self.engine is not None and self.engine.warnings:
            for w in self.engine.warnings:
                self.module.warn(w)
        self.module.fail_json(msg=msg, **extra)

    def load_cluster(self):
        from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
        from ansible_collections.gpupool.core.plugins.module_utils.model.load import load_cluster
        try:
            self.cluster = load_cluster(self.module.params["cluster"])
        except Problems as exc:
            self.fail(exc.render(), problems=[{"path": p, "message": m} for p, m in exc.problems])
        return self.cluster

    def connect(self):
        from ansible.module_utils.basic import missing_required_lib
        from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import MissingDependency, connect
        try:
            self.client = connect(self.module.params, self.cluster)
        except MissingDependency as exc:
            self.fail(missing_required_lib("kubernetes>=31.0.0"), exception=exc.traceback)
        except K8sError as exc:
            self.fail(exc.describe())
        self.engine = ApplyEngine(self.client, check_mode=self.module.check_mode,
                                  force_conflicts=self.module.params.get("force_conflicts") or False)
        return self.engine

    def exit(self, **extra):
        changed = any(r.changed for r in self.results)
        out = dict(changed=changed, objects=[r.as_dict() for r in self.results], **extra)
        if self.module._diff:
            out["diff"] = [r.diff() for r in self.results if r.changed]
        for w in (self.engine.warnings if self.engine else []):
            self.module.warn(w)
        self.module.exit_json(**out)

    def run(self, body):
        """Call body(); turn our errors into fail_json with a sentence."""
        from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
        try:
            return body()
        except Problems as exc:
            self.fail(exc.render(), problems=[{"path": p, "message": m} for p, m in exc.problems])
        except ApplyError as exc:
            self.results.extend(r for r in exc.results if r not in self.results)
            self.fail(exc.message)
        except K8sError as exc:
            self.fail(exc.describe(), status=exc.status)
