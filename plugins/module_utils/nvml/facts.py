# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read GPU facts through NVML with pynvml (nvidia-ml-py). Thin I/O, read-only.

Used by gpupool.core.gpu_facts and gpupool.core.mig_config on GPU nodes.
Nothing here writes to a GPU. Every NVML failure becomes `NvmlError` with the
call, the NVML constant name and NVML's own text; a host without NVML gives
`NvmlUnavailable` with a sentence saying what is missing.
"""

from __future__ import annotations

import ctypes
import sys
import traceback
import uuid as _uuid
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError

try:
    import pynvml

    PYNVML_IMPORT_ERROR = None
except ImportError:  # nvidia-ml-py not installed on the node
    pynvml = None
    PYNVML_IMPORT_ERROR = traceback.format_exc()

__all__ = [
    "NvmlUnavailable",
    "NvmlError",
    "Session",
    "read_system",
    "read_gpu",
    "read_profiles",
    "read_instances",
    "read_mig_mode",
    "read_processes",
    "read_fabric",
    "clique_id",
    "error_name",
]

ARCHITECTURES = {
    2: "Kepler",
    3: "Maxwell",
    4: "Pascal",
    5: "Volta",
    6: "Turing",
    7: "Ampere",
    8: "Ada Lovelace",
    9: "Hopper",
    10: "Blackwell",
}
BRANDS = {
    0: "Unknown",
    1: "Quadro",
    2: "Tesla",
    3: "NVS",
    4: "GRID",
    5: "GeForce",
    6: "Titan",
    7: "NVIDIA Virtual Applications",
    8: "NVIDIA Virtual PC",
    9: "NVIDIA Virtual Compute Server",
    10: "NVIDIA RTX Virtual Workstation",
    11: "NVIDIA Cloud Gaming",
    12: "Quadro RTX",
    13: "NVIDIA RTX",
    14: "NVIDIA",
    15: "GeForce RTX",
    16: "Titan RTX",
}
FABRIC_STATES = {0: "not_supported", 1: "not_started", 2: "in_progress", 3: "completed"}
FABRIC_HEALTH_SUMMARY = {0: "not_supported", 1: "healthy", 2: "unhealthy", 3: "limited_capacity"}
GI_PROFILE_COUNT = 18  # NVML_GPU_INSTANCE_PROFILE_COUNT (nvml.h, go-nvml const.go)
CI_PROFILE_COUNT = 9  # NVML_COMPUTE_INSTANCE_PROFILE_COUNT
NOT_AVAILABLE = 0xFFFFFFFF


class NvmlUnavailable(GpupoolError):
    """NVML cannot be used on this host; str() says why and what to do. `reason`: no_bindings,
    library_not_found, driver_not_loaded (the first three: no usable NVIDIA driver here), no_permission,
    init_failed."""

    @property
    def reason(self) -> str:
        return self.details.get("reason", "init_failed")


class NvmlError(GpupoolError):
    """An NVML call failed: call name, NVML code, constant name and NVML's text."""

    def __init__(self, call: str, code: Any, text: str, detail: str = "") -> None:
        name = error_name(code)
        super().__init__("%s%s failed: %s (%s)" % (call, " " + detail if detail else "", text, name))
        self.call, self.code, self.text, self.detail = call, code, text, detail

    @property
    def name(self) -> str:
        return error_name(self.code)


def error_name(code: Any) -> str:
    """NVML's constant name for a return code (NVML_ERROR_...), or 'NVML error <code>' when pynvml has none."""
    if pynvml is not None:
        for attr in dir(pynvml):
            if attr.startswith("NVML_ERROR_") and getattr(pynvml, attr) == code:
                return attr
        if code == 0:
            return "NVML_SUCCESS"
    return "NVML error %s" % code


def _text(exc):
    text = str(exc)
    if text.startswith(("b'", 'b"')) and text.endswith(text[1]):
        text = text[2:-1]  # pynvml str()s the bytes from nvmlErrorString for codes it does not know
    return text


