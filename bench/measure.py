"""Measure one ansible-playbook run: wall time, CPU, peak memory, and the exact API requests it made.

CPU is the user + system time of the playbook's whole process tree (ansible-playbook, its forks and
the module processes they run: every descendant is reaped, so RUSAGE_CHILDREN holds it). Peak
memory is the largest sum of PSS (proportional set size: pages shared by forks counted once,
split among them) over the tree, sampled every 50 ms from /proc/<pid>/smaps_rollup.

Requests come from each apiserver's audit log, filtered by the client identity the run used, and
from the Magnum emulator's request log.
"""

from __future__ import annotations

import os
import re
import resource
import subprocess
import threading
import time
from dataclasses import dataclass, field

import psutil

READ_VERBS = frozenset({"get", "list", "watch"})
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
DISCOVERY_PATH = re.compile(r"^/(api|apis)(/[^/?]+){0,2}/?(\?|$)|^/(openapi|version)")


@dataclass
class Run:
    rc: int
    wall: float
    cpu: float
    peak_mib: float
    stdout: str
    requests: dict = field(default_factory=dict)

    @property
    def recap(self) -> dict:
        out = {}
        for host, counts in re.findall(r"^(\S+)\s+:\s+(ok=.*)$", self.stdout, re.M):
            out[host] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", counts)}
        return out


def _pss_kib(pid: int) -> int:
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def run_measured(cmd: list[str], env: dict, cwd: str, timeout: float = 3600) -> Run:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak = [0]
    done = threading.Event()

    def sample():
        root = psutil.Process(proc.pid)
        while not done.is_set():
            try:
                pids = [root.pid] + [c.pid for c in root.children(recursive=True)]
            except psutil.Error:
                break
            peak[0] = max(peak[0], sum(_pss_kib(p) for p in pids))
            done.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    wall = time.monotonic() - t0
    done.set()
    sampler.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(proc.returncode, wall, cpu, peak[0] / 1024.0, out)


def classify(events: list[dict]) -> dict:
    """Counts of one identity's requests in an audit window.

    lease: requests on the run lease (coordination.k8s.io Leases), kept out of reads and writes;
    reads: get/list/watch on resources; discovery: GETs of /api, /apis, /apis/<group>[/<version>],
    /openapi, /version; writes: create/update/patch/delete that persisted (server dry runs are left
    out by the audit reader); objects: distinct objects a successful write touched;
    by_kind: {resource: {verb: count}}."""
    reads = discovery = writes = lease = 0
    objects = set()
    by_kind: dict = {}
    for e in events:
        verb = e.get("verb")
        ref = e.get("objectRef") or {}
        uri = e.get("requestURI", "")
        resource_name = ref.get("resource")
        if resource_name == "leases":  # the run lease: run bookkeeping, counted apart from the converge
            lease += 1
            key = "leases"
        elif resource_name is None and DISCOVERY_PATH.match(uri):
            discovery += 1
            key = "discovery"
        elif verb in READ_VERBS:
            reads += 1
            key = resource_name or uri.split("?")[0]
        elif verb in WRITE_VERBS:
            writes += 1
            key = resource_name
            code = (e.get("responseStatus") or {}).get("code", 0)
            if code < 400:
                objects.add((resource_name, ref.get("namespace") or "", ref.get("name")))
        else:
            continue
        by_kind.setdefault(key, {}).setdefault(verb, 0)
        by_kind[key][verb] += 1
    return {
        "reads": reads,
        "discovery": discovery,
        "writes": writes,
        "lease": lease,
        "written": objects,
        "by_kind": by_kind,
    }


# What "objects modified" looks at: every kind a converge writes (resource, list path).
SNAPSHOT_KINDS = (
    ("nodes", "/api/v1/nodes"),
    ("deviceclasses", "/apis/resource.k8s.io/v1/deviceclasses"),
    ("computedomains", "/apis/resource.nvidia.com/v1beta1/computedomains"),
    ("configmaps", "/api/v1/configmaps"),
)


def snapshot(bed) -> dict:
    """{cluster: {(resource, namespace, name): resourceVersion}}, read as the admin (not counted)."""
    from testbed.simulator_client import Kube

    out = {}
    for name, cluster in bed.clusters.items():
        kube = Kube(cluster.cp.kubeconfig, "bench-snapshot")
        versions = {}
        for resource_name, path in SNAPSHOT_KINDS:
            for obj in kube.list(path):
                meta = obj["metadata"]
                versions[(resource_name, meta.get("namespace") or "", meta["name"])] = meta["resourceVersion"]
        out[name] = versions
    return out


def api_requests(bed, marks: dict, user: str, before: dict | None = None, after: dict | None = None) -> dict:
    """Sum of classify() over every cluster's audit window since `marks` for `user`.

    objects: objects this user wrote whose resourceVersion changed between the `before` and
    `after` snapshots (a write the server found to change nothing does not count); without
    snapshots, every object written successfully."""
    total = {"reads": 0, "discovery": 0, "writes": 0, "lease": 0, "objects": 0, "by_kind": {}}
    for name, mark in marks.items():
        window = bed.clusters[name].cp.audit.since(mark)
        events = [e for e in window.requests if e.get("user", {}).get("username") == user and not _dry_run(e)]
        counts = classify(events)
        for k in ("reads", "discovery", "writes", "lease"):
            total[k] += counts[k]
        written = counts["written"]
        if before is not None and after is not None:
            written = {key for key in written if before[name].get(key) != after[name].get(key)}
        total["objects"] += len(written)
        for kind, verbs in counts["by_kind"].items():
            for verb, n in verbs.items():
                total["by_kind"].setdefault(kind, {}).setdefault(verb, 0)
                total["by_kind"][kind][verb] += n
    return total


def _dry_run(event: dict) -> bool:
    from testbed.audit import is_dry_run

    return is_dry_run(event)


def magnum_requests(emulator, since: int) -> dict:
    """Magnum API requests recorded by the emulator after index `since` (Keystone apart)."""
    if emulator is None:
        return {"magnum_reads": 0, "magnum_writes": 0}
    reqs = emulator.magnum_requests()[since:]
    writes = sum(1 for r in reqs if r["method"] in ("POST", "PATCH", "PUT", "DELETE"))
    return {"magnum_reads": len(reqs) - writes, "magnum_writes": writes}


def cpu_count() -> int:
    return len(os.sched_getaffinity(0))
