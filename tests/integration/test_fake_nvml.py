"""The fake libnvidia-ml (testbed/fakenvml, a simulator) driven by the real, unmodified pynvml.

pynvml loads libnvidia-ml.so.1 once per process, so every check runs pynvml in
a subprocess (fake_nvml.python) with LD_LIBRARY_PATH pointing at the fake.
"""

from __future__ import annotations

import ctypes
import subprocess
import sys

import pynvml
import pytest

from ansible_collections.gpupool.core.plugins.module_utils.mig import catalog as cat
from ansible_collections.gpupool.core.plugins.module_utils.mig import placement as mig_placement
from testbed import mig_tables
from testbed.fakenvml import gen_symbols
from testbed.fakenvml_config import LIB

A100_NAME = "NVIDIA A100-SXM4-40GB"

HELPERS = """
import ctypes, pynvml
def err(fn, *args):
    try:
        fn(*args)
    except pynvml.NVMLError as e:
        return e.value
    return 0
def place(start, size):
    p = pynvml.c_nvmlGpuInstancePlacement_t()
    p.start, p.size = start, size
    return ctypes.byref(p)
def gis(h, profile_id, n=8):
    arr = (pynvml.c_nvmlGpuInstance_t * n)()
    c = ctypes.c_uint(0)
    pynvml.nvmlDeviceGetGpuInstances(h, profile_id, arr, ctypes.byref(c))
    return [pynvml.nvmlGpuInstanceGetInfo(arr[i]) for i in range(c.value)]
"""


def test_library_exports_every_function_pynvml_looks_up(fake_nvml_lib):
    lib = ctypes.CDLL(LIB)
    missing = [n for n in gen_symbols.names() if not hasattr(lib, n)]
    assert missing == [], (
        "the installed pynvml looks up functions the fake does not export; regenerate "
        "testbed/fakenvml/nvml_symbols.txt with gen_symbols.py: %s" % missing
    )


def test_lists_the_configured_gpus(fake_nvml):
    fake_nvml.configure(
        [
            {"model": "A100-40GB"},
            {"model": "H100-80GB", "mig": True},
            {"model": "T4", "uuid": "GPU-00000000-1111-2222-3333-444444444444", "pci_bus_id": "00000000:AF:00.0"},
        ],
        driver_version="570.172.08",
        cuda_driver_version=12080,
    )
    (out,) = fake_nvml.python(
        HELPERS
        + """
pynvml.nvmlInit()
gpus = []
for i in range(pynvml.nvmlDeviceGetCount()):
    h = pynvml.nvmlDeviceGetHandleByIndex(i)
    pci = pynvml.nvmlDeviceGetPciInfo(h)
    gpus.append(dict(name=pynvml.nvmlDeviceGetName(h), uuid=pynvml.nvmlDeviceGetUUID(h),
        mem=pynvml.nvmlDeviceGetMemoryInfo(h).total, bus=pci.busId.decode() if isinstance(pci.busId, bytes) else pci.busId,
        dev=pci.pciDeviceId, arch=pynvml.nvmlDeviceGetArchitecture(h), brand=pynvml.nvmlDeviceGetBrand(h),
        cc=list(pynvml.nvmlDeviceGetCudaComputeCapability(h)), index=pynvml.nvmlDeviceGetIndex(h),
        mig=err(pynvml.nvmlDeviceGetMigMode, h) or pynvml.nvmlDeviceGetMigMode(h),
        byuuid=pynvml.nvmlDeviceGetIndex(pynvml.nvmlDeviceGetHandleByUUID(pynvml.nvmlDeviceGetUUID(h).encode())),
        bybus=pynvml.nvmlDeviceGetIndex(pynvml.nvmlDeviceGetHandleByPciBusId(pci.busId))))
emit(dict(driver=pynvml.nvmlSystemGetDriverVersion(), nvml=pynvml.nvmlSystemGetNVMLVersion(),
          cuda=pynvml.nvmlSystemGetCudaDriverVersion(), gpus=gpus))
pynvml.nvmlShutdown()
"""
    )
    assert out["driver"] == "570.172.08" and out["cuda"] == 12080
    a100, h100, t4 = out["gpus"]
    assert a100["name"] == A100_NAME and a100["mem"] == 40960 << 20 and a100["bus"] == "00000000:07:00.0"
    assert a100["dev"] == 0x20B010DE and a100["arch"] == pynvml.NVML_DEVICE_ARCH_AMPERE and a100["cc"] == [8, 0]
    assert a100["brand"] == pynvml.NVML_BRAND_NVIDIA and a100["mig"] == [0, 0]
    assert h100["name"] == "NVIDIA H100 80GB HBM3" and h100["arch"] == pynvml.NVML_DEVICE_ARCH_HOPPER
    assert h100["mig"] == [1, 1] and h100["bus"] == "00000000:0F:00.0"
    assert t4["uuid"] == "GPU-00000000-1111-2222-3333-444444444444" and t4["bus"] == "00000000:AF:00.0"
    assert t4["brand"] == pynvml.NVML_BRAND_TESLA and t4["mig"] == pynvml.NVML_ERROR_NOT_SUPPORTED
    assert [g["index"] for g in out["gpus"]] == [0, 1, 2] == [g["byuuid"] for g in out["gpus"]]
    assert [g["bybus"] for g in out["gpus"]] == [0, 1, 2]
    assert len({g["uuid"] for g in out["gpus"]}) == 3


