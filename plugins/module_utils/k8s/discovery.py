# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The API versions each group serves, kept between the steps of one playbook run (see `DiscoveryCache`)."""

from __future__ import annotations

import json
import os
import time

DISCOVERY_TTL = 300.0


class DiscoveryCache:
    """The API versions each group serves, shared by the module runs of one playbook run.

    Every task of a playbook is its own process, so without it each module that needs resource.k8s.io
    discovers it again. One small JSON file per API server address under the temp directory
    (``gpupool-discovery-<uid>/``, mode 0700) keeps served versions for DISCOVERY_TTL seconds, as kubectl
    keeps its discovery cache: API versions change with upgrades, not between two tasks. Only groups that
    are served are kept. A cache that cannot be read or written is no cache (discovery as without it);
    GPUPOOL_DISCOVERY_CACHE=off switches it off.
    """

    def __init__(self, host, directory=None, ttl=DISCOVERY_TTL, clock=time.time):
        import hashlib
        import tempfile

        self.enabled = os.environ.get("GPUPOOL_DISCOVERY_CACHE", "on").lower() not in ("0", "off", "false", "no")
        base = directory or os.path.join(tempfile.gettempdir(), "gpupool-discovery-%d" % os.getuid())
        self.directory = base
        self.path = os.path.join(base, hashlib.sha256(host.encode("utf-8")).hexdigest()[:24] + ".json")
        self.ttl = ttl
        self._clock = clock

    def _load(self):
        try:
            with open(self.path) as f:
                data = json.load(f)
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def get(self, group):
        if not self.enabled:
            return None
        entry = self._load().get(group)
        if not isinstance(entry, dict) or self._clock() - float(entry.get("at", 0)) > self.ttl:
            return None
        versions = entry.get("versions")
        return list(versions) if isinstance(versions, list) and versions else None

    def put(self, group, versions):
        if not self.enabled:
            return
        try:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
            data = self._load()
            data[group] = {"versions": list(versions), "at": self._clock()}
            tmp = "%s.%d.tmp" % (self.path, os.getpid())
            with open(tmp, "w") as f:
                json.dump(data, f)
            os.replace(tmp, self.path)  # atomic: a concurrent reader sees the old or the new file
        except OSError:
            pass

    def forget(self, group):
        """Drop a group the server turned out not to serve any more (a CRD deleted within the TTL)."""
        if not self.enabled:
            return
        data = self._load()
        if data.pop(group, None) is None:
            return
        try:
            tmp = "%s.%d.tmp" % (self.path, os.getpid())
            with open(tmp, "w") as f:
                json.dump(data, f)
            os.replace(tmp, self.path)
        except OSError:
            pass
