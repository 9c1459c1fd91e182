"""gpupool.core.dra_driver end to end: ansible-playbook -> the module -> the real helm binary -> a real chart
repository on loopback (the DRA driver SIMULATION chart packaged as 0.4.1 and 0.5.1) -> the real kube-apiserver,
whose audit log counts the writes. The DRA driver simulator of the sandbox plays the driver's pods (DaemonSet
status, ResourceSlices on the nodes its tolerations and affinity allow), so the module's rollout wait and the
plugin-on-tainted-nodes check meet the same signals a real cluster gives.
"""

from __future__ import annotations

import copy
import json
import uuid

import pytest
import yaml

from testbed.controlplane import ADMIN_USER
from tests.integration.playbook import run_playbook

RELEASE = "dra-driver-nvidia-gpu"
TEAM_TAINT = {"key": "example.com/team", "value": "ml", "effect": "NoSchedule"}
GPU_TAINT = {"key": "node-role.kubernetes.io/gpu", "value": "true", "effect": "NoSchedule"}
CRDS = ("computedomains.resource.nvidia.com", "computedomaincliques.resource.nvidia.com")


class Bed:
    """One driver namespace, two tainted pool nodes, and a way to run the module."""

    def __init__(self, sandbox, repo, tmp_path_factory):
        self.sandbox, self.repo, self.cp = sandbox, repo, sandbox.cp
        self.tag = uuid.uuid4().hex[:6]
        self.namespace = "drv-%s" % self.tag
        self.pool = "drv-a100-%s" % self.tag
        self.nodes = ["%s-%d" % (self.pool, i) for i in range(2)]
        self.tmp = tmp_path_factory
        for name in self.nodes:
            # what node_pool leaves on a pool node: the pool label, the GPU taint, the pool's extra taint
            sandbox.nodes.register_node(
                name, "g4.p2.40g", labels={"gpupool.io/pool": self.pool}, taints=[GPU_TAINT, TEAM_TAINT]
            )
        self.cluster = {
            "name": "drv",
            "kubeconfig": str(self.cp.kubeconfig),
            "dra_driver": {
                "chart": "dra-driver-nvidia-gpu",
                "repository": repo.url,
                "version": "0.5.1",
                "namespace": self.namespace,
            },
            "pools": [
                {
                    "name": self.pool,
                    "node_selector": {"gpupool.io/pool": self.pool},
                    "gpu": {"model": "A100-40GB", "per_node": 2},
                    "taints": [TEAM_TAINT],
                }
            ],
        }

    def run(self, cluster=None, check=False, diff=False, **options):
        """One ansible-playbook run of the module; returns (result, audit window of the run)."""
        args = dict(
            {"cluster": "{{ cluster }}", "helm_binary": self.repo.helm, "wait_timeout": 60, "wait_sleep": 0.5},
            **options,
        )
        tmp = self.tmp.mktemp("play")
        out = tmp / "result.json"
        play = [
            {
                "hosts": "localhost",
                "gather_facts": False,
                "vars": {"cluster": cluster or self.cluster},
                "tasks": [
                    {"name": "dra", "gpupool.core.dra_driver": args, "register": "r", "ignore_errors": True},
                    {
                        "name": "save",
                        "ansible.builtin.copy": {"content": "{{ r | to_json }}", "dest": str(out)},
                        "check_mode": False,
                        "diff": False,
                    },
                ],
            }
        ]
        mark = self.cp.audit.mark()
        proc = run_playbook(
            yaml.safe_dump(play),
            "localhost ansible_connection=local\n",
            tmp,
            check=check,
            diff=diff,
            env=dict(self.cp.env(), ANSIBLE_PYTHON_INTERPRETER=_python()),
        )
        if not out.exists():
            raise AssertionError("the playbook did not finish:\n%s\n%s" % (proc.stdout, proc.stderr))
        return json.loads(out.read_text()), self.cp.audit.since(mark)

    def revision(self):
        out = self.cp.helm("history", RELEASE, "-n", self.namespace, "-o", "json", check=False)
        return len(json.loads(out.stdout)) if out.returncode == 0 else 0

    def plugin_env(self, name):
        ds = json.loads(
            self.cp.kubectl("get", "daemonset", RELEASE + "-kubelet-plugin", "-n", self.namespace, "-o", "json").stdout
        )
        for c in ds["spec"]["template"]["spec"]["containers"]:
            for env in c.get("env") or []:
                if env["name"] == name:
                    return env["value"]
        return None

    def with_pool(self, **changes):
        cluster = copy.deepcopy(self.cluster)
        cluster["pools"][0].update(changes)
        return cluster

    def with_driver(self, **changes):
        cluster = copy.deepcopy(self.cluster)
        cluster["dra_driver"].update(changes)
        return cluster

    def close(self):
        self.cp.helm("uninstall", RELEASE, "-n", self.namespace, "--wait", check=False)
        self.cp.kubectl("delete", "namespace", self.namespace, "--wait=false", check=False)
        for name in self.nodes:
            self.sandbox.nodes.remove_node(name)


