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

import textwrap
from typing import Iterable, List, Tuple, Union

# The longest line of a rendered problem list: a message that lists many names ends with them on lines of their
# own (mig/name_lists.py), and a longer sentence wraps, so a terminal or an AWX job log shows it whole.
LINE_LIMIT = 200


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
        """One line per problem, ``  - path: message``; a message's own next lines and what wraps past
        LINE_LIMIT are indented under it."""
        if len(self.problems) == 1 and not self.problems[0][0]:  # one sentence of a planner: as it was written
            return self.problems[0][1]
        lines = ["%d problem(s) %s; nothing was changed:" % (len(self.problems), self.subject)]
        for path, message in self.problems:
            lines += _lines("  - %s: " % path if path else "  - ", message, indent="    ")
        return "\n".join(lines)

    def as_list(self) -> list:
        return [{"path": path, "message": message} for path, message in self.problems]


def _lines(head: str, message: str, indent: str) -> List[str]:
    out = []
    for index, part in enumerate(message.split("\n")):
        line = head + part if index == 0 else indent + part
        out += _wrap(line, indent)
    return out


def _wrap(line: str, indent: str) -> List[str]:
    """`line` in lines of at most LINE_LIMIT characters: broken at spaces, and a word longer than a line (a
    63-character name in a long path, a URL) broken inside, so no line is ever longer."""
    if len(line) <= LINE_LIMIT:
        return [line]
    return textwrap.wrap(
        line,
        LINE_LIMIT,
        subsequent_indent=indent,
        break_long_words=True,
        break_on_hyphens=False,
        drop_whitespace=True,
    ) or [line[:LINE_LIMIT]]


def fit_lines(text: str, indent: str = "  ") -> str:
    """A runtime error's text with every line at most LINE_LIMIT characters (the module base applies it to every
    failed step's message, whatever built it: an API answer, a lease holder, a long object name). Lines already
    short are kept as they are; a longer one continues on indented lines."""
    if all(len(line) <= LINE_LIMIT for line in text.split("\n")):
        return text
    return "\n".join(piece for line in text.split("\n") for piece in _wrap(line, indent))


class MissingLibrary(GpupoolError):
    """A Python library the module needs is not installed where the module runs."""

    def __init__(self, library: str, reason: str = "", traceback: str = "") -> None:
        super().__init__("%s is required%s" % (library, " " + reason if reason else ""))
        self.library = library
        self.reason = reason
        self.traceback = traceback
