# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run's view of the cluster: each kind listed once per run, shared by the steps of that run.

Three steps of site.yml need the Nodes (node_pool labels them, mig_layout plans its waves, pool_info reports),
two the ComputeDomains. Each step runs in its own worker process, so without a shared view each would LIST
them again: at 2,000 nodes a LIST is about 10 MB of JSON the API server encodes and the controller decodes.
Like a controller's informer cache, the first step that needs a kind lists it and every later step of the same
run reads that list, kept current with what gpupool itself wrote (every write's answer replaces the object).

When the view may be used (and when not):

* only within one run: the run is named by its run lease (every Kubernetes task gets it through
  ``module_defaults``); without a lease (an ad-hoc task) every read is live;
* only until the world may have moved: a step that waited for something (a MIG wave, a drain, the driver
  rollout, Magnum) forgets the view at its end, and a view older than `MAX_AGE` seconds is read again;
* never for waiting: waits read live, always;
* decisions taken from the view are guarded where it matters: node writes carry the resourceVersion the node
  was read at, so a node that changed since is refused by the API server (409), read again and decided anew.

One file per kind under ``<temp>/gpupool-run-<uid>/<digest of API server and run>/`` (mode 0700), in Python's
``marshal`` format: only this run's own worker processes (the same Python) read it, it is written eight times
faster than JSON and read almost twice as fast (2,000 Nodes: 0.03 s and 0.3 s against 0.2 s and 0.5 s, measured
here), and it builds data, never runs code. Objects are kept without ``metadata.managedFields`` (half of a Node):
the steps that plan from the view do not read them; node_pool, whose label decisions do, reads the Nodes live. The run
lease's release removes the run's folder, and folders of runs older than a day are removed on the way.
GPUPOOL_RUN_VIEW=off switches it off (every read live).
"""

from __future__ import annotations

import hashlib
import marshal
import os
import shutil
import tempfile
import threading
import time
from typing import Callable, Dict, List, Optional, Set, Tuple

MAX_AGE = 60.0  # seconds a list may be reused by a later step of the same run
STALE_RUNS = 86400.0  # folders of runs this old are someone's killed run: removed


def _enabled() -> bool:
    return os.environ.get("GPUPOOL_RUN_VIEW", "on").lower() not in ("0", "off", "false", "no")


def kind_key(group: str, plural: str) -> str:
    return "%s_%s" % (group or "core", plural)


class RunView:
    """Lists of this run, by kind (cluster-wide lists only: a namespaced or label-selected read is live).

    Within a step the lists live in memory, indexed by object (a write updates one entry, not a 10 MB file);
    `flush()` - the step base calls it when the step ends, whatever the outcome - writes the kinds the step
    listed or wrote, for the next step."""

    def __init__(
        self,
        host: str,
        run: Optional[str],
        directory: Optional[str] = None,
        max_age: float = MAX_AGE,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.enabled = bool(run) and _enabled()
        self.base = directory or os.path.join(tempfile.gettempdir(), "gpupool-run-%d" % os.getuid())
        digest = hashlib.sha256(("%s\n%s" % (host, run or "")).encode("utf-8")).hexdigest()[:24]
        self.directory = os.path.join(self.base, digest)
        self.max_age = max_age
        self.clock = clock
        self.served = 0  # lists answered from the view (for tests and the bench)
        self._lists: Dict[str, Tuple[float, Dict[Tuple[str, str], dict]]] = {}  # key -> (listed at, objects)
        self._dirty: Set[str] = set()
        self._lock = threading.Lock()  # node writes are answered in several workers at once (k8s/workers.py)

    def _path(self, key: str) -> str:
        return os.path.join(self.directory, key + ".marshal")

    def _load(self, key: str) -> Optional[Tuple[float, Dict[Tuple[str, str], dict]]]:
        if key not in self._lists:
            try:
                with open(self._path(key), "rb") as f:
                    doc = marshal.load(f)
            except (OSError, ValueError, EOFError, TypeError):
                return None
            if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
                return None
            self._lists[key] = (float(doc.get("at", 0)), {_ident(o): o for o in doc["items"]})
        return self._lists[key]

    def _save(self, key: str) -> None:
        at, items = self._lists[key]
        try:
            if not os.path.isdir(self.directory):
                self._sweep()
                os.makedirs(self.directory, mode=0o700, exist_ok=True)
            tmp = "%s.%d.tmp" % (self._path(key), os.getpid())
            data = marshal.dumps({"at": at, "items": list(items.values())})
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, self._path(key))  # atomic: a reader sees the old or the new list
        except (OSError, ValueError):
            pass  # a view that cannot be written is no view: the next step reads live

    def _sweep(self) -> None:
        """Remove the folders of runs that were killed before their lease was released (a day old)."""
        try:
            for name in os.listdir(self.base):
                path = os.path.join(self.base, name)
                if self.clock() - os.path.getmtime(path) > STALE_RUNS:
                    shutil.rmtree(path, ignore_errors=True)
        except OSError:
            pass

    # ---- the view ------------------------------------------------------------------------------------
    def get(self, key: str) -> Optional[List[dict]]:
        """The run's list of a kind, or None (not listed yet in this run, too old, or no view)."""
        if not self.enabled:
            return None
        loaded = self._load(key)
        if loaded is None or self.clock() - loaded[0] > self.max_age:
            return None
        self.served += 1
        return list(loaded[1].values())

    def put(self, key: str, items: List[dict]) -> None:
        """A list just read from the API server becomes the run's view of the kind."""
        if self.enabled:
            self._lists[key] = (self.clock(), {_ident(o): _kept(o) for o in items})
            self._dirty.add(key)

    def record(self, key: str, obj: dict) -> None:
        """gpupool wrote an object (the API server's answer): the view holds it as written."""
        self._change(key, _ident(obj), obj)

    def drop(self, key: str, namespace: Optional[str], name: str) -> None:
        """gpupool deleted an object."""
        self._change(key, (namespace or "", name), None)

    def _change(self, key: str, ident: Tuple[str, str], obj: Optional[dict]) -> None:
        if not self.enabled:
            return
        with self._lock:
            self._change_locked(key, ident, obj)

    def _change_locked(self, key: str, ident: Tuple[str, str], obj: Optional[dict]) -> None:
        loaded = self._load(key)
        if loaded is None:
            return  # not in the view: nothing to keep current
        if obj is None:
            loaded[1].pop(ident, None)
        else:
            loaded[1][ident] = _kept(obj)
        self._dirty.add(key)  # the list's age stays: the rest of it is as old as before

    def flush(self) -> None:
        """Write what this step listed or wrote, for the next step of the run."""
        if self.enabled:
            for key in sorted(self._dirty):
                if key in self._lists:
                    self._save(key)
        self._dirty.clear()

    def forget(self) -> None:
        """The world may have moved (a step waited for it), or the run ended: read everything again."""
        self._lists.clear()
        self._dirty.clear()
        if self.enabled:
            shutil.rmtree(self.directory, ignore_errors=True)


def _kept(obj: dict) -> dict:
    """The object as the view keeps it: without managedFields (see the module docstring)."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return obj
    return dict(obj, metadata={k: v for k, v in meta.items() if k != "managedFields"})


def _ident(obj: dict) -> Tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")
