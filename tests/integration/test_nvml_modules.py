"""gpupool.core.gpu_facts and gpupool.core.mig_config through ansible-playbook, on the fake libnvidia-ml.

Each test writes a node for the fake (testbed/fakenvml, a simulator), runs the
modules with the real pynvml in ansible-playbook subprocesses, and checks the
results against the fake's persisted state and its log of NVML writes.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

import pynvml
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, ".build", "collections")
A100 = "NVIDIA A100-SXM4-40GB"
BALANCED = {"3g.20gb": 1, "2g.10gb": 2}


def play(fake, tasks):
    """Run tasks [(module, args, options)] on localhost in one ansible-playbook; returns each registered result."""
    directory = tempfile.mkdtemp(prefix="play-", dir=fake.directory)
    body = []
    for n, (module, args, opts) in enumerate(tasks):
        task = {"name": "task %d" % n, module: args, "register": "r%d" % n, "ignore_errors": True}
        task.update(opts or {})
        body.append(task)
        body.append(
            {
                "name": "save %d" % n,
                "ansible.builtin.copy": {
                    "content": "{{ r%d | to_json }}" % n,
                    "dest": os.path.join(directory, "r%d.json" % n),
                },
                "check_mode": False,
                "diff": False,
            }
        )
    playbook = os.path.join(directory, "play.yml")
    with open(playbook, "w") as fh:
        json.dump([{"hosts": "localhost", "gather_facts": False, "tasks": body}], fh)
    env = {
        "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS,
        "ANSIBLE_CONFIG": os.path.join(ROOT, "ansible.cfg"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_LOCALHOST_WARNING": "0",
        "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0",
    }
    proc = fake.run(
        [
            os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
            "-i",
            "localhost,",
            "-c",
            "local",
            "-e",
            "ansible_python_interpreter=%s" % sys.executable,
            playbook,
        ],
        env=env,
        cwd=directory,
        timeout=300,
    )
    results = []
    for n in range(len(tasks)):
        path = os.path.join(directory, "r%d.json" % n)
        if not os.path.exists(path):
            raise AssertionError("ansible-playbook did not get to task %d:\n%s\n%s" % (n, proc.stdout, proc.stderr))
        with open(path) as fh:
            results.append(json.load(fh))
    return results


def run1(fake, module, args, **opts):
    return play(fake, [(module, args, opts)])[0]


def gis(fake, index=0):
    return sorted((g["profile_id"], g["start"]) for g in fake.state().gpus[index]["gis"].values())


# ---- gpu_facts ----


def test_gpu_facts_match_the_configured_node(fake_nvml):
    fake_nvml.configure(
        [
            {
                "model": "A100-40GB",
                "mig": True,
                "uuid": "GPU-11111111-2222-3333-4444-555555555555",
                "instances": [{"profile": "2g.10gb", "start": 0}, {"profile": "3g.20gb", "start": 4}],
                "processes": [{"pid": 777, "used_mib": 512, "gpu_instance_id": 2, "compute_instance_id": 0}],
            },
            {
                "model": "GB200",
                "pci_bus_id": "00000009:01:00.0",
                "fabric": {"cluster_uuid": "6b1c2b3c-7a43-4a4e-9e4c-0123456789ab", "clique_id": 7},
            },
            {"model": "T4"},
        ],
        driver_version="570.172.08",
        cuda_driver_version=12080,
    )
    # The MIG device UUIDs as pynvml itself reads them, to compare with.
    (uuids,) = fake_nvml.python("""
import pynvml
pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(0)
out = {}
for i in range(pynvml.nvmlDeviceGetMaxMigDeviceCount(h)):
    try:
        m = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(h, i)
    except pynvml.NVMLError_NotFound:
        continue
    out[pynvml.nvmlDeviceGetGpuInstanceId(m)] = pynvml.nvmlDeviceGetUUID(m)
