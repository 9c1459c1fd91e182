"""A run killed during `helm upgrade` (issue #24): the next run takes the release over and converges it, and the run
after changes nothing. Real helm, real kube-apiserver, site.yml as a user runs it.

helm is held in the middle of the upgrade by a pre-upgrade hook Job: no Job controller runs here, so the Job never
completes and helm waits on it, with the new revision stored as pending-upgrade. The chart is the DRA driver
simulation chart with that hook added, switched on by one value (logVerbosity "7"), so the next run (another
logVerbosity) meets no hook. The run is killed once helm's release history (the Secrets helm stores it in) shows
the pending revision (pending-install when the first install is held the same way: the next run uninstalls and
installs again):
- SIGKILL to ansible-playbook, its worker and helm at once (a pod killed with everything in it): the revision stays
  pending-upgrade, and the run lease expires. The next run waits for the lease, rolls back to the last deployed
  revision, says so, and upgrades.
- SIGTERM to ansible-playbook (an AWX cancel): the step stops helm with SIGTERM too, helm marks the revision
  failed and the run hands its lease back. The next run upgrades over it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import yaml

from testbed.chart_repo import CHART
from tests.integration.playbook import ROOT, playbook_env, site_argv

RELEASE = "dra-driver-nvidia-gpu"
LEASE_SECONDS = 15  # a killed run's lease expires this soon here
HOOK = """{{- if eq (toString .Values.logVerbosity) "7" }}
# test only: holds helm upgrade until the test kills it (no Job controller runs on the test bed)
apiVersion: batch/v1
kind: Job
metadata:
  name: hold-upgrade
  namespace: {{ .Release.Namespace }}
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-delete-policy: before-hook-creation
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: hold
          image: registry.example/hold:1
{{- end }}
"""


@pytest.fixture
def bed(control_plane, tmp_path):
    from testbed import binaries

    chart = tmp_path / "chart" / CHART.name
    shutil.copytree(CHART, chart)
    (chart / "templates" / "hold-upgrade.yaml").write_text(HOOK)
    helm = str(binaries.find("helm", allow_fetch=False).path)
    tag = uuid.uuid4().hex[:6]
    out = {"cp": control_plane, "tmp": tmp_path, "chart": chart, "helm": helm, "tag": tag, "ns": "hi-dra-" + tag}
    yield out
    control_plane.helm("uninstall", RELEASE, "-n", out["ns"], "--wait", check=False)
    control_plane.kubectl("delete", "namespace", out["ns"], "--wait=false", check=False)


def site_command(bed, verbosity, lease_wait=0):
    cluster = {
        "name": "hi-" + bed["tag"],
        "kubeconfig": str(bed["cp"].kubeconfig),
        "dra_driver": {
            "chart": str(bed["chart"]),
            "version": yaml.safe_load((bed["chart"] / "Chart.yaml").read_text())["version"],
            "namespace": bed["ns"],
            "values": {"logVerbosity": verbosity},
        },
        "pools": [
            {
                "name": "hi-a100-" + bed["tag"],
                "node_selector": {"gpupool.io/pool": "hi-a100-" + bed["tag"]},
                "gpu": {"model": "A100-40GB", "per_node": 2},
            }
        ],
    }
    host_vars = {
        "dra_driver_helm_binary": bed["helm"],
        "dra_driver_wait": False,  # no simulator plays the driver's pods on this bed
    }
    variables = {"gpupool_lease_duration": LEASE_SECONDS, "gpupool_lease_wait": lease_wait}
    return site_argv(bed["tmp"], "hi", cluster, variables, host_vars=host_vars)


def run_site(bed, verbosity, lease_wait=0):
    proc = subprocess.run(
        site_command(bed, verbosity, lease_wait),
        capture_output=True,
        text=True,
        env=playbook_env(),
        cwd=ROOT,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    return proc.stdout


def changed(stdout):
    return int(re.search(r"^hi\s+: ok=\d+\s+changed=(\d+)", stdout, re.M).group(1))


def history(bed):
    out = bed["cp"].helm("history", RELEASE, "-n", bed["ns"], "-o", "json", check=False)
    return json.loads(out.stdout) if out.returncode == 0 else []


def descendants(pid):
    """Every process below `pid` (ansible-playbook -> its worker -> helm)."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    out, frontier = [], [pid]
    while frontier:
        below = [p for p, parent in parents.items() if parent in frontier]
        out += below
        frontier = below
    return out


