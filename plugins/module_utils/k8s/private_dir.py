# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private folders for files that hold credentials (a kubeconfig with a bearer token, helm's repositories.yaml and
registry config with their passwords), and their removal on every exit path.

Each folder is made 0700 inside one per-user folder, <tmp>/gpupool-private-<uid> (0700, checked to be this user's
and writable by nobody else: another user could have made it first in a shared /tmp). Its name carries the process
that made it: its pid and its start time (/proc/<pid>/stat), so that a pid reused by another process is not taken
for the maker. The maker removes it when done (`remove`, in a finally: a normal end, an exception, and SIGTERM or
SIGINT, which the step base turns into an exception where the step is), and at interpreter exit whatever it still
has. A process killed outright (SIGKILL, an AWX container removed) removes nothing: the next `create` or `sweep`, in
any later run of the same user, removes every folder whose maker is no longer running.
"""

from __future__ import annotations

import atexit
import os
import shutil
import stat
import tempfile
from typing import List, Optional, Set

_LIVE: Set[str] = set()  # folders this process made and has not removed yet


class PrivateDirError(OSError):
    """The per-user folder exists but is not private (another owner, or writable by others)."""


def base(root: Optional[str] = None) -> str:
    return os.path.join(root or tempfile.gettempdir(), "gpupool-private-%d" % os.getuid())


def started(pid: int) -> Optional[str]:
    """The process's start time (clock ticks since boot, /proc/<pid>/stat field 22) as text; "?" where /proc does
    not tell (the process exists); None when there is no such process."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return fields[19]  # field 22 of the whole line; the first two (pid, comm) are before the ")"
    except (OSError, IndexError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except OSError:  # PermissionError: it exists, another user's
        return "?"
    return "?"


def _ensure(path: str) -> None:
    os.makedirs(path, mode=0o700, exist_ok=True)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise PrivateDirError(
            "%s is not a private folder of this user (mode %o, owner uid %d): gpupool will not write credentials "
            "into it; remove it and run again" % (path, stat.S_IMODE(info.st_mode), info.st_uid)
        )


def create(purpose: str, root: Optional[str] = None) -> str:
    """A new 0700 folder for credential files (after sweeping what killed processes left); `remove` it when done."""
    home = base(root)
    _ensure(home)
    sweep(root)
    pid = os.getpid()
    path = tempfile.mkdtemp(prefix="%s.%d.%s." % (purpose, pid, started(pid) or "?"), dir=home)  # mode 0700
    _LIVE.add(path)
    return path


def remove(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)
    _LIVE.discard(path)


def maker_alive(name: str) -> bool:
    """Whether the process that made the folder `name` (purpose.pid.start.random) still runs; a name not in that
    form is kept (not ours to judge)."""
    parts = name.split(".")
    if len(parts) < 4 or not parts[1].isdigit():
        return True
    now = started(int(parts[1]))
    return now is not None and (parts[2] == "?" or now == "?" or now == parts[2])


def sweep(root: Optional[str] = None) -> List[str]:
    """Remove the folders whose maker is gone (a run killed outright); returns their paths."""
    home, removed = base(root), []
    try:
        names = os.listdir(home)
    except OSError:
        return removed
    for name in names:
        path = os.path.join(home, name)
        if path not in _LIVE and not maker_alive(name):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


@atexit.register
def _remove_all() -> None:
    for path in list(_LIVE):
        remove(path)
