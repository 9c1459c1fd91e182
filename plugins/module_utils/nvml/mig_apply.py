# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Execute a MIG apply plan (plan/mig/node_apply.GpuPlan actions) through pynvml. Thin I/O.

The plan decides; this only performs the NVML calls in order:
  destroy_compute_instance, destroy_gpu_instance  (nvmlComputeInstanceDestroy, nvmlGpuInstanceDestroy)
  set_mig_mode                                     (nvmlDeviceSetMigMode; reads the mode back)
  create_compute_instance                          (full-size CI in a kept GI)
  create_gpu_instance                              (nvmlDeviceCreateGpuInstanceWithPlacement + full-size CI)
When a mode change stays pending (A100/A30 need a GPU reset, or the GPU is
busy) execution stops there and the result says reset_required.
"""

from __future__ import annotations

import ctypes
from typing import Any, Dict, List

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError
from ansible_collections.gpupool.core.plugins.module_utils.nvml import facts as nvml_facts
from ansible_collections.gpupool.core.plugins.module_utils.nvml.facts import NvmlError, call
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.node_apply import GpuPlan

__all__ = ["MigApplyError", "execute"]


class MigApplyError(GpupoolError):
    """An NVML call failed part-way; `done` lists the actions already performed."""

    def __init__(self, message: str, done: List[Dict[str, Any]], error: Exception) -> None:
        super().__init__(message, done=done)
        self.done = done
        self.error = error


def full_ci_profile_id(gi: Any, gi_slices: int) -> int:
    """The compute-instance profile that covers all of a GPU instance's compute slices; NvmlError when none does."""
    ci_id, _name = nvml_facts.full_ci_profile(gi, gi_slices)
    if ci_id is None:
        raise NvmlError(
            "nvmlGpuInstanceGetComputeInstanceProfileInfo",
            3,
            "Not Supported",
            "(no compute-instance profile covers all %d compute slices)" % gi_slices,
        )
    return ci_id


def _create_full_ci(gi, gi_slices):
    ci_profile = full_ci_profile_id(gi, gi_slices)
    ci = call("nvmlGpuInstanceCreateComputeInstance", gi, ci_profile)
    return call("nvmlComputeInstanceGetInfo", ci).id


def execute(handle: Any, index: int, gpu_plan: GpuPlan, profiles: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Run gpu_plan.actions on the GPU behind `handle`.

    profiles: the GPU's reported GPU-instance profiles (nvml_facts.read_profiles),
    used for compute-slice counts. Returns {"done": [...], "reset_required": bool,
    "activation_status": name or None}. Raises MigApplyError.
    """
    pynvml = nvml_facts.pynvml
    slices = {p["name"]: p["compute_slices"] for p in profiles}
    done = []
    result = {"done": done, "reset_required": False, "activation_status": None}
    for action in gpu_plan.actions:
        kind = action["action"]
        try:
            if kind == "destroy_compute_instance":
                gi = call("nvmlDeviceGetGpuInstanceById", handle, action["gpu_instance_id"])
                ci = call("nvmlGpuInstanceGetComputeInstanceById", gi, action["compute_instance_id"])
                call("nvmlComputeInstanceDestroy", ci)
            elif kind == "destroy_gpu_instance":
                gi = call("nvmlDeviceGetGpuInstanceById", handle, action["gpu_instance_id"])
                call("nvmlGpuInstanceDestroy", gi)
            elif kind == "set_mig_mode":
                mode = pynvml.NVML_DEVICE_MIG_ENABLE if action["enabled"] else pynvml.NVML_DEVICE_MIG_DISABLE
                activation = call("nvmlDeviceSetMigMode", handle, mode)
                current, pending = call("nvmlDeviceGetMigMode", handle)
                done.append(dict(action, activation_status=nvml_facts.error_name(activation)))
                if bool(current) != bool(action["enabled"]):
                    result["reset_required"] = True
                    result["activation_status"] = nvml_facts.error_name(activation)
                    return result
                continue
            elif kind == "create_compute_instance":
                gi = call("nvmlDeviceGetGpuInstanceById", handle, action["gpu_instance_id"])
                ci_id = _create_full_ci(gi, slices[action["profile"]])
                done.append(dict(action, compute_instance_id=ci_id))
                continue
            elif kind == "create_gpu_instance":
                placement = pynvml.c_nvmlGpuInstancePlacement_t()
                placement.start, placement.size = action["start"], action["size"]
                gi = call(
                    "nvmlDeviceCreateGpuInstanceWithPlacement", handle, action["profile_id"], ctypes.byref(placement)
                )
                gi_id = call("nvmlGpuInstanceGetInfo", gi).id
                done.append(dict(action, gpu_instance_id=gi_id))
                ci_id = _create_full_ci(gi, slices[action["profile"]])
                done[-1]["compute_instance_id"] = ci_id
                continue
            else:  # pragma: no cover - plans only contain the kinds above
                raise ValueError("unknown action %r" % kind)
            done.append(dict(action))
        except NvmlError as exc:
            raise MigApplyError(_explain(index, action, exc), done, exc)
    return result


def _explain(index, action, exc):
    what = {
        "destroy_compute_instance": "destroying compute instance %s of GPU instance %s"
        % (action.get("compute_instance_id"), action.get("gpu_instance_id")),
        "destroy_gpu_instance": "destroying GPU instance %s (%s at slice %s)"
        % (action.get("gpu_instance_id"), action.get("profile"), action.get("start")),
        "set_mig_mode": "setting MIG mode %s" % ("on" if action.get("enabled") else "off"),
        "create_compute_instance": "creating the compute instance of GPU instance %s" % action.get("gpu_instance_id"),
        "create_gpu_instance": "creating %s at memory slice %s" % (action.get("profile"), action.get("start")),
    }.get(action["action"], action["action"])
    hint = ""
    if exc.name == "NVML_ERROR_IN_USE":
        hint = " Processes or compute instances still use it: stop the GPU's workloads and run again."
    elif exc.name == "NVML_ERROR_INSUFFICIENT_RESOURCES":
        hint = " Another GPU instance occupies those memory slices: check the GPU with gpupool.core.gpu_facts."
    elif exc.name == "NVML_ERROR_NO_PERMISSION":
        hint = " MIG changes need root: use become: true."
    return "GPU %d: NVML refused %s: %s.%s" % (index, what, exc, hint)
