# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Progress lines: one per change, a heartbeat while nothing changes, never a repeat in between."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.plan.progress import Progress, format_elapsed


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def reporter(heartbeat=5.0):
    clock, lines = Clock(), []
    return Progress(lines.append, prefix="cern-gpu", heartbeat=heartbeat, clock=clock), clock, lines


def test_a_change_is_shown_at_once_and_a_repeat_is_not():
    progress, clock, lines = reporter()
    progress.update("node n0", "draining: 2 pods to go")
    clock.now += 1
    progress.update("node n0", "draining: 2 pods to go")
    clock.now += 1
    progress.update("node n0", "draining: 1 pod to go")
    assert lines == [
        "cern-gpu: node n0: draining: 2 pods to go [0s]",
        "cern-gpu: node n0: draining: 1 pod to go [2s]",
    ]


def test_an_unchanged_status_is_repeated_every_heartbeat_with_the_time_spent():
    progress, clock, lines = reporter(heartbeat=5)
    progress.update("MIG wave 1/2 of gpu-a100-mig", "n0 pending")
    for _second in range(12):
        clock.now += 1
        progress.update("MIG wave 1/2 of gpu-a100-mig", "n0 pending")
    assert lines == [
        "cern-gpu: MIG wave 1/2 of gpu-a100-mig: n0 pending [0s]",
        "cern-gpu: MIG wave 1/2 of gpu-a100-mig: n0 pending [5s]",
        "cern-gpu: MIG wave 1/2 of gpu-a100-mig: n0 pending [10s]",
    ]


def test_subjects_keep_their_own_clocks_and_done_closes_what_was_shown():
    progress, clock, lines = reporter()
    progress.start("nodegroup gpu-t4", "UPDATE_IN_PROGRESS, 1/2 nodes")
    clock.now += 3
    progress.update("node n1", "cordoned")
    clock.now += 1
    progress.done("nodegroup gpu-t4", "UPDATE_COMPLETE, 2/2 nodes")
    progress.done("nodegroup gpu-t4", "UPDATE_COMPLETE, 2/2 nodes")  # closed already: nothing
    progress.done("nodegroup gpu-h100", "UPDATE_COMPLETE")  # never shown: nothing
    progress.update("node n1", "uncordoned")
    progress.done("node n1", "uncordoned")  # said last already: nothing
    assert lines == [
        "cern-gpu: nodegroup gpu-t4: UPDATE_IN_PROGRESS, 1/2 nodes [0s]",
        "cern-gpu: node n1: cordoned [0s]",
        "cern-gpu: nodegroup gpu-t4: UPDATE_COMPLETE, 2/2 nodes [4s]",
        "cern-gpu: node n1: uncordoned [1s]",
    ]
    assert progress.lines == lines


def test_say_is_a_single_line_without_a_clock():
    progress, _clock, lines = reporter()
    progress.say("evicted pod default/train-0 from n0")
    assert lines == ["cern-gpu: evicted pod default/train-0 from n0"]


def test_no_prefix_without_a_cluster_name():
    lines = []
    Progress(lines.append, clock=Clock()).update("x", "y")
    assert lines == ["x: y [0s]"]


def test_elapsed_is_short_and_readable():
    assert [format_elapsed(s) for s in (0, 9.9, 60, 185, 3725, -3)] == ["0s", "9s", "1m00s", "3m05s", "1h02m", "0s"]
