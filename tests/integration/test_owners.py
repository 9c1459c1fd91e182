"""Two gpupool_cluster entries on one Kubernetes cluster: each object carries gpupool.io/owner, prune deletes only
this owner's objects, a name another owner holds is refused before any write, and objects made before the label
are adopted once, visibly. Through ansible-playbook against the real control plane; writes from its audit log.
"""

from __future__ import annotations

import copy
import json

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.model.load import load_cluster
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.device_classes import cluster_device_classes
from tests.integration import k8s_helpers as h

pytestmark = pytest.mark.controlplane
OWNER = "gpupool.io/owner"


def inventory(name, pool, model, domain_ns, tenant_ns):
    return {
        "name": name,
        "pools": [
            {"name": pool, "node_selector": {"own-gpu": pool}, "gpu": {"model": model}},
            {
                "name": pool + "-gb",
                "node_selector": {"own-gpu": pool + "-gb"},
                "gpu": {"model": "GB200", "per_node": 4},
                "nvlink": {"mode": "compute_domain", "compute_domain": {"namespace": domain_ns}},
            },
        ],
        "tenants": [{"namespace": tenant_ns, "templates": [{"name": pool + "-one", "pool": pool}]}],
    }


TEAM_A = inventory("own-a", "own-t4", "T4", "own-ml", "own-tenant-a")
TEAM_B = inventory("own-b", "own-l4", "L4", "own-ml", "own-tenant-b")
STEPS = ["device_class", "resource_claim_template", "compute_domain"]


def tasks(steps=STEPS):
    args = {"cluster": "{{ gpupool_cluster }}"}
    return [("gpupool.core." + s, dict(args, wait=False) if s == "compute_domain" else dict(args)) for s in steps]


def labelled(cp, resource, owner=None):
    """{namespace/name: (owner label, resourceVersion)} of gpupool's objects of a resource made by this module's
    inventories (every name and namespace here starts with own-; other tests share the control plane)."""
    items = h.kubectl_json(cp, "get", resource, "-A", "-l", "app.kubernetes.io/managed-by=gpupool")["items"]
    out = {}
    for o in items:
        meta = o["metadata"]
        key = (meta.get("namespace", "") + "/" if meta.get("namespace") else "") + meta["name"]
        if not key.startswith("own-"):
            continue
        if owner is None or (meta.get("labels") or {}).get(OWNER) == owner:
            out[key] = ((meta.get("labels") or {}).get(OWNER), meta["resourceVersion"])
    return out


def everything(cp):
    return {r: labelled(cp, r) for r in ("deviceclasses", "resourceclaimtemplates", "computedomains")}


def class_names(cluster):
    return [d.obj["metadata"]["name"] for d in cluster_device_classes(load_cluster(copy.deepcopy(cluster)))]


def legacy_class(cp, name, pool):
    """A DeviceClass as gpupool made them before the owner label (managed-by and pool only)."""
    served = json.loads(cp.kubectl("get", "--raw", "/apis/resource.k8s.io").stdout)["preferredVersion"]["groupVersion"]
    body = {
        "apiVersion": served,
        "kind": "DeviceClass",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "gpupool", "gpupool.io/pool": pool}},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]},
    }
    cp.kubectl("apply", "--server-side", "--field-manager=old-gpupool", "-f", "-", input=json.dumps(body))


@pytest.fixture
def two_teams(control_plane, tmp_path):
    cp = control_plane
    h.install_compute_domain_crd(cp)
    for ns in ("own-ml", "own-tenant-a", "own-tenant-b"):
        h.ensure_namespace(cp, ns)
    a = h.GpupoolPlay(cp, tmp_path / "a", copy.deepcopy(TEAM_A))
    b = h.GpupoolPlay(cp, tmp_path / "b", copy.deepcopy(TEAM_B))
    yield cp, a, b
    for resource in ("deviceclasses", "resourceclaimtemplates", "computedomains"):
        for owner in ("own-a", "own-b"):
            cp.kubectl("delete", resource, "-A", "-l", "%s=%s" % (OWNER, owner), "--wait=false", check=False)
    for name in ("own-legacy-t4.example.com", "own-legacy-zz.example.com"):
        cp.kubectl("delete", "deviceclass", name, "--ignore-not-found", check=False)


