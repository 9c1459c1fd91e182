"""What a step pays to check the inventory, with and without the run's shared verdict (module_utils/run_cluster.py).

    .venv/bin/python bench/bench_validate.py [POOLS]     (default 50 pools over 2,000 nodes, as make bench's point)

Each number is the CPU of one call in a fresh fork of this process, as a step pays it in its own worker process
(Ansible forks a worker per task: caches a call fills are gone at the next step). Medians of 40 forks. Rows:

* load_cluster: every check of the model (what each step ran before the verdict was shared);
* shared verdict: a later step of the same run, handed the same data (digest, the record, the shape validation);
* a pool step that does nothing else (options, the model, the pools in scope), without and with a run lease.

Not part of `make bench`: it times the model alone, not a playbook (the no-op of site.yml runs about eight such steps).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from inventory_generator import generate  # noqa: E402

from ansible_collections.gpupool.core.plugins.module_utils.argument_specs import LEASE  # noqa: E402
from ansible_collections.gpupool.core.plugins.module_utils.model.load import load_cluster  # noqa: E402
from ansible_collections.gpupool.core.plugins.module_utils.module import PoolModule  # noqa: E402
from ansible_collections.gpupool.core.plugins.module_utils.run_cluster import RunCluster  # noqa: E402
from ansible_collections.gpupool.core.plugins.plugin_utils.step_action import run_step  # noqa: E402

LEASE_ARGS = {"namespace": "kube-system", "name": "gpupool-run", "holder": "gpupool@bench/00000001", "duration": 60}


class Noop(PoolModule):
    shared = (LEASE,)

    def run(self):
        return {"pools": len(self.selected)}


def in_fresh_fork(call) -> float:
    """CPU seconds of `call()` in a child forked now."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        start = time.process_time()
        call()
        os.write(write, repr(time.process_time() - start).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    os.close(write)
    seconds = float(os.read(read, 100))
    os.close(read)
    return seconds


def main(pools: int = 50) -> None:
    tempfile.tempdir = tempfile.mkdtemp(prefix="bench-validate-")  # the records of this bench only
    (plan,) = generate(clusters=1, pools=pools, nodes=2000, magnum=True)
    data = plan.cluster
    data["magnum"]["cloud"], data["kubeconfig"] = "openstack", "/nonexistent/kubeconfig"
    RunCluster(LEASE_ARGS["holder"]).load(data)  # the first step of the run records the verdict

    def shared():
        view = RunCluster(LEASE_ARGS["holder"])
        view.load(data)
        assert view.shared

    rows = [
        ("load_cluster (each step before)", lambda: load_cluster(data)),
        ("shared verdict (later step, same run)", shared),
        ("noop pool step, no run lease", lambda: run_step(Noop, {"cluster": data})),
        ("noop pool step, same run (shared)", lambda: run_step(Noop, {"cluster": data, "run_lease": LEASE_ARGS})),
    ]
    print("%d pools: CPU of one call in a fresh worker, median (min) of 40" % pools)
    for name, call in rows:
        times = [in_fresh_fork(call) for _unused in range(40)]
        print("  %-40s %6.1f ms (%.1f ms)" % (name, 1000 * statistics.median(times), 1000 * min(times)))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50)
