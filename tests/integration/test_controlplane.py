"""The control-plane test bed: a real kube-apiserver (v1.37, or the session's release of the compatibility matrix)
+ etcd, helm and kubectl on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from testbed import binaries, k8s_releases
from testbed.controlplane import ControlPlane, _pid_is

ROOT = Path(__file__).resolve().parents[2]
GPU_SELECTOR = (
    'device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].productName.lowerAscii().matches("h100")'
)


def device_class(name: str, expression: str, version: str = "v1") -> dict:
    return {
        "apiVersion": "resource.k8s.io/" + version,
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


# ---- binaries: where they come from (no control plane needed) ---------------------------------
def _fake_binary(directory: Path, name: str, version_line: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(f"#!/bin/sh\necho '{version_line}'\n")
    path.chmod(0o755)
    return path


def test_path_hit_needs_the_wanted_minor(tmp_path, monkeypatch):
    monkeypatch.delenv("KUBECTL", raising=False)
    monkeypatch.setenv("GPUPOOL_CACHE", str(tmp_path / "empty-cache"))
    old = _fake_binary(tmp_path / "old", "kubectl", "Client Version: v1.32.4-dispatcher")
    monkeypatch.setenv("PATH", str(old.parent))
    with pytest.raises(FileNotFoundError, match="kubectl v1.37"):
        binaries.find("kubectl", allow_fetch=False)
    new = _fake_binary(tmp_path / "new", "kubectl", "Client Version: v1.37.0")
    monkeypatch.setenv("PATH", f"{old.parent}:{new.parent}")
    hit = binaries.find("kubectl", allow_fetch=False)
    assert (hit.source, hit.path, hit.version) == ("PATH", new, "v1.37.0")


def test_env_var_wins_over_path(tmp_path, monkeypatch):
    on_path = _fake_binary(tmp_path / "path", "helm", "v3.22.0+gabc")
    chosen = _fake_binary(tmp_path / "env", "helm", "v3.22.1+gdef")
    monkeypatch.setenv("PATH", str(on_path.parent))
    monkeypatch.setenv("HELM", str(chosen))
    hit = binaries.find("helm", allow_fetch=False)
    assert (hit.source, hit.path, hit.version) == ("env", chosen, "v3.22.1")


def test_an_older_release_needs_its_own_kube_apiserver(tmp_path, monkeypatch):
    """The matrix's releases: only a kube-apiserver of that minor will do, in its own cache directory."""
    monkeypatch.delenv("KUBE_APISERVER", raising=False)
    monkeypatch.setenv("GPUPOOL_CACHE", str(tmp_path / "cache"))
    base = _fake_binary(tmp_path / "base", "kube-apiserver", "Kubernetes v1.37.1")
    monkeypatch.setenv("PATH", str(base.parent))
    old = k8s_releases.release("1.32")
    with pytest.raises(FileNotFoundError, match="run `make binaries K8S_RELEASES=v1.32.13`"):
        binaries.find("kube-apiserver", allow_fetch=False, version=old.version)
    cached = _fake_binary(tmp_path / "cache" / "bin" / old.version, "kube-apiserver", "Kubernetes v1.32.13")
    hit = binaries.find("kube-apiserver", allow_fetch=False, version=old.version)
    assert (hit.source, hit.path, hit.version) == ("cache", cached, "v1.32.13")
    assert binaries.find("kube-apiserver", allow_fetch=False).path == base  # the base release is untouched
    with pytest.raises(ValueError, match="only the control plane differs per release"):
        binaries.find("kubectl", allow_fetch=False, version=old.version)


def test_releases_are_named_by_minor_and_checked():
    assert k8s_releases.MATRIX == ("1.32", "1.33", "1.34", "1.35", "1.36", "1.37") and k8s_releases.OLDEST == "1.32"
    assert k8s_releases.release("v1.33.13").minor == "1.33" and k8s_releases.release("oldest").version == "v1.32.13"
    with pytest.raises(ValueError, match="not in the test bed's matrix"):
        k8s_releases.release("1.31")
    with pytest.raises(ValueError, match="the test bed runs v1.34.4 for 1.34, not 1.34.1"):
        k8s_releases.release("1.34.1")


