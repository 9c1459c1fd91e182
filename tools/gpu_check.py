#!/usr/bin/env python3
"""`make gpu-check`: gpupool's GPU catalog against the GPUs of this machine, read-only through NVML.

For every GPU NVML lists it reads - through the collection's own NVML reader (plugins/module_utils/nvml/facts.py,
the one gpu_facts uses) - the product name, PCI device id, memory, architecture, CUDA compute capability, MIG
capability and mode, and on a MIG-capable GPU every GPU-instance profile (nvmlDeviceGetGpuInstanceProfileInfo(V))
with its possible placements (nvmlDeviceGetGpuInstancePossiblePlacements). It compares them with the catalog
(plugins/module_utils/mig/catalog.py) and prints one table: what NVML says, what the catalog says, match or
MISMATCH. Only NVML queries are made: no MIG mode, instance, clock or any other setting is changed.

    python tools/gpu_check.py [--nvml-library PATH]

Exit status: 0 every compared fact matches (also: no NVIDIA driver or GPU here - one line says so and nothing
is checked); 1 a mismatch (the catalog, or what gpupool plans with, is wrong for this GPU); 2 NVML is there
but could not be read (permissions, an NVML error).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
from dataclasses import dataclass
from typing import List, Optional, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_COLLECTIONS = os.path.join(ROOT, ".build", "collections")
if os.path.isdir(_COLLECTIONS) and _COLLECTIONS not in sys.path:  # `make collection` links the checkout here
    sys.path.insert(0, _COLLECTIONS)

from ansible_collections.gpupool.core.plugins.module_utils.mig import catalog  # noqa: E402
from ansible_collections.gpupool.core.plugins.module_utils.nvml import facts as nvml  # noqa: E402

MATCH, MISMATCH, INFO, UNCHECKED = "match", "MISMATCH", "-", "not checked"
# NvmlUnavailable reasons that mean: no usable NVIDIA driver on this machine (nothing to check, not a failure).
NO_GPU_REASONS = ("library_not_found", "driver_not_loaded")
ENGINE_KEYS = ("copy_engines", "decoders", "encoders", "jpeg_engines", "ofa_engines")


@dataclass
class Row:
    gpu: str
    check: str
    nvml: str
    catalog: str
    result: str


# ---- reading (NVML, read-only) ----------------------------------------------------------------------------
def read_gpus() -> List[dict]:
    """What NVML says about every GPU: gpu_facts' reader with the profile table. Raises NvmlUnavailable."""
    with nvml.Session() as session:
        system = nvml.read_system()
        out = []
        for index in range(session.count()):
            facts = nvml.read_gpu(session.handle(index), index, include_profiles=True, system=system)
            facts.pop("_profiles", None)
            out.append(facts)
        return out


def load_library(path: str) -> Optional[str]:
    """Make pynvml use the libnvidia-ml at `path` (e.g. under the GPU Operator's /run/nvidia/driver); a
    sentence when it cannot be loaded."""
    try:
        lib = ctypes.CDLL(path)
    except OSError as exc:
        return "no NVML library at %s (%s)" % (path, exc)
    if nvml.pynvml is not None:
        nvml.pynvml.nvmlLib = lib  # pynvml loads libnvidia-ml.so.1 only when nvmlLib is still unset
    return None


# ---- comparing (pure) ----------------------------------------------------------------------------------
def _starts(starts: Sequence[int]) -> str:
    """0,1,2,3 -> 0-3; 0,2,4 stays a list."""
    starts = list(starts)
    if len(starts) > 1 and starts == list(range(starts[0], starts[-1] + 1)):
        return "%d-%d" % (starts[0], starts[-1])
    return ",".join(str(s) for s in starts) or "none"


def _profile_text(p: dict) -> str:
    return "id %s %dc/%dm x%d @%s %s MiB %s SM" % (
        p["id"],
        p["compute_slices"],
        p["memory_slices"],
        p["max_instances"],
        _starts(p["starts"]),
        p["memory_mib"],
        p["multiprocessors"],
    )


def _catalog_profile(prof) -> dict:
    out = {
        "name": prof.name,
        "id": prof.profile_id,
        "compute_slices": prof.compute_slices,
        "memory_slices": prof.memory_slices,
        "max_instances": prof.max_instances,
        "starts": list(prof.starts),
        "memory_mib": prof.memory_mib,
        "multiprocessors": prof.multiprocessors,
    }
    if prof.engines is not None:
        out.update(zip(ENGINE_KEYS, prof.engines))
    return out


