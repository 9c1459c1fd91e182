"""docs/rbac/gpupool-clusterrole.yaml is enough for every Kubernetes module, and without it the user is told why.

The manifest is applied as shipped: its ClusterRoleBinding names the user `gpupool`, for which the test mints a
client certificate. Everything the modules do (create, update, re-create, prune, wait) runs as that user in one
playbook; a second user without the binding gets the API server's 403 and a pointer to the manifest.
"""

from __future__ import annotations

import copy

import pytest

from tests.integration import k8s_helpers as h

pytestmark = pytest.mark.controlplane
RBAC = h.ROOT / "docs" / "rbac" / "gpupool-clusterrole.yaml"
CLUSTER = {
    "name": "rbac",
    "magnum": {"cloud": "unused", "cluster": "unused"},
    "pools": [
        {
            "name": "rbac-t4",
            "nodegroup": {"flavor": "g2", "node_count": 1},
            "gpu": {"model": "T4"},
            "device_classes": {"extra": [{"name": "rbac-t4-big", "min_memory": "8Gi"}]},
        },
        {
            "name": "rbac-gb200",
            "nodegroup": {"flavor": "g6", "node_count": 1},
            "gpu": {"model": "GB200", "per_node": 4},
            "nvlink": {"mode": "compute_domain", "compute_domain": {"namespace": "rbac-ml"}},
        },
        {
            "name": "rbac-a100",
            "nodegroup": {"flavor": "g4", "node_count": 1},
            "gpu": {"model": "A100-40GB"},
            "mig": {"mode": "static", "layout": {"3g.20gb": 1, "2g.10gb": 2}},
        },
    ],
    "mig_manager": {"namespace": "rbac-mig"},
}
POOLS = ["rbac-t4", "rbac-gb200"]


def converge(cluster="{{ gpupool_cluster }}", count=1, **extra):
    base = dict({"cluster": cluster, "pools": POOLS}, **extra)
    return [
        ("gpupool.core.node_pool", dict(base, wait=True, wait_timeout=10)),
        ("gpupool.core.device_class", dict(base)),
        (
            "gpupool.core.resource_claim_template",
            dict(
                base, namespaces=["rbac-team"], templates=[{"name": "rbac-t4-pair", "pool": "rbac-t4", "count": count}]
            ),
        ),
        ("gpupool.core.compute_domain", dict(base, recreate=True)),
    ]


def test_modules_work_under_the_documented_clusterrole_and_others_get_a_clear_403(control_plane, tmp_path):
    cp = control_plane
    h.install_compute_domain_crd(cp)
    for ns in ("rbac-team", "rbac-ml", "rbac-mig"):
        h.ensure_namespace(cp, ns)
    nodes = {"rbac-t4-0": "rbac-t4", "rbac-gb200-0": "rbac-gb200", "rbac-a100-0": "rbac-a100"}
    for name, ng in nodes.items():
        h.make_node(cp, name, {"magnum.openstack.org/nodegroup": ng})
    cp.kubectl("apply", "-f", str(RBAC))
    runner = cp.mint_kubeconfig("gpupool")
    nobody = cp.mint_kubeconfig("gpupool-nobody", ["some-team"])
    changed = copy.deepcopy(CLUSTER)
    changed["pools"][0]["device_classes"]["extra"] = []
    changed["pools"][1]["nvlink"]["compute_domain"]["allocation_mode"] = "All"
    try:
        # The inventory points at the admin kubeconfig; module_defaults for the action group (a module option,
        # so it wins over the inventory) switch every gpupool.core Kubernetes module to the gpupool user.
        play = h.GpupoolPlay(cp, tmp_path, copy.deepcopy(CLUSTER))
        changed["kubeconfig"] = str(cp.kubeconfig)
        defaults = {"module_defaults": {"group/gpupool.core.k8s": {"kubeconfig": str(runner)}}}
        tasks = (
            converge()  # create
            + converge()  # no-op
            + converge(changed, count=2)  # update, prune, re-create
            + [
                (
                    "gpupool.core.device_class",
                    {"cluster": "{{ gpupool_cluster }}", "pools": POOLS, "kubeconfig": str(nobody)},
                ),
                (
                    "gpupool.core.node_pool",
                    {"cluster": "{{ gpupool_cluster }}", "pools": POOLS, "kubeconfig": str(nobody)},
                ),
            ]
            # No MIG manager runs here: mig_layout in check mode (every read, dry-run writes and the
            # drain plan are authorized like real ones); pool_info reads nodes, slices and claims.
            + [
                (
                    "gpupool.core.mig_layout",
                    {"cluster": "{{ gpupool_cluster }}", "pools": ["rbac-a100"], "drain": True},
                    {"check_mode": True},
                ),
                ("gpupool.core.pool_info", {"cluster": "{{ gpupool_cluster }}"}),
            ]
        )
        results, res, window = play.run(tasks, play_extras=defaults)
        first, second, third, denied = results[0:4], results[4:8], results[8:12], results[12:14]
        mig_check, info = results[14:]
        assert not mig_check.get("failed") and mig_check["changed"], mig_check.get("msg")
        assert not info.get("failed") and not info["changed"] and "rbac-a100" in info["summary"], info.get("msg")
        for r in first + second + third:
            assert not r.get("failed"), r.get("msg")
        assert all(r["changed"] for r in first) and not any(r["changed"] for r in second)
        assert all(r["changed"] for r in third[1:])
        assert h.actions(third[1]) == {"rbac-t4": "unchanged", "rbac-gb200": "unchanged", "rbac-t4-big": "deleted"}
        assert h.actions(third[2]) == {"rbac-team/rbac-t4-pair": "recreated"}
        assert h.actions(third[3]) == {"rbac-ml/rbac-gb200": "recreated"}
        # every request of the gpupool user was allowed (404: the GET that sees a re-created object gone)
        runner_requests = window.select(user="gpupool", include_dry_run=True)
        refused = [
            (e["verb"], e["requestURI"], e["responseStatus"]["code"])
            for e in runner_requests
            if e["responseStatus"]["code"] >= 400 and not (e["verb"] == "get" and e["responseStatus"]["code"] == 404)
        ]
        assert runner_requests and refused == []
        dc_denied, nodes_denied = denied
        assert dc_denied["failed"] and " ".join(dc_denied["msg"].split()) == (
            'deviceclasses.resource.k8s.io is forbidden: User "gpupool-nobody" cannot list resource "deviceclasses" '
            'in API group "resource.k8s.io" at the cluster scope; the identity running gpupool needs the ClusterRole '
            "in docs/rbac/gpupool-clusterrole.yaml bound to it (see docs/rbac.md)"
        )
        assert all(len(line) <= 200 for d in denied for line in d["msg"].splitlines())  # wrapped, never cut
        assert nodes_denied["failed"] and " ".join(nodes_denied["msg"].split()).startswith(
            'nodes is forbidden: User "gpupool-nobody" cannot list resource "nodes" in API group "" at the cluster '
            "scope; the identity running gpupool needs the ClusterRole"
        )
        # discovery (/apis/resource.k8s.io) is open to every authenticated user (the earlier runs of this playbook
        # may have left it in the discovery cache: then it is not asked again); the LISTs are refused
        codes = sorted(e["responseStatus"]["code"] for e in window.select(user="gpupool-nobody"))
        assert codes in ([200, 403, 403], [403, 403]), codes
        assert window.select(user="gpupool-admin") == []  # module_defaults reached every module
    finally:
        h.delete_nodes(cp, list(nodes))
        cp.kubectl("delete", "-f", str(RBAC), "--ignore-not-found")
