# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one waiter: poll until a condition holds or a deadline passes, with back-off and a progress log.

Every wait of the collection (Ready nodes, ComputeDomains, MIG waves, Magnum nodegroup statuses, evicted
pods) goes through `Waiter.until()`, so they share one meaning of timeout, one back-off and one log format.
The clock and the sleep are injected: unit tests drive a wait without sleeping, and the waiter itself does
no I/O (the probe it is given does).
"""

from __future__ import annotations

import time
from typing import Callable, List, Optional, Tuple

Probe = Callable[[], Tuple[bool, str]]


class WaitResult:
    """How a wait ended: `done` (the probe said so), the last status text, seconds waited, the log."""

    def __init__(self, done: bool, status: str, elapsed: float, log: List[str]) -> None:
        self.done = done
        self.status = status
        self.elapsed = elapsed
        self.log = log

    def __bool__(self) -> bool:
        return self.done


class Waiter:
    """Poll a probe every `sleep` seconds (growing by `backoff` up to `max_sleep`) for at most `timeout`.

    The probe returns (done, status text). Each round is logged as "<seconds>s: <status>"; `progress`,
    when given, is called with the status after each round and again every `heartbeat` seconds of a longer
    pause (a `plan.progress.Progress` turns that into lines a person can follow: one per change, a heartbeat
    while nothing changes), so a wait that polls every 30 s still shows it is alive every 5 s. A wait that is
    over at the first look tells progress nothing: there was nothing to wait for.
    """

    def __init__(
        self,
        timeout: float,
        sleep: float = 5.0,
        backoff: float = 1.0,
        max_sleep: Optional[float] = None,
        clock: Callable[[], float] = time.monotonic,
        pause: Callable[[float], None] = time.sleep,
        progress: Optional[Callable[[str], None]] = None,
        heartbeat: float = 5.0,
    ) -> None:
        if timeout < 0 or sleep <= 0 or backoff < 1:
            raise ValueError("a wait needs timeout >= 0, sleep > 0 and backoff >= 1")
        self.timeout = float(timeout)
        self.sleep = float(sleep)
        self.backoff = float(backoff)
        self.max_sleep = float(max_sleep) if max_sleep is not None else float(sleep) * 8
        self.clock = clock
        self.pause = pause
        self.progress = progress
        self.heartbeat = float(heartbeat)

    def until(self, probe: Probe) -> WaitResult:
        start = self.clock()
        log: List[str] = []
        delay = self.sleep
        while True:
            done, status = probe()
            elapsed = self.clock() - start
            line = "%ds: %s" % (int(elapsed), status)
            log.append(line)
            # nothing to wait for (done at the first look): no progress line, a no-op run stays quiet
            if self.progress is not None and not (done and len(log) == 1):
                self.progress(status)
            if done or elapsed >= self.timeout:
                return WaitResult(bool(done), status, elapsed, log)
            # never sleep past the deadline, never spin faster than 0.2 s
            self._pause(max(0.2, min(delay, self.timeout - elapsed)), status)
            delay = min(delay * self.backoff, self.max_sleep)

    def _pause(self, seconds: float, status: str) -> None:
        """Sleep; with progress, in slices of `heartbeat` seconds, repeating the status between them."""
        if self.progress is None or seconds <= self.heartbeat:
            self.pause(seconds)
            return
        while seconds > 0:
            step = min(seconds, self.heartbeat)
            self.pause(step)
            seconds -= step
            if seconds > 0:
                self.progress(status)