def kill_during_upgrade(bed, sig, pending="pending-upgrade"):
    """Start site.yml with the hook's value, and kill it once the new revision is stored as `pending`."""
    proc = subprocess.Popen(
        site_command(bed, "7"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=playbook_env(),
        cwd=ROOT,
    )
    try:
        deadline = time.monotonic() + 240
        while not (history(bed) and history(bed)[-1]["status"] == pending):
            assert proc.poll() is None, "the run ended before helm upgrade:\n" + proc.stdout.read()[-4000:]
            assert time.monotonic() < deadline, "helm never reached the upgrade"
            time.sleep(0.2)
        helm_running = [p for p in descendants(proc.pid) if "upgrade" in _cmdline(p) and bed["ns"] in _cmdline(p)]
        assert helm_running, "no helm upgrade below the run"
        victims = [proc.pid] + (descendants(proc.pid) if sig == signal.SIGKILL else [])
        for pid in victims:
            os.kill(pid, sig)
        output = proc.communicate(timeout=120)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # nothing of the killed run goes on behind the test's back
    deadline = time.monotonic() + 60
    while any(_alive(p) for p in helm_running) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive(p) for p in helm_running)
    return output


def _cmdline(pid):
    try:
        return Path("/proc/%d/cmdline" % pid).read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _alive(pid):
    try:
        state = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill-everything", "sigterm-controller"])
def test_a_run_killed_during_helm_upgrade_is_recovered_by_the_next(bed, sig):
    first = run_site(bed, "4")
    assert changed(first) > 0 and [h["status"] for h in history(bed)] == ["deployed"]

    kill_during_upgrade(bed, sig)
    left = history(bed)[-1]["status"]
    if sig == signal.SIGKILL:
        assert left == "pending-upgrade"  # what the next run must take over
    else:
        assert left == "failed", history(bed)  # helm was stopped gently and recorded it

    again = run_site(bed, "5", lease_wait=LEASE_SECONDS * 4)  # a killed run's lease expires first
    statuses = [h["status"] for h in history(bed)]
    # the interrupted revision 2 stays in the history as helm left it (helm rollback does not rewrite it); what
    # counts is the release's state: the last revision, deployed
    assert statuses[0] == "superseded" and statuses[2:] == (
        ["superseded", "deployed"] if sig == signal.SIGKILL else ["deployed"]
    ), statuses
    values = json.loads(bed["cp"].helm("get", "values", RELEASE, "-n", bed["ns"], "-o", "json").stdout)
    assert str(values["logVerbosity"]) == "5"
    if sig == signal.SIGKILL:
        assert re.search(
            r"pending-upgrade \(revision 2\), left by an interrupted run: rolling back to revision 1", again
        )
        # revision 3: the rollback to 1, revision 4: the upgrade
        assert [h["description"] for h in history(bed)][2:] == ["Rollback to 1", "Upgrade complete"]
        assert "recovered from pending-upgrade (revision 2): rolled back to revision 1" in again
    assert changed(run_site(bed, "5")) == 0


def test_a_run_killed_during_the_first_install_is_installed_again_by_the_next(bed):
    kill_during_upgrade(bed, signal.SIGKILL, pending="pending-install")
    assert [h["status"] for h in history(bed)] == ["pending-install"]
    again = run_site(bed, "5", lease_wait=LEASE_SECONDS * 4)
    assert "recovered from pending-install (revision 1): uninstalled (CRDs kept) to install again" in again
    assert "never deployed, left by an interrupted run: uninstalling it (CRDs stay), then installing" in again
    # uninstalled (its history goes with it), then installed afresh
    assert [(h["revision"], h["status"]) for h in history(bed)] == [(1, "deployed")]
    crd = bed["cp"].kubectl("get", "crd", "computedomains.resource.nvidia.com", check=False)
    assert crd.returncode == 0  # the CRDs stayed through the uninstall
    assert changed(run_site(bed, "5")) == 0