def _python():
    import sys

    return sys.executable


@pytest.fixture(scope="module")
def bed(sandbox, dra_chart_repo, tmp_path_factory):
    b = Bed(sandbox, dra_chart_repo, tmp_path_factory)
    yield b
    b.close()


def writes(window):
    return window.writes(user=ADMIN_USER)


def test_first_install_lands_on_tainted_pool_nodes_and_second_run_changes_nothing(bed):
    first, _ = bed.run()
    assert not first.get("failed"), first.get("msg")
    assert first["changed"] and first["reasons"] == ["not installed"]
    assert first["release"]["status"] == "deployed" and first["release"]["version"] == "0.5.1"
    assert first["rollout"]["done"] and first["progress"], first["rollout"]
    # the plugin tolerates the pool's taints (and keeps the chart's nvidia.com/gpu entry) ...
    tolerations = first["values"]["kubeletPlugin"]["tolerations"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in tolerations
    assert {t["key"] for t in tolerations} >= {"node-role.kubernetes.io/gpu", "example.com/team"}
    # ... so the simulated DaemonSet controller placed it on both tainted nodes, and they publish devices
    plugin = bed.sandbox.dra.plugins["%s/%s-kubelet-plugin" % (bed.namespace, RELEASE)]
    assert set(bed.nodes) <= set(plugin["ready"])
    assert first["rollout"]["nodes_without_plugin"] == []
    assert {c["name"] for c in first["crds"]} == set(CRDS)
    assert first["values"]["resources"]["computeDomains"] == {"enabled": False}  # no NVLink pool

    second, window = bed.run()
    assert not second.get("failed"), second.get("msg")
    assert second["changed"] is False and second["reasons"] == [] and second["values_diff"] == []
    assert writes(window) == []  # no helm upgrade, no CRD apply: nothing written
    assert bed.revision() == 1
    assert not any(" upgrade " in c for c in second["commands"])


def test_a_pool_switched_to_mps_turns_the_gate_on_in_exactly_one_upgrade(bed):
    before = bed.revision()
    mps = bed.with_pool(sharing={"mps": {"active_thread_percentage": 50}})
    res, _ = bed.run(mps)
    assert not res.get("failed"), res.get("msg")
    assert res["changed"] and res["values_diff"] == [{"path": "featureGates.MPSSupport", "before": None, "after": True}]
    assert "MPSSupport=true" in bed.plugin_env("FEATURE_GATES")
    assert bed.revision() == before + 1
    again, window = bed.run(mps)
    assert again["changed"] is False and writes(window) == [] and bed.revision() == before + 1


def test_check_mode_shows_the_diff_and_writes_nothing(bed):
    before = bed.revision()
    sliced = bed.with_pool(sharing={"time_slicing": {"interval": "Long"}})
    res, window = bed.run(sliced, check=True, diff=True)
    assert not res.get("failed"), res.get("msg")
    assert (
        res["changed"]
        and {"path": "featureGates.TimeSlicingSettings", "before": None, "after": True} in res["values_diff"]
    )
    assert any("--dry-run=server" in c for c in res["commands"])
    assert writes(window) == []  # helm dry run, CRD dry-run applies: the audit log has no write
    assert bed.revision() == before
    (values_diff,) = [d for d in res["diff"] if "desired values" in d.get("after_header", "")]
    assert "TimeSlicingSettings: true" in values_diff["after"] and "TimeSlicingSettings" not in values_diff["before"]


def test_unknown_and_conflicting_gates_fail_before_helm_runs(bed):
    before = bed.revision()
    old = bed.with_driver(version="0.4.1", feature_gates={"HostManagedIMEXDaemon": True})
    res, window = bed.run(old)
    assert res["failed"] and "DRA driver 0.4.x has no feature gate HostManagedIMEXDaemon" in res["msg"]
    assert "gpupool_cluster.dra_driver.feature_gates.HostManagedIMEXDaemon" in res["msg"]
    assert res.get("commands", []) == [] and writes(window) == []
    conflict = bed.with_pool(sharing={"mps": {}})
    conflict["dra_driver"]["feature_gates"] = {"DynamicMIG": True}
    res, window = bed.run(conflict)
    assert res["failed"] and "DynamicMIG" in res["msg"] and "MPSSupport" in res["msg"]
    assert "cannot be enabled together" in res["msg"] and writes(window) == []
    assert bed.revision() == before


def test_chart_validation_errors_come_back_readable(bed):
    before = bed.revision()
    # A value only the chart checks (gpuResourcesEnabledOverride, which gpupool derives, is refused by the model now)
    res, window = bed.run(bed.with_driver(values={"webhook": {"enabled": True, "tls": {"mode": "selfsigned"}}}))
    assert res["failed"]
    assert "the chart refused the values" in res["msg"] and "Invalid webhook TLS mode: selfsigned" in res["msg"]
    assert writes(window) == [] and bed.revision() == before  # the dry run refused it before any write
    # ... and a derived value written raw never reaches helm: the model names it with the setting to use
    res, window = bed.run(bed.with_driver(values={"gpuResourcesEnabledOverride": False}))
    assert res["failed"] and "gpupool_cluster.dra_driver.values.gpuResourcesEnabledOverride" in res["msg"]
    assert res.get("commands", []) == [] and writes(window) == []


def test_webhook_without_cert_manager_is_refused_before_helm(bed):
    res, window = bed.run(bed.with_driver(values={"webhook": {"enabled": True}}))
    assert res["failed"] and "needs cert-manager" in res["msg"] and "certificates.cert-manager.io" in res["msg"]
    assert not any(" upgrade " in c for c in res["commands"]) and writes(window) == []


def test_gpu_operator_device_plugin_is_refused_or_turned_off(bed):
    cp = bed.cp
    cp.kubectl("apply", "-f", "-", input=yaml.safe_dump(CLUSTER_POLICY_CRD))
    cp.kubectl("wait", "--for=condition=Established", "crd/clusterpolicies.nvidia.com", "--timeout=30s")
    cp.kubectl(
        "apply",
        "-f",
        "-",
        input=yaml.safe_dump(
            {
                "apiVersion": "nvidia.com/v1",
                "kind": "ClusterPolicy",
                "metadata": {"name": "cluster-policy"},
                "spec": {"driver": {"enabled": True}, "devicePlugin": {"enabled": True}},
            }
        ),
    )
    try:
        refused, window = bed.run()
        assert refused["failed"] and "ClusterPolicy cluster-policy" in refused["msg"]
        assert all(n in refused["msg"] for n in bed.nodes) and writes(window) == []
        res, _ = bed.run(gpu_operator="disable_device_plugin")
        assert not res.get("failed"), res.get("msg")
        assert sorted(res["gpu_operator"]["nodes_labelled"]) == sorted(bed.nodes)
        assert res["gpu_operator"]["driver_root"] == "/run/nvidia/driver"  # the operator's driver container
        assert res["values"]["nvidiaDriverRoot"] == "/run/nvidia/driver"
        labels = json.loads(cp.kubectl("get", "node", bed.nodes[0], "-o", "json").stdout)["metadata"]["labels"]
        assert labels["nvidia.com/gpu.deploy.device-plugin"] == "false"
        assert bed.run(gpu_operator="disable_device_plugin")[0]["changed"] is False
    finally:
        cp.kubectl("delete", "crd", "clusterpolicies.nvidia.com", "--wait=true", check=False)
    assert bed.run()[0]["values"]["nvidiaDriverRoot"] == "/"  # operator gone: the host driver again


def test_uninstall_keeps_the_crds_unless_purged(bed):
    if bed.revision() == 0:  # run on its own: install first
        installed, _ = bed.run()
        assert not installed.get("failed"), installed.get("msg")
    res, _ = bed.run(state="absent")
    assert not res.get("failed"), res
    assert res["changed"] and res["release"] is None and bed.revision() == 0
    for name in CRDS:
        assert bed.cp.kubectl("get", "crd", name, check=False).returncode == 0
    assert bed.run(state="absent")[0]["changed"] is False
    try:
        purged, _ = bed.run(state="absent", purge_crds=True)
        assert purged["changed"] and sorted(purged["crds_deleted"]) == sorted(CRDS)
        for name in CRDS:
            assert bed.cp.kubectl("get", "crd", name, check=False).returncode != 0
    finally:  # other tests of the session expect the ComputeDomain CRD
        bed.run()


# The GPU Operator's ClusterPolicy CRD, reduced to what the module reads (a stand-in: the operator itself is
# not installed; its spec fields driver.enabled and devicePlugin.enabled are the operator's documented ones).
CLUSTER_POLICY_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "clusterpolicies.nvidia.com"},
    "spec": {
        "group": "nvidia.com",
        "scope": "Cluster",
        "names": {
            "kind": "ClusterPolicy",
            "plural": "clusterpolicies",
            "singular": "clusterpolicy",
            "listKind": "ClusterPolicyList",
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }
        ],
    },
}
