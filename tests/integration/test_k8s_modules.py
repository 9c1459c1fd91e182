"""gpupool.core.{node_pool,device_class,resource_claim_template,compute_domain} end to end through ansible-playbook
against the real control plane; writes counted in its audit log.

Each playbook run checks many things (one run costs seconds): the modules run in one play, every result
is registered and collected.
"""

from __future__ import annotations

import copy
import json
import os
import socket
import subprocess

import pytest

from tests.integration import k8s_helpers as h
from tests.integration.playbook import ROOT, VENV_BIN

pytestmark = pytest.mark.controlplane
ADMIN = "gpupool-admin"
POOLS = ["mod-t4", "mod-a100", "mod-gb200"]
CLUSTER = {
    "name": "mod",
    "magnum": {"cloud": "unused", "cluster": "unused"},
    "pools": [
        {
            "name": "mod-t4",
            "nodegroup": {"flavor": "g2.5xlarge", "node_count": 2},
            "gpu": {"model": "T4"},
            "sharing": {"time_slicing": {"interval": "Medium"}},
            "node_labels": {"site": "cern"},
        },
        {
            "name": "mod-a100",
            "node_selector": {"mod-gpu": "a100"},
            "gpu": {"model": "A100-40GB", "per_node": 2},
            "mig": {"mode": "static", "layout": {"3g.20gb": 1, "2g.10gb": 2}},
            "taints": [{"key": "example.com/team", "value": "ml", "effect": "NoSchedule"}],
            "device_classes": {
                "extended_resource_names": True,
                "extra": [
                    {
                        "name": "mod-a100-ampere",
                        "min_memory": "20Gi",
                        "selectors": ["device.attributes['gpu.nvidia.com'].architecture == 'Ampere'"],
                    }
                ],
            },
        },
        {
            "name": "mod-gb200",
            "nodegroup": {"flavor": "g6.gb200x4", "node_count": 2},
            "gpu": {"model": "GB200", "per_node": 4},
            "nvlink": {"mode": "compute_domain", "compute_domain": {"name": "mod-domain", "namespace": "mod-ml"}},
        },
    ],
}
NODES = {
    "mod-t4-0": {"magnum.openstack.org/nodegroup": "mod-t4"},
    "mod-t4-1": {"magnum.openstack.org/nodegroup": "mod-t4"},
    "mod-a100-0": {"mod-gpu": "a100", "feature.node.kubernetes.io/pci-10de.present": "true"},
    "mod-gb200-0": {"magnum.openstack.org/nodegroup": "mod-gb200"},
    "mod-gb200-1": {"magnum.openstack.org/nodegroup": "mod-gb200"},
}
OTHERS_TAINT = {"key": "example.com/maintenance", "value": "planned", "effect": "PreferNoSchedule"}
TEMPLATES = [{"name": "mod-two-h", "pool": "mod-t4", "count": 2, "match_attribute": "resource.kubernetes.io/pcieRoot"}]


def tasks(pools=POOLS, templates=TEMPLATES, cd=None):
    base = {"cluster": "{{ gpupool_cluster }}", "pools": pools}
    rct = dict(base, namespaces=["mod-team-a"])
    rct_explicit = dict(base, namespaces=["mod-team-b"], templates=templates)
    return [
        ("gpupool.core.node_pool", dict(base)),
        ("gpupool.core.device_class", dict(base)),
        ("gpupool.core.resource_claim_template", rct),
        ("gpupool.core.resource_claim_template", rct_explicit),
        ("gpupool.core.compute_domain", dict(base, **(cd or {}))),
    ]


MODULES = ["node_pool", "device_class", "rct_default", "rct_explicit", "compute_domain"]


def by_module(results):
    return dict(zip(MODULES, results))


@pytest.fixture(scope="module")
def bed(control_plane, tmp_path_factory):
    """Nodes, namespaces and the ComputeDomain CRD; then a check-mode run and a real run of every module."""
    cp = control_plane
    h.install_compute_domain_crd(cp)
    for ns in ("mod-team-a", "mod-team-b", "mod-ml"):
        h.ensure_namespace(cp, ns)
    for name, labels in NODES.items():
        h.make_node(cp, name, dict(labels, team="others"), taints=[OTHERS_TAINT])
    play = h.GpupoolPlay(cp, tmp_path_factory.mktemp("modules"), copy.deepcopy(CLUSTER))
    check, check_res, check_window = play.run(tasks(), check=True)
    real, real_res, real_window = play.run(tasks())
    yield {
        "play": play,
        "check": by_module(check),
        "check_window": check_window,
        "check_stdout": check_res.stdout,
        "real": by_module(real),
        "real_window": real_window,
        "real_stdout": real_res.stdout,
    }
    h.delete_nodes(cp, list(NODES))


