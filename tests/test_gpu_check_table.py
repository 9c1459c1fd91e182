"""tools/gpu_check.py's comparison and table (pure): NVML facts as the tool reads them, held against the catalog.

The same logic runs against the fake libnvidia-ml through real pynvml in tests/integration/test_gpu_check.py.
Here, not in tests/unit: tools/ does not ship, so ansible-test units could not import it (as test_generated_docs)."""

from __future__ import annotations

import copy
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))

import gpu_check  # noqa: E402

from ansible_collections.gpupool.core.plugins.module_utils.mig import catalog  # noqa: E402


def profiles_of(key):
    """NVML-shaped profiles (nvml facts read_profiles) that agree with the catalog entry."""
    out = []
    for p in catalog.CATALOG[key].mig.profiles:
        rep = {
            "index": p.nvml_index,
            "id": p.profile_id,
            "name": p.name,
            "compute_slices": p.compute_slices,
            "memory_slices": p.memory_slices,
            "max_instances": p.max_instances,
            "starts": list(p.starts),
            "memory_mib": p.memory_mib,
            "multiprocessors": p.multiprocessors,
        }
        rep.update(zip(gpu_check.ENGINE_KEYS, p.engines))
        out.append(rep)
    return out


def gpu(key="A100-40GB", index=0, **changes):
    model = catalog.CATALOG[key]
    out = {
        "index": index,
        "name": model.product_names[0],
        "pci_device_id": model.pci_device_ids[0],
        "memory_mib": model.memory_mib,
        "architecture": model.architecture,
        "cuda_compute_capability": model.compute_capability,
        "mig": {"capable": bool(model.mig), "current": False, "pending": False},
    }
    if model.mig:
        out["mig"]["profiles"] = profiles_of(key)
    out.update(changes)
    return out


def results(rows):
    return {(r.gpu, r.check): r.result for r in rows}


def test_a_gpu_like_the_catalog_matches_everywhere():
    rows = gpu_check.compare([gpu()])
    assert gpu_check.mismatches(rows) == []
    checks = [r.check for r in rows]
    assert checks[:7] == [
        "product name",
        "PCI device id",
        "memory MiB",
        "architecture",
        "compute capability",
        "MIG capable",
        "MIG mode",
    ]
    assert {c for c in checks if c.startswith("MIG ") and c != "MIG capable" and c != "MIG mode"} == {
        "MIG " + p.name for p in catalog.CATALOG["A100-40GB"].mig.profiles
    }
    assert results(rows)[("GPU 0", "MIG 3g.20gb")] == "match"
    assert gpu_check.summary(rows, [gpu()]).endswith("all match")


def test_identical_gpus_are_shown_once_and_a_different_one_apart():
    gpus = [gpu(index=i) for i in range(4)]
    gpus[2]["mig"] = dict(gpus[2]["mig"], current=True, pending=True)
    labels = [r.gpu for r in gpu_check.compare(gpus)]
    assert sorted(set(labels)) == ["GPU 0,1,3", "GPU 2"]
    assert {r.gpu for r in gpu_check.compare([gpu(index=i) for i in range(8)])} == {"GPU 0-7"}


def test_wrong_memory_and_placements_are_mismatches():
    bad = gpu(memory_mib=40000)
    bad["mig"]["profiles"] = copy.deepcopy(bad["mig"]["profiles"])
    three = next(p for p in bad["mig"]["profiles"] if p["name"] == "3g.20gb")
    three["starts"] = [0]
    rows = gpu_check.compare([bad])
    res = results(rows)
    assert res[("GPU 0", "memory MiB")] == "MISMATCH"
    assert res[("GPU 0", "MIG 3g.20gb")] == "MISMATCH (placements)"
    row = next(r for r in rows if r.check == "MIG 3g.20gb")
    assert "@0 " in row.nvml and "@0,4 " in row.catalog
    assert len(gpu_check.mismatches(rows)) == 2