def test_init_errors_are_nvmls(fake_nvml):
    (out,) = fake_nvml.python(
        """
import pynvml
try:
    pynvml.nvmlInit()
    emit("ok")
except pynvml.NVMLError as e:
    emit([e.value, str(e)])
""",
        env={"FAKE_NVML_CONFIG": ""},
    )
    assert out == [pynvml.NVML_ERROR_DRIVER_NOT_LOADED, "Driver Not Loaded"]
    fake_nvml.configure(init_return=pynvml.NVML_ERROR_NO_PERMISSION)
    (out,) = fake_nvml.python("""
import pynvml
try:
    pynvml.nvmlInit()
except pynvml.NVMLError as e:
    emit(e.value)
""")
    assert out == pynvml.NVML_ERROR_NO_PERMISSION


def test_calls_before_init_and_unimplemented_calls(fake_nvml):
    (out,) = fake_nvml.python(
        HELPERS
        + """
lib = ctypes.CDLL("libnvidia-ml.so.1")
c = ctypes.c_uint(0)
before = lib.nvmlDeviceGetCount_v2(ctypes.byref(c))
pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(0)
emit(dict(before=before, power=err(pynvml.nvmlDeviceGetPowerUsage, h),
          ecc=err(pynvml.nvmlDeviceGetEccMode, h), badindex=err(pynvml.nvmlDeviceGetHandleByIndex, 5),
          shutdown=err(pynvml.nvmlShutdown)))
"""
    )
    assert out == {
        "before": pynvml.NVML_ERROR_UNINITIALIZED,
        "power": pynvml.NVML_ERROR_NOT_SUPPORTED,
        "ecc": pynvml.NVML_ERROR_NOT_SUPPORTED,
        "badindex": pynvml.NVML_ERROR_INVALID_ARGUMENT,
        "shutdown": 0,
    }


def test_ampere_mig_enable_is_pending_until_reset(fake_nvml):
    code = (
        HELPERS
        + """
pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(0)
emit(dict(mode=pynvml.nvmlDeviceGetMigMode(h),
          create=err(pynvml.nvmlDeviceCreateGpuInstance, h, 0)))
"""
    )
    (out,) = fake_nvml.python(
        HELPERS
        + """
pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(0)
emit([pynvml.nvmlDeviceSetMigMode(h, pynvml.NVML_DEVICE_MIG_ENABLE), pynvml.nvmlDeviceGetMigMode(h)])
"""
    )
    assert out == [pynvml.NVML_ERROR_RESET_REQUIRED, [0, 1]]
    (out,) = fake_nvml.python(code)  # another process sees the pending mode; no instances yet
    assert out == {"mode": [0, 1], "create": pynvml.NVML_ERROR_NOT_SUPPORTED}
    fake_nvml.reset(0)
    (out,) = fake_nvml.python(code)
    assert out == {"mode": [1, 1], "create": 0}
    assert fake_nvml.calls()[0] == "nvmlDeviceSetMigMode gpu=0 mode=1 -> 0 activation=16"


