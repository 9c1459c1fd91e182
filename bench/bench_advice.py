#!/usr/bin/env python3
"""Advisor benchmark: why 5,000 claims wait and what to change, on 2,000 nodes - planning CPU only.

Target (issue #20): the advice for 2,000 nodes and 5,000 claims takes at most 2 s of planning CPU
(`plan.advice.advise.advise` on the API's plain dicts; no I/O). Prints the measurement and exits non-zero when the
target is missed. Run: make bench (or python bench/bench_advice.py).

The cluster: two pools of the example's shapes - 1,500 A100-40GB nodes (2 GPUs) with the static layout 3g.20gb + 2 x
2g.10gb and 500 H100-80GB nodes of 4 whole GPUs, both with room to grow - with devices written as the NVIDIA DRA
driver publishes them (memorySlice<N> capacities, a pcieRoot per GPU), built by the advisor's unit tests' builder
(tests/support/advice_beds.py). Of the 5,000 claims 4,000 are allocated (GPU 0 of every A100 node holds its 3g.20gb,
two thirds also a 2g.10gb; three H100s of every node) and 1,000 wait: 3g.20gb, 1g.10gb (a profile the pool does not
offer: the advice re-partitions GPU 1), whole GPUs (more than are free: the advice adds H100 nodes), pairs of whole
GPUs under one pcieRoot (no change serves them), and a class nobody makes.

`python bench/bench_advice.py mixed` (issue #26) measures the other point: 2,000 nodes x 8 H100-80GB with a
different static MIG layout on different GPU indices, 500 of the nodes in a MIG group with a layout of their own,
allocations on some indices of every node and 1,000 waiting claims; target 1 s of planning CPU. `make bench` runs
both points.
"""

from __future__ import annotations

import statistics
import sys
import time

from ansible_collections.gpupool.core.plugins.module_utils.model.load import load_cluster
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.advise import advise
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.device_classes import cluster_device_classes
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.observed import Observed
from tests.support import advice_beds as b

TARGET_S = 2.0
NODES = {"a100": 1500, "h100": 500}
GPUS = {"a100": 2, "h100": 4}
CLAIMS, WAITING = 5000, 1000
ROOT = b.PCIE_ROOT
A100_LAYOUT = [("3g.20gb", 4), ("2g.10gb", 0), ("2g.10gb", 2)]  # profile, placement start (the MIG manager's)


def inventory():
    return {
        "name": "bench",
        "magnum": {"cloud": "bench", "cluster": "bench"},
        "pools": [
            {
                "name": "a100",
                "nodegroup": {"flavor": "g4.p2.40g", "node_count": 1500, "max_node_count": 1600},
                "gpu": {"model": "A100-40GB", "per_node": 2},
                "mig": {"mode": "static", "layout": {"3g.20gb": 1, "2g.10gb": 2}},
            },
            {
                "name": "h100",
                "nodegroup": {"flavor": "g5.h100x4", "node_count": 500, "max_node_count": 600},
                "gpu": {"model": "H100-80GB", "per_node": 4},
            },
        ],
    }


def cluster_objects():
    nodes, slices, devices = [], [], []
    for pool, count in NODES.items():
        for n in range(count):
            name = "%s-%04d" % (pool, n)
            nodes.append(b.node(name, pool))
            devs = []
            for minor in range(GPUS[pool]):
                if pool == "h100":
                    devs.append(b.full_gpu(minor))
                    continue
                devs += [b.mig(minor, profile, start) for profile, start in A100_LAYOUT]
            devices += [(name, d["name"], pool, (d["attributes"].get("profile") or {}).get("string")) for d in devs]
            slices.append(b.rslice(name, devs))
    return nodes, slices, devices