emit(out)
""")
    res = run1(fake_nvml, "gpupool.core.gpu_facts", {"include_profiles": True})
    assert res["changed"] is False and res["nvml_available"] is True, res
    assert res["driver_version"] == "570.172.08" and res["cuda_driver_version"] == "12.8"
    a100, gb200, t4 = res["gpus"]
    assert res["ansible_facts"]["gpupool_gpus"] == res["gpus"]
    assert a100["uuid"] == "GPU-11111111-2222-3333-4444-555555555555" and a100["name"] == A100
    assert (a100["brand"], a100["architecture"], a100["cuda_compute_capability"]) == ("NVIDIA", "Ampere", "8.0")
    assert a100["memory_mib"] == 40960 and a100["pci_bus_id"] == "00000000:07:00.0"
    assert a100["catalog_model"] == "A100-40GB" and a100["catalog_differences"] == []
    assert a100["driver_version"] == "570.172.08" and a100["cuda_driver_version"] == "12.8"
    mig = a100["mig"]
    assert (mig["capable"], mig["current"], mig["pending"], mig["mode_change_pending"]) == (True, True, True, False)
    got = [
        (i["gpu_instance_id"], i["profile"], i["profile_id"], i["start"], i["size"], i["uuid"])
        for i in mig["instances"]
    ]
    assert got == [(1, "2g.10gb", 14, 0, 2, uuids["1"]), (2, "3g.20gb", 9, 4, 4, uuids["2"])]
    assert mig["instances"][1]["compute_instances"] == [
        {
            "compute_instance_id": 0,
            "profile_id": 2,
            "profile": "3g.20gb",
            "compute_slices": 3,
            "start": 0,
            "full": True,
            "uuid": uuids["2"],
        }
    ]
    assert {p["name"] for p in mig["profiles"]} == {
        "1g.5gb",
        "1g.5gb+me",
        "1g.10gb",
        "2g.10gb",
        "3g.20gb",
        "4g.20gb",
        "7g.40gb",
    }
    assert a100["processes"] == [{"pid": 777, "used_memory_mib": 512, "gpu_instance_id": 2, "compute_instance_id": 0}]
    assert a100["fabric"] == {"supported": False}
    assert gb200["architecture"] == "Blackwell" and gb200["pci_bus_id"] == "00000009:01:00.0"
    assert gb200["fabric"] == {
        "supported": True,
        "cluster_uuid": "6b1c2b3c-7a43-4a4e-9e4c-0123456789ab",
        "clique_id": 7,
        "state": "completed",
        "status": "NVML_SUCCESS",
        "clique": "6b1c2b3c-7a43-4a4e-9e4c-0123456789ab.7",
        "health_summary": "healthy",
    }
    assert t4["brand"] == "Tesla" and t4["mig"]["capable"] is False and t4["catalog_model"] == "T4"
    assert fake_nvml.calls() == []  # read-only


def test_gpu_facts_fabric_not_completed_has_no_clique(fake_nvml):
    fake_nvml.configure([{"model": "GB200", "fabric": {"state": 2}}])
    res = run1(fake_nvml, "gpupool.core.gpu_facts", {"devices": [0]})
    assert res["gpus"][0]["fabric"]["state"] == "in_progress" and res["gpus"][0]["fabric"]["clique"] is None


def test_gpu_facts_reports_renamed_profiles(fake_nvml):
    fake_nvml.configure([{"model": "A100-40GB", "profile_names": {"3g.20gb": "3g.19gb"}}])
    res = run1(fake_nvml, "gpupool.core.gpu_facts", {"include_profiles": True})
    (diff,) = res["gpus"][0]["catalog_differences"]
    assert "3g.19gb" in diff and "catalog: 3g.20gb" in diff


def test_gpu_facts_without_nvml_says_so(fake_nvml):
    no_lib_env = {"environment": {"LD_LIBRARY_PATH": "/nonexistent"}}
    no_lib, required, no_driver, config = play(
        fake_nvml,
        [
            ("gpupool.core.gpu_facts", {}, no_lib_env),
            ("gpupool.core.gpu_facts", {"require_nvml": True}, no_lib_env),
            ("gpupool.core.gpu_facts", {}, {"environment": {"FAKE_NVML_CONFIG": ""}}),
            ("gpupool.core.mig_config", {"layout": BALANCED}, no_lib_env),
        ],
    )
    if no_lib.get("nvml_available"):
        pytest.skip("this host has a real libnvidia-ml.so.1 on the default loader path")
    assert not no_lib.get("failed")
    assert no_lib["nvml_available"] is False and "libnvidia-ml.so.1" in no_lib["msg"]
    assert "no NVIDIA driver" in no_lib["msg"] and "Traceback" not in json.dumps(no_lib)
    assert no_lib["ansible_facts"]["gpupool_nvml"]["available"] is False
    assert required["failed"] is True and "could not be loaded" in required["msg"]
    assert no_driver["nvml_available"] is False and "kernel driver is not loaded" in no_driver["msg"]
    assert config["failed"] is True and config["msg"].startswith("cannot configure MIG on this host: NVML")


def test_gpu_facts_unknown_index(fake_nvml):
    res = run1(fake_nvml, "gpupool.core.gpu_facts", {"devices": [0, 3]})
    assert res["failed"] is True and "GPU index 3 does not exist on this host" in res["msg"]


# ---- mig_config ----


def test_a100_enable_goes_pending_and_reports_reset_required(fake_nvml):
    fake_nvml.configure([{"model": "A100-40GB"}])
    first, second = play(
        fake_nvml,
        [("gpupool.core.mig_config", {"layout": BALANCED}, {}), ("gpupool.core.mig_config", {"layout": BALANCED}, {})],
    )
    assert first["changed"] is True and first["reset_required"] is True, first
    (gpu,) = first["gpus"]
    assert gpu["actions"][0]["action"] == "set_mig_mode"
    assert gpu["actions"][0]["activation_status"] == "NVML_ERROR_RESET_REQUIRED"
    assert gpu["after"] == {"mig_enabled": False, "mig_pending": True, "instances": []}
    assert fake_nvml.state().gpus[0]["mig"] == [0, 1] and gis(fake_nvml) == []
    assert second["changed"] is False and second["reset_required"] is True
    # After the GPU reset the instances are created where the planner puts them.
    fake_nvml.reset(0)
    fake_nvml.clear_calls()
    third = run1(fake_nvml, "gpupool.core.mig_config", {"layout": BALANCED})
    assert third["changed"] is True and third["reset_required"] is False
    assert gis(fake_nvml) == [(9, 4), (14, 0), (14, 2)]
    assert [c.split(" ->")[0] for c in fake_nvml.calls()] == [
        "nvmlDeviceCreateGpuInstanceWithPlacement gpu=0 profile_id=14 start=0 size=2",
        "nvmlGpuInstanceCreateComputeInstance gpu=0 gi=1 profile=1",
        "nvmlDeviceCreateGpuInstanceWithPlacement gpu=0 profile_id=14 start=2 size=2",
        "nvmlGpuInstanceCreateComputeInstance gpu=0 gi=2 profile=1",
        "nvmlDeviceCreateGpuInstanceWithPlacement gpu=0 profile_id=9 start=4 size=4",
        "nvmlGpuInstanceCreateComputeInstance gpu=0 gi=3 profile=2",
    ]


def test_layout_change_7g_to_3g_and_two_2g_then_unchanged(fake_nvml):
    fake_nvml.configure([{"model": "A100-40GB", "mig": True, "instances": [{"profile": "7g.40gb", "start": 0}]}])
    first, second = play(
        fake_nvml,
        [
            ("gpupool.core.mig_config", {"layout": BALANCED}, {"diff": True}),
            ("gpupool.core.mig_config", {"layout": BALANCED}, {"diff": True}),
        ],
    )
    assert first["changed"] is True, first
    assert first["diff"] == {
        "before": {"gpu0": {"mig_enabled": True, "instances": ["7g.40gb@0"]}},
        "after": {"gpu0": {"mig_enabled": True, "instances": ["2g.10gb@0", "2g.10gb@2", "3g.20gb@4"]}},
    }
    assert [a["action"] for a in first["gpus"][0]["actions"]] == [
        "destroy_compute_instance",
        "destroy_gpu_instance",
    ] + ["create_gpu_instance"] * 3
    assert [(i["profile"], i["start"]) for i in first["gpus"][0]["instances"]] == [
        ("2g.10gb", 0),
        ("2g.10gb", 2),
        ("3g.20gb", 4),
    ]
    assert all(i["uuid"].startswith("MIG-") for i in first["gpus"][0]["instances"])
    assert gis(fake_nvml) == [(9, 4), (14, 0), (14, 2)]
    assert second["changed"] is False and second["gpus"][0]["actions"] == []
    assert second["diff"]["before"] == second["diff"]["after"] == first["diff"]["after"]
    assert len(fake_nvml.calls()) == 2 + 6  # the second run wrote nothing


def test_check_mode_writes_nothing_and_shows_the_plan(fake_nvml):
    fake_nvml.configure(
        [{"model": "A100-40GB", "mig": True, "instances": [{"profile": "7g.40gb", "start": 0}]}, {"model": "A100-40GB"}]
    )
    before = fake_nvml.state_text()
    res = run1(fake_nvml, "gpupool.core.mig_config", {"layout": BALANCED}, check_mode=True, diff=True)
    assert res["changed"] is True and res["reset_required"] is True
    gpu0, gpu1 = res["gpus"]
    assert [(a["action"], a.get("profile"), a.get("start")) for a in gpu0["actions"]] == [
        ("destroy_compute_instance", None, None),
        ("destroy_gpu_instance", "7g.40gb", 0),
        ("create_gpu_instance", "2g.10gb", 0),
        ("create_gpu_instance", "2g.10gb", 2),
        ("create_gpu_instance", "3g.20gb", 4),
    ]
    assert gpu1["actions"] == [{"action": "set_mig_mode", "enabled": True}] and gpu1["reset_required"] is True
    assert res["diff"]["after"]["gpu0"]["instances"] == ["2g.10gb@0", "2g.10gb@2", "3g.20gb@4"]
    assert fake_nvml.calls() == [] and fake_nvml.state_text() == before


def test_infeasible_layout_is_refused_before_any_write(fake_nvml):
    fake_nvml.configure([{"model": "A100-40GB", "mig": True}, {"model": "A100-40GB", "mig": True}])
    before = fake_nvml.state_text()
    res, unknown, count = play(
        fake_nvml,
        [
            ("gpupool.core.mig_config", {"layouts": {"0": {"7g.40gb": 1}, "1": {"3g.20gb": 2, "2g.10gb": 1}}}, {}),
            ("gpupool.core.mig_config", {"layout": {"3g.40gb": 1}}, {}),
            ("gpupool.core.mig_config", {"layout": {"1g.5gb": "two"}}, {}),
        ],
    )
    assert res["failed"] is True
    assert res["msg"].startswith("MIG layout refused, no change made: GPU 1 (%s): " % A100)
    assert "needs 8 compute slices but A100-40GB has 7" in res["msg"] and "Layouts that fit" in res["msg"]
    assert unknown["failed"] is True and "has no MIG profile '3g.40gb'" in unknown["msg"]
    assert count["failed"] is True and "must be a whole number" in count["msg"]
    assert fake_nvml.calls() == [] and fake_nvml.state_text() == before


def test_busy_gpu_is_refused_unless_forced(fake_nvml):
    fake_nvml.configure(
        [
            {
                "model": "A100-40GB",
                "mig": True,
                "instances": [{"profile": "7g.40gb", "start": 0}],
                "processes": [{"pid": 4242, "gpu_instance_id": 0, "compute_instance_id": 0}],
            },
            {"model": "H100-80GB", "processes": [{"pid": 5151}]},
        ]
    )
    before = fake_nvml.state_text()
    refused, same = play(
        fake_nvml,
        [
            ("gpupool.core.mig_config", {"layout": BALANCED, "devices": [0]}, {}),
            # Unchanged GPUs are not refused: the layout the GPU already has is fine with processes.
            ("gpupool.core.mig_config", {"layout": {"7g.40gb": 1}, "devices": [0]}, {}),
        ],
    )
    assert refused["failed"] is True
    assert (
        "MIG change refused, no change made: GPU 0 (%s) runs 1 compute process(es), pid 4242" % A100 in refused["msg"]
    )
    assert "force: true" in refused["msg"]
    assert same["changed"] is False and not same.get("failed")
    assert fake_nvml.calls() == [] and fake_nvml.state_text() == before
    forced, hopper = play(
        fake_nvml,
        [
            # force: NVML itself still refuses to destroy the instance the process uses.
            ("gpupool.core.mig_config", {"layout": BALANCED, "devices": [0], "force": True}, {}),
            # force on a busy Hopper: the mode change stays pending (activation status IN_USE).
            ("gpupool.core.mig_config", {"devices": [1], "mig_enabled": True, "force": True}, {}),
        ],
    )
    assert forced["failed"] is True
    assert "NVML refused destroying compute instance 0 of GPU instance 0" in forced["msg"]
    assert "NVML_ERROR_IN_USE" in forced["msg"]
    assert hopper["changed"] is True and hopper["reset_required"] is True
    assert hopper["gpus"][0]["activation_status"] == "NVML_ERROR_IN_USE"


def test_hopper_enables_and_creates_in_one_run(fake_nvml):
    fake_nvml.configure([{"model": "H100-80GB"}])
    res = run1(fake_nvml, "gpupool.core.mig_config", {"layout": {"3g.40gb": 1, "2g.20gb": 2}})
    assert res["changed"] is True and res["reset_required"] is False
    assert fake_nvml.state().gpus[0]["mig"] == [1, 1] and gis(fake_nvml) == [(9, 4), (14, 0), (14, 2)]


def test_keeps_instances_already_in_place(fake_nvml):
    fake_nvml.configure([{"model": "A100-40GB", "mig": True, "instances": [{"profile": "3g.20gb", "start": 4}]}])
    res = run1(fake_nvml, "gpupool.core.mig_config", {"layout": BALANCED})
    assert res["gpus"][0]["kept_gpu_instances"] == [1]
    assert [a["action"] for a in res["gpus"][0]["actions"]] == ["create_gpu_instance"] * 2
    assert not any("Destroy" in c for c in fake_nvml.calls())


def test_disable_mig(fake_nvml):
    fake_nvml.configure(
        [
            {"model": "A100-40GB", "mig": True, "instances": [{"profile": "7g.40gb", "start": 0}]},
            {"model": "H100-80GB", "mig": True},
        ]
    )
    res = run1(fake_nvml, "gpupool.core.mig_config", {"mig_enabled": False}, diff=True)
    assert res["changed"] is True and res["reset_required"] is True
    assert [g["reset_required"] for g in res["gpus"]] == [True, False]
    assert [s["mig"] for s in fake_nvml.state().gpus] == [[1, 0], [0, 0]] and gis(fake_nvml) == []
    assert res["diff"]["after"]["gpu0"] == {"mig_enabled": True, "mig_pending": False, "instances": []}


def test_export_as_mig_parted_config(fake_nvml):
    fake_nvml.configure(
        [
            {
                "model": "A100-40GB",
                "mig": True,
                "instances": [
                    {"profile": "2g.10gb", "start": 0},
                    {"profile": "2g.10gb", "start": 2},
                    {"profile": "3g.20gb", "start": 4},
                ],
            },
            {
                "model": "A100-40GB",
                "mig": True,
                "instances": [
                    {"profile": "3g.20gb", "start": 4},
                    {"profile": "2g.10gb", "start": 2},
                    {"profile": "2g.10gb", "start": 0},
                ],
            },
            {"model": "A100-40GB"},
            {"model": "T4"},
        ]
    )
    res = run1(fake_nvml, "gpupool.core.mig_config", {"export": True, "export_name": "node-a"})
    assert res["changed"] is False and res["gpus"] == []
    assert res["mig_parted_config"] == {
        "version": "v1",
        "mig-configs": {
            "all-disabled": [{"devices": "all", "mig-enabled": False}],
            "node-a": [
                {"devices": [0, 1], "mig-enabled": True, "mig-devices": {"2g.10gb": 2, "3g.20gb": 1}},
                {"devices": [2], "mig-enabled": False},
            ],
        },
    }
    assert fake_nvml.calls() == []


def test_gpus_own_profile_names_win_with_a_warning(fake_nvml):
    fake_nvml.configure([{"model": "A100-40GB", "mig": True, "profile_names": {"3g.20gb": "3g.19gb"}}])
    res, again = play(
        fake_nvml,
        [
            ("gpupool.core.mig_config", {"layout": BALANCED}, {}),
            ("gpupool.core.mig_config", {"layout": {"3g.19gb": 1, "2g.10gb": 2}}, {}),
        ],
    )
    assert res["changed"] is True, res
    assert gis(fake_nvml) == [(9, 4), (14, 0), (14, 2)]
    assert [i["profile"] for i in res["gpus"][0]["instances"]] == ["2g.10gb", "2g.10gb", "3g.19gb"]
    warnings = " ".join(res.get("warnings", []))
    assert "3g.19gb" in warnings and "catalog: 3g.20gb" in warnings and "applied as 3g.19gb" in warnings
    assert again["changed"] is False


def test_argument_constraints(fake_nvml):
    mod = "gpupool.core.mig_config"
    both, nothing, off, bad_key, no_gpu = play(
        fake_nvml,
        [
            (mod, {"layout": BALANCED, "layouts": {"0": BALANCED}}, {}),
            (mod, {}, {}),
            (mod, {"layout": BALANCED, "mig_enabled": False}, {}),
            (mod, {"layouts": {"first": BALANCED}}, {}),
            (mod, {"layout": BALANCED, "devices": [4]}, {}),
        ],
    )
    assert both["failed"] is True and "mutually exclusive" in both["msg"]
    assert nothing["failed"] is True and nothing["msg"].startswith("nothing to do: give layout")
    assert off["failed"] is True and "a layout needs MIG enabled" in off["msg"]
    assert bad_key["failed"] is True and "layouts keys must be GPU indices" in bad_key["msg"]
    assert no_gpu["failed"] is True and "GPU index 4 does not exist" in no_gpu["msg"]
    t4 = fake_nvml.configure([{"model": "T4"}])
    no_mig = run1(t4, mod, {"layout": {"1g.5gb": 1}})
    assert no_mig["failed"] is True and "does not support MIG" in no_mig["msg"]
    assert fake_nvml.calls() == []


def test_nvml_error_codes_used_by_the_fake_are_pynvmls():
    # The constants the tests and the fake rely on, as the installed pynvml defines them.
    assert (
        pynvml.NVML_ERROR_INSUFFICIENT_RESOURCES,
        pynvml.NVML_ERROR_IN_USE,
        pynvml.NVML_ERROR_RESET_REQUIRED,
        pynvml.NVML_ERROR_NOT_SUPPORTED,
        pynvml.NVML_ERROR_INVALID_ARGUMENT,
    ) == (23, 19, 16, 3, 2)