def _s(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def call(name: str, *args: Any, **kwargs: Any) -> Any:
    """pynvml.<name>(*args), NVMLError => NvmlError."""
    detail = kwargs.pop("detail", "")
    try:
        return getattr(pynvml, name)(*args, **kwargs)
    except pynvml.NVMLError as exc:
        raise NvmlError(name, exc.value, _text(exc), detail)


def _code(exc):
    return getattr(exc, "code", getattr(exc, "value", None))


def _is(exc, *names):
    return any(_code(exc) == getattr(pynvml, n, object()) for n in names)


class Session:
    """nvmlInit on enter, nvmlShutdown on exit; NvmlUnavailable when NVML cannot start."""

    def __enter__(self) -> Session:
        if pynvml is None:
            raise NvmlUnavailable(
                "the Python NVML bindings are not installed for %s: install nvidia-ml-py on the node "
                "(pip install nvidia-ml-py); it provides `import pynvml`" % sys.executable,
                reason="no_bindings",
            )
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            code = exc.value
            if code == pynvml.NVML_ERROR_LIBRARY_NOT_FOUND:
                raise NvmlUnavailable(
                    "NVML (libnvidia-ml.so.1, installed with the NVIDIA driver) could not be loaded: this host has "
                    "no NVIDIA driver, or the driver's library directory is not on the loader path",
                    reason="library_not_found",
                )
            if code == pynvml.NVML_ERROR_DRIVER_NOT_LOADED:
                raise NvmlUnavailable(
                    "libnvidia-ml.so.1 is installed but the NVIDIA kernel driver is not loaded (nvmlInit: Driver Not "
                    "Loaded): load it (modprobe nvidia) or check that the GPUs are visible to this host",
                    reason="driver_not_loaded",
                )
            if code == pynvml.NVML_ERROR_NO_PERMISSION:
                raise NvmlUnavailable(
                    "nvmlInit was refused (Insufficient Permissions): run as root or give this user "
                    "access to /dev/nvidia*",
                    reason="no_permission",
                )
            raise NvmlUnavailable("nvmlInit failed: %s (%s)" % (_text(exc), error_name(code)), reason="init_failed")
        return self

    def __exit__(self, *exc: Any) -> bool:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass
        return False

    def count(self) -> int:
        return call("nvmlDeviceGetCount")

    def handle(self, index: int) -> Any:
        return call("nvmlDeviceGetHandleByIndex", index, detail="(GPU %d)" % index)


def read_system() -> Dict[str, str]:
    """The driver, NVML and CUDA driver versions of this host."""
    cuda = call("nvmlSystemGetCudaDriverVersion")
    return {
        "driver_version": _s(call("nvmlSystemGetDriverVersion")),
        "nvml_version": _s(call("nvmlSystemGetNVMLVersion")),
        "cuda_driver_version": "%d.%d" % (cuda // 1000, (cuda % 1000) // 10),
    }


def _optional(name, *args, **kwargs):
    """pynvml.<name>(*args) or None when NVML says the GPU or library does not support it."""
    try:
        return call(name, *args, **kwargs)
    except NvmlError as exc:
        if _is(exc, "NVML_ERROR_NOT_SUPPORTED", "NVML_ERROR_FUNCTION_NOT_FOUND"):
            return None
        raise


def read_mig_mode(handle: Any) -> Tuple[bool, bool, bool]:
    """(capable, current, pending) as bools."""
    mode = _optional("nvmlDeviceGetMigMode", handle)
    if mode is None:
        return False, False, False
    return True, bool(mode[0]), bool(mode[1])


def read_profiles(handle: Any) -> List[Dict[str, Any]]:
    """GPU-instance profiles the GPU reports: [{index, id, name, compute_slices, memory_slices, ...}]."""
    profiles = []
    for index in range(GI_PROFILE_COUNT):
        try:
            info = call("nvmlDeviceGetGpuInstanceProfileInfo", handle, index, 2)
        except NvmlError as exc:
            if _is(exc, "NVML_ERROR_NOT_SUPPORTED", "NVML_ERROR_INVALID_ARGUMENT"):
                continue
            if _is(exc, "NVML_ERROR_FUNCTION_NOT_FOUND", "NVML_ERROR_ARGUMENT_VERSION_MISMATCH"):
                try:
                    info = call("nvmlDeviceGetGpuInstanceProfileInfo", handle, index, 1)
                except NvmlError as exc1:
                    if _is(exc1, "NVML_ERROR_NOT_SUPPORTED", "NVML_ERROR_INVALID_ARGUMENT"):
                        continue
                    raise
            else:
                raise
        name = _s(getattr(info, "name", b"") or b"")
        if name.startswith("MIG "):
            name = name[4:]
        count = ctypes.c_uint(0)
        call("nvmlDeviceGetGpuInstancePossiblePlacements", handle, info.id, None, ctypes.byref(count))
        placements = (pynvml.c_nvmlGpuInstancePlacement_t * max(count.value, 1))()
        call("nvmlDeviceGetGpuInstancePossiblePlacements", handle, info.id, placements, ctypes.byref(count))
        starts = sorted(placements[i].start for i in range(count.value))
        sizes = {placements[i].size for i in range(count.value)}
        profiles.append(
            {
                "index": index,
                "id": info.id,
                "name": name or None,
                "compute_slices": info.sliceCount,
                "memory_slices": max(sizes) if sizes else 0,
                "max_instances": info.instanceCount,
                "starts": starts,
                "memory_mib": info.memorySizeMB,
                "multiprocessors": info.multiprocessorCount,
                "copy_engines": info.copyEngineCount,
                "decoders": info.decoderCount,
                "encoders": info.encoderCount,
                "jpeg_engines": info.jpegCount,
                "ofa_engines": info.ofaCount,
            }
        )
    return profiles


def _ci_profiles(gi):
    """The compute-instance profiles this GPU instance supports (others answer NOT_SUPPORTED)."""
    for index in range(CI_PROFILE_COUNT):
        try:
            yield call(
                "nvmlGpuInstanceGetComputeInstanceProfileInfo",
                gi,
                index,
                pynvml.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED,
            )
        except NvmlError as exc:
            if not _is(exc, "NVML_ERROR_NOT_SUPPORTED", "NVML_ERROR_INVALID_ARGUMENT"):
                raise


def full_ci_profile(gi: Any, gi_slices: int) -> Tuple[Optional[int], Optional[str]]:
    """(CI profile id, name) of the compute instance covering the whole GPU instance, or (None, None)."""
    for info in _ci_profiles(gi):
        if info.sliceCount == gi_slices:
            return info.id, _s(getattr(info, "name", b"") or b"")
    return None, None


def _compute_instances(gi, gi_slices):
    cis = []
    for info in _ci_profiles(gi):
        count = ctypes.c_uint(0)
        array = (pynvml.c_nvmlComputeInstance_t * max(info.instanceCount, 1))()
        call("nvmlGpuInstanceGetComputeInstances", gi, info.id, array, ctypes.byref(count))
        name = _s(getattr(info, "name", b"") or b"")
        for i in range(count.value):
            ci = call("nvmlComputeInstanceGetInfo", array[i])
            cis.append(
                {
                    "compute_instance_id": ci.id,
                    "profile_id": ci.profileId,
                    "profile": name[4:] if name.startswith("MIG ") else (name or None),
                    "compute_slices": info.sliceCount,
                    "start": ci.placement.start,
                    "full": info.sliceCount == gi_slices,
                }
            )
    return sorted(cis, key=lambda c: c["compute_instance_id"])


def _mig_device_uuids(handle):
    """{(gi id, ci id): MIG device UUID}."""
    out = {}
    maximum = _optional("nvmlDeviceGetMaxMigDeviceCount", handle) or 0
    for i in range(maximum):
        try:
            mig = call("nvmlDeviceGetMigDeviceHandleByIndex", handle, i)
        except NvmlError as exc:
            if _is(exc, "NVML_ERROR_NOT_FOUND", "NVML_ERROR_INVALID_ARGUMENT", "NVML_ERROR_NOT_SUPPORTED"):
                continue
            raise
        key = (call("nvmlDeviceGetGpuInstanceId", mig), call("nvmlDeviceGetComputeInstanceId", mig))
        out[key] = _s(call("nvmlDeviceGetUUID", mig))
    return out


def read_instances(handle: Any, profiles: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """GPU instances with their compute instances and MIG device UUIDs, sorted by placement start."""
    by_id = {p["id"]: p for p in profiles}
    uuids = _mig_device_uuids(handle)
    instances = []
    for prof in profiles:
        count = ctypes.c_uint(0)
        array = (pynvml.c_nvmlGpuInstance_t * max(prof["max_instances"], 1))()
        call("nvmlDeviceGetGpuInstances", handle, prof["id"], array, ctypes.byref(count))
        for i in range(count.value):
            info = call("nvmlGpuInstanceGetInfo", array[i])
            p = by_id.get(info.profileId, prof)
            cis = _compute_instances(array[i], p["compute_slices"])
            for ci in cis:
                ci["uuid"] = uuids.get((info.id, ci["compute_instance_id"]))
            full = [c for c in cis if c["full"]]
            instances.append(
                {
                    "gpu_instance_id": info.id,
                    "profile": p["name"],
                    "profile_id": info.profileId,
                    "start": info.placement.start,
                    "size": info.placement.size,
                    "memory_mib": p["memory_mib"],
                    "compute_instances": cis,
                    "uuid": full[0]["uuid"] if full else None,
                }
            )
    return sorted(instances, key=lambda inst: (inst["start"], inst["gpu_instance_id"]))


def read_processes(handle: Any) -> List[Dict[str, Any]]:
    """The compute processes on the GPU: pid, memory used (MiB) and the MIG instance they run in."""
    procs = _optional("nvmlDeviceGetComputeRunningProcesses", handle) or []
    out = []
    for p in procs:
        gi = getattr(p, "gpuInstanceId", NOT_AVAILABLE)
        ci = getattr(p, "computeInstanceId", NOT_AVAILABLE)
        used = getattr(p, "usedGpuMemory", None)
        out.append(
            {
                "pid": p.pid,
                "used_memory_mib": None if used is None else used // (1 << 20),
                "gpu_instance_id": None if gi in (None, NOT_AVAILABLE) else gi,
                "compute_instance_id": None if ci in (None, NOT_AVAILABLE) else ci,
            }
        )
    return out


def clique_id(cluster_uuid: Optional[str], clique: int, state: int, status: int) -> Optional[str]:
    """`<clusterUuid>.<cliqueId>` as the DRA driver and GFD write nvidia.com/gpu.clique, or None.

    Only a completed fabric registration with status success and a non-zero
    cluster UUID gives a usable clique.
    """
    if state != 3 or status != 0 or not cluster_uuid or cluster_uuid == str(_uuid.UUID(int=0)):
        return None
    return "%s.%d" % (cluster_uuid, clique)


def read_fabric(handle: Any) -> Dict[str, Any]:
    """Multi-node NVLink fabric registration of the GPU (nvmlDeviceGetGpuFabricInfoV)."""
    info = None
    for struct_name in ("c_nvmlGpuFabricInfo_v3_t", "c_nvmlGpuFabricInfo_v2_t"):
        struct = getattr(pynvml, struct_name, None)
        if struct is None:
            continue
        candidate = struct()
        try:
            call("nvmlDeviceGetGpuFabricInfoV", handle, ctypes.byref(candidate))
            info = candidate
            break
        except NvmlError as exc:
            if _is(exc, "NVML_ERROR_NOT_SUPPORTED"):
                return {"supported": False}
            if _is(exc, "NVML_ERROR_ARGUMENT_VERSION_MISMATCH", "NVML_ERROR_FUNCTION_NOT_FOUND"):
                continue
            raise
    if info is None:
        legacy = pynvml.c_nvmlGpuFabricInfo_t()
        try:
            call("nvmlDeviceGetGpuFabricInfo", handle, ctypes.byref(legacy))
        except NvmlError as exc:
            if _is(exc, "NVML_ERROR_NOT_SUPPORTED", "NVML_ERROR_FUNCTION_NOT_FOUND"):
                return {"supported": False}
            raise
        info = legacy
    raw = bytes(bytearray(info.clusterUuid))  # read the raw bytes: some pynvml builds mangle this field
    cluster = str(_uuid.UUID(bytes=raw)) if len(raw) == 16 else None
    out = {
        "supported": True,
        "cluster_uuid": cluster,
        "clique_id": int(info.cliqueId),
        "state": FABRIC_STATES.get(int(info.state), str(int(info.state))),
        "status": error_name(int(info.status)) if int(info.status) else "NVML_SUCCESS",
        "clique": clique_id(cluster, int(info.cliqueId), int(info.state), int(info.status)),
    }
    if hasattr(info, "healthSummary"):
        out["health_summary"] = FABRIC_HEALTH_SUMMARY.get(int(info.healthSummary), str(int(info.healthSummary)))
    return out


def read_gpu(
    handle: Any, index: int, include_profiles: bool = False, system: Optional[Dict[str, str]] = None
) -> Dict[str, Any]:
    """Every fact gpu_facts reports for one GPU (full GPU handle)."""
    system = system or {}
    name = _s(call("nvmlDeviceGetName", handle))
    memory = call("nvmlDeviceGetMemoryInfo", handle)
    pci = call("nvmlDeviceGetPciInfo", handle)
    arch = _optional("nvmlDeviceGetArchitecture", handle)
    brand = _optional("nvmlDeviceGetBrand", handle)
    cc = _optional("nvmlDeviceGetCudaComputeCapability", handle)
    capable, current, pending = read_mig_mode(handle)
    profiles = read_profiles(handle) if capable else []
    facts = {
        "index": index,
        "uuid": _s(call("nvmlDeviceGetUUID", handle)),
        "name": name,
        "brand": None if brand is None else BRANDS.get(brand, str(brand)),
        "architecture": None if arch is None else ARCHITECTURES.get(arch, str(arch)),
        "cuda_compute_capability": None if cc is None else "%d.%d" % tuple(cc),
        "memory_mib": memory.total // (1 << 20),
        "memory_bytes": memory.total,
        "pci_bus_id": _s(pci.busId),
        "pci_device_id": "0x%08X" % pci.pciDeviceId,
        "driver_version": system.get("driver_version"),
        "cuda_driver_version": system.get("cuda_driver_version"),
        "mig": {
            "capable": capable,
            "current": current,
            "pending": pending,
            "mode_change_pending": capable and current != pending,
            "instances": read_instances(handle, profiles) if capable and current else [],
        },
        "processes": read_processes(handle),
        "fabric": read_fabric(handle),
    }
    if include_profiles:
        facts["mig"]["profiles"] = profiles
    facts["_profiles"] = profiles  # for callers; gpu_facts drops it
    return facts
