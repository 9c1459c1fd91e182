"""Helpers for tests against the real control plane: Nodes, namespaces, CRDs, playbooks of gpupool modules.

No kubelet runs on the test bed, so a test creates the Node objects itself (as a kubelet would
register them) and sets their Ready condition through the status subresource.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import yaml

from tests.integration.playbook import run_playbook

MANIFESTS = Path(__file__).resolve().parent / "manifests"
ROOT = Path(__file__).resolve().parents[2]
CD_CRD = MANIFESTS / "computedomain-crd.yaml"
PYTHON = str(ROOT / ".venv" / "bin" / "python")
WRITES = {"create", "update", "patch", "delete", "deletecollection"}


def core(cp):
    from kubernetes import client

    return client.CoreV1Api(cp.api_client())


def custom(cp):
    from kubernetes import client

    return client.CustomObjectsApi(cp.api_client())


def make_node(cp, name, labels=None, ready=True, taints=None, gpu_product=None):
    """Register a Node as its kubelet would (create + status), or update labels of an existing one."""
    from kubernetes.client.rest import ApiException

    api = core(cp)
    labels = dict(labels or {})
    if gpu_product:
        labels["nvidia.com/gpu.product"] = gpu_product
    body = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints} if taints else {},
    }
    try:
        api.create_node(body)
    except ApiException as exc:
        if exc.status != 409:
            raise
    set_node_ready(cp, name, ready)
    return api.read_node(name)


def set_node_ready(cp, name, ready=True):
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    cond = {
        "type": "Ready",
        "status": "True" if ready else "False",
        "reason": "KubeletReady" if ready else "NotReady",
        "message": "set by the test",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }
    core(cp).patch_node_status(name, {"status": {"conditions": [cond]}})


def delete_nodes(cp, names):
    from kubernetes.client.rest import ApiException

    for name in names:
        try:
            core(cp).delete_node(name)
        except ApiException as exc:
            if exc.status != 404:
                raise


def ensure_namespace(cp, name):
    from kubernetes.client.rest import ApiException

    try:
        core(cp).create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    except ApiException as exc:
        if exc.status != 409:
            raise


def wait_for(what, fn, timeout=60.0, interval=0.25):
    """Poll fn until it returns something true, and return that (a bound on the wait, not an assertion on time)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError("timed out after %ss waiting for %s (last: %r)" % (timeout, what, last))


def wait_for_default_service_account(core_api, namespace: str, timeout: float = 30) -> None:
    """The `default` ServiceAccount the real serviceaccount controller makes in a new namespace: a pod that runs as it
    is refused by the ServiceAccount admission plugin until it exists."""
    from kubernetes.client.rest import ApiException

    deadline = time.monotonic() + timeout
    while True:
        try:
            core_api.read_namespaced_service_account("default", namespace)
            return
        except ApiException as exc:
            if exc.status != 404 or time.monotonic() > deadline:
                raise
        time.sleep(0.1)


def install_compute_domain_crd(cp):
    """Apply the ComputeDomain CRD manifest and wait until it is served."""
    cp.kubectl("apply", "--server-side", "--field-manager=test-setup", "-f", str(CD_CRD))
    cp.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/computedomains.resource.nvidia.com")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if cp.kubectl("get", "computedomains", "-A", check=False).returncode == 0:
            return
        time.sleep(0.2)
    raise TimeoutError("ComputeDomain CRD not served")


def kubectl_json(cp, *args):
    return json.loads(cp.kubectl(*args, "-o", "json").stdout)


def writes(window, user="gpupool-admin"):
    """[(verb, resource, name)] written by `user` in an audit window."""
    return sorted(
        (e["verb"], (e.get("objectRef") or {}).get("resource"), (e.get("objectRef") or {}).get("name"))
        for e in window.writes(user=user)
    )


def write_counts(window, user="gpupool-admin"):
    out = {}
    for verb, resource, _name in writes(window, user):
        out[(verb, resource)] = out.get((verb, resource), 0) + 1
    return out


class GpupoolPlay:
    """Run gpupool modules through ansible-playbook against the control plane.

    Each task is registered (r0, r1, ...) and may fail (ignore_errors); a last task writes every
    registered result to a JSON file, so one ansible-playbook run checks many things.
    """

    def __init__(self, cp, tmp_path, cluster, kubeconfig=None):
        self.cp = cp
        self.tmp = Path(tmp_path)
        self.cluster = dict(cluster)
        self.cluster.setdefault("kubeconfig", str(kubeconfig or cp.kubeconfig))
        self.runs = 0

    def inventory(self):
        return yaml.safe_dump(
            {
                "all": {
                    "hosts": {
                        "cern-gpu": {
                            "ansible_connection": "local",
                            "ansible_python_interpreter": PYTHON,
                            "gpupool_cluster": self.cluster,
                        }
                    }
                }
            }
        )

    def run(self, tasks, check=False, diff=True, env=None, play_extras=None):
        """tasks: [(module, args)] or [(module, args, task_extras)]; play_extras: play keywords such as
        module_defaults. Returns (results list, PlaybookResult, audit window of the run)."""
        self.runs += 1
        work = self.tmp / ("play%d" % self.runs)
        work.mkdir(parents=True, exist_ok=True)
        out_file = work / "results.json"
        play_tasks = []
        for i, task in enumerate(tasks):
            module, args = task[0], task[1]
            extra = task[2] if len(task) > 2 else {}
            t = {"name": "t%d %s" % (i, module), module: args, "register": "r%d" % i, "ignore_errors": True}
            t.update(extra)
            play_tasks.append(t)
        collect = "{{ {%s} | to_json }}" % ", ".join("'r%d': r%d" % (i, i) for i in range(len(tasks)))
        play_tasks.append(
            {
                "name": "collect",
                "ansible.builtin.copy": {"content": collect, "dest": str(out_file)},
                "check_mode": False,
                "diff": False,
                "changed_when": False,
            }
        )
        play = dict({"hosts": "all", "gather_facts": False}, **(play_extras or {}))
        play["tasks"] = play_tasks
        playbook = yaml.safe_dump([play], sort_keys=False)
        mark = self.cp.audit.mark()
        res = run_playbook(
            playbook,
            self.inventory(),
            work,
            check=check,
            diff=diff,
            env=dict(env or {}, ANSIBLE_PYTHON_INTERPRETER=PYTHON),
        )
        window = self.cp.audit.since(mark)
        assert out_file.exists(), "playbook did not finish:\n%s\n%s" % (res.stdout[-6000:], res.stderr[-3000:])
        data = json.loads(out_file.read_text())
        return [data["r%d" % i] for i in range(len(tasks))], res, window


def objects(result, **match):
    return [o for o in result.get("objects", []) if all(o.get(k) == v for k, v in match.items())]


def actions(result):
    return {
        (o.get("namespace") + "/" if o.get("namespace") else "") + o["name"]: o["action"]
        for o in result.get("objects", [])
    }


def comparable_diff(result):
    """A module's diff with what differs between two runs (timestamps, uids) already stripped by the module."""
    return json.loads(json.dumps(result.get("diff") or [], sort_keys=True))


def env_kubeconfig(path):
    return dict(os.environ, KUBECONFIG=str(path))
