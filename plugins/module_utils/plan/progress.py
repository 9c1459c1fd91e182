# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Progress lines a person can follow while a step waits, as `helm upgrade --wait` and `kubectl rollout status` do.

A step says what it waits for under a *subject* ("node gpu-a100-0", "MIG wave 1/2 of gpu-a100-mig", "DRA driver
rollout"): `Progress.update(subject, status)`. A line goes out when the status of a subject changes, and at
least every `heartbeat` seconds while it does not (with the time spent so far, so a silent minute never looks like
a hang); repeating an unchanged status more often prints nothing. `Progress.done(subject, status)` prints the
last line of a subject that was shown at all (unless it is the line shown last). Every line names the cluster the
step works on (``prefix``): with ``--forks`` several clusters print at once.

Pure: the clock is injected and `emit` is whatever shows a line (the controller's display in an action plugin,
nothing in a module, a list in tests).
"""

from __future__ import annotations

import time
from typing import Callable, Dict, List, Optional


class _Subject:
    __slots__ = ("started", "status", "emitted_at")

    def __init__(self, started: float) -> None:
        self.started = started
        self.status: Optional[str] = None
        self.emitted_at: Optional[float] = None


class Progress:
    """Throttled progress lines: one per change of a subject's status, a heartbeat every `heartbeat` s."""

    def __init__(
        self,
        emit: Callable[[str], None],
        prefix: str = "",
        heartbeat: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.emit = emit
        self.prefix = prefix
        self.heartbeat = float(heartbeat)
        self.clock = clock
        self._subjects: Dict[str, _Subject] = {}
        self.lines: List[str] = []  # everything shown, for the task's result
        self.waited = False  # something was waited for: the world may have moved meanwhile

    def elapsed(self, subject: str) -> float:
        state = self._subjects.get(subject)
        return 0.0 if state is None else self.clock() - state.started

    def start(self, subject: str, status: Optional[str] = None) -> None:
        """Start (or restart) the clock of a subject; with a status, say it at once."""
        self._subjects[subject] = _Subject(self.clock())
        if status is not None:
            self.update(subject, status)

    def update(self, subject: str, status: str) -> None:
        """The subject's status now: shown if it changed, or if the last line is `heartbeat` seconds old."""
        now = self.clock()
        self.waited = True
        state = self._subjects.get(subject)
        if state is None:
            state = self._subjects[subject] = _Subject(now)
        changed = status != state.status
        due = state.emitted_at is None or now - state.emitted_at >= self.heartbeat
        if changed or due:
            self._show(subject, status, state, now)

    def done(self, subject: str, status: str) -> None:
        """The last line of a subject, after which its clock is forgotten. Nothing when nothing was said of it
        (a wait that was over at the first look): a run with nothing to wait for prints no progress."""
        state = self._subjects.pop(subject, None)
        if state is not None and state.emitted_at is not None and state.status != status:
            self._show(subject, status, state, self.clock())

    def say(self, text: str) -> None:
        """A one-off line that belongs to no wait (a node cordoned, a pod evicted)."""
        self._line(text)

    def _show(self, subject: str, status: str, state: _Subject, now: float) -> None:
        state.status = status
        state.emitted_at = now
        self._line("%s: %s [%s]" % (subject, status, format_elapsed(now - state.started)))

    def _line(self, text: str) -> None:
        line = "%s: %s" % (self.prefix, text) if self.prefix else text
        self.lines.append(line)
        self.emit(line)


def format_elapsed(seconds: float) -> str:
    """12s, 3m05s, 1h02m: short, and unambiguous at a glance."""
    seconds = int(max(0.0, seconds))
    if seconds < 60:
        return "%ds" % seconds
    if seconds < 3600:
        return "%dm%02ds" % divmod(seconds, 60)
    hours, rest = divmod(seconds, 3600)
    return "%dh%02dm" % (hours, rest // 60)
