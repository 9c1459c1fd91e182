"""Configuration and state files of the fake libnvidia-ml (testbed/fakenvml), a SIMULATOR.

The C library (testbed/fakenvml/fakenvml.c) reads a line-oriented `key=value`
node description and a state file. This module writes both from a short node
description, taking every GPU's identity and MIG profile table from the test
bed's own tables (testbed/mig_tables: NVIDIA's published -lgip/-lgipp data,
each row citing its source), never from the collection's catalog: the fake is
an independent witness that a wrong catalog entry cannot fool.

    node = {"gpus": [{"model": "A100-40GB"}, {"model": "A100-40GB", "mig": True}]}
    paths = write(node, "/tmp/fake")         # config, state, log
    env = environment(paths)                 # LD_LIBRARY_PATH + FAKE_NVML_*
    reset(paths.state, 0)                    # "GPU reset": apply the pending MIG mode

GPU keys: model (table key or product name, required), name (NVML product
name, default the table's first), uuid, pci_bus_id, memory_mib, minor_number,
mig (current mode, bool), mig_pending (default = mig), instances ([{profile,
start}] created with a full-size compute instance), processes ([{pid,
used_mib, gpu_instance_id, compute_instance_id}]), fabric ({cluster_uuid,
clique_id, state, status, health_summary}; default: GPUs with multi-node
NVLink get a completed registration, others NOT_SUPPORTED),
profile_names ({table name: reported name}, to simulate a driver that names
profiles differently), drop_profiles ([table names the driver does not
offer]), profile_starts ({table name: [placement starts]}, a driver or board
whose placements differ from the tables). Node keys: gpus, name, driver_version, cuda_driver_version,
nvml_version, init_return (an NVML error code nvmlInit returns).

Command line: python -m testbed.fakenvml_config --model A100-40GB --count 2 --dir DIR
prints the environment to export.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import subprocess
import sys
import uuid as _uuid
from collections import namedtuple

from testbed import mig_tables

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC_DIR = os.path.join(ROOT, "testbed", "fakenvml")
LIB_DIR = os.path.join(SRC_DIR, "build")
LIB = os.path.join(LIB_DIR, "libnvidia-ml.so.1")

# nvmlDeviceArchitecture_t and nvmlBrandType_t values (nvml.h / pynvml).
ARCHITECTURE = {
    "Kepler": 2,
    "Maxwell": 3,
    "Pascal": 4,
    "Volta": 5,
    "Turing": 6,
    "Ampere": 7,
    "Ada Lovelace": 8,
    "Hopper": 9,
    "Blackwell": 10,
}
BRAND_TESLA, BRAND_NVIDIA = 2, 14
FABRIC_COMPLETED = 3
# PCI buses of a DGX A100 / HGX board, in GPU index order.
PCI_BUSES = (0x07, 0x0F, 0x47, 0x4E, 0x87, 0x90, 0xB7, 0xBD)
# Full-size compute-instance profile index for a GPU instance of N compute slices (NVML_COMPUTE_INSTANCE_PROFILE_*).
CI_PROFILE_FOR_SLICES = {1: 0, 2: 1, 3: 2, 4: 3, 7: 4, 8: 5, 6: 6}

Paths = namedtuple("Paths", "config state log")


def build(quiet=True):
    """Build testbed/fakenvml/build/libnvidia-ml.so.1 (make; a no-op when up to date)."""
    cmd = ["make", "-s" if quiet else "--no-print-directory", "-C", SRC_DIR]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(
            "building the fake libnvidia-ml failed (%s):\n%s%s" % (" ".join(cmd), proc.stdout, proc.stderr)
        )
    return LIB_DIR


def gpu_lines(index, spec, node_name="fake-node"):
    spec = dict(spec)
    model = mig_tables.get(spec.pop("model"))
    name = spec.pop("name", model.product_names[0])
    uuid = spec.pop("uuid", "GPU-%s" % _uuid.uuid5(_uuid.NAMESPACE_DNS, "%s.gpu%d" % (node_name, index)))
    bus = PCI_BUSES[index] if index < len(PCI_BUSES) else 0x10 + index
    pci_bus_id = spec.pop("pci_bus_id", "00000000:%02X:00.0" % bus)
    mig = bool(spec.pop("mig", False))
    pending = bool(spec.pop("mig_pending", mig))
    renames = spec.pop("profile_names", {})
    dropped = set(spec.pop("drop_profiles", ()))
    starts = {name: tuple(v) for name, v in spec.pop("profile_starts", {}).items()}
    fabric = spec.pop("fabric", "default")
    memory_mib = spec.pop("memory_mib", model.memory_mib)
    minor = spec.pop("minor_number", index)
    spec.pop("instances", None)
    spec.pop("processes", None)
    if spec:
        raise ValueError("unknown GPU keys for the fake NVML: %s" % ", ".join(sorted(spec)))
    p = "device.%d." % index
    lines = [
        p + "name=" + name,
        p + "uuid=" + uuid,
        p + "pci_bus_id=" + pci_bus_id,
        p + "pci_device_id=" + (model.pci_device_ids[0] if model.pci_device_ids else "0x000010DE"),
        p + "pci_subsystem_id=0x%08X" % 0x10DE,
        p + "memory_mib=%d" % memory_mib,
        p + "architecture=%d" % ARCHITECTURE.get(model.architecture, 0),
        p + "brand=%d" % (BRAND_TESLA if name.startswith("Tesla") else BRAND_NVIDIA),
        p + "cuda_compute_capability=" + model.compute_capability,
        p + "minor_number=%d" % minor,
        p + "sm_count=%d" % (model.sm_count or 0),
        p + "mig_capable=%d" % bool(model.mig),
        p + "mig_needs_reset=%d" % bool(model.mig_mode_needs_reset),
        p + "mig_mode=%d" % (mig and bool(model.mig)),
        p + "mig_pending=%d" % (pending and bool(model.mig)),
    ]
    if model.mig:
        lines += [
            p + "memory_slices=%d" % model.mig.memory_slices,
            p + "compute_slices=%d" % model.mig.compute_slices,
            # What the whole GPU has: instances together never get more (two +me on A30 fail).
            p + "engines_total=%d %d %d %d %d" % tuple(model.mig.engines),
        ]
        for prof in model.mig.profiles:
            if prof.name in dropped:
                continue
            lines.append(
                p
                + "gi_profile=%d %d %d %d %d %d %d %d %d %d %d %d %s %s"
                % (
                    (
                        prof.nvml_index,
                        prof.profile_id,
                        prof.compute_slices,
                        prof.memory_slices,
                        prof.max_instances,
                        prof.memory_mib,
                        prof.multiprocessors,
                    )
                    + tuple(prof.engines)
                    + (",".join(str(s) for s in starts.get(prof.name, prof.starts)), renames.get(prof.name, prof.name))
                )
            )
    if fabric == "default":
        fabric = {} if model.multinode_nvlink else None
    if fabric is not None:
        fab = {
            "cluster_uuid": str(_uuid.uuid5(_uuid.NAMESPACE_DNS, node_name + ".nvl72")),
            "clique_id": 1,
            "state": FABRIC_COMPLETED,
            "status": 0,
            "health_summary": 1,
        }
        fab.update(fabric)
        lines += [
            p + "fabric=1",
            p + "fabric_cluster_uuid=" + fab["cluster_uuid"],
            p + "fabric_clique_id=%d" % fab["clique_id"],
            p + "fabric_state=%d" % fab["state"],
            p + "fabric_status=%d" % fab["status"],
            p + "fabric_health_summary=%d" % fab["health_summary"],
        ]
    return lines


def render_config(node):
    node = dict(node)
    gpus = node.pop("gpus")
    name = node.pop("name", "fake-node")
    lines = [
        "# fake libnvidia-ml node description (SIMULATOR; generated by testbed/fakenvml_config.py)",
        "driver_version=" + node.pop("driver_version", "550.127.05"),
        "nvml_version=" + node.pop("nvml_version", "12.550.127.05"),
        "cuda_driver_version=%d" % node.pop("cuda_driver_version", 12040),
        "device_count=%d" % len(gpus),
    ]
    if "init_return" in node:
        lines.append("init_return=%d" % node.pop("init_return"))
    if node:
        raise ValueError("unknown node keys for the fake NVML: %s" % ", ".join(sorted(node)))
    for i, gpu in enumerate(gpus):
        lines += gpu_lines(i, gpu, name)
    return "\n".join(lines) + "\n"


# ---- state: the same line format fakenvml.c reads and writes ----
class State:
    """Parsed state file: per GPU mig (current, pending), gis {id: ...}, cis, procs."""

    def __init__(self, ngpus):
        self.gpus = [{"mig": [0, 0], "gis": {}, "cis": {}, "procs": []} for _ in range(ngpus)]

    @classmethod
    def parse(cls, text, ngpus=None):
        rows = [line.split() for line in text.splitlines() if line.strip() and not line.startswith("#")]
        n = ngpus if ngpus is not None else 1 + max([int(r[1]) for r in rows] or [-1])
        st = cls(n)
        for r in rows:
            d = int(r[1])
            g = st.gpus[d]
            if r[0] == "mig":
                g["mig"] = [int(r[2]), int(r[3])]
            elif r[0] == "gi":
                g["gis"][int(r[2])] = {"profile_id": int(r[3]), "start": int(r[4]), "size": int(r[5])}
            elif r[0] == "ci":
                g["cis"][(int(r[2]), int(r[3]))] = {"profile_id": int(r[4]), "start": int(r[5]), "size": int(r[6])}
            elif r[0] == "proc":
                g["procs"].append(
                    {
                        "pid": int(r[2]),
                        "used_mib": int(r[3]),
                        "gpu_instance_id": int(r[4]),
                        "compute_instance_id": int(r[5]),
                    }
                )
        return st

    def render(self):
        out = ["# fake libnvidia-ml state (simulator; testbed/fakenvml)"]
        for d, g in enumerate(self.gpus):
            out.append("mig %d %d %d" % (d, g["mig"][0], g["mig"][1]))
            for gi, v in sorted(g["gis"].items()):
                out.append("gi %d %d %d %d %d" % (d, gi, v["profile_id"], v["start"], v["size"]))
                for (cgi, ci), c in sorted(g["cis"].items()):
                    if cgi == gi:
                        out.append("ci %d %d %d %d %d %d" % (d, gi, ci, c["profile_id"], c["start"], c["size"]))
            for p in g["procs"]:
                out.append(
                    "proc %d %d %d %d %d" % (d, p["pid"], p["used_mib"], p["gpu_instance_id"], p["compute_instance_id"])
                )
        return "\n".join(out) + "\n"


def initial_state(node):
    """State text for the node's initial MIG mode, instances and processes."""
    st = State(len(node["gpus"]))
    for d, spec in enumerate(node["gpus"]):
        model = mig_tables.get(spec["model"])
        mig = bool(spec.get("mig", False)) and bool(model.mig)
        st.gpus[d]["mig"] = [int(mig), int(bool(spec.get("mig_pending", mig)) and bool(model.mig))]
        renames = spec.get("profile_names", {})
        for inst in spec.get("instances", ()):
            name = inst["profile"]
            prof = next((p for p in model.mig.profiles if p.name == name or renames.get(p.name) == name), None)
            if prof is None:
                raise ValueError("%s has no MIG profile %r" % (model.key, name))
            full = prof.compute_slices >= model.mig.compute_slices
            used = set(st.gpus[d]["gis"])
            gi = 0 if full and 0 not in used else min(i for i in range(1, 16) if i not in used)
            st.gpus[d]["gis"][gi] = {"profile_id": prof.profile_id, "start": inst["start"], "size": prof.memory_slices}
            st.gpus[d]["cis"][(gi, 0)] = {
                "profile_id": CI_PROFILE_FOR_SLICES[prof.compute_slices],
                "start": 0,
                "size": prof.compute_slices,
            }
        for proc in spec.get("processes", ()):
            st.gpus[d]["procs"].append(
                {
                    "pid": proc["pid"],
                    "used_mib": proc.get("used_mib", 1024),
                    "gpu_instance_id": proc.get("gpu_instance_id", -1),
                    "compute_instance_id": proc.get("compute_instance_id", -1),
                }
            )
    return st.render()


