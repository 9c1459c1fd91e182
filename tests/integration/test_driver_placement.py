"""Where the DRA driver's kubelet plugin runs is decided by Kubernetes itself, and gpupool's rollout wait sees it.

The sandbox's control plane runs the REAL DaemonSet controller and kube-scheduler (testbed/controlplane.py): the
plugin pods of the driver's release are created by the DaemonSet controller and bound by the scheduler; the node
simulator plays the kubelet (a bound pod turns Running) and the DRA driver simulator publishes ResourceSlices only
where a plugin pod is bound and running. Two pools on two nodes: `open` carries only the GPU taint every pool node
gets, `team` also its own NoSchedule taint (what node_pool leaves on them).

- A taint the inventory does not know, put on the team node by someone else: the DaemonSet controller makes NO pod
  for the team node (NodeShouldRunDaemonPod: an untolerated NoSchedule taint; it is not counted in
  desiredNumberScheduled, so no pod is ever Pending), the node publishes no ResourceSlices, and gpupool's
  dra_driver step fails, naming that node and only that node.
- gpupool's own values (the pool's taint in kubeletPlugin.tolerations): the plugin pod is bound to the team node, it
  publishes, and the step succeeds.
- An inventory's `dra_driver.values` toleration list without the team taint (#34): it extends gpupool's list
  instead of replacing it, so the plugin still lands on the team node.
"""

from __future__ import annotations

import json
import sys
import uuid

import pytest
import yaml

from tests.integration import k8s_helpers as h
from tests.integration.playbook import run_playbook

# Version sensitive (resource.k8s.io claims and slices, v1beta1 on 1.32): run on every release of the matrix.
pytestmark = [pytest.mark.sandbox, pytest.mark.dra_api]

RELEASE = "dra-driver-nvidia-gpu"
PLUGIN_DS = RELEASE + "-kubelet-plugin"
POOL_LABEL = "gpupool.io/pool"
GPU_TAINT = {"key": "node-role.kubernetes.io/gpu", "value": "true", "effect": "NoSchedule"}
TEAM_TAINT = {"key": "example.com/team", "value": "ml", "effect": "NoSchedule"}
# What a site would write to "add a toleration", which replaced gpupool's list before #34 (helm replaces lists whole):
# the chart's own toleration and the GPU taint's, not the team pool's, plus one of its own.
WITHOUT_TEAM_TAINT = [
    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node-role.kubernetes.io/gpu", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "example.com/maintenance", "operator": "Exists", "effect": "NoSchedule"},
]
# Someone else's taint on the team node, which no pool of the inventory names (so no derived toleration has it).
FOREIGN_TAINT = {"key": "example.com/quarantine", "value": "disk", "effect": "NoSchedule"}


wait_for = h.wait_for


def settle(bed):
    """Wait for the plugin DaemonSet to settle (Bed.settled); its status and pods."""
    seen = []

    def probe():
        done, what = bed.settled()
        seen.append(what)
        return done

    try:
        return wait_for("the plugin DaemonSet to settle", probe)
    except AssertionError as exc:
        raise AssertionError("%s; last seen: %s" % (exc, seen[-1] if seen else None)) from None


