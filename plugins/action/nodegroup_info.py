# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpupool.core.nodegroup_info, run in the controller (its documentation: plugins/modules/nodegroup_info.py)."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.module import MagnumModule
from ansible_collections.gpupool.core.plugins.module_utils.openstack.magnum import MagnumClient
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.api_rules import format_version
from ansible_collections.gpupool.core.plugins.plugin_utils.step_action import StepAction


class NodegroupInfoModule(MagnumModule):
    argument_spec = dict(
        cluster=dict(type="str", required=True),
        name=dict(type="str"),
        role=dict(type="str"),
        detail=dict(type="bool", default=False),
    )

    def run(self):
        p = self.params
        client = MagnumClient(self.connect(), log=self.log)
        version = client.negotiate()
        cluster = client.get_cluster(p["cluster"])
        cid = cluster["uuid"]
        if p["name"]:
            ng = client.get_nodegroup(cid, p["name"])
            nodegroups = [ng] if ng and (not p["role"] or ng.get("role") == p["role"]) else []
        else:
            nodegroups = client.list_nodegroups(cid, p["role"])
            if p["detail"]:
                full = [client.get_nodegroup(cid, ng["uuid"]) for ng in nodegroups]
                nodegroups = [ng for ng in full if ng]
        return dict(
            nodegroups=nodegroups,
            microversion=format_version(version),
            cluster={k: cluster.get(k) for k in ("uuid", "name", "status", "labels")},
        )


class ActionModule(StepAction):
    step = NodegroupInfoModule