def test_download_verifies_the_checksum_and_unpacks(tmp_path, monkeypatch):
    """The download path cannot reach the network here: feed it a release the way helm publishes one."""
    import hashlib
    import io
    import tarfile

    payload = b"#!/bin/sh\necho v3.22.0+gabc\n"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("linux-amd64/helm")
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    monkeypatch.setattr(binaries, "_arch", lambda: "amd64")
    url, sum_url, _ = binaries._release("helm", "v3.22.0")
    digest = hashlib.sha256(buf.getvalue()).hexdigest()
    files = {url: buf.getvalue(), sum_url: f"{digest}  helm-v3.22.0-linux-amd64.tar.gz\n".encode()}
    monkeypatch.setattr(binaries, "_fetch", files.__getitem__)
    dest = binaries.download("helm", "v3.22.0", tmp_path / "helm")
    assert dest.read_bytes() == payload and os.access(dest, os.X_OK)
    files[sum_url] = b"0" * 64 + b"  helm-v3.22.0-linux-amd64.tar.gz\n"
    with pytest.raises(RuntimeError, match="checksum mismatch"):
        binaries.download("helm", "v3.22.0", tmp_path / "helm2")
    assert not (tmp_path / "helm2").exists()


# ---- the real server -------------------------------------------------------------------------
@pytest.mark.controlplane
@pytest.mark.dra_api
def test_kubectl_is_the_base_release_and_the_server_the_sessions(control_plane, k8s_release):
    out = json.loads(control_plane.kubectl("version", "-o", "json").stdout)
    assert out["clientVersion"]["gitVersion"].startswith("v%s." % k8s_releases.BASE)  # kubectl is never swapped
    assert out["serverVersion"]["gitVersion"] == k8s_release.version


@pytest.mark.controlplane
@pytest.mark.dra_api
def test_dra_api_versions_served(control_plane, k8s_release):
    versions = control_plane.kubectl("api-versions").stdout.split()
    served = [gv.split("/")[1] for gv in versions if gv.startswith("resource.k8s.io/")]
    if k8s_release.base:
        assert "v1" in served
        for gv in control_plane.runtime_config:  # whatever the server accepted is really served
            assert gv in versions
    else:  # an older release serves what kubernetes-dra-versions.md says, started as a site runs it
        assert sorted(served) == sorted(k8s_release.resource_versions), versions


@pytest.mark.controlplane
@pytest.mark.dra_api
def test_deviceclass_cel_is_validated_by_the_server(control_plane, k8s_release):
    api = client.CustomObjectsApi(control_plane.api_client())
    version = k8s_release.resource_version
    args = ("resource.k8s.io", version, "deviceclasses")
    created = api.create_cluster_custom_object(*args, device_class("cp-test-h100", GPU_SELECTOR, version))
    try:
        assert created["spec"]["selectors"][0]["cel"]["expression"] == GPU_SELECTOR
        with pytest.raises(ApiException) as err:
            api.create_cluster_custom_object(*args, device_class("cp-test-broken", "device.driver == 1", version))
        assert err.value.status == 422
        status = json.loads(err.value.body)
        assert status["details"]["causes"][0]["field"] == "spec.selectors[0].cel.expression"
        assert "compilation failed" in status["message"]
        assert "no matching overload" in status["message"]
    finally:
        api.delete_cluster_custom_object(*args, "cp-test-h100")