class Bed:
    """A driver namespace, the two pools' nodes, and the dra_driver step run through ansible-playbook."""

    def __init__(self, sandbox, tmp_path_factory):
        from kubernetes import client

        from testbed import binaries

        self.sandbox, self.cp, self.tmp = sandbox, sandbox.cp, tmp_path_factory
        tag = uuid.uuid4().hex[:6]
        self.namespace = "place-%s" % tag
        self.open_pool, self.team_pool = "place-%s-open" % tag, "place-%s-team" % tag
        self.open_node, self.team_node = self.open_pool + "-0", self.team_pool + "-0"
        self.helm = str(binaries.find("helm", allow_fetch=False).path)
        api = sandbox.cp.api_client()
        self.core, self.apps, self.custom = client.CoreV1Api(api), client.AppsV1Api(api), client.CustomObjectsApi(api)
        sandbox.nodes.register_node(
            self.open_node, "g4.p2.40g", labels={POOL_LABEL: self.open_pool}, taints=[GPU_TAINT]
        )
        sandbox.nodes.register_node(
            self.team_node, "g4.p2.40g", labels={POOL_LABEL: self.team_pool}, taints=[GPU_TAINT, TEAM_TAINT]
        )
        from testbed.sandbox import SIMULATION_CHART

        self.cluster = {
            "name": "place",
            "kubeconfig": str(self.cp.kubeconfig),
            "dra_driver": {
                "chart": str(SIMULATION_CHART),
                "version": yaml.safe_load((SIMULATION_CHART / "Chart.yaml").read_text())["version"],
                "namespace": self.namespace,
            },
            "pools": [
                {
                    "name": self.open_pool,
                    "node_selector": {POOL_LABEL: self.open_pool},
                    "gpu": {"model": "A100-40GB", "per_node": 2},
                },
                {
                    "name": self.team_pool,
                    "node_selector": {POOL_LABEL: self.team_pool},
                    "gpu": {"model": "A100-40GB", "per_node": 2},
                    "taints": [TEAM_TAINT],
                },
            ],
        }

    def run(self, values=None, wait_timeout=60):
        """One run of gpupool.core.dra_driver; `values`: the inventory's dra_driver.values. Returns its result."""
        cluster = json.loads(json.dumps(self.cluster))
        if values is not None:
            cluster["dra_driver"]["values"] = values
        args = {"cluster": "{{ cluster }}", "helm_binary": self.helm, "wait_timeout": wait_timeout, "wait_sleep": 0.5}
        tmp = self.tmp.mktemp("play")
        out = tmp / "result.json"
        play = [
            {
                "hosts": "localhost",
                "gather_facts": False,
                "vars": {"cluster": cluster},
                "tasks": [
                    {"name": "dra", "gpupool.core.dra_driver": args, "register": "r", "ignore_errors": True},
                    {"name": "save", "ansible.builtin.copy": {"content": "{{ r | to_json }}", "dest": str(out)}},
                ],
            }
        ]
        proc = run_playbook(
            yaml.safe_dump(play),
            "localhost ansible_connection=local\n",
            tmp,
            env=dict(self.cp.env(), ANSIBLE_PYTHON_INTERPRETER=sys.executable),
        )
        if not out.exists():
            raise AssertionError("the playbook did not finish:\n%s\n%s" % (proc.stdout, proc.stderr))
        return json.loads(out.read_text())

    # ---- what Kubernetes decided ------------------------------------------------------------------------------
    def daemonset(self):
        return self.apps.read_namespaced_daemon_set(PLUGIN_DS, self.namespace)

    def plugin_pods(self):
        """The DaemonSet's pods as {target node: pod}: the node it is bound to, else the one the DaemonSet
        controller aimed it at (its required node affinity on metadata.name)."""
        out = {}
        for pod in self.core.list_namespaced_pod(self.namespace).items:
            if not any(o.kind == "DaemonSet" and o.name == PLUGIN_DS for o in pod.metadata.owner_references or []):
                continue
            out[pod.spec.node_name or _affinity_node(pod)] = pod
        return out

    def settled(self):
        """The DaemonSet's status once its controller has seen the current revision and made a pod for every node
        it counts, each bound and Running (else None), and what was seen (for the timeout's message)."""
        ds = self.daemonset()
        st = ds.status
        pods = self.plugin_pods()
        seen = "generation %s seen %s, desired %s, pods %s" % (
            ds.metadata.generation,
            st.observed_generation,
            st.desired_number_scheduled,
            {node: (p.spec.node_name, p.status.phase) for node, p in pods.items()},
        )
        if st.observed_generation != ds.metadata.generation or st.desired_number_scheduled != len(pods):
            return None, seen
        if not all(p.spec.node_name and p.status.phase == "Running" for p in pods.values()):
            return None, seen
        return (st, pods), seen

    def slices(self, node):
        from testbed import dra_api, k8s_releases

        version = k8s_releases.release().resource_version
        items = self.custom.list_cluster_custom_object(
            "resource.k8s.io", version, "resourceslices", field_selector="spec.nodeName=%s" % node
        )["items"]
        return {dra_api.slice_from(version, s)["spec"]["driver"] for s in items}

    def close(self):
        self.cp.helm("uninstall", RELEASE, "-n", self.namespace, "--wait", check=False)
        self.cp.kubectl("delete", "namespace", self.namespace, "--wait=false", check=False)
        for name in (self.open_node, self.team_node):
            self.sandbox.nodes.remove_node(name)