def test_hopper_mig_enable_is_immediate_and_busy_gpu_stays_pending(fake_nvml):
    fake_nvml.configure([{"model": "H100-80GB"}, {"model": "H100-80GB"}])
    fake_nvml.add_process(1, pid=4242)
    (out,) = fake_nvml.python(
        HELPERS
        + """
pynvml.nvmlInit()
res = []
for i in (0, 1):
    h = pynvml.nvmlDeviceGetHandleByIndex(i)
    res.append([pynvml.nvmlDeviceSetMigMode(h, 1), pynvml.nvmlDeviceGetMigMode(h)])
emit(res)
"""
    )
    assert out == [[0, [1, 1]], [pynvml.NVML_ERROR_IN_USE, [0, 1]]]


def test_profiles_and_placements_are_the_test_beds_tables(fake_nvml):
    """What pynvml reads back is the test bed's own table (testbed/mig_tables), row for row: ids, kinds,
    counts, placements, -lgip memory and SMs, engines - not the collection's catalog."""
    keys = sorted(k for k, g in mig_tables.GPUS.items() if g.mig)
    fake_nvml.configure([{"model": k} for k in keys])
    (out,) = fake_nvml.python(
        HELPERS
        + """
pynvml.nvmlInit()
res = []
for i in range(pynvml.nvmlDeviceGetCount()):
    h = pynvml.nvmlDeviceGetHandleByIndex(i)
    profs = {}
    for idx in range(pynvml.NVML_GPU_INSTANCE_PROFILE_COUNT):
        try:
            info = pynvml.nvmlDeviceGetGpuInstanceProfileInfo(h, idx)
        except pynvml.NVMLError_NotSupported:
            continue
        c = ctypes.c_uint(0)
        pynvml.nvmlDeviceGetGpuInstancePossiblePlacements(h, info.id, None, ctypes.byref(c))
        arr = (pynvml.c_nvmlGpuInstancePlacement_t * c.value)()
        pynvml.nvmlDeviceGetGpuInstancePossiblePlacements(h, info.id, arr, ctypes.byref(c))
        v2 = pynvml.nvmlDeviceGetGpuInstanceProfileInfo(h, idx, 2)
        name = v2.name.decode() if isinstance(v2.name, bytes) else v2.name
        profs[name] = [idx, info.id, info.sliceCount, info.instanceCount, [[p.start, p.size] for p in arr],
                       info.memorySizeMB, info.multiprocessorCount,
                       [info.copyEngineCount, info.decoderCount, info.encoderCount, info.jpegCount, info.ofaCount]]
    res.append(profs)
emit(res)
"""
    )
    assert len(out) == len(keys) == 13
    for key, profs in zip(keys, out):
        table = mig_tables.get(key)
        expected = {
            "MIG " + p.name: [
                p.nvml_index,
                p.profile_id,
                p.compute_slices,
                p.max_instances,
                [[s, p.memory_slices] for s in p.starts],
                p.memory_mib,
                p.multiprocessors,
                list(p.engines),
            ]
            for p in table.mig.profiles
        }
        assert profs == expected, key
    # Published -lgip numbers, not proportional estimates (H200 1g.18gb: 16.00 GiB, 16 SMs; 7g: 132 SMs).
    h200 = out[keys.index("H200-141GB")]
    assert h200["MIG 1g.18gb"][5:7] == [16384, 16] and h200["MIG 7g.141gb"][5:7] == [143104, 132]
    assert out[keys.index("RTX-PRO-6000")]["MIG 1g.24gb+me.all"][7] == [1, 4, 4, 4, 1]


def test_media_engines_are_handed_out_once(fake_nvml):
    """A30: the one JPEG/OFA unit goes to one +me instance; RTX PRO 6000: +me.all leaves only -me profiles."""
    fake_nvml.configure([{"model": "A30", "mig": True}, {"model": "RTX-PRO-6000", "mig": True}])
    (out,) = fake_nvml.python(
        HELPERS
        + """
pynvml.nvmlInit()
a30, rtx = pynvml.nvmlDeviceGetHandleByIndex(0), pynvml.nvmlDeviceGetHandleByIndex(1)
res = [err(pynvml.nvmlDeviceCreateGpuInstanceWithPlacement, a30, 21, place(0, 1)),   # 1g.6gb+me
       err(pynvml.nvmlDeviceCreateGpuInstanceWithPlacement, a30, 6, place(2, 2)),    # 2g.12gb+me: no JPEG left
       err(pynvml.nvmlDeviceCreateGpuInstanceWithPlacement, a30, 5, place(2, 2)),    # 2g.12gb: fine
       err(pynvml.nvmlDeviceCreateGpuInstanceWithPlacement, rtx, 65, place(0, 3)),   # 1g.24gb+me.all
       err(pynvml.nvmlDeviceCreateGpuInstanceWithPlacement, rtx, 14, place(3, 3)),   # 1g.24gb: no decoder left
       err(pynvml.nvmlDeviceCreateGpuInstanceWithPlacement, rtx, 67, place(3, 3)),   # 1g.24gb-me: fine
       err(pynvml.nvmlDeviceCreateGpuInstanceWithPlacement, rtx, 66, place(6, 6))]   # 2g.48gb-me: fine
emit(res)
"""
    )
    refused = pynvml.NVML_ERROR_INSUFFICIENT_RESOURCES
    assert out == [0, refused, 0, 0, refused, 0, 0]