@pytest.mark.controlplane
def test_rbac_denies_a_restricted_user(control_plane):
    rbac = client.RbacAuthorizationV1Api(control_plane.api_client())
    rbac.create_cluster_role(
        {
            "metadata": {"name": "cp-test-deviceclass-reader"},
            "rules": [{"apiGroups": ["resource.k8s.io"], "resources": ["deviceclasses"], "verbs": ["get", "list"]}],
        }
    )
    rbac.create_cluster_role_binding(
        {
            "metadata": {"name": "cp-test-deviceclass-reader"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "cp-test-deviceclass-reader",
            },
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "gpu-viewers"}],
        }
    )
    try:
        viewer = client.ResourceV1Api(control_plane.api_client(control_plane.mint_kubeconfig("vera", ["gpu-viewers"])))
        stranger = client.ResourceV1Api(control_plane.api_client(control_plane.mint_kubeconfig("sam", ["others"])))
        deadline = time.monotonic() + 10  # the RBAC authorizer sees new bindings through an informer
        while True:
            try:
                viewer.list_device_class()
                break
            except ApiException as e:
                if e.status != 403 or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        with pytest.raises(ApiException) as err:
            viewer.create_device_class(device_class("cp-test-denied", GPU_SELECTOR))
        assert err.value.status == 403
        assert 'User "vera" cannot create resource "deviceclasses"' in json.loads(err.value.body)["message"]
        with pytest.raises(ApiException) as err:
            stranger.list_device_class()
        assert err.value.status == 403
        # kubectl with the same kind of kubeconfig is denied the same way.
        res = control_plane.kubectl(
            "auth",
            "can-i",
            "create",
            "deviceclasses.resource.k8s.io",
            kubeconfig=control_plane.mint_kubeconfig("vera", ["gpu-viewers"]),
            check=False,
        )
        assert res.stdout.strip() == "no"
    finally:
        rbac.delete_cluster_role_binding("cp-test-deviceclass-reader")
        rbac.delete_cluster_role("cp-test-deviceclass-reader")


@pytest.mark.controlplane
def test_helm_installs_a_local_chart(control_plane, tmp_path):
    chart = tmp_path / "tiny"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: tiny\nversion: 0.1.0\nkubeVersion: '>=1.37.0-0'\n")
    (chart / "values.yaml").write_text("greeting: hello\n")
    (chart / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\n"
        "data:\n  greeting: {{ .Values.greeting | quote }}\n"
    )
    control_plane.helm("install", "tiny", str(chart), "-n", "default", "--set", "greeting=hi")
    try:
        cm = client.CoreV1Api(control_plane.api_client()).read_namespaced_config_map("tiny-cm", "default")
        assert cm.data == {"greeting": "hi"}
        releases = json.loads(control_plane.helm("list", "-n", "default", "-o", "json").stdout)
        assert [(r["name"], r["status"]) for r in releases] == [("tiny", "deployed")]
    finally:
        control_plane.helm("uninstall", "tiny", "-n", "default")


@pytest.mark.controlplane
def test_audit_counts_writes_of_a_known_operation(control_plane):
    core = client.CoreV1Api(control_plane.api_client(control_plane.mint_kubeconfig("auditor", ["system:masters"])))
    cm = {"metadata": {"name": "cp-test-audit"}, "data": {"a": "1"}}
    core.create_namespaced_config_map("default", cm)  # before the mark: must not be counted
    mark = control_plane.audit.mark()
    core.read_namespaced_config_map("cp-test-audit", "default")  # read
    core.patch_namespaced_config_map("cp-test-audit", "default", {"data": {"a": "2"}})  # write 1
    core.create_namespaced_config_map("default", {"metadata": {"name": "cp-test-dry"}}, dry_run="All")
    core.list_namespaced_config_map("default")  # read
    core.delete_namespaced_config_map("cp-test-audit", "default")  # write 2
    with pytest.raises(ApiException):
        core.delete_namespaced_config_map("cp-test-audit", "default")  # write 3: 404
    window = control_plane.audit.since(mark)
    writes = window.writes(user="auditor")
    assert [(e["verb"], e["responseStatus"]["code"]) for e in writes] == [
        ("patch", 200),
        ("delete", 200),
        ("delete", 404),
    ]
    assert {e["objectRef"]["resource"] for e in writes} == {"configmaps"}
    assert len(window.writes(user="auditor", include_dry_run=True)) == 4
    assert window.counts(user="auditor")[("get", "configmaps", "auditor")] == 1
    assert window.counts(user="auditor")[("list", "configmaps", "auditor")] == 1
    # A window with only reads holds no writes.
    mark = control_plane.audit.mark()
    core.list_namespaced_config_map("default")
    quiet = control_plane.audit.since(mark)
    assert quiet.writes(user="auditor") == [] and len(quiet.select(user="auditor")) == 1