def _profile_differences(rep: dict, cat: dict, measured: bool) -> List[str]:
    diffs = []
    for key, label in (
        ("name", "name"),
        ("id", "profile id"),
        ("compute_slices", "compute slices"),
        ("memory_slices", "memory slices"),
        ("max_instances", "max instances"),
        ("starts", "placements"),
        ("memory_mib", "MiB"),
        ("multiprocessors", "SMs"),
    ):
        have, want = (list(rep[key]), list(cat[key])) if key == "starts" else (rep[key], cat[key])
        if have != want:
            estimate = key in ("memory_mib", "multiprocessors") and not measured
            diffs.append(label + (" (catalog: estimate)" if estimate else ""))
    if all(k in cat for k in ENGINE_KEYS) and all(k in rep for k in ENGINE_KEYS):
        have = tuple(rep[k] for k in ENGINE_KEYS)
        want = tuple(cat[k] for k in ENGINE_KEYS)
        if have != want:
            diffs.append(
                "engines CE/DEC/ENC/JPG/OFA %s vs %s%s"
                % ("/".join(map(str, have)), "/".join(map(str, want)), "" if measured else " (catalog: estimate)")
            )
    return diffs


def resolve(gpu: dict):
    """The catalog entry for an NVML GPU (by product name, else by PCI device id) and how it was found."""
    model = catalog.find_gpu(gpu["name"])
    if model is not None:
        return model, "name"
    model = catalog.by_pci_device_id(gpu.get("pci_device_id") or "")
    return model, ("PCI device id" if model is not None else None)


def compare_gpu(gpu: dict) -> List[Row]:
    """The rows of one GPU (a dict as read_gpus returns it)."""
    label = "GPU %d" % gpu["index"]
    rows: List[Row] = []

    def row(check, have, want, result):
        rows.append(Row(label, check, str(have), str(want), result))

    model, found_by = resolve(gpu)
    if model is None:
        row("product name", gpu["name"], "not in the catalog", UNCHECKED + " (unknown GPU: nothing to compare)")
        row("memory MiB", gpu["memory_mib"], "-", INFO)
        return rows
    exact = gpu["name"] in model.product_names
    if exact:
        inferred = gpu["name"] not in model.observed_names
        row("product name", gpu["name"], model.key, MATCH + (" (confirms an inferred name)" if inferred else ""))
    else:
        why = "not among %s's product names: its DeviceClasses would not select this GPU" % model.key
        if found_by == "PCI device id":
            why = "found by PCI device id only; " + why
        row(
            "product name",
            gpu["name"],
            "%s: %s" % (model.key, ", ".join(model.product_names)),
            MISMATCH + " (" + why + ")",
        )
    pci = gpu.get("pci_device_id") or ""
    row(
        "PCI device id",
        pci or "-",
        ", ".join(model.pci_device_ids) or "-",
        MATCH if pci.lower() in (p.lower() for p in model.pci_device_ids) else MISMATCH,
    )
    row("memory MiB", gpu["memory_mib"], model.memory_mib, MATCH if gpu["memory_mib"] == model.memory_mib else MISMATCH)
    for check, have, want in (
        ("architecture", gpu.get("architecture"), model.architecture),
        ("compute capability", gpu.get("cuda_compute_capability"), model.compute_capability),
    ):
        if have is None:
            row(check, "not reported", want, UNCHECKED)
        else:
            row(check, have, want, MATCH if have == want else MISMATCH)
    mig = gpu.get("mig") or {}
    capable = bool(mig.get("capable"))
    row(
        "MIG capable",
        "yes" if capable else "no",
        "yes" if model.mig else "no",
        MATCH if capable == bool(model.mig) else MISMATCH,
    )
    if capable:
        mode = "on" if mig.get("current") else "off"
        if mig.get("pending") != mig.get("current"):
            mode += " (pending %s)" % ("on" if mig.get("pending") else "off")
        row("MIG mode", mode, "-", INFO + " (read only, never changed)")
    if not (capable and model.mig):
        return rows
    rows += _compare_profiles(label, mig.get("profiles") or [], model)
    return rows


