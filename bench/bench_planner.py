#!/usr/bin/env python3
"""Planner benchmark: time to plan every layout of every MIG GPU, and to enumerate maximal layouts.

Targets (2-core CI machine): validating a 50-pool inventory must stay interactive, so
plan() p99 < 5 ms and maximal_layouts() of one GPU < 1 s. Prints measurements and
exits non-zero when a target is missed.  Run: make bench

Each plan() is timed in CPU time of this process (time.process_time), not wall time: on a shared 2-core machine
one preemption of 10 ms lands in the p99 of a sub-millisecond call and says nothing about the planner.
"""

from __future__ import annotations

import itertools
import statistics
import sys
import time

from ansible_collections.gpupool.core.plugins.module_utils.mig import catalog as cat
from ansible_collections.gpupool.core.plugins.module_utils.mig import placement as mig_placement

PLAN_P99_MS = 5.0
MAXIMAL_S = 1.0
VALIDATE_50_POOLS_S = 1.0


def bench_validate():
    """load_cluster() on an inventory of 50 static-MIG pools with per-GPU layouts."""
    from ansible_collections.gpupool.core.plugins.module_utils.model.load import load_cluster

    layouts = [{"3g.20gb": 1, "2g.10gb": 2}, {"1g.5gb": 7}, {"4g.20gb": 1, "2g.10gb": 1, "1g.5gb": 1}, {"7g.40gb": 1}]
    pools = [
        {
            "name": "pool-%d" % i,
            "node_selector": {"pool": str(i)},
            "gpu": {"model": "A100-40GB", "per_node": 8},
            "mig": {"mode": "static", "layouts": {g: layouts[(i + g) % 4] for g in range(8)}},
        }
        for i in range(50)
    ]
    t0 = time.perf_counter()
    load_cluster({"name": "bench", "pools": pools})
    return time.perf_counter() - t0


def main():
    failures = []
    for key in cat.mig_capable_keys():
        gpu = cat.get_gpu(key)
        t0 = time.perf_counter()
        layouts = mig_placement.maximal_layouts(gpu)
        maximal_s = time.perf_counter() - t0
        samples = []
        for counts in itertools.product(*(range(p.max_instances + 1) for p in gpu.mig.profiles)):
            layout = {p.name: c for p, c in zip(gpu.mig.profiles, counts) if c}
            t1 = time.process_time()
            mig_placement.fits(gpu, layout)
            samples.append((time.process_time() - t1) * 1000)
        p99 = statistics.quantiles(samples, n=100)[98]
        print(
            "%-14s layouts=%5d maximal=%3d maximal_layouts=%.3fs plan p50=%.3fms p99=%.3fms"
            % (key, len(samples), len(layouts), maximal_s, statistics.median(samples), p99)
        )
        if p99 > PLAN_P99_MS:
            failures.append("%s plan p99 %.2f ms > %.1f ms" % (key, p99, PLAN_P99_MS))
        if maximal_s > MAXIMAL_S:
            failures.append("%s maximal_layouts %.2f s > %.1f s" % (key, maximal_s, MAXIMAL_S))
    elapsed = bench_validate()
    print("validate 50 pools x 8 GPUs: %.3fs" % elapsed)
    if elapsed > VALIDATE_50_POOLS_S:
        failures.append("validate 50 pools %.2f s > %.1f s" % (elapsed, VALIDATE_50_POOLS_S))
    for f in failures:
        print("MISSED:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