def claim(number, device_class, count=1, attribute=None, allocated=None):
    """Claims spread over 40 namespaces, one a second from midnight on (the advice orders waiting claims by age)."""
    created = "2026-01-01T%02d:%02d:%02dZ" % (number // 3600 % 24, number // 60 % 60, number % 60)
    return b.claim(
        "claim-%05d" % number,
        device_class,
        count,
        attribute,
        allocated=[allocated] if allocated else None,
        namespace="ns-%d" % (number % 40),
        created=created,
    )


def claims(devices):
    out = []
    for node, device, pool, profile in devices:
        index = int(device.split("-")[1])
        a100_node = (
            pool == "a100" and index == 0 and (profile == "3g.20gb" or (device.endswith("-0") and int(node[-4:]) % 3))
        )
        if a100_node or (pool == "h100" and index < 3):
            name = pool if profile is None else "%s-%s" % (pool, profile)
            out.append(claim(len(out), name, allocated=(node, device)))
    assert len(out) == CLAIMS - WAITING, len(out)
    kinds = [("a100-3g.20gb", 1, None)] * 3 + [("a100-1g.10gb", 1, None)] * 3 + [("h100", 1, None)] * 11
    kinds += [("h100", 2, ROOT)] * 2 + [("nobody-makes-this", 1, None)]
    for k in range(WAITING):
        device_class, count, attribute = kinds[k % len(kinds)]
        out.append(claim(CLAIMS - WAITING + k, device_class, count, attribute))
    return out


# ---- the mixed point (issue #26): 2,000 nodes x 8 H100s, a layout per GPU index, a MIG group of 500 nodes ----

MIXED_TARGET_S = 1.0
MIXED_NODES, MIXED_GROUP = 2000, 500
MIXED_WAITING = 1000
# per GPU index of the pool's nodes: [(profile, placement start)], as the MIG manager places them
MIXED_LAYOUTS = {
    0: [("3g.40gb", 0), ("3g.40gb", 4)],
    1: [("3g.40gb", 0), ("3g.40gb", 4)],
    2: [("2g.20gb", 0), ("2g.20gb", 2), ("2g.20gb", 4), ("1g.10gb", 6)],
    3: [("2g.20gb", 0), ("2g.20gb", 2), ("2g.20gb", 4), ("1g.10gb", 6)],
    4: [("1g.10gb", s) for s in range(7)],
    5: [("1g.10gb", s) for s in range(7)],
    6: [("4g.40gb", 0), ("3g.40gb", 4)],
    7: [("7g.80gb", 0)],
}
GROUP_LAYOUT = [("1g.10gb", s) for s in range(7)]  # every GPU of the group's nodes


def _counts(placed):
    out = {}
    for profile, _start in placed:
        out[profile] = out.get(profile, 0) + 1
    return out


def mixed_inventory():
    return {
        "name": "bench",
        "magnum": {"cloud": "bench", "cluster": "bench"},
        "pools": [
            {
                "name": "h100x8",
                "nodegroup": {"flavor": "g5.h100x8", "node_count": MIXED_NODES, "max_node_count": MIXED_NODES + 100},
                "gpu": {"model": "H100-80GB", "per_node": 8},
                "mig": {
                    "mode": "static",
                    "layouts": {i: _counts(p) for i, p in MIXED_LAYOUTS.items()},
                    "groups": [{"name": "small", "nodes": MIXED_GROUP, "layout": _counts(GROUP_LAYOUT)}],
                },
            }
        ],
    }


def mixed_objects():
    """Nodes, slices and claims: the group's nodes labelled with its config (the first 500 by name), allocations on
    GPU 0 (both 3g.40gb on two nodes of three), GPU 4 (five 1g.10gb) and GPU 7 (every other node) of the pool's
    nodes and on GPUs 0-3 of the group's nodes (six 1g.10gb each)."""
    nodes, slices, allocated = [], [], []
    for n in range(MIXED_NODES):
        name = "h100x8-%04d" % n
        group = n < MIXED_GROUP
        config = "gpupool-h100x8-small" if group else "gpupool-h100x8"
        nodes.append(b.node(name, "h100x8", labels={"nvidia.com/mig.config": config}))
        devs = []
        for minor in range(8):
            placed = GROUP_LAYOUT if group else MIXED_LAYOUTS[minor]
            for k, (profile, start) in enumerate(placed):
                dev = b.mig(minor, profile, start, product=b.H100_PRODUCT, profiles=b.H100_PROFILES)
                devs.append(dev)
                taken = (
                    (group and minor < 4 and k < 6)
                    or (not group and minor == 0 and n % 3)
                    or (not group and minor == 4 and k < 5)
                    or (not group and minor == 7 and n % 2)
                )
                if taken:
                    allocated.append((name, dev["name"], profile))
        slices.append(b.rslice(name, devs))
    out = [claim(k, "h100x8-%s" % profile, allocated=(node, dev)) for k, (node, dev, profile) in enumerate(allocated)]
    kinds = [("h100x8-3g.40gb", 1, None)] * 3 + [("h100x8-1g.20gb", 1, None)] * 3 + [("h100x8-7g.80gb", 1, None)] * 3
    kinds += [("h100x8-1g.10gb", 2, ROOT)] * 2 + [("h100x8-2g.20gb", 1, None)]
    for k in range(MIXED_WAITING):
        device_class, count, attribute = kinds[k % len(kinds)]
        out.append(claim(len(allocated) + k, device_class, count, attribute))
    return nodes, slices, out


def measure(data, nodes, slices, all_claims, target):
    cluster = load_cluster(data)
    classes = [d.obj for d in cluster_device_classes(cluster)]
    samples, result = [], None
    for _unused in range(3):
        t0 = time.process_time()
        result = advise(cluster, data, Observed(nodes, slices, all_claims, classes))
        samples.append(time.process_time() - t0)
    best, median = min(samples), statistics.median(samples)
    reasons = {}
    for row in result["waiting"]:
        reasons[row["reason"]] = reasons.get(row["reason"], 0) + 1
    print(
        "advice %d nodes, %d claims (%d waiting): planning CPU median %.2fs, best %.2fs (target %.1fs)"
        % (len(nodes), len(all_claims), len(result["waiting"]), median, best, target)
    )
    print("  reasons: %s" % ", ".join("%s %d" % kv for kv in sorted(reasons.items())))
    for name, pool in result["pools"].items():
        advice = pool["advice"]
        found = "serves now" if pool["serves_now"] else "none found"
        print("  %s: %s" % (name, advice["text"] if advice else "no change (%s)" % found))
    if median > target:
        print("MISSED: advice planning CPU %.2f s > %.1f s" % (median, target))
        return 1
    return 0


def mixed_main():
    nodes, slices, all_claims = mixed_objects()
    return measure(mixed_inventory(), nodes, slices, all_claims, MIXED_TARGET_S)


def main():
    if sys.argv[1:] == ["mixed"]:
        return mixed_main()
    if sys.argv[1:] == ["all"]:
        return max(classic_main(), mixed_main())
    return classic_main()


def classic_main():
    nodes, slices, devices = cluster_objects()
    return measure(inventory(), nodes, slices, claims(devices), TARGET_S)


if __name__ == "__main__":
    sys.exit(main())
