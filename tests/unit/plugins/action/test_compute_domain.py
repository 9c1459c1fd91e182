"""gpupool.core.compute_domain run in-process against the Kubernetes API simulator. The simulator runs no DRA driver,
so no ComputeDomain becomes Ready by itself: the wait is tested with a status the test writes, as the driver's
compute-domain controller would."""

from __future__ import annotations

import copy

from ansible_collections.gpupool.core.plugins.action import compute_domain
from tests.support.steps import run_action, said
from tests.unit.plugins.module_utils.k8s.apiserver_simulator import CONNECTION

GROUP = "resource.nvidia.com"
CLUSTER = {
    "name": "unit",
    "dra_driver": {"version": "0.5.1"},
    "pools": [
        {"name": "t4", "node_selector": {"gpu": "t4"}, "gpu": {"model": "T4"}},
        {
            "name": "gb200",
            "node_selector": {"gpu": "gb200"},
            "gpu": {"model": "GB200", "per_node": 4},
            "nvlink": {"mode": "compute_domain", "compute_domain": {"namespace": "default", "allocation_mode": "All"}},
        },
    ],
}


def run(cluster=None, **args):
    cluster = CLUSTER if cluster is None else cluster  # the module's inventory unless a test gives its own
    args.setdefault("wait", False)
    return run_action(compute_domain, cluster=copy.deepcopy(cluster), **CONNECTION, **args)


def domains(api):
    return [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in api.items(GROUP, "computedomains")]


def test_check_mode_writes_nothing(api):
    out = run(_ansible_check_mode=True)
    assert out.get("failed") is not True, out
    assert out["changed"] is True and [o["action"] for o in out["objects"]] == ["created"]
    assert api.writes() == [] and domains(api) == []


def test_a_second_run_changes_nothing(api):
    first = run()
    assert first["changed"] is True, first
    assert len(domains(api)) == 1 and domains(api)[0][0] == "default"
    writes = len(api.writes())
    second = run()
    assert second["changed"] is False and [o["action"] for o in second["objects"]] == ["unchanged"]
    assert len(api.writes()) == writes


def test_a_spec_change_is_refused_unless_recreate(api):
    run()
    cluster = copy.deepcopy(CLUSTER)
    cluster["pools"][1]["nvlink"]["compute_domain"]["allocation_mode"] = "Single"
    refused = run(cluster)
    assert refused["failed"] is True
    assert "immutable" in said(refused) and "recreate: true" in said(refused)
    out = run(cluster, recreate=True)
    assert out["changed"] is True, out
    assert run(cluster)["changed"] is False


def test_the_wait_ends_when_the_driver_reports_ready(api):
    run()
    (namespace, name) = domains(api)[0]
    live = api.get(GROUP, "computedomains", name, namespace)
    live["status"] = {"status": "Ready"}
    api.put(GROUP, "v1beta1", "computedomains", live)
    out = run(wait=True, wait_timeout=5, wait_sleep=0.1)
    assert out.get("failed") is not True, out
    assert out["changed"] is False and [o["status"] for o in out["objects"]] == ["Ready"]


def test_a_domain_that_never_gets_ready_fails_with_where_to_look(api):
    out = run(wait=True, wait_timeout=1, wait_sleep=0.2)
    assert out["failed"] is True
    assert "not Ready after 1s" in said(out) and "kubectl get computedomain -A" in said(out)


def test_no_crd_and_no_domain_wanted_is_nothing_to_do(api):
    api.served.pop(GROUP)
    cluster = copy.deepcopy(CLUSTER)
    cluster["pools"] = cluster["pools"][:1]
    out = run(cluster)
    assert out.get("failed") is not True, out
    assert out["changed"] is False and out["api_version"] is None and api.writes() == []


def test_a_wanted_domain_without_the_crd_names_the_driver(api):
    api.served.pop(GROUP)
    out = run()
    assert out["failed"] is True
    assert GROUP in said(out) and api.writes() == []
    assert all(len(line) <= 200 for line in out["msg"].splitlines())


def test_a_dry_run_before_the_driver_installs_the_crd_says_what_it_would_create(api):
    """The first dry run on an empty cluster: the driver step only said "would install", so the CRD is not served
    yet; the ComputeDomain is what would be created once it is, and nothing is sent but reads."""
    api.served.pop(GROUP)
    out = run(_ansible_check_mode=True, _ansible_diff=True)
    assert out.get("failed") is not True, out
    ref = "ComputeDomain default/gb200"
    assert out["msg"] == "would create %s once the DRA driver's CRDs are installed" % ref
    assert out["changed"] is True and out["api_version"] is None
    (obj,) = out["objects"]
    assert (obj["action"], obj["pending"]) == ("created", "once the DRA driver's CRDs are installed")
    (diff,) = out["diff"]
    assert diff["after_header"] == "would create %s (pool gb200) once the DRA driver's CRDs are installed" % ref
    assert diff["before"] == {} and diff["after"]["spec"]["channel"]["allocationMode"] == "All"
    assert api.writes() == [] and domains(api) == []
    # its namespace is needed as for the apply: a missing one fails the dry run as it would fail the run
    cluster = copy.deepcopy(CLUSTER)
    cluster["pools"][1]["nvlink"]["compute_domain"]["namespace"] = "ml-training"
    out = run(cluster, _ansible_check_mode=True)
    assert out["failed"] is True and "namespace ml-training does not exist; create it first" in said(out)
    assert [o["action"] for o in out["objects"]] == ["failed"] and api.writes() == []


def test_a_missing_crd_stays_an_error_when_no_driver_step_brings_it(api):
    api.served.pop(GROUP)
    cluster = copy.deepcopy(CLUSTER)
    cluster["dra_driver"]["enabled"] = False  # the driver is installed some other way: the CRD must be there
    out = run(cluster, _ansible_check_mode=True)
    assert out["failed"] is True and "does not serve ComputeDomain" in said(out), out
    assert api.writes() == []


def test_a_dry_run_that_may_not_read_namespaces_still_says_what_it_would_create(api, monkeypatch):
    """The least-privilege ClusterRole (docs/rbac) reads no namespaces: the dry run is not refused for it."""
    from ansible_collections.gpupool.core.plugins.module_utils.k8s import apply_engine
    from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import K8sError

    real_get = apply_engine.ApplyEngine.get

    def get(engine, kind, name, namespace=None):
        if kind.kind == "Namespace":
            raise K8sError('namespaces "%s" is forbidden' % name, status=403)
        return real_get(engine, kind, name, namespace)

    monkeypatch.setattr(apply_engine.ApplyEngine, "get", get)
    api.served.pop(GROUP)
    out = run(_ansible_check_mode=True)
    assert out.get("failed") is not True, out
    assert [(o["action"], o["pending"]) for o in out["objects"]] == [
        ("created", "once the DRA driver's CRDs are installed")
    ]