def test_profile_names_ids_missing_and_extra_profiles():
    g = gpu()
    profiles = g["mig"]["profiles"]
    renamed = next(p for p in profiles if p["name"] == "3g.20gb")
    renamed["name"] = "3g.19gb"  # as drivers 535..545 renamed it
    profiles.remove(next(p for p in profiles if p["name"] == "1g.10gb"))
    profiles.append(dict(profiles[0], index=17, id=99, name="1g.5gb+gfx"))
    res = results(gpu_check.compare([g]))
    assert res[("GPU 0", "MIG 3g.19gb (catalog: 3g.20gb)")] == "MISMATCH (name)"
    assert res[("GPU 0", "MIG 1g.10gb")] == "MISMATCH (older driver?)"
    assert res[("GPU 0", "MIG 1g.5gb+gfx")] == "MISMATCH (the GPU offers it)"


def test_estimates_are_named_as_such():
    key = next(k for k in catalog.mig_capable_keys() if not all(p.measured for p in catalog.CATALOG[k].mig.profiles))
    g = gpu(key)
    est = next(p for p in g["mig"]["profiles"] if not catalog.profile_by_name(catalog.CATALOG[key], p["name"]).measured)
    est["memory_mib"] += 1
    est["multiprocessors"] += 2
    res = results(gpu_check.compare([g]))
    assert res[("GPU 0", "MIG " + est["name"])] == "MISMATCH (MiB (catalog: estimate); SMs (catalog: estimate))"


def test_inferred_placements_and_names_say_they_are_confirmed():
    key = next(k for k in catalog.mig_capable_keys() if catalog.CATALOG[k].mig.placements == "inferred")
    rows = [r for r in gpu_check.compare([gpu(key)]) if r.check.startswith("MIG ") and r.check[4:5].isdigit()]
    assert len(rows) == len(catalog.CATALOG[key].mig.profiles)
    assert all(r.result == "match (confirms inferred placements)" for r in rows)
    model = next(m for m in catalog.CATALOG.values() if set(m.product_names) - set(m.observed_names))
    name = sorted(set(model.product_names) - set(model.observed_names))[0]
    g = gpu(model.key, name=name)
    assert results(gpu_check.compare([g]))[("GPU 0", "product name")] == "match (confirms an inferred name)"


def test_names_the_catalog_does_not_list():
    # resolves by normalised spelling but is not a productName the DeviceClasses select
    g = gpu(name="NVIDIA A100 SXM4 40GB")
    res = results(gpu_check.compare([g]))
    assert res[("GPU 0", "product name")].startswith("MISMATCH (not among A100-40GB's product names")
    # found only through the PCI device id
    g = gpu(name="NVIDIA A100-SXM4-40GB-XYZ")
    assert "found by PCI device id only" in results(gpu_check.compare([g]))[("GPU 0", "product name")]
    # not in the catalog at all: nothing to compare, no mismatch
    stranger = gpu(name="NVIDIA GeForce RTX 4090", pci_device_id="0x268410DE")
    rows = gpu_check.compare([stranger])
    assert gpu_check.mismatches(rows) == [] and [r.check for r in rows] == ["product name", "memory MiB"]
    assert rows[0].result.startswith("not checked (unknown GPU")


def test_mig_capability_and_profiles_not_reported():
    t4 = gpu("T4")
    rows = gpu_check.compare([t4])
    assert [r.check for r in rows][-1] == "MIG capable" and gpu_check.mismatches(rows) == []
    assert (
        results(gpu_check.compare([dict(t4, mig={"capable": True, "current": False, "pending": False})]))[
            ("GPU 0", "MIG capable")
        ]
        == "MISMATCH"
    )
    silent = gpu()
    silent["mig"]["profiles"] = []
    res = results(gpu_check.compare([silent]))
    assert res[("GPU 0", "MIG profiles")].startswith("not checked (NVML gave no profile")
    pending = gpu(mig={"capable": True, "current": False, "pending": True, "profiles": profiles_of("A100-40GB")})
    row = next(r for r in gpu_check.compare([pending]) if r.check == "MIG mode")
    assert row.nvml == "off (pending on)" and row.result.startswith("-")


def test_the_table_lines_up():
    text = gpu_check.render(gpu_check.compare([gpu("H100-80GB")]))
    lines = text.splitlines()
    assert lines[0].split() == ["GPU", "check", "NVML", "catalog", "result"]
    nvml_col = lines[0].index("NVML")
    assert all(line[nvml_col - 2 : nvml_col] == "  " for line in lines[2:])
    assert lines[1].startswith("-----")
