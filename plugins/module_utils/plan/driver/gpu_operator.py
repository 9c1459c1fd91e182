# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Living next to the NVIDIA GPU Operator (pure): what its ClusterPolicy means for the DRA driver.

Facts (reference nvidia-dra-mig-imex.md §1.1, §1.10, §1.11 point 4; the DRA driver's install docs):

* the operator's driver container installs the driver under ``/run/nvidia/driver`` on the host, and
  the DRA driver must then get ``nvidiaDriverRoot=/run/nvidia/driver`` (a wrong root is "a common
  error"); the ClusterPolicy's ``spec.driver.enabled`` (default true) says whether it does;
* the operator's device plugin (``spec.devicePlugin.enabled``, default true) hands out the same GPUs
  as ``nvidia.com/gpu`` extended resources: with the DRA driver on the same node a GPU can be given
  out twice. The operator skips a node labelled ``nvidia.com/gpu.deploy.device-plugin=false``.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

OPERATOR_DRIVER_ROOT = "/run/nvidia/driver"
DEVICE_PLUGIN_LABEL = "nvidia.com/gpu.deploy.device-plugin"


def _enabled(spec: Mapping[str, Any], component: str) -> bool:
    value = ((spec or {}).get(component) or {}).get("enabled")
    return True if value is None else bool(value) and str(value).lower() != "false"


def operator_facts(cluster_policies: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """{found, name, driver_container, device_plugin} from the ClusterPolicies (one is expected)."""
    if not cluster_policies:
        return {"found": False, "name": None, "driver_container": False, "device_plugin": False}
    policy = sorted(cluster_policies, key=lambda p: (p.get("metadata") or {}).get("name", ""))[0]
    spec = policy.get("spec") or {}
    return {
        "found": True,
        "name": (policy.get("metadata") or {}).get("name"),
        "driver_container": _enabled(spec, "driver"),
        "device_plugin": _enabled(spec, "devicePlugin"),
    }


def driver_root(facts: Mapping[str, Any], configured: str, configured_explicitly: bool) -> str:
    """The nvidiaDriverRoot to use: the inventory's when set there, else the operator's driver container's
    root when it runs one, else the configured default (/)."""
    if configured_explicitly or not facts.get("driver_container"):
        return configured
    return OPERATOR_DRIVER_ROOT


def driver_root_warning(facts: Mapping[str, Any], configured: str, configured_explicitly: bool) -> Optional[str]:
    """A warning when the operator runs its driver container but the inventory sets another driver root."""
    if facts.get("driver_container") and configured_explicitly and configured != OPERATOR_DRIVER_ROOT:
        return "the GPU Operator runs its driver container (root %s) but dra_driver.nvidia_driver_root is %s" % (
            OPERATOR_DRIVER_ROOT,
            configured,
        )
    return None


def nodes_with_device_plugin(facts: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]]) -> List[str]:
    """Our pool nodes where the operator's device plugin would run (sorted names)."""
    if not facts.get("device_plugin"):
        return []
    out = []
    for node in nodes:
        labels = (node.get("metadata") or {}).get("labels") or {}
        if labels.get(DEVICE_PLUGIN_LABEL) != "false":
            out.append(node["metadata"]["name"])
    return sorted(out)


def refusal(facts: Mapping[str, Any], nodes: Sequence[str]) -> str:
    return (
        "the GPU Operator (ClusterPolicy %s) runs its device plugin on %d pool node(s) (%s): with the DRA driver "
        "there too, one GPU could be handed out twice (as nvidia.com/gpu and through DRA). Turn the device plugin "
        "off on these nodes (label %s=false; the dra_driver module does it with gpu_operator=disable_device_plugin) "
        "or set the ClusterPolicy's devicePlugin.enabled=false"
        % (
            facts.get("name"),
            len(nodes),
            ", ".join(nodes[:10]) + (" ..." if len(nodes) > 10 else ""),
            DEVICE_PLUGIN_LABEL,
        )
    )