def _affinity_node(pod):
    affinity = pod.spec.affinity.node_affinity if pod.spec.affinity else None
    required = affinity.required_during_scheduling_ignored_during_execution if affinity else None
    for term in required.node_selector_terms if required else []:
        for field in term.match_fields or []:
            if field.key == "metadata.name":
                return field.values[0]
    return None


@pytest.fixture(scope="module")
def bed(sandbox, tmp_path_factory):
    b = Bed(sandbox, tmp_path_factory)
    yield b
    b.close()


def test_a_taint_nobody_tolerates_leaves_its_node_without_the_plugin_and_the_step_says_which(bed):
    bed.core.patch_node(bed.team_node, {"spec": {"taints": [GPU_TAINT, TEAM_TAINT, FOREIGN_TAINT]}})
    try:
        _untolerated_taint(bed)
    finally:
        bed.core.patch_node(bed.team_node, {"spec": {"taints": [GPU_TAINT, TEAM_TAINT]}})


def _untolerated_taint(bed):
    first = bed.run(wait_timeout=5)
    assert first.get("failed"), first
    # What Kubernetes did with those values, once its DaemonSet controller and scheduler have acted:
    st, pods = settle(bed)
    assert bed.open_node in pods and bed.team_node not in pods, sorted(pods)
    assert pods[bed.open_node].spec.node_name == bed.open_node  # bound by the scheduler, not by hand
    assert st.desired_number_scheduled == len(pods)  # the team node is not even counted: no pod is ever Pending
    assert all(t.key != FOREIGN_TAINT["key"] for p in pods.values() for t in p.spec.tolerations or [])
    wait_for("the open node's slices", lambda: "gpu.nvidia.com" in bed.slices(bed.open_node))
    assert bed.slices(bed.team_node) == set()
    # ... and what gpupool says about it: the step fails, naming the node without the plugin and only that one.
    again = bed.run(wait_timeout=5)
    assert again.get("failed"), again
    msg = " ".join(again["msg"].split())
    assert "did not roll out" in msg and "1 pool node(s) without the plugin's ResourceSlices: %s" % bed.team_node in msg
    assert bed.open_node not in msg
    # The likely cause, said, and where to look: no pod to inspect, the DaemonSet controller made none for the node.
    assert "a taint the plugin does not tolerate (the DaemonSet controller then makes no pod for it at all" in msg
    assert all(len(line) <= 200 for line in again["msg"].splitlines())


def test_gpupools_own_values_tolerate_the_pools_taint_and_the_plugin_lands_on_its_node(bed):
    result = bed.run()
    assert not result.get("failed"), result.get("msg")
    assert {"key": TEAM_TAINT["key"], "operator": "Exists", "effect": "NoSchedule"} in result["values"][
        "kubeletPlugin"
    ]["tolerations"]
    assert result["rollout"]["done"], result["rollout"]
    st, pods = settle(bed)
    assert {bed.open_node, bed.team_node} <= set(pods)
    assert pods[bed.team_node].spec.node_name == bed.team_node
    assert st.desired_number_scheduled == len(pods)
    assert "gpu.nvidia.com" in bed.slices(bed.team_node)


def test_a_values_toleration_list_extends_gpupools_and_the_plugin_still_lands_on_the_team_node(bed):
    result = bed.run(values={"kubeletPlugin": {"tolerations": WITHOUT_TEAM_TAINT}})
    assert not result.get("failed"), result.get("msg")
    tolerations = result["values"]["kubeletPlugin"]["tolerations"]
    team = {"key": TEAM_TAINT["key"], "operator": "Exists", "effect": "NoSchedule"}
    assert team in tolerations and WITHOUT_TEAM_TAINT[2] in tolerations
    assert len(tolerations) == len({json.dumps(t, sort_keys=True) for t in tolerations})  # each entry once
    assert [(o["path"], o["rule"]) for o in result["user_overrides"]] == [("kubeletPlugin.tolerations", "merged")]
    assert result["rollout"]["done"], result["rollout"]
    st, pods = settle(bed)
    assert {bed.open_node, bed.team_node} <= set(pods)
    assert any(t.key == TEAM_TAINT["key"] for t in pods[bed.team_node].spec.tolerations or [])
    assert "gpu.nvidia.com" in bed.slices(bed.team_node)