def test_create_3g_at_start_4_refuse_overlap_and_second_process_sees_it(fake_nvml):
    fake_nvml.configure([{"model": "A100-40GB", "mig": True}])
    (out,) = fake_nvml.python(
        HELPERS
        + """
pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(0)
gi = pynvml.nvmlDeviceCreateGpuInstanceWithPlacement(h, 9, place(4, 4))
info = pynvml.nvmlGpuInstanceGetInfo(gi)
ci_prof = pynvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, pynvml.NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE,
                                                              pynvml.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
ci = pynvml.nvmlGpuInstanceCreateComputeInstance(gi, ci_prof.id)
mig = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(h, 0)
emit(dict(gi=[info.id, info.profileId, info.placement.start, info.placement.size],
          ci=pynvml.nvmlComputeInstanceGetInfo(ci).id,
          overlap_3g=err(pynvml.nvmlDeviceCreateGpuInstanceWithPlacement, h, 9, place(4, 4)),
          overlap_2g=err(pynvml.nvmlDeviceCreateGpuInstanceWithPlacement, h, 14, place(4, 2)),
          bad_start=err(pynvml.nvmlDeviceCreateGpuInstanceWithPlacement, h, 9, place(2, 4)),
          bad_size=err(pynvml.nvmlDeviceCreateGpuInstanceWithPlacement, h, 9, place(0, 2)),
          full_gpu=err(pynvml.nvmlDeviceCreateGpuInstance, h, 0),
          mig_uuid=pynvml.nvmlDeviceGetUUID(mig), mig_name=pynvml.nvmlDeviceGetName(mig),
          mig_mem=pynvml.nvmlDeviceGetMemoryInfo(mig).total, is_mig=pynvml.nvmlDeviceIsMigDeviceHandle(mig).value))
"""
    )
    assert out["gi"][1:] == [9, 4, 4]
    assert out["overlap_3g"] == out["overlap_2g"] == out["full_gpu"] == pynvml.NVML_ERROR_INSUFFICIENT_RESOURCES
    assert out["bad_start"] == out["bad_size"] == pynvml.NVML_ERROR_INVALID_ARGUMENT
    assert out["mig_uuid"].startswith("MIG-") and out["mig_name"] == A100_NAME + " MIG 3g.20gb"
    assert out["mig_mem"] == 20096 << 20 and out["is_mig"] == 1  # 19.62 GiB in the MIG guide's -lgip
    # A second process sees the first one's instances and MIG device.
    (seen,) = fake_nvml.python(
        HELPERS
        + """
pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(0)
mig = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(h, 0)
emit(dict(gis=[[i.id, i.profileId, i.placement.start, i.placement.size] for i in gis(h, 9)],
          uuid=pynvml.nvmlDeviceGetUUID(mig), gi=pynvml.nvmlDeviceGetGpuInstanceId(mig),
          ci=pynvml.nvmlDeviceGetComputeInstanceId(mig),
          parent=pynvml.nvmlDeviceGetIndex(pynvml.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig)),
          byuuid=pynvml.nvmlDeviceGetGpuInstanceId(pynvml.nvmlDeviceGetHandleByUUID(pynvml.nvmlDeviceGetUUID(mig).encode())),
          next=err(pynvml.nvmlDeviceGetMigDeviceHandleByIndex, h, 1),
          beyond=err(pynvml.nvmlDeviceGetMigDeviceHandleByIndex, h, 7)))
"""
    )
    assert seen["gis"] == [out["gi"]]
    assert seen["uuid"] == out["mig_uuid"] and seen["gi"] == out["gi"][0] == seen["byuuid"] and seen["ci"] == out["ci"]
    assert seen["parent"] == 0
    assert seen["next"] == pynvml.NVML_ERROR_NOT_FOUND and seen["beyond"] == pynvml.NVML_ERROR_INVALID_ARGUMENT
    gpu = fake_nvml.state().gpus[0]
    assert list(gpu["gis"].values()) == [{"profile_id": 9, "start": 4, "size": 4}]