# ---- lifecycle: the CLI, a second control plane, teardown -------------------------------------
@pytest.mark.controlplane
def test_cli_up_status_down_leaves_nothing_behind(tmp_path):
    env = dict(os.environ, GPUPOOL_STATE=str(tmp_path), PYTHONPATH=str(ROOT))

    def cli(*args):
        return subprocess.run(
            [sys.executable, "-m", "testbed.controlplane", *args], env=env, capture_output=True, text=True, timeout=120
        )

    t0 = time.monotonic()
    up = cli("up")
    try:
        assert up.returncode == 0, up.stderr
        warm_start = time.monotonic() - t0
        status = cli("status")
        assert status.returncode == 0, status.stdout + status.stderr
        state = json.loads(status.stdout)
        assert state["up"]
        assert set(state["pids"]) == {"etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager"}
        kubeconfig = up.stdout.strip().removeprefix("export KUBECONFIG=")
        assert Path(kubeconfig).exists()
        workdir = state["workdir"]
    finally:  # `up` detaches: a failed check above must not leave its processes running
        assert cli("down").returncode == 0
    for pid in state["pids"].values():
        assert not _pid_is(pid, f"{workdir}/"), f"pid {pid} still running"
    assert not Path(workdir).exists()
    assert cli("status").returncode == 1
    assert warm_start < 60, f"warm start took {warm_start:.1f}s"


@pytest.mark.controlplane
def test_second_control_plane_is_independent_and_stops_cleanly():
    with ControlPlane() as cp:
        pids, workdir = dict(cp.pids), cp.workdir
        assert all(_pid_is(p, f"{workdir}/") for p in pids.values())
        assert client.VersionApi(cp.api_client()).get_code().git_version.startswith("v1.37.")
    assert not any(_pid_is(p, f"{workdir}/") for p in pids.values())
    assert not workdir.exists()


@pytest.mark.controlplane
def test_audit_judges_delete_dry_run_by_what_the_server_did(control_plane):
    """A DELETE with a DeleteOptions body ignores ?dryRun=: the audit must still count it as a write."""
    api = control_plane.api_client()
    core = client.CoreV1Api(api)
    for name in ("cp-del-query", "cp-del-body"):
        core.create_namespaced_config_map("default", {"metadata": {"name": name}})
    mark = control_plane.audit.mark()
    # Query-string dryRun plus a body without it: the server deletes for real.
    method, url, headers, body, _ = api.param_serialize(
        "DELETE",
        "/api/v1/namespaces/default/configmaps/cp-del-query",
        query_params=[("dryRun", "All")],
        body={"kind": "DeleteOptions", "apiVersion": "v1"},
        header_params={"Content-Type": "application/json"},
        auth_settings=["BearerToken"],
    )
    assert api.call_api(method, url, header_params=headers, body=body).status == 200
    # dryRun in the body: nothing is deleted.
    core.delete_namespaced_config_map("cp-del-body", "default", body=client.V1DeleteOptions(dry_run=["All"]))
    names = {cm.metadata.name for cm in core.list_namespaced_config_map("default").items}
    assert "cp-del-query" not in names and "cp-del-body" in names
    writes = control_plane.audit.since(mark).writes()
    assert [(e["verb"], e["objectRef"]["name"]) for e in writes] == [("delete", "cp-del-query")]
    core.delete_namespaced_config_map("cp-del-body", "default")


