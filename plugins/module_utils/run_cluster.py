# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run's validated inventory: the model's checks run once per run, and the steps of the run share the verdict.

Every step of site.yml is handed the whole inventory (``cluster: "{{ gpupool_cluster }}"``) and must refuse a bad one
before it writes anything. Each step runs in its own worker process, so without a shared result each would run every
check of the model again (model/load.py: the look-alike and control-character scans, then every semantic check of
model/checks.py). As k8s/run_view.py does for Kubernetes lists, the first step of a run that validates the inventory
records that it did, and every later step of the same run that is handed the same data trusts that record:

* only within one run: the run is named by its run lease (``run_lease.holder``); a step without a run lease (the
  validate step itself, an ad-hoc task) validates on its own and records nothing;
* only for the same data: the record is named by a digest of the inventory data and of the collection (its version
  and where it is installed), so a step handed other data (another ``-e``, a templated value that changed) validates
  it again;
* a refused inventory is never recorded: its step fails with every problem, and so would the next;
* the record holds a verdict, never the model: a step that trusts it still builds its own `Cluster` from its own data
  with the model's shape checks (``Cluster.model_validate``, as `load_cluster` does after its checks), so the object
  is the one `load_cluster` returns; what it skips are the checks, about 9 ms of CPU at 50 pools (docs/performance.md).

Files: ``<temp>/gpupool-run-<uid>/inventory-<digest of the run>/<digest of the data>.marshal`` (folders mode 0700,
owned by this user, or not used), next to the run view's folders, so that the same day-old sweep removes those of a
killed run; the run lease's release removes the run's folder. GPUPOOL_RUN_VIEW=off switches it off too.
"""

from __future__ import annotations

import functools
import hashlib
import marshal
import os
import re
import shutil
import stat
import tempfile
from typing import Any, Optional

from ansible_collections.gpupool.core.plugins.module_utils.model.inventory import Cluster
from ansible_collections.gpupool.core.plugins.module_utils.model.load import load_cluster
from ansible_collections.gpupool.core.plugins.module_utils.model.strict import ValidationError

FORMAT = 1  # of the record: a record of another format is not trusted
_COLLECTION = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
_VERSION_FILES = (("MANIFEST.json", r'"version"\s*:\s*"([^"]+)"'), ("galaxy.yml", r"(?m)^version:\s*(\S+)"))


@functools.lru_cache(maxsize=None)
def collection_version() -> str:
    """The collection's version (MANIFEST.json when installed, galaxy.yml in a checkout), with where it lives: a record
    made by another copy of the model is not trusted."""
    for name, pattern in _VERSION_FILES:
        try:
            with open(os.path.join(_COLLECTION, name), encoding="utf-8") as f:
                match = re.search(pattern, f.read())
        except OSError:
            continue
        if match:
            return "%s@%s" % (match.group(1), _COLLECTION)
    return "unknown@%s" % _COLLECTION


def _enabled() -> bool:
    return os.environ.get("GPUPOOL_RUN_VIEW", "on").lower() not in ("0", "off", "false", "no")


def data_digest(data: Any) -> str:
    """Digest of the inventory data as the step was handed it. repr() tells apart every plain value the data can hold
    (1, 1.0, True and '1'; a list and a tuple); the same data in another key order digests differently, which costs a
    validation, never a wrong verdict."""
    text = "%s\n%d\n%r" % (collection_version(), FORMAT, data)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def run_folder(run: str, base: Optional[str] = None) -> str:
    base = base or os.path.join(tempfile.gettempdir(), "gpupool-run-%d" % os.getuid())
    return os.path.join(base, "inventory-" + hashlib.sha256(run.encode("utf-8")).hexdigest()[:24])


def _private(path: str) -> bool:
    """A folder of this user that nobody else can write to (another user could have made the folder in a shared
    /tmp first, and planted a record in it)."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022


class RunCluster:
    """The verdicts of one run (`run` None or the view switched off: none, every step validates)."""

    def __init__(self, run: Optional[str], base: Optional[str] = None) -> None:
        self.enabled = bool(run) and _enabled()
        self.folder = run_folder(run or "", base)
        self.shared = False  # whether the last `load` trusted a record (for tests and the bench)

    def _record(self, digest: str) -> str:
        return os.path.join(self.folder, digest + ".marshal")

    def trusted(self, digest: str) -> bool:
        if not (self.enabled and _private(os.path.dirname(self.folder)) and _private(self.folder)):
            return False
        try:
            with open(self._record(digest), "rb") as f:
                record = marshal.load(f)
        except (OSError, ValueError, EOFError, TypeError):
            return False
        return isinstance(record, dict) and record.get("digest") == digest and record.get("format") == FORMAT

    def remember(self, digest: str) -> None:
        if not self.enabled:
            return
        try:
            os.makedirs(os.path.dirname(self.folder), mode=0o700, exist_ok=True)
            os.makedirs(self.folder, mode=0o700, exist_ok=True)
            if not (_private(os.path.dirname(self.folder)) and _private(self.folder)):
                return
            tmp = "%s.%d.tmp" % (self._record(digest), os.getpid())
            with open(tmp, "wb") as f:
                f.write(marshal.dumps({"digest": digest, "format": FORMAT}))
            os.replace(tmp, self._record(digest))  # atomic: a reader sees the whole record or none
        except (OSError, ValueError):
            pass  # not recorded: the next step validates on its own

    def load(self, data: Any) -> Cluster:
        """The validated `Cluster` of `data` (Problems when the model refuses it), as `load_cluster` returns it."""
        digest = data_digest(data) if self.enabled else ""
        self.shared = bool(digest) and isinstance(data, dict) and self.trusted(digest)
        if self.shared:
            # the checks passed on this very data in this run: only the model's own shape validation is left
            try:
                return Cluster.model_validate(dict(data))
            except ValidationError:  # not the data the record was made for, after all: the full checks say why
                self.shared = False
        cluster = load_cluster(data)
        if digest:
            self.remember(digest)
        return cluster

    def record(self, data: Any) -> None:
        """`data` was checked in full (`load_cluster`) before the run had a name: the step that names the run (the run
        lease's take) records the verdict for the run's later steps."""
        self.remember(data_digest(data))

    def forget(self) -> None:
        """The run is over: its records go."""
        if self.enabled:
            shutil.rmtree(self.folder, ignore_errors=True)


def run_cluster(data: Any, run: Optional[str]) -> Cluster:
    """`load_cluster(data)`, checked once per run `run` (the run lease's holder; None: checked here)."""
    return RunCluster(run).load(data)