def test_destroy_order_in_use_and_limits(fake_nvml):
    fake_nvml.configure([{"model": "A100-40GB", "mig": True, "instances": [{"profile": "3g.20gb", "start": 4}]}])
    (out,) = fake_nvml.python(
        HELPERS
        + """
pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(0)
(info,) = gis(h, 9)
gi = pynvml.nvmlDeviceGetGpuInstanceById(h, info.id)
res = dict(gi_busy=err(pynvml.nvmlGpuInstanceDestroy, gi), mode_busy=err(pynvml.nvmlDeviceSetMigMode, h, 0))
ci = pynvml.nvmlGpuInstanceGetComputeInstanceById(gi, 0)
res["ci"] = err(pynvml.nvmlComputeInstanceDestroy, ci)
res["gi"] = err(pynvml.nvmlGpuInstanceDestroy, gi)
res["gone"] = err(pynvml.nvmlDeviceGetGpuInstanceById, h, info.id)
res["ones"] = [err(pynvml.nvmlDeviceCreateGpuInstance, h, 19) for _ in range(8)]
res["disable_busy"] = err(pynvml.nvmlDeviceSetMigMode, h, 0)
emit(res)
"""
    )
    assert out["gi_busy"] == out["mode_busy"] == pynvml.NVML_ERROR_IN_USE
    assert out["ci"] == out["gi"] == 0 and out["gone"] == pynvml.NVML_ERROR_NOT_FOUND
    assert out["ones"] == [0] * 7 + [pynvml.NVML_ERROR_INSUFFICIENT_RESOURCES]
    assert out["disable_busy"] == pynvml.NVML_ERROR_IN_USE
    assert sorted(g["start"] for g in fake_nvml.state().gpus[0]["gis"].values()) == list(range(7))


def test_compute_instance_profiles_of_a_3g_instance(fake_nvml):
    fake_nvml.configure([{"model": "A100-40GB", "mig": True, "instances": [{"profile": "3g.20gb", "start": 0}]}])
    (out,) = fake_nvml.python(
        HELPERS
        + """
pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(0)
gi = pynvml.nvmlDeviceGetGpuInstanceById(h, gis(h, 9)[0].id)
profs = {}
for idx in range(pynvml.NVML_COMPUTE_INSTANCE_PROFILE_COUNT):
    try:
        i = pynvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, idx, 0)
        profs[idx] = [i.sliceCount, i.instanceCount, i.name.decode() if isinstance(i.name, bytes) else i.name]
    except pynvml.NVMLError as e:
        profs[idx] = e.value
emit(profs)
"""
    )
    assert out["0"] == [1, 3, "MIG 1c.3g.20gb"] and out["2"] == [3, 1, "MIG 3g.20gb"]
    assert out["3"] == out["4"] == pynvml.NVML_ERROR_NOT_SUPPORTED


def test_running_processes(fake_nvml):
    fake_nvml.configure(
        [{"model": "A100-40GB", "mig": True, "instances": [{"profile": "7g.40gb", "start": 0}]}, {"model": "A100-40GB"}]
    )
    fake_nvml.add_process(0, pid=1234, used_mib=2048, gpu_instance_id=0, compute_instance_id=0)
    fake_nvml.add_process(1, pid=99)
    (out,) = fake_nvml.python(
        HELPERS
        + """
pynvml.nvmlInit()
res = []
for i in (0, 1):
    h = pynvml.nvmlDeviceGetHandleByIndex(i)
    res.append([[p.pid, p.usedGpuMemory, p.gpuInstanceId, p.computeInstanceId]
                for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h)])
h = pynvml.nvmlDeviceGetHandleByIndex(0)
gi = pynvml.nvmlDeviceGetGpuInstanceById(h, 0)
res.append(err(pynvml.nvmlComputeInstanceDestroy, pynvml.nvmlGpuInstanceGetComputeInstanceById(gi, 0)))
emit(res)
"""
    )
    assert out == [[[1234, 2048 << 20, 0, 0]], [[99, 1024 << 20, 0xFFFFFFFF, 0xFFFFFFFF]], pynvml.NVML_ERROR_IN_USE]


