# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.plan.waiting import Waiter


class FakeTime:
    def __init__(self):
        self.now = 100.0
        self.sleeps = []

    def clock(self):
        return self.now

    def pause(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


def test_returns_as_soon_as_the_probe_is_done_and_logs_each_round():
    t = FakeTime()
    answers = iter([(False, "1/3 Ready"), (False, "2/3 Ready"), (True, "3/3 Ready")])
    seen = []
    result = Waiter(timeout=60, sleep=5, clock=t.clock, pause=t.pause, progress=seen.append).until(
        lambda: next(answers)
    )
    assert result.done and bool(result) and result.status == "3/3 Ready"
    assert result.log == ["0s: 1/3 Ready", "5s: 2/3 Ready", "10s: 3/3 Ready"]
    assert seen == ["1/3 Ready", "2/3 Ready", "3/3 Ready"]
    assert t.sleeps == [5, 5]


def test_a_long_pause_repeats_the_status_every_heartbeat_for_progress():
    """A wait that polls every 12 s still tells its progress reporter something every 5 s."""
    t = FakeTime()
    answers = iter([(False, "UPDATE_IN_PROGRESS"), (True, "UPDATE_COMPLETE")])
    seen = []
    Waiter(timeout=60, sleep=12, clock=t.clock, pause=t.pause, progress=seen.append).until(lambda: next(answers))
    assert t.sleeps == [5, 5, 2]
    assert seen == ["UPDATE_IN_PROGRESS"] * 3 + ["UPDATE_COMPLETE"]


def test_a_wait_over_at_the_first_look_tells_progress_nothing():
    seen = []
    Waiter(timeout=60, sleep=5, progress=seen.append).until(lambda: (True, "3/3 Ready"))
    assert seen == []


def test_without_progress_a_pause_is_one_sleep():
    t = FakeTime()
    answers = iter([(False, "x"), (True, "y")])
    Waiter(timeout=60, sleep=12, clock=t.clock, pause=t.pause).until(lambda: next(answers))
    assert t.sleeps == [12]


def test_times_out_with_the_last_status_and_never_sleeps_past_the_deadline():
    t = FakeTime()
    result = Waiter(timeout=12, sleep=5, clock=t.clock, pause=t.pause).until(lambda: (False, "waiting"))
    assert not result.done and result.status == "waiting" and result.elapsed == 12
    assert t.sleeps == [5, 5, 2]


def test_back_off_grows_to_the_cap():
    t = FakeTime()
    Waiter(timeout=100, sleep=2, backoff=2, max_sleep=10, clock=t.clock, pause=t.pause).until(lambda: (False, "x"))
    assert t.sleeps[:5] == [2, 4, 8, 10, 10]


def test_zero_timeout_probes_once():
    t = FakeTime()
    calls = []
    result = Waiter(timeout=0, clock=t.clock, pause=t.pause).until(lambda: calls.append(1) or (False, "no"))
    assert calls == [1] and not result.done and t.sleeps == []


@pytest.mark.parametrize("kwargs", [dict(timeout=-1), dict(timeout=1, sleep=0), dict(timeout=1, backoff=0.5)])
def test_nonsense_settings_are_refused(kwargs):
    with pytest.raises(ValueError):
        Waiter(**kwargs)