# ---- the scheduler and the controller manager ------------------------------------------------------------------------
def _until(what: str, probe, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while (value := probe()) in (None, False, [], {}):
        assert time.monotonic() < deadline, f"{what}: not after {timeout}s"
        time.sleep(0.2)
    return value


@pytest.mark.controlplane
@pytest.mark.dra_api
def test_the_scheduler_and_the_controllers_do_their_part(control_plane, k8s_release):
    """Each component the control plane starts acts, under its own identity: the serviceaccount controller makes a
    namespace's `default` ServiceAccount, the DaemonSet controller a pod per admitted node, the scheduler binds it,
    the disruption controller computes a budget's status, the garbage collector removes the pods of a deleted
    DaemonSet and the namespace controller a deleted namespace."""
    from tests.integration import k8s_helpers as h

    api = control_plane.api_client()
    core, apps, policy = client.CoreV1Api(api), client.AppsV1Api(api), client.PolicyV1Api(api)
    ns, node, app = "cp-controllers", "cp-controllers-node", {"app": "cp-controllers"}
    mark = control_plane.audit.mark()
    core.create_namespace({"metadata": {"name": ns}})
    try:
        h.wait_for_default_service_account(core, ns)
        h.make_node(control_plane, node, labels={"cp-controllers": "yes"})
        # What kubelet and the node lifecycle controller would do: capacity, and the not-ready taint lifted.
        room = {"cpu": "4", "memory": "8Gi", "pods": "10"}
        core.patch_node_status(node, {"status": {"capacity": room, "allocatable": room}})
        core.patch_node(node, {"spec": {"taints": None}})
        container = {"name": "c", "image": "registry.k8s.io/pause:3.10"}
        apps.create_namespaced_daemon_set(
            ns,
            {
                "metadata": {"name": "cp-ds"},
                "spec": {
                    "selector": {"matchLabels": app},
                    "template": {
                        "metadata": {"labels": app},
                        "spec": {"nodeSelector": {"cp-controllers": "yes"}, "containers": [container]},
                    },
                },
            },
        )
        policy.create_namespaced_pod_disruption_budget(
            ns, {"metadata": {"name": "cp-pdb"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": app}}}
        )
        pods = _until(
            "the DaemonSet's pod bound", lambda: [p for p in core.list_namespaced_pod(ns).items if p.spec.node_name]
        )
        assert [p.spec.node_name for p in pods] == [node]  # one pod, on the only node its selector admits
        status = _until(
            "the budget's status",
            lambda: (b := policy.read_namespaced_pod_disruption_budget("cp-pdb", ns).status).expected_pods and b,
        )
        # No kubelet runs here: the pod stays Pending, so it is not healthy and the budget allows nothing.
        assert (status.expected_pods, status.current_healthy, status.disruptions_allowed) == (1, 0, 0)
        apps.delete_namespaced_daemon_set("cp-ds", ns)
        # The collector deletes the pod; with no kubelet to confirm it stops, a bound pod then stays Terminating.
        _until(
            "the DaemonSet's pod collected",
            lambda: all(p.metadata.deletion_timestamp for p in core.list_namespaced_pod(ns).items),
        )
        for pod in core.list_namespaced_pod(ns).items:  # what its kubelet would confirm once the container stopped
            core.delete_namespaced_pod(pod.metadata.name, ns, grace_period_seconds=0)
    finally:
        h.delete_nodes(control_plane, [node])
        core.delete_namespace(ns)
    _until("the namespace deleted", lambda: ns not in {n.metadata.name for n in core.list_namespace().items})
    writers = {
        (e["objectRef"].get("resource"), e["objectRef"].get("subresource"), e["user"]["username"])
        for e in control_plane.audit.since(mark).writes()
        if (e["objectRef"].get("namespace") == ns or e["objectRef"].get("name") == ns)
        and e["responseStatus"]["code"] < 400
    }
    sa = "system:serviceaccount:kube-system:"
    assert {
        ("serviceaccounts", None, sa + "service-account-controller"),
        ("pods", None, sa + "daemon-set-controller"),
        ("pods", "binding", "system:kube-scheduler"),
        ("poddisruptionbudgets", "status", sa + "disruption-controller"),
        ("pods", None, sa + "generic-garbage-collector"),
        ("namespaces", "finalize", sa + "namespace-controller"),
    } <= writers, sorted(writers, key=str)