def test_fabric_info(fake_nvml):
    fake_nvml.configure(
        [
            {"model": "GB200", "fabric": {"cluster_uuid": "6b1c2b3c-7a43-4a4e-9e4c-0123456789ab", "clique_id": 32766}},
            {"model": "A100-40GB"},
            {"model": "GB200", "fabric": {"state": 2}},
        ]
    )
    (out,) = fake_nvml.python(
        HELPERS
        + """
import uuid
pynvml.nvmlInit()
res = []
for i in range(3):
    h = pynvml.nvmlDeviceGetHandleByIndex(i)
    row = []
    for cls in (pynvml.c_nvmlGpuFabricInfo_v2_t, pynvml.c_nvmlGpuFabricInfo_v3_t):
        info = cls()
        e = err(pynvml.nvmlDeviceGetGpuFabricInfoV, h, ctypes.byref(info))
        row.append(e or [str(uuid.UUID(bytes=bytes(bytearray(info.clusterUuid)))), info.cliqueId, info.state,
                         info.status] + ([info.healthSummary] if hasattr(info, "healthSummary") else []))
    legacy = pynvml.c_nvmlGpuFabricInfo_t()
    row.append(err(pynvml.nvmlDeviceGetGpuFabricInfo, h, ctypes.byref(legacy)) or legacy.cliqueId)
    bad = pynvml.c_nvmlGpuFabricInfo_v2_t()
    bad.version = 7
    row.append(err(pynvml.nvmlDeviceGetGpuFabricInfoV, h, ctypes.byref(bad)))
    res.append(row)
emit(res)
"""
    )
    gb200, a100, registering = out
    assert gb200[0] == ["6b1c2b3c-7a43-4a4e-9e4c-0123456789ab", 32766, pynvml.NVML_GPU_FABRIC_STATE_COMPLETED, 0]
    assert gb200[1] == gb200[0] + [pynvml.NVML_GPU_FABRIC_HEALTH_SUMMARY_HEALTHY]
    assert gb200[2] == 32766 and gb200[3] == pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH
    assert a100[:3] == [pynvml.NVML_ERROR_NOT_SUPPORTED] * 3
    assert registering[0][2] == pynvml.NVML_GPU_FABRIC_STATE_IN_PROGRESS


def test_state_is_shared_and_locked_across_concurrent_processes(fake_nvml):
    fake_nvml.configure([{"model": "A100-40GB", "mig": True}])
    code = (
        "import pynvml\npynvml.nvmlInit()\nh = pynvml.nvmlDeviceGetHandleByIndex(0)\nok = 0\n"
        "for _ in range(7):\n"
        "    try:\n        pynvml.nvmlDeviceCreateGpuInstance(h, 19); ok += 1\n"
        "    except pynvml.NVMLError_InsufficientResources:\n        pass\nprint(ok)\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code], env=fake_nvml.env, stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    created = sum(int(p.communicate(timeout=60)[0]) for p in procs)
    assert created == 7
    gis = fake_nvml.state().gpus[0]["gis"]
    assert sorted(g["start"] for g in gis.values()) == list(range(7))


@pytest.mark.parametrize("key", ["A30", "H200-141GB", "GB200", "RTX-PRO-6000", "GB300"])
def test_planner_layouts_create_on_other_gpus(fake_nvml, key):
    """Every instance the collection's planner places for each maximal layout is accepted by the fake
    (built from the test bed's own tables) at that placement: two independent witnesses agree."""
    model = cat.get_gpu(key)
    layouts = mig_placement.maximal_layouts(model)[:8]
    placed = [[[i.profile_id, i.start, i.size] for i in mig_placement.plan(model, layout)] for layout in layouts]
    fake_nvml.configure([{"model": key, "mig": True} for _ in layouts])
    (out,) = fake_nvml.python(
        HELPERS
        + """
pynvml.nvmlInit()
emit([[err(pynvml.nvmlDeviceCreateGpuInstanceWithPlacement, pynvml.nvmlDeviceGetHandleByIndex(gpu), pid,
           place(s, z)) for pid, s, z in instances] for gpu, instances in enumerate(%r)])
"""
        % (placed,)
    )
    assert out == [[0] * len(p) for p in placed]
