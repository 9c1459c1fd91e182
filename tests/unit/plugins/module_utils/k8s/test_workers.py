# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bounded worker pool of node writes (k8s/workers.py): answers in the order of the work, never more than the
bound in flight, and a failure stops what has not started."""

from __future__ import annotations

import threading
import time

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.k8s.workers import run_bounded


class Gauge:
    """Counts the jobs running at once; each job waits until `together` jobs have started (or a short while)."""

    def __init__(self, together: int) -> None:
        self.lock = threading.Lock()
        self.now = self.peak = 0
        self.started = []
        self.enough = threading.Event()
        self.together = together

    def job(self, i: int):
        def run():
            with self.lock:
                self.now += 1
                self.peak = max(self.peak, self.now)
                self.started.append(i)
                if self.now >= self.together:
                    self.enough.set()
            self.enough.wait(0.5)
            with self.lock:
                self.now -= 1
            return i * i

        return run


def test_answers_come_back_in_the_order_of_the_work_and_the_bound_holds():
    gauge = Gauge(together=4)
    assert run_bounded([gauge.job(i) for i in range(40)], workers=4) == [i * i for i in range(40)]
    assert gauge.peak == 4  # the bound was reached (the jobs waited for each other) and never passed


def test_one_worker_or_one_job_runs_in_this_thread():
    seen = []
    run_bounded([lambda: seen.append(threading.current_thread())] * 3, workers=1)
    run_bounded([lambda: seen.append(threading.current_thread())], workers=16)
    assert set(seen) == {threading.current_thread()}


def test_a_failure_is_raised_in_order_and_work_not_started_is_dropped():
    started = []

    def job(i):
        def run():
            started.append(i)
            if i == 1:
                raise ValueError("job 1 failed")
            time.sleep(0.01)  # 200 jobs on 2 workers take a second: the failure is seen long before the end
            return i

        return run

    with pytest.raises(ValueError, match="job 1 failed"):
        run_bounded([job(i) for i in range(200)], workers=2)
    assert 1 in started and len(started) < 200  # what was still queued when job 1 failed never ran
