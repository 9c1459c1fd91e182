# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's error types: one base, one list of problems.

Every error raised on purpose is a `GpupoolError` whose message is a sentence a person can act on;
the module base (module.py) turns it into ``fail_json`` in one place. `Problems` is the one error for
"what you asked for cannot be done, nothing was changed": a list of (path, message) pairs, where the
path is the inventory key (``gpupool_cluster.pools[1].mig.layout``) or option that caused it.
I/O layers subclass `GpupoolError` (K8sError, MagnumError, NvmlError) so the base maps them the same way.
"""

from __future__ import annotations

from typing import Iterable, Tuple, Union


class GpupoolError(Exception):
    """An error with a message for people; `details` become extra keys of the failed task's result."""

    def __init__(self, message: str, **details: object) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def describe(self) -> str:
        return self.message


class Cancelled(BaseException):
    """The run was stopped (SIGTERM, as an AWX cancel sends, or SIGINT) while a step ran.

    A BaseException, as KeyboardInterrupt is: no ``except Exception`` on the way (a retry loop, a client's error
    mapping) may swallow it; the step base catches it, says what the step had done and hands the run lease back."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name


ProblemList = Iterable[Tuple[str, str]]


class Problems(GpupoolError, ValueError):
    """Every problem found, each as (path, message); nothing was changed.

    `Problems("one sentence")` is a single problem without a path (a refusal of the planner).
    `subject` says what was being checked, for the first line of the rendered message.
    """

    def __init__(self, problems: Union[str, ProblemList], subject: str = "in the GPU-pool inventory") -> None:
        if isinstance(problems, str):
            problems = [("", problems)]
        self.problems = [(str(path), str(message)) for path, message in problems]
        self.subject = subject
        super().__init__(self.render())

    def render(self) -> str:
        if len(self.problems) == 1 and not self.problems[0][0]:
            return self.problems[0][1]
        lines = ["%d problem(s) %s; nothing was changed:" % (len(self.problems), self.subject)]
        lines += ["  - %s: %s" % (path, message) if path else "  - %s" % message for path, message in self.problems]
        return "\n".join(lines)

    def as_list(self) -> list:
        return [{"path": path, "message": message} for path, message in self.problems]


class MissingLibrary(GpupoolError):
    """A Python library the module needs is not installed where the module runs."""

    def __init__(self, library: str, reason: str = "", traceback: str = "") -> None:
        super().__init__("%s is required%s" % (library, " " + reason if reason else ""))
        self.library = library
        self.reason = reason
        self.traceback = traceback
