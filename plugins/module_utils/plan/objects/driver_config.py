# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Opaque NVIDIA DRA driver configuration (GpuConfig / MigDeviceConfig) from a pool's sharing settings
(reference nvidia-dra-mig-imex.md §1.7).
"""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.model.names import DRIVER, NVIDIA_CONFIG_API


def sharing_parameters(sharing, mig=False):
    """GpuConfig/MigDeviceConfig parameters for a pool_model.Sharing, or None without sharing."""
    if sharing is None or (not sharing.time_slicing and not sharing.mps):
        return None
    if sharing.time_slicing:
        share = {"strategy": "TimeSlicing"}
        if not mig:  # MigDeviceSharing has no timeSlicingConfig (reference §1.7)
            share["timeSlicingConfig"] = {"interval": sharing.time_slicing.interval}
    else:
        share = {"strategy": "MPS"}
        mps = {}
        if sharing.mps.active_thread_percentage is not None:
            mps["defaultActiveThreadPercentage"] = sharing.mps.active_thread_percentage
        if sharing.mps.pinned_memory_limit is not None:
            mps["defaultPinnedDeviceMemoryLimit"] = sharing.mps.pinned_memory_limit
        if mps:
            share["mpsConfig"] = mps
    return {"apiVersion": NVIDIA_CONFIG_API, "kind": "MigDeviceConfig" if mig else "GpuConfig", "sharing": share}


def opaque(parameters, driver=DRIVER):
    return {"opaque": {"driver": driver, "parameters": parameters}}