def _atomic_write(path, text):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def write(node, directory):
    """Write config.txt and state.txt (and an empty calls.log) under directory; returns Paths."""
    os.makedirs(directory, exist_ok=True)
    paths = Paths(
        os.path.join(directory, "config.txt"),
        os.path.join(directory, "state.txt"),
        os.path.join(directory, "calls.log"),
    )
    _atomic_write(paths.config, render_config(node))
    with locked(paths.state):
        _atomic_write(paths.state, initial_state(node))
    open(paths.log, "w").close()
    return paths


def environment(paths, lib_dir=LIB_DIR, base=None):
    """Environment for a process that should load the fake: LD_LIBRARY_PATH first, FAKE_NVML_*."""
    env = dict(os.environ if base is None else base)
    env["LD_LIBRARY_PATH"] = lib_dir + (os.pathsep + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["FAKE_NVML_CONFIG"] = paths.config
    env["FAKE_NVML_STATE"] = paths.state
    env["FAKE_NVML_LOG"] = paths.log
    return env


@contextlib.contextmanager
def locked(state_path):
    """The same lock fakenvml.c takes (flock on <state>.lock)."""
    with open(state_path + ".lock", "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def read_state(state_path):
    with open(state_path) as fh:
        return State.parse(fh.read())


def update_state(state_path, change):
    """Apply change(State) under the lock and write the state back atomically."""
    with locked(state_path):
        st = read_state(state_path)
        change(st)
        _atomic_write(state_path, st.render())
        return st


def reset(state_path, index):
    """Simulate a GPU reset (nvidia-smi -r / reboot): the pending MIG mode becomes current and every
    GPU instance, compute instance and process on that GPU is gone."""

    def change(st):
        g = st.gpus[index]
        g["mig"][0] = g["mig"][1]
        g["gis"].clear()
        g["cis"].clear()
        g["procs"] = []

    return update_state(state_path, change)


def add_process(state_path, index, pid, used_mib=1024, gpu_instance_id=-1, compute_instance_id=-1):
    def change(st):
        st.gpus[index]["procs"].append(
            {
                "pid": pid,
                "used_mib": used_mib,
                "gpu_instance_id": gpu_instance_id,
                "compute_instance_id": compute_instance_id,
            }
        )

    return update_state(state_path, change)


def remove_processes(state_path, index):
    def change(st):
        st.gpus[index]["procs"] = []

    return update_state(state_path, change)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Write a fake libnvidia-ml node (simulator) and print its environment.")
    ap.add_argument("--model", default="A100-40GB", help="GPU model of testbed/mig_tables (default A100-40GB)")
    ap.add_argument("--count", type=int, default=1, help="number of GPUs")
    ap.add_argument("--mig", action="store_true", help="start with MIG mode enabled")
    ap.add_argument("--dir", required=True, help="directory for config.txt, state.txt and calls.log")
    args = ap.parse_args(argv)
    lib = build()
    paths = write({"gpus": [{"model": args.model, "mig": args.mig} for _ in range(args.count)]}, args.dir)
    env = environment(paths, lib, base={})
    for key in ("LD_LIBRARY_PATH", "FAKE_NVML_CONFIG", "FAKE_NVML_STATE", "FAKE_NVML_LOG"):
        print("export %s=%s" % (key, env[key]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
