# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The DRA driver's Helm release: does it need an upgrade, and is its rollout done (pure).

`upgrade_reasons` compares what helm reports (``helm get metadata``, ``helm get values``) with what the
inventory wants; an empty list means no helm write at all (a second run changes nothing).

`rollout_status` is stricter than ``helm --wait``: the chart's kubelet-plugin DaemonSet has
maxUnavailable 100%, so helm calls it ready with no plugin pod ready at all. Done here means: every
Deployment of the release ready, the plugin DaemonSet updated and ready on every node it is scheduled
to, and every Ready node of a present pool publishing ``gpu.nvidia.com`` ResourceSlices (the plugin
runs there: tolerations and affinity let it).
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.gpupool.core.plugins.module_utils.plan.driver.values import values_diff
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.pool_nodes import node_ready

GPU_DRIVER = "gpu.nvidia.com"
PLUGIN_SUFFIX = "-kubelet-plugin"


def upgrade_reasons(
    metadata: Optional[Mapping[str, Any]],
    current_values: Optional[Mapping[str, Any]],
    desired_values: Mapping[str, Any],
    chart_name: str,
    version: str,
) -> List[str]:
    """Why the release must be installed or upgraded ([] when it is as wanted)."""
    if not metadata:
        return ["not installed"]
    reasons = []
    if metadata.get("status") != "deployed":
        reasons.append("release status is %s" % metadata.get("status"))
    if metadata.get("chart") != chart_name:
        reasons.append("chart %s -> %s" % (metadata.get("chart"), chart_name))
    if metadata.get("version") != version:
        reasons.append("version %s -> %s" % (metadata.get("version"), version))
    diff = values_diff(current_values or {}, desired_values)
    if diff:
        paths = ", ".join(d["path"] for d in diff[:8]) + (" ..." if len(diff) > 8 else "")
        reasons.append("%d value(s) differ: %s" % (len(diff), paths))
    return reasons


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def plugin_daemonset(daemonsets: Sequence[Mapping[str, Any]]) -> Optional[Mapping[str, Any]]:
    for ds in daemonsets:
        if _meta(ds).get("name", "").endswith(PLUGIN_SUFFIX):
            return ds
    return None


def _deployment_ready(dep: Mapping[str, Any]) -> bool:
    status = dep.get("status") or {}
    want = (dep.get("spec") or {}).get("replicas", 1)
    return (
        status.get("observedGeneration", 0) >= _meta(dep).get("generation", 1)
        and status.get("updatedReplicas", 0) >= want
        and status.get("readyReplicas", 0) >= want
    )


def rollout_status(
    daemonsets: Sequence[Mapping[str, Any]],
    deployments: Sequence[Mapping[str, Any]],
    pool_nodes: Sequence[Mapping[str, Any]],
    slice_nodes: Sequence[str],
) -> Dict[str, Any]:
    """{done, message, plugin: {desired, ready, updated}, nodes_without_plugin, nodes_not_ready, deployments}.

    pool_nodes: the Node objects of the present pools; slice_nodes: spec.nodeName of every gpu.nvidia.com
    ResourceSlice."""
    waiting: List[str] = []
    ds = plugin_daemonset(daemonsets)
    plugin = {"desired": 0, "ready": 0, "updated": 0}
    if ds is None:
        waiting.append("no kubelet-plugin DaemonSet")
    else:
        st = ds.get("status") or {}
        plugin = {
            "desired": st.get("desiredNumberScheduled", 0),
            "ready": st.get("numberReady", 0),
            "updated": st.get("updatedNumberScheduled", 0),
        }
        if st.get("observedGeneration", 0) < _meta(ds).get("generation", 1):
            waiting.append("kubelet plugin: new revision not yet seen by the DaemonSet controller")
        elif plugin["updated"] < plugin["desired"] or plugin["ready"] < plugin["desired"]:
            waiting.append(
                "kubelet plugin %d/%d ready (%d updated)" % (plugin["ready"], plugin["desired"], plugin["updated"])
            )
    not_ready_deps = sorted(_meta(d).get("name", "") for d in deployments if not _deployment_ready(d))
    if not_ready_deps:
        waiting.append("deployment(s) not ready: %s" % ", ".join(not_ready_deps))
    publishing = set(slice_nodes)
    ready_nodes = [n for n in pool_nodes if node_ready(n)]
    missing = sorted(_meta(n)["name"] for n in ready_nodes if _meta(n)["name"] not in publishing)
    not_ready = sorted(_meta(n)["name"] for n in pool_nodes if not node_ready(n))
    if missing:
        waiting.append(
            "%d pool node(s) without the plugin's ResourceSlices: %s"
            % (len(missing), ", ".join(missing[:3]) + (", ..." if len(missing) > 3 else ""))
        )
    done = not waiting
    if done:
        message = "kubelet plugin ready on %d node(s), %d pool node(s) publishing" % (
            plugin["ready"],
            len(ready_nodes) - len(missing),
        )
    else:
        message = "; ".join(waiting)
    return {
        "done": done,
        "message": message,
        "plugin": plugin,
        "nodes_without_plugin": missing,
        "nodes_not_ready": not_ready,
        "deployments_not_ready": not_ready_deps,
    }