def test_two_inventories_never_prune_each_other_and_a_clash_is_refused_before_any_write(two_teams):
    cp, a, b = two_teams
    first_a, _res, _window = a.run(tasks())
    for result in first_a:
        assert not result.get("failed"), result
    mine_a = everything(cp)
    assert {o for r in mine_a.values() for o, _rv in r.values()} == {"own-a"}, mine_a
    assert len(mine_a["deviceclasses"]) == len(class_names(TEAM_A)) and mine_a["computedomains"]

    first_b, _res, _window = b.run(tasks())
    for result in first_b:
        assert not result.get("failed"), result
        assert "deleted" not in h.actions(result).values(), result
    again_a, _res, window = a.run(tasks())
    assert [r["changed"] for r in again_a] == [False, False, False], again_a
    assert h.writes(window) == []
    after = everything(cp)
    for resource, objects in mine_a.items():
        assert {k: v for k, v in after[resource].items() if v[0] == "own-a"} == objects  # untouched by B
        assert any(v[0] == "own-b" for v in after[resource].values()), (resource, after)  # B's are still there

    # team C takes team A's pool name (same DeviceClass names) and template name in A's namespace: refused,
    # and nothing at all is written - not even C's own new pool's class
    team_c = copy.deepcopy(TEAM_A)
    team_c["name"] = "own-c"
    team_c["pools"].append({"name": "own-c-l40", "node_selector": {"own-gpu": "c"}, "gpu": {"model": "L40S"}})
    c = h.GpupoolPlay(cp, a.tmp / "c", team_c)
    refused, _res, window = c.run(tasks(["device_class", "resource_claim_template"]))
    assert h.writes(window) == []
    assert everything(cp) == after
    dc, rct = refused
    assert dc["failed"] and rct["failed"]
    first_class = sorted(class_names(TEAM_A))[0]
    assert "DeviceClass %s (pool own-t4) belongs to another gpupool inventory:" % first_class in dc["msg"]
    assert "its owner is 'own-a' (label gpupool.io/owner);\n  this inventory's owner is 'own-c'" in dc["msg"]
    assert "ResourceClaimTemplate own-tenant-a/own-t4-one (pool own-t4) belongs to another gpupool" in rct["msg"]
    assert "gpupool_cluster.owner: own-a" in rct["msg"]
    assert max(len(line) for line in (dc["msg"] + "\n" + rct["msg"]).splitlines()) <= 200


def test_objects_made_before_owner_labels_are_adopted_once_and_others_left_alone(two_teams):
    cp, a, _b = two_teams
    first, _res, _window = a.run(tasks(["device_class"]))
    assert not first[0].get("failed"), first
    adopted = sorted(class_names(TEAM_A))[0]
    cp.kubectl("label", "deviceclass", adopted, OWNER + "-")  # as a class made before the label looks
    legacy_class(cp, "own-legacy-t4.example.com", "own-t4")  # of a pool of this inventory, no longer wanted
    legacy_class(cp, "own-legacy-zz.example.com", "own-zz")  # of a pool this inventory does not know
    zz_before = labelled(cp, "deviceclasses")["own-legacy-zz.example.com"]

    (result,), _res, window = a.run(tasks(["device_class"]))
    assert h.actions(result)[adopted] == "adopted"
    assert h.actions(result)["own-legacy-t4.example.com"] == "deleted"
    assert "own-legacy-zz.example.com" not in h.actions(result)
    warnings = "\n".join(result.get("warnings", []))
    assert "adopted 1 object(s) made before owner labels: DeviceClass %s" % adopted in warnings
    assert "deleted 1 gpupool object(s) without an owner label: DeviceClass own-legacy-t4.example.com" in warnings
    assert "left 1 gpupool object(s) without an owner label alone: DeviceClass own-legacy-zz.example.com" in warnings
    assert sorted(w[0] for w in h.writes(window)) == ["delete", "patch"]
    now = labelled(cp, "deviceclasses")
    assert now[adopted][0] == "own-a" and now["own-legacy-zz.example.com"] == zz_before

    (again,), _res, window = a.run(tasks(["device_class"]))
    assert again["changed"] is False and h.writes(window) == []
    assert "adopted" not in "\n".join(again.get("warnings", []))
