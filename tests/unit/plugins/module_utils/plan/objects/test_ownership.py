# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Owner labels: which live objects an inventory prunes, adopts, or must refuse to touch (pure)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpupool.core.plugins.module_utils.k8s import apply_engine as k8s_apply_engine
from ansible_collections.gpupool.core.plugins.module_utils.model import load as model_load
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects import ownership as own
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.claim_templates import tenant_claim_templates
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.compute_domains import cluster_compute_domains
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.device_classes import cluster_device_classes


def obj(name, labels, namespace=None):
    meta = {"name": name, "labels": labels}
    if namespace:
        meta["namespace"] = namespace
    return {"metadata": meta}


MANAGED = {"app.kubernetes.io/managed-by": "gpupool"}


def test_every_builder_stamps_the_owner():
    cluster = model_load.load_cluster(
        {
            "name": "staging",
            "owner": "team-a",
            "pools": [
                {"name": "t4", "node_selector": {"gpu": "t4"}, "gpu": {"model": "T4"}},
                {
                    "name": "gb",
                    "node_selector": {"gpu": "gb"},
                    "gpu": {"model": "GB200"},
                    "nvlink": {"mode": "compute_domain", "compute_domain": {"namespace": "ml"}},
                },
            ],
            "tenants": [{"namespace": "ml", "templates": [{"name": "one", "pool": "t4"}]}],
        }
    )
    built = cluster_device_classes(cluster) + tenant_claim_templates(cluster) + cluster_compute_domains(cluster)
    kinds = {d.obj["kind"] for d in built}
    assert kinds == {"DeviceClass", "ResourceClaimTemplate", "ComputeDomain"}
    assert {d.obj["metadata"]["labels"]["gpupool.io/owner"] for d in built} == {"team-a"}
    unnamed = model_load.load_cluster(
        dict(name="prod", pools=[{"name": "t4", "node_selector": {"a": "b"}, "gpu": {"model": "T4"}}])
    )
    assert {d.obj["metadata"]["labels"]["gpupool.io/owner"] for d in cluster_device_classes(unnamed)} == {"prod"}


def test_classify():
    assert own.classify(obj("a", dict(MANAGED, **{"gpupool.io/owner": "a"})), "a") == own.OURS
    assert own.classify(obj("a", dict(MANAGED, **{"gpupool.io/owner": "b"})), "a") == own.FOREIGN
    assert own.classify(obj("a", dict(MANAGED)), "a") == own.LEGACY
    assert own.classify(obj("a", {"gpupool.io/owner": "a"}), "a") == own.NOT_GPUPOOL


def test_prune_scope_prunes_only_this_owner_and_legacy_objects_of_its_pools():
    scope = k8s_apply_engine.PruneScope(owner="a", inventory_pools=["t4", "gone"])
    ours = obj("x", own.ownership_labels("other-pool", "a"))
    theirs = obj("y", own.ownership_labels("t4", "b"))
    legacy_ours = obj("z", own.ownership_labels("gone"))
    legacy_theirs = obj("w", own.ownership_labels("h100"))
    assert scope.covers(ours)
    assert not scope.covers(theirs)
    assert scope.covers(legacy_ours)
    assert not scope.covers(legacy_theirs)
    limited = k8s_apply_engine.PruneScope(pools=["t4"], namespaces=["ns"], owner="a", inventory_pools=["t4"])
    assert not limited.covers(obj("x", own.ownership_labels("t4", "a"), "other-ns"))
    assert limited.covers(obj("x", own.ownership_labels("t4", "a"), "ns"))


def test_clash_is_named_with_both_owners_and_a_fix():
    live = {(None, "gpu-t4.nvidia.com"): obj("gpu-t4.nvidia.com", own.ownership_labels("t4", "team-b"))}
    clashes = own.owner_clashes({(None, "gpu-t4.nvidia.com"): "team-a", (None, "free"): "team-a"}, live)
    assert clashes == [((None, "gpu-t4.nvidia.com"), "team-b", "team-a")]
    text = own.clash_message("DeviceClass", *clashes[0], pool="t4")
    assert text.splitlines()[:3] == [
        "DeviceClass gpu-t4.nvidia.com (pool t4) belongs to another gpupool inventory:",
        "  its owner is 'team-b' (label gpupool.io/owner);",
        "  this inventory's owner is 'team-a', so nothing was written.",
    ]
    assert "rename the pool" in text and "gpupool_cluster.owner" in text
    assert max(len(line) for line in text.splitlines()) <= 200
    # a legacy object of the same name is adopted, not refused
    legacy = {(None, "gpu-t4.nvidia.com"): obj("gpu-t4.nvidia.com", own.ownership_labels("t4"))}
    assert own.owner_clashes({(None, "gpu-t4.nvidia.com"): "team-a"}, legacy) == []


def test_messages_name_a_few_and_count_the_rest():
    refs = ["DeviceClass c%d" % i for i in range(8)]
    text = own.adopted_message(refs)
    assert text.startswith("adopted 8 object(s) made before owner labels: DeviceClass c0, ")
    assert text.count("DeviceClass") == 5 and "and 3 more" in text


owners = st.sampled_from(["a", "b", None])
pools = st.sampled_from(["t4", "a100", "h100"])
labelled = st.builds(
    lambda managed, owner, pool: obj(
        "o", dict(own.ownership_labels(pool, owner) if managed else {"gpupool.io/pool": pool})
    ),
    st.booleans(),
    owners,
    pools,
)


@given(labelled, st.sampled_from(["a", "b"]), st.sets(pools))
def test_another_owners_object_is_never_pruned_and_nothing_foreign_is_adopted(o, me, inventory_pools):
    covered = k8s_apply_engine.PruneScope(owner=me, inventory_pools=inventory_pools).covers(o)
    cls = own.classify(o, me)
    if cls in (own.FOREIGN, own.NOT_GPUPOOL):
        assert not covered
    if covered and cls == own.LEGACY:
        assert own.pool_of(o) in inventory_pools
    if cls == own.OURS:
        assert covered
    clash = own.owner_clashes({(None, "o"): me}, {(None, "o"): o})
    assert bool(clash) == (cls == own.FOREIGN)
