#!/usr/bin/env python3
"""Node writes of a first converge: 2,000 Node patches, one after the other and through the bounded workers.

    python bench/bench_node_writes.py [NODES] [POOLS]       (defaults: 2000 nodes, 50 pools)

A fresh control plane (testbed/controlplane.py: etcd + kube-apiserver on loopback, no controllers) gets NODES
Nodes, spread over POOLS pools by a label. The node-pool runner (plugins/module_utils/k8s/node_pool.py) converges
them twice, each time on an inventory whose pools ask for a new label value, so every node needs one patch:
first with 1 worker (the requests one after the other, as before issue #27), then with the step's default bound
(k8s/workers.NODE_WORKERS). Prints the wall time of each converge and its PATCH count from the audit log.
A measurement, not a test: it asserts nothing about time.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / ".build" / "collections")]

from ansible_collections.gpupool.core.plugins.module_utils.k8s.apply_engine import ApplyEngine  # noqa: E402
from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import connect  # noqa: E402
from ansible_collections.gpupool.core.plugins.module_utils.k8s.node_pool import NodePoolRunner  # noqa: E402
from ansible_collections.gpupool.core.plugins.module_utils.k8s.workers import NODE_WORKERS  # noqa: E402
from ansible_collections.gpupool.core.plugins.module_utils.model.load import load_cluster  # noqa: E402
from testbed.controlplane import ControlPlane  # noqa: E402
from testbed.node_simulator import IDENTITY as NODE_IDENTITY  # noqa: E402
from testbed.node_simulator import GpuInventory, NodeSimulator  # noqa: E402
from testbed.simulator_client import Kube, simulator_kubeconfig  # noqa: E402

USER = "bench:node-writes"
PARAMS = dict(
    nodegroup_label=None,
    name_pattern=None,
    set_gpu_present=True,
    release_orphans=False,
    confirm_orphans=False,
    min_ready=None,
    pools=None,
    wait_timeout=60,
    wait_sleep=1.0,
)


def inventory(pools: int, generation: str) -> dict:
    return {
        "name": "nodewrites",
        "pools": [
            {
                "name": "nw-%02d" % i,
                "node_selector": {"nw-pool": "p%02d" % i},
                "gpu": {"model": "T4"},
                "node_labels": {"bench/generation": generation},
            }
            for i in range(pools)
        ],
    }


def register(cp: ControlPlane, nodes: int, pools: int) -> None:
    kubeconfig = simulator_kubeconfig(cp, NODE_IDENTITY)
    gpus = GpuInventory(adopt_foreign=False)
    sims = {}

    def one(i: int) -> None:
        import threading

        me = threading.get_ident()
        if me not in sims:  # one client per thread (Kube is not thread-safe)
            sims[me] = NodeSimulator(Kube(kubeconfig, "node-simulator"), gpus, log=lambda _m: None)
        sims[me].register_node(
            "nw-%04d" % i,
            "g2.xlarge",
            cluster_uuid="nodewrites",
            nodegroup=None,
            labels={"nw-pool": "p%02d" % (i % pools)},
        )

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(nodes)))


def converge(cp: ControlPlane, kubeconfig: Path, pools: int, generation: str, workers: int) -> tuple:
    cluster = load_cluster(inventory(pools, generation))
    engine = ApplyEngine(connect(dict(PARAMS, kubeconfig=str(kubeconfig))))
    runner = NodePoolRunner(
        engine, cluster, cluster.pools, PARAMS, warn=lambda _m: None, wait_for=None, workers=workers
    )
    mark = cp.audit.mark()
    t0, c0 = time.monotonic(), time.process_time()
    if os.environ.get("PROFILE"):
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.runcall(runner.converge)
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)  # PROFILE=1: where the time goes
    else:
        runner.converge()
    wall, cpu = time.monotonic() - t0, time.process_time() - c0
    window = cp.audit.since(mark)
    patches = [e for e in window.writes(user=USER, resource="nodes") if e.get("verb") == "patch"]
    changed = sum(1 for r in runner.node_results.values() if r.changed)
    return wall, cpu, len(patches), changed


def main() -> None:
    nodes = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    pools = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    with tempfile.TemporaryDirectory(prefix="gpupool-node-writes-") as work:
        cp = ControlPlane(Path(work), controllers=False).start()
        try:
            t0 = time.monotonic()
            register(cp, nodes, pools)
            print("%d nodes registered in %.1fs" % (nodes, time.monotonic() - t0), flush=True)
            kubeconfig = cp.mint_kubeconfig(USER, ["system:masters"])
            for generation, workers in (("1", 1), ("2", NODE_WORKERS)):
                wall, cpu, patches, changed = converge(cp, kubeconfig, pools, generation, workers)
                print(
                    "workers=%-2d  %d nodes changed, %d PATCH requests, %.2fs wall, %.2fs CPU in gpupool (%.0f/s)"
                    % (workers, changed, patches, wall, cpu, patches / wall if wall else 0),
                    flush=True,
                )
        finally:
            cp.stop()


if __name__ == "__main__":
    main()