def _compare_profiles(label: str, reported: List[dict], model) -> List[Row]:
    rows: List[Row] = []
    if not reported:
        rows.append(
            Row(
                label,
                "MIG profiles",
                "none reported",
                "%d profiles" % len(model.mig.profiles),
                UNCHECKED
                + " (NVML gave no profile: with MIG mode off some drivers answer none; this check never turns it on)",
            )
        )
        return rows
    by_index = {p.nvml_index: p for p in model.mig.profiles}
    for rep in sorted(reported, key=lambda r: r["index"]):
        cat_prof = by_index.pop(rep["index"], None)
        name = rep.get("name") or (cat_prof.name if cat_prof else "index %d" % rep["index"])
        if cat_prof is None:
            rows.append(
                Row(label, "MIG " + name, _profile_text(rep), "not in the catalog", MISMATCH + " (the GPU offers it)")
            )
            continue
        cat = _catalog_profile(cat_prof)
        diffs = _profile_differences(dict(rep, name=rep.get("name") or cat["name"]), cat, cat_prof.measured)
        result = MISMATCH + " (" + "; ".join(diffs) + ")" if diffs else MATCH
        if not diffs and model.mig.placements == "inferred":
            result += " (confirms inferred placements)"
        shown = name if cat["name"] == name else "%s (catalog: %s)" % (name, cat["name"])
        rows.append(Row(label, "MIG " + shown, _profile_text(rep), _profile_text(cat), result))
    for cat_prof in sorted(by_index.values(), key=lambda p: p.nvml_index):
        rows.append(
            Row(
                label,
                "MIG " + cat_prof.name,
                "not offered",
                _profile_text(_catalog_profile(cat_prof)),
                MISMATCH + " (older driver?)",
            )
        )
    return rows


def compare(gpus: Sequence[dict]) -> List[Row]:
    """The rows of every GPU; GPUs whose rows are all alike are shown once ("GPU 0-7")."""
    groups: List[list] = []  # [indices, rows, comparable rows]
    for gpu in gpus:
        rows = compare_gpu(gpu)
        key = [(r.check, r.nvml, r.catalog, r.result) for r in rows]
        for group in groups:
            if group[2] == key:
                group[0].append(gpu["index"])
                break
        else:
            groups.append([[gpu["index"]], rows, key])
    out: List[Row] = []
    for indices, rows, _key in groups:
        label = "GPU " + _starts(indices)
        out += [Row(label, r.check, r.nvml, r.catalog, r.result) for r in rows]
    return out


def render(rows: Sequence[Row]) -> str:
    head = Row("GPU", "check", "NVML", "catalog", "result")
    table = [head] + list(rows)
    widths = [max(len(getattr(r, f)) for r in table) for f in ("gpu", "check", "nvml", "catalog")]

    def line(r: Row) -> str:
        cells = [getattr(r, f).ljust(w) for f, w in zip(("gpu", "check", "nvml", "catalog"), widths)]
        return "  ".join(cells + [r.result]).rstrip()

    rule = "  ".join("-" * w for w in widths + [len("result")])
    return "\n".join([line(head), rule] + [line(r) for r in rows])


def mismatches(rows: Sequence[Row]) -> List[Row]:
    return [r for r in rows if r.result.startswith(MISMATCH)]


def summary(rows: Sequence[Row], gpus: Sequence[dict]) -> str:
    bad = mismatches(rows)
    checked = sum(1 for r in rows if r.result.startswith((MATCH, MISMATCH)))
    unchecked = sum(1 for r in rows if r.result.startswith(UNCHECKED))
    text = "%d GPU(s), %d check(s) against the catalog: %s" % (
        len(gpus),
        checked,
        "%d mismatch(es)" % len(bad) if bad else "all match",
    )
    return text + ("; %d not checked" % unchecked if unchecked else "")


# ---- main ----------------------------------------------------------------------------------------------
def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nvml-library", help="path of libnvidia-ml.so.1 to use (default: the loader's search)")
    args = parser.parse_args(argv)
    if args.nvml_library:
        why = load_library(args.nvml_library)
        if why:
            print("gpu-check: no NVIDIA GPU here, nothing checked: %s" % why)
            return 0
    try:
        gpus = read_gpus()
    except nvml.NvmlUnavailable as exc:
        if exc.reason in NO_GPU_REASONS:
            print("gpu-check: no NVIDIA GPU here, nothing checked: %s" % exc)
            return 0
        print("gpu-check: NVML could not be used: %s" % exc)
        return 2
    except nvml.NvmlError as exc:
        print("gpu-check: reading the GPUs through NVML failed: %s" % exc)
        return 2
    if not gpus:
        print("gpu-check: no NVIDIA GPU here, nothing checked: NVML lists no GPU")
        return 0
    rows = compare(gpus)
    driver = gpus[0].get("driver_version")
    print("gpu-check: %d GPU(s), NVIDIA driver %s, read-only (no setting changed)" % (len(gpus), driver or "unknown"))
    print(render(rows))
    print(summary(rows, gpus))
    return 1 if mismatches(rows) else 0


if __name__ == "__main__":
    sys.exit(main())
