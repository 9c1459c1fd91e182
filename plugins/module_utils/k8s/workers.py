# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A small fixed pool of worker threads for independent requests (one node's writes each), as client-go's
workqueue workers: at most `workers` requests in flight, the answers handed back in the order of the work.

Why threads: a node write is a round trip to the API server, almost all of it waiting; one request after the
other, 2,000 nodes take 2,000 round trips (about 22 s on the test bed). A bounded pool keeps the API server busy
without flooding it (client-go's controllers run 2 to 16 workers; the API server's own priority and fairness
still applies), and the requests stay the same: each still carries the resourceVersion it was decided from.
Work is handed back in order, so whoever records results, warnings and errors does it in one thread, in a
stable order, whatever order the answers came in.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable, List, Sequence, TypeVar

T = TypeVar("T")

NODE_WORKERS = 16  # node writes in flight at once, per step run (client-go's workqueues: 2-16 workers)


def run_bounded(work: Sequence[Callable[[], T]], workers: int = NODE_WORKERS) -> List[T]:
    """Each callable's answer, in the order given; at most `workers` run at once. A callable that raises stops the
    rest: what has not started is not started, what runs finishes, and the first exception (in order) is raised.
    One callable or one worker: called in this thread."""
    if len(work) <= 1 or workers <= 1:
        return [job() for job in work]
    pool = ThreadPoolExecutor(max_workers=min(workers, len(work)), thread_name_prefix="gpupool-worker")
    try:
        futures = [pool.submit(job) for job in work]
        return [future.result() for future in futures]
    finally:
        # also on Cancelled (SIGTERM in this, the main thread): queued work is dropped, requests in flight end
        pool.shutdown(wait=True, cancel_futures=True)