def test_ansible_doc_renders_every_module():
    names = ["gpupool.core." + m for m in ("node_pool", "device_class", "resource_claim_template", "compute_domain")]
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".build", "collections"))
    proc = subprocess.run(
        [os.path.join(VENV_BIN, "ansible-doc"), "--json"] + names, capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    docs = json.loads(proc.stdout)
    for name in names:
        doc = docs[name]["doc"]
        assert doc["attributes"]["check_mode"]["support"] == "full"
        assert doc["attributes"]["diff_mode"]["support"] == "full"
        for opt in (
            "kubeconfig",
            "context",
            "host",
            "api_key",
            "validate_certs",
            "ca_cert",
            "cluster",
            "pools",
            "force_conflicts",
        ):
            assert opt in doc["options"], (name, opt)
        assert docs[name]["examples"] and docs[name]["return"]["objects"]


@pytest.mark.dra_api
def test_first_run_changes_second_run_writes_nothing_check_mode_predicts_the_real_run(bed):
    check, real = bed["check"], bed["real"]
    release = bed["play"].cp.release
    for module in MODULES:
        assert not check[module].get("failed"), (module, check[module].get("msg"))
        assert not real[module].get("failed"), (module, real[module].get("msg"))
        assert check[module]["changed"] and real[module]["changed"], module
        # check mode reports the same diff the real run applies
        assert h.comparable_diff(check[module]) == h.comparable_diff(real[module]), module
    # check mode: zero writes (only dryRun=All requests)
    assert bed["check_window"].writes(user=ADMIN) == []
    assert bed["check_window"].select(verbs={"patch"}, user=ADMIN, include_dry_run=True)

    assert h.actions(real["device_class"]) == {
        "mod-t4": "created",
        "mod-a100-3g.20gb": "created",
        "mod-a100-2g.10gb": "created",
        "mod-a100-ampere": "created",
        "mod-gb200": "created",
    }
    assert h.actions(real["rct_default"]) == {"mod-team-a/" + n: "created" for n in h.actions(real["device_class"])}
    assert h.actions(real["rct_explicit"]) == {"mod-team-b/mod-two-h": "created"}
    assert h.actions(real["compute_domain"]) == {"mod-ml/mod-domain": "created"}
    assert h.actions(real["node_pool"]) == dict.fromkeys(NODES, "updated")
    assert real["node_pool"]["pools"]["mod-t4"] == {
        "nodes": ["mod-t4-0", "mod-t4-1"],
        "ready": 2,
        "selector": "magnum.openstack.org/nodegroup=mod-t4",
    }
    assert real["device_class"]["api_version"] == "resource.k8s.io/" + release.resource_version
    # DeviceClass extendedResourceName: kept where the release has it; else a warning, the classes without it
    assert real["device_class"]["extended_resource_names"] is release.extended_resource_name
    warned = [w for w in real["device_class"].get("warnings") or [] if "extendedResourceName" in w]
    assert bool(warned) is not release.extended_resource_name, real["device_class"].get("warnings")
    dc_ext = h.kubectl_json(bed["play"].cp, "get", "deviceclass", "mod-a100-3g.20gb")["spec"].get(
        "extendedResourceName"
    )
    assert dc_ext == ("gpupool.io/mod-a100-3g.20gb" if release.extended_resource_name else None)
    assert real["compute_domain"]["api_version"] == "resource.nvidia.com/v1beta1"
    # writes of the first real run: one apply per object, one merge patch per node (labels and taints together)
    assert h.write_counts(bed["real_window"]) == {
        ("patch", "nodes"): 5,
        ("patch", "deviceclasses"): 5,
        ("patch", "resourceclaimtemplates"): 6,
        ("patch", "computedomains"): 1,
    }

    cp = bed["play"].cp
    node = h.core(cp).read_node("mod-t4-0")
    labels = node.metadata.labels
    assert labels["team"] == "others" and labels["site"] == "cern" and labels["gpupool.io/pool"] == "mod-t4"
    assert labels["nvidia.com/gpu.present"] == "true"
    assert "nvidia.com/gpu.present" not in h.core(cp).read_node("mod-a100-0").metadata.labels  # NFD label there
    taints = [(t.key, t.value, t.effect) for t in node.spec.taints if not t.key.startswith("node.kubernetes.io/")]
    assert taints == [
        ("example.com/maintenance", "planned", "PreferNoSchedule"),
        ("node-role.kubernetes.io/gpu", "true", "NoSchedule"),
    ]
    dc = h.kubectl_json(cp, "get", "deviceclass", "mod-t4")
    assert dc["spec"]["config"][0]["opaque"]["parameters"]["sharing"] == {
        "strategy": "TimeSlicing",
        "timeSlicingConfig": {"interval": "Medium"},
    }
    rct = h.kubectl_json(cp, "get", "resourceclaimtemplate", "-n", "mod-team-b", "mod-two-h")
    assert rct["spec"]["spec"]["devices"]["constraints"] == [
        {"requests": ["gpu"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}
    ]
    cd = h.kubectl_json(cp, "get", "computedomain", "-n", "mod-ml", "mod-domain")
    assert cd["spec"] == {
        "channel": {"allocationMode": "Single", "resourceClaimTemplate": {"name": "mod-domain-channel"}},
        "numNodes": 0,
    }

    # second run: nothing changes, nothing is written
    again, res, window = bed["play"].run(tasks())
    for module, result in by_module(again).items():
        assert not result.get("failed"), (module, result.get("msg"))
        assert result["changed"] is False, module
        assert {o["action"] for o in result["objects"]} == {"unchanged"}, module
    assert window.writes(user=ADMIN) == []
    assert res.recap["cern-gpu"]["changed"] == 0


@pytest.mark.dra_api
def test_changes_are_previewed_exactly_and_immutable_compute_domains_need_recreate(bed):
    cp, play = bed["play"].cp, bed["play"]
    changed = copy.deepcopy(CLUSTER)
    t4, a100, gb200 = changed["pools"]
    t4["sharing"]["time_slicing"]["interval"] = "Long"
    t4["node_labels"]["tier"] = "gpu"
    a100["mig"]["layout"] = {"3g.20gb": 2}  # 2g.10gb class and its template go
    a100["gpu_taint"] = False  # our GPU taint leaves the A100 node
    gb200["nvlink"]["compute_domain"]["allocation_mode"] = "All"
    play.cluster = dict(changed, kubeconfig=str(cp.kubeconfig))
    templates = [dict(TEMPLATES[0], count=4)]

    check, _, check_window = play.run(tasks(templates=templates), check=True)
    real, _, real_window = play.run(tasks(templates=templates))
    check, real = by_module(check), by_module(real)
    assert check_window.writes(user=ADMIN) == []
    for module in ("node_pool", "device_class", "rct_default", "rct_explicit"):
        assert not real[module].get("failed"), (module, real[module].get("msg"))
        assert check[module]["changed"] and real[module]["changed"], module
        assert h.comparable_diff(check[module]) == h.comparable_diff(real[module]), module
    assert h.actions(real["device_class"])["mod-a100-2g.10gb"] == "deleted"
    assert h.actions(real["device_class"])["mod-t4"] == "updated"
    assert h.actions(real["rct_default"])["mod-team-a/mod-a100-2g.10gb"] == "deleted"
    # a ResourceClaimTemplate's spec is immutable in the API: the template is re-created
    assert h.actions(real["rct_explicit"]) == {"mod-team-b/mod-two-h": "recreated"}
    assert h.actions(real["node_pool"]) == {
        "mod-t4-0": "updated",
        "mod-t4-1": "updated",
        "mod-a100-0": "updated",
        "mod-gb200-0": "unchanged",
        "mod-gb200-1": "unchanged",
    }
    for result in (check["compute_domain"], real["compute_domain"]):
        assert result["failed"]
        assert result["msg"].startswith(
            "ComputeDomain mod-ml/mod-domain (pool mod-gb200): spec.channel.allocationMode "
            "cannot be changed in place: spec is immutable"
        ), result["msg"]
        assert (
            "set recreate: true" in result["msg"] and "gpupool_cluster.pools[2].nvlink.compute_domain" in result["msg"]
        )
    assert h.write_counts(real_window) == {
        ("patch", "nodes"): 3,
        ("patch", "deviceclasses"): 1,
        ("delete", "deviceclasses"): 1,
        ("patch", "resourceclaimtemplates"): 1,
        ("delete", "resourceclaimtemplates"): 2,
    }
    a100_node = h.core(cp).read_node("mod-a100-0")
    assert [t.key for t in a100_node.spec.taints if not t.key.startswith("node.kubernetes.io/")] == [
        "example.com/maintenance",
        "example.com/team",
    ]
    assert h.core(cp).read_node("mod-t4-1").metadata.labels["tier"] == "gpu"

    # recreate: previewed (dry-run create) and then done; a wait that cannot succeed fails with a sentence
    cd = [
        (
            "gpupool.core.compute_domain",
            {"cluster": "{{ gpupool_cluster }}", "pools": ["mod-gb200"], "recreate": True},
            {"check_mode": True},
        ),
        ("gpupool.core.compute_domain", {"cluster": "{{ gpupool_cluster }}", "pools": ["mod-gb200"], "recreate": True}),
        (
            "gpupool.core.compute_domain",
            {
                "cluster": "{{ gpupool_cluster }}",
                "pools": ["mod-gb200"],
                "wait": True,
                "wait_timeout": 2,
                "wait_sleep": 1,
            },
        ),
    ]
    (pre, done, waited), _, window = play.run(cd)
    assert pre["changed"] and done["changed"] and h.actions(done) == {"mod-ml/mod-domain": "recreated"}
    assert h.comparable_diff(pre) == h.comparable_diff(done)
    assert done["diff"][0]["after"]["spec"]["channel"]["allocationMode"] == "All"
    assert h.writes(window) == [("delete", "computedomains", "mod-domain"), ("patch", "computedomains", "mod-domain")]
    assert waited["failed"] and waited["msg"].startswith(
        "1 ComputeDomain(s) not Ready after 2s: mod-ml/mod-domain (status unset)."
    )
    assert waited["wait_log"][-1].endswith("0/1 ComputeDomain(s) Ready; waiting for mod-ml/mod-domain (no status)")

    # the DRA driver's controller would now mark it Ready (no controller runs here: the test does)
    cp.kubectl(
        "patch",
        "computedomain",
        "-n",
        "mod-ml",
        "mod-domain",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status": {"status": "Ready"}}',
    )
    h.set_node_ready(cp, "mod-t4-1", False)
    waits = [
        (
            "gpupool.core.compute_domain",
            {"cluster": "{{ gpupool_cluster }}", "pools": ["mod-gb200"], "wait": True, "wait_timeout": 10},
        ),
        (
            "gpupool.core.node_pool",
            {"cluster": "{{ gpupool_cluster }}", "pools": ["mod-gb200", "mod-a100"], "wait": True, "wait_timeout": 10},
        ),
        (
            "gpupool.core.node_pool",
            {"cluster": "{{ gpupool_cluster }}", "pools": ["mod-t4"], "wait": True, "wait_timeout": 2, "wait_sleep": 1},
        ),
    ]
    (cd_ok, np_ok, np_short), _, window = play.run(waits)
    assert not cd_ok.get("failed") and cd_ok["objects"][0]["status"] == "Ready" and not cd_ok["changed"]
    assert not np_ok.get("failed") and np_ok["pools"]["mod-gb200"]["ready"] == 2 and not np_ok["changed"]
    assert np_short["failed"]
    assert np_short["msg"].startswith(
        "timed out after 2s waiting for Ready nodes: pool mod-t4 has 1 of 2 (nodes found: mod-t4-0, mod-t4-1)"
    ), np_short["msg"]
    assert window.writes(user=ADMIN) == []
    h.set_node_ready(cp, "mod-t4-1", True)


FOREIGN = """apiVersion: resource.k8s.io/{version}
kind: DeviceClass
metadata: {name: %s, labels: %s}
spec:
  selectors: [{cel: {expression: "device.driver == 'example.com'"}}]
"""


@pytest.mark.dra_api
def test_failures_are_clear_and_write_nothing_they_should_not(control_plane, tmp_path):
    cp = control_plane
    foreign_yaml = FOREIGN.replace("{version}", cp.release.resource_version)
    cp.kubectl("create", "-f", "-", input=foreign_yaml % ("mod-foreign", "{}"))
    cp.kubectl(
        "apply",
        "--server-side",
        "--field-manager=other-tool",
        "-f",
        "-",
        input=foreign_yaml % ("mod-conf", '{"app.kubernetes.io/managed-by": gpupool, "gpupool.io/pool": mod-conf}'),
    )
    foreign_rv = h.kubectl_json(cp, "get", "deviceclass", "mod-foreign")["metadata"]["resourceVersion"]

    def pool(name, **extra):
        return dict({"name": name, "node_selector": {"x": name}, "gpu": {"model": "T4"}}, **extra)

    def cluster(*pools):
        return {"name": "bad", "kubeconfig": str(cp.kubeconfig), "pools": list(pools)}

    bad_cel = pool(
        "mod-bad",
        device_classes={
            "defaults": False,
            "extra": [{"name": "mod-bad-cel", "selectors": ["device.attributes['gpu.nvidia.com'].productName =="]}],
        },
    )
    own = pool("mod-own", device_classes={"defaults": False, "extra": [{"name": "mod-foreign"}]})
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = "https://127.0.0.1:%d" % s.getsockname()[1]
    play = h.GpupoolPlay(cp, tmp_path, {"name": "unused", "pools": []})
    results, res, window = play.run(
        [
            ("gpupool.core.device_class", {"cluster": cluster(bad_cel), "pools": ["mod-bad"]}),
            ("gpupool.core.device_class", {"cluster": cluster(own), "pools": ["mod-own"]}),
            ("gpupool.core.device_class", {"cluster": cluster(pool("mod-conf")), "pools": ["mod-conf"]}),
            (
                "gpupool.core.device_class",
                {"cluster": cluster(pool("mod-conf")), "pools": ["mod-conf"], "force_conflicts": True},
            ),
            ("gpupool.core.device_class", {"cluster": {"name": "x", "pools": [pool("mod-x", gpu_taints=True)]}}),
            ("gpupool.core.node_pool", {"cluster": cluster(pool("mod-conf")), "pools": ["nope"]}),
            (
                "gpupool.core.resource_claim_template",
                {"cluster": cluster(pool("mod-conf")), "pools": ["mod-conf"], "namespaces": ["mod-missing"]},
            ),
            (
                "gpupool.core.compute_domain",
                {
                    "cluster": dict(cluster(), allow_empty=True),
                    "host": closed,
                    "api_key": "secret-token",
                    "request_retries": 0,
                    "request_timeout": 2,
                },
            ),
        ]
    )
    cel, foreign, conflict, forced, inventory, unknown, missing_ns, unreachable = results
    assert cel["failed"] and cel["msg"].startswith(
        "DeviceClass mod-bad-cel (pool mod-bad) was rejected by the API server: spec.selectors[1].cel.expression: "
        "Invalid value:"
    )
    assert "compilation failed" in cel["msg"]
    assert "(from gpupool_cluster.pools[0].device_classes.extra[0].selectors[0])" in cel["msg"]
    assert (
        foreign["failed"]
        and ("DeviceClass mod-foreign (wanted by pool mod-own) already exists and is not managed by gpupool")
        in foreign["msg"]
    )
    assert h.kubectl_json(cp, "get", "deviceclass", "mod-foreign")["metadata"]["resourceVersion"] == foreign_rv
    assert conflict["failed"] and conflict["msg"].startswith(
        "DeviceClass mod-conf (pool mod-conf): server-side apply conflict: .spec.selectors owned by field manager "
        "'other-tool', not by 'gpupool'."
    )
    assert not forced.get("failed") and h.actions(forced) == {"mod-conf": "adopted"}  # made without an owner label
    assert (
        inventory["failed"]
        and "gpupool_cluster.pools[0] (mod-x).gpu_taints: unknown key 'gpu_taints'; did you mean 'gpu_taint'?"
        in inventory["msg"]
    )
    assert unknown["failed"] and "pool(s) 'nope' not in gpupool_cluster.pools" in unknown["msg"]
    assert missing_ns["failed"] and ("namespace mod-missing does not exist; create it first") in missing_ns["msg"]
    assert unreachable["failed"] and unreachable["msg"].startswith(
        "cannot reach the Kubernetes API at %s (GET /apis/resource.k8s.io): connection refused" % closed
    )
    assert "secret-token" not in res.stdout + res.stderr
    # what was written: the failed attempts (422, 409, 404) and the forced apply, nothing to mod-foreign
    written = [
        (e["objectRef"]["resource"], e["objectRef"]["name"], e["responseStatus"]["code"])
        for e in window.writes(user=ADMIN)
    ]
    assert sorted(written) == sorted(
        [
            ("deviceclasses", "mod-bad-cel", 422),
            ("deviceclasses", "mod-conf", 409),
            ("deviceclasses", "mod-conf", 200),
            ("resourceclaimtemplates", "mod-conf", 404),
        ]
    )
    cp.kubectl("delete", "deviceclass", "mod-foreign", "mod-conf", "--ignore-not-found")
