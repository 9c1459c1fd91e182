"""Rolling MIG layout plan: pure tests (no I/O, no test bed) of inventory + ConfigMap + nodes + pods => actions."""
from __future__ import annotations

import copy

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from ansible_collections.gpupool.core.plugins.module_utils import mig_rollout_plan as mrp
from ansible_collections.gpupool.core.plugins.module_utils import pool_model as pm
from ansible_collections.gpupool.core.plugins.module_utils.pool_summary import cluster_mig_parted_config

BASE = {
    "name": "c1",
    "pools": [
        {"name": "a100", "node_selector": {"gpu": "a100"}, "gpu": {"model": "A100-40GB", "per_node": 2},
         "mig": {"mode": "static", "layout": {"3g.20gb": 1, "2g.10gb": 2}}},
        {"name": "h100", "node_selector": {"gpu": "h100"}, "gpu": {"model": "H100-80GB", "per_node": 4},
         "mig": {"mode": "static", "layouts": {0: {"7g.80gb": 1}, 1: {"1g.10gb": 7}}}},
        {"name": "t4", "node_selector": {"gpu": "t4"}, "gpu": {"model": "T4"}},
        {"name": "dyn", "node_selector": {"gpu": "dyn"}, "gpu": {"model": "A100-80GB"}, "mig": {"mode": "dynamic"}},
    ],
}
CFG = "gpupool-a100"


def cluster(mutate=None):
    data = copy.deepcopy(BASE)
    if mutate:
        mutate(data)
    return pm.load_cluster(data)


def node(name, config=None, state=None, digest=None, ready=True, unschedulable=False, cordoned=False):
    labels = {"gpu": "a100"}
    if config is not None:
        labels[mrp.CONFIG_LABEL] = config
    if state is not None:
        labels[mrp.STATE_LABEL] = state
    ann = {}
    if digest is not None:
        ann[mrp.DIGEST_ANNOTATION] = digest
    if cordoned:
        ann[mrp.CORDON_ANNOTATION] = mrp.CORDON_VALUE
    out = {"metadata": {"name": name, "uid": "uid-" + name, "labels": labels, "annotations": ann},
           "spec": {"unschedulable": True} if unschedulable else {},
           "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}
    return out


def pod(name, node_name="n0", ns="ml", limits=None, requests=None, claims=None, owner=None, phase="Running",
        mirror=False, deleting=False, init=False):
    container = {"name": "c", "image": "x", "resources": {}}
    if limits:
        container["resources"]["limits"] = limits
    if requests:
        container["resources"]["requests"] = requests
    spec = {"nodeName": node_name, "containers": [{"name": "main", "image": "x"}]}
    spec["initContainers" if init else "containers"] = ([container] if init else [container])
    if init:
        spec["containers"] = [{"name": "main", "image": "x"}]
    if claims:
        spec["resourceClaims"] = [{"name": c, "resourceClaimName": c} for c in claims]
    meta = {"name": name, "namespace": ns, "uid": "uid-" + name}
    if owner:
        meta["ownerReferences"] = [{"kind": owner, "name": "o", "uid": "x"}]
    if mirror:
        meta["annotations"] = {"kubernetes.io/config.mirror": "abc"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


# ---- configs ---------------------------------------------------------------------------------------------

def test_pool_config_is_pool_summary_rendering():
    c = cluster()
    whole = cluster_mig_parted_config(c)["mig-configs"]
    for p in c.pools:
        if p.mig.mode == "static":
            name, entries = mrp.pool_config(p)
            assert name == p.mig_config_name
            assert entries == whole[name]
    name, entries = mrp.pool_config(c.pool("a100"))
    assert entries == [{"devices": "all", "mig-enabled": True, "mig-devices": {"2g.10gb": 2, "3g.20gb": 1}}]
    h100 = mrp.pool_config(c.pool("h100"))[1]
    assert {"devices": [2, 3], "mig-enabled": False} in h100


def test_pool_config_refuses_an_infeasible_layout_even_without_load_cluster():
    raw = copy.deepcopy(BASE["pools"][0])
    raw["mig"]["layout"] = {"4g.20gb": 1, "3g.20gb": 1, "1g.5gb": 1}  # 8 compute slices
    pool = pm.Pool.model_validate(raw)  # shape only: the semantic (planner) check is skipped
    with pytest.raises(mrp.RolloutError) as err:
        mrp.pool_config(pool)
    assert "compute slices" in str(err.value) and "nothing was changed" in str(err.value)


def test_desired_configs_digest_and_skips_non_static_pools():
    c = cluster()
    got = mrp.desired_configs(c.pools)
    assert sorted(got) == ["gpupool-a100", "gpupool-h100"]
    assert got["gpupool-a100"]["pools"] == ["a100"]
    assert got["gpupool-a100"]["digest"] == mrp.config_digest(got["gpupool-a100"]["entries"])
    assert len(got["gpupool-a100"]["digest"]) == 16


def test_absent_pools_have_no_config():
    c = cluster(lambda d: d["pools"][0].update(state="absent"))
    assert "gpupool-a100" not in mrp.desired_configs(c.pools)


def test_shared_config_name_needs_identical_layouts():
    def same(d):
        extra = copy.deepcopy(d["pools"][0])
        extra.update(name="a100b", node_selector={"gpu": "a100b"})
        extra["mig"]["config_name"] = "shared"
        d["pools"][0]["mig"]["config_name"] = "shared"
        d["pools"].append(extra)
    got = mrp.desired_configs(cluster(same).pools)
    assert got["shared"]["pools"] == ["a100", "a100b"]

    def different(d):
        same(d)
        d["pools"][-1]["mig"]["layout"] = {"7g.40gb": 1}
    with pytest.raises(mrp.RolloutError) as err:
        mrp.desired_configs(cluster(different).pools)
    assert "also used by pool a100" in str(err.value)


def test_config_name_must_be_a_label_value():
    c = cluster(lambda d: d["pools"][0]["mig"].update(config_name="bad name!"))
    with pytest.raises(mrp.RolloutError) as err:
        mrp.desired_configs(c.pools)
    assert "pools[a100].mig.config_name" in str(err.value) and "label value" in str(err.value)


def test_digest_ignores_key_order():
    a = [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb": 7}}]
    b = [{"mig-devices": {"1g.5gb": 7}, "mig-enabled": True, "devices": "all"}]
    assert mrp.config_digest(a) == mrp.config_digest(b)
    assert mrp.config_digest(a) != mrp.config_digest([{"devices": "all", "mig-enabled": False}])


# ---- the ConfigMap document -------------------------------------------------------------------------------

OTHERS = ("version: v1\nmig-configs:\n  team-x:\n    - devices: all\n      mig-enabled: true\n"
          "      mig-devices: {1g.5gb: 7}\n")
OURS = {"gpupool-a100": [{"devices": "all", "mig-enabled": True, "mig-devices": {"3g.20gb": 2}}]}


@pytest.mark.parametrize("text", [None, "", "   \n"])
def test_parse_empty_is_a_new_document(text):
    assert mrp.parse_document(text) == {"version": "v1", "mig-configs": {}}


def test_parse_keeps_others_configs():
    doc = mrp.parse_document(OTHERS)
    assert doc["mig-configs"]["team-x"][0]["mig-devices"] == {"1g.5gb": 7}


@pytest.mark.parametrize("text,needle", [
    ("a: [unclosed", "is not YAML"),
    ("- a list", "is not a mig-parted document"),
    ("version: v1\nmig-configs: [1]\n", "is not a mig-parted document"),
    ("version: v2\nmig-configs: {}\n", "only v1"),
])
def test_parse_refuses_what_it_cannot_merge(text, needle):
    with pytest.raises(mrp.RolloutError) as err:
        mrp.parse_document(text, "ConfigMap gpu-operator/x")
    assert needle in str(err.value) and "ConfigMap gpu-operator/x" in str(err.value)


def test_merge_creates_ours_keeps_others_and_adds_all_disabled_once():
    doc = mrp.parse_document(OTHERS)
    new, names, changes = mrp.merge_document(doc, OURS, [])
    assert changes == {"gpupool-a100": "created"}
    assert names == ["gpupool-a100"]
    assert new["mig-configs"]["team-x"] == doc["mig-configs"]["team-x"]
    assert new["mig-configs"]["gpupool-a100"] == OURS["gpupool-a100"]
    assert new["mig-configs"]["all-disabled"] == [{"devices": "all", "mig-enabled": False}]
    assert list(new["mig-configs"])[0] == "team-x"  # others' order kept, ours appended
    # idempotent: merging again changes nothing
    again, names2, changes2 = mrp.merge_document(new, OURS, names)
    assert again == new and names2 == names and changes2 == {"gpupool-a100": "unchanged"}
    assert doc == mrp.parse_document(OTHERS)  # input not mutated


def test_merge_updates_only_ours():
    doc = mrp.parse_document(OTHERS)
    first, names = mrp.merge_document(doc, OURS, [])[:2]
    changed = {"gpupool-a100": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb": 7}}]}
    new, names, changes = mrp.merge_document(first, changed, names)
    assert changes == {"gpupool-a100": "updated"}
    assert new["mig-configs"]["team-x"] == first["mig-configs"]["team-x"]
    assert new["mig-configs"]["gpupool-a100"] == changed["gpupool-a100"]


def test_merge_refuses_someone_elses_config_of_the_same_name():
    doc = mrp.parse_document(OTHERS)
    with pytest.raises(mrp.RolloutError) as err:
        mrp.merge_document(doc, {"team-x": OURS["gpupool-a100"]}, [], where="ConfigMap gpu-operator/cm")
    assert "'team-x' already exists" in str(err.value) and "not written by gpupool" in str(err.value)


def test_merge_adopts_an_identical_foreign_config():
    doc = mrp.parse_document(OTHERS)
    new, names, changes = mrp.merge_document(doc, {"team-x": doc["mig-configs"]["team-x"]}, [])
    assert changes == {"team-x": "adopted"} and names == ["team-x"]


def test_merge_prunes_only_owned_unwanted_names():
    doc = mrp.parse_document(OTHERS)
    first, names = mrp.merge_document(doc, dict(OURS, **{"gpupool-old": OURS["gpupool-a100"]}), [])[:2]
    assert names == ["gpupool-a100", "gpupool-old"]
    new, names, changes = mrp.merge_document(first, OURS, names, prune=["gpupool-old", "team-x-not-ours"])
    assert changes == {"gpupool-a100": "unchanged", "gpupool-old": "deleted"}
    assert "gpupool-old" not in new["mig-configs"] and "team-x" in new["mig-configs"]
    assert names == ["gpupool-a100"]


def test_render_round_trips_and_owned_names():
    doc = mrp.merge_document(mrp.parse_document(OTHERS), OURS, [])[0]
    text = mrp.render_document(doc)
    assert yaml.safe_load(text) == doc
    assert mrp.parse_document(text) == doc
    assert text.startswith("version: v1\n")
    assert mrp.owned_names({mrp.CONFIGS_ANNOTATION: "a, b,,c"}) == ["a", "b", "c"]
    assert mrp.owned_names(None) == []
    assert mrp.ours_view(doc, ["gpupool-a100", "missing"]) == OURS


# ---- nodes -------------------------------------------------------------------------------------------------

D = "d" * 16


@pytest.mark.parametrize("n,changed,retry,want", [
    (node("n0"), False, False, mrp.CONFIGURE),
    (node("n0", "all-disabled", "success"), False, False, mrp.CONFIGURE),
    (node("n0", "other", "failed"), False, False, mrp.CONFIGURE),
    (node("n0", CFG, "success", D), False, False, mrp.NONE),
    (node("n0", CFG, "success", D), True, False, mrp.NONE),  # digest says it has the new content
    (node("n0", CFG, "success"), False, False, mrp.NONE),  # no digest, config unchanged: label equal + success
    (node("n0", CFG, "success"), True, False, mrp.RECONFIGURE),  # no digest, config changes now
    (node("n0", CFG, "success", "old"), False, False, mrp.RECONFIGURE),
    (node("n0", CFG, "failed", "old"), False, False, mrp.RECONFIGURE),  # new content may fix it
    (node("n0", CFG, "failed", D), False, False, mrp.BLOCKED),
    (node("n0", CFG, "failed", D), False, True, mrp.RECONFIGURE),
    (node("n0", CFG, "pending", D), False, False, mrp.WAIT),
    (node("n0", CFG, "rebooting", D), False, False, mrp.WAIT),
    (node("n0", CFG, None, D), False, False, mrp.WAIT),
    (node("n0", None, None, None, ready=False), False, False, mrp.SKIP),
    (node("n0", CFG, "success", "old", ready=False), False, False, mrp.SKIP),
    (node("n0", CFG, "pending", D, ready=False), False, False, mrp.WAIT),
    (node("n0", CFG, "success", D, ready=False), False, False, mrp.NONE),
])
def test_classify(n, changed, retry, want):
    action, reason = mrp.classify(n, CFG, D, config_changed=changed, retry_failed=retry)
    assert action == want, reason
    assert reason


def test_classify_reasons_are_readable():
    assert mrp.classify(node("n0", "all-disabled"), CFG, D)[1] == \
        "nvidia.com/mig.config is all-disabled, wants gpupool-a100"
    assert "not set" in mrp.classify(node("n0"), CFG, D)[1]
    assert "NotReady" in mrp.classify(node("n0", ready=False), CFG, D)[1]


@pytest.mark.parametrize("max_unavailable,want", [
    (1, [["n1"], ["n0"], ["n2"], ["n3"]]),
    (2, [["n1", "n0"], ["n2", "n3"]]),
    (3, [["n1", "n0", "n2"], ["n3"]]),
    (10, [["n1", "n0", "n2", "n3"]]),
])
def test_waves_put_busy_nodes_first(max_unavailable, want):
    changing = [("n3", mrp.CONFIGURE), ("n0", mrp.RECONFIGURE), ("n2", mrp.CONFIGURE), ("n1", mrp.WAIT)]
    assert mrp.waves(changing, max_unavailable) == want


def test_waves_need_max_unavailable():
    with pytest.raises(ValueError):
        mrp.waves([("n0", mrp.CONFIGURE)], 0)
    assert mrp.waves([], 1) == []


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.from_regex(r"n[0-9]{1,3}", fullmatch=True),
                       st.sampled_from([mrp.CONFIGURE, mrp.RECONFIGURE, mrp.WAIT]), max_size=30),
       st.integers(min_value=1, max_value=8))
def test_waves_partition_the_nodes(actions, max_unavailable):
    result = mrp.waves(list(actions.items()), max_unavailable)
    flat = [n for w in result for n in w]
    assert sorted(flat) == sorted(actions)  # every node exactly once
    assert all(1 <= len(w) <= max_unavailable for w in result)
    assert all(len(w) == max_unavailable for w in result[:-1])  # only the last wave may be short
    busy = [n for n in flat if actions[n] == mrp.WAIT]
    assert flat[:len(busy)] == sorted(busy)


def test_plan_pool():
    nodes = [node("n3"), node("n1", CFG, "success", D),
             node("n0", CFG, "success", D, cordoned=True, unschedulable=True),
             node("n2", CFG, "pending", D), node("n4", ready=False), node("n5", "x", "success")]
    plan = mrp.plan_pool("a100", CFG, D, nodes, 2)
    assert [r["name"] for r in plan["nodes"]] == ["n0", "n1", "n2", "n3", "n4", "n5"]
    actions = dict((r["name"], r["action"]) for r in plan["nodes"])
    assert actions == {"n0": "none", "n1": "none", "n2": "wait", "n3": "configure", "n4": "skip", "n5": "configure"}
    assert plan["waves"] == [["n2", "n3"], ["n5"]]
    assert plan["skipped"] == ["n4"] and plan["blocked"] == []
    assert [r["name"] for r in plan["nodes"] if r["uncordon"]] == ["n0"]
    assert plan["nodes"][5]["before"] == {"config": "x", "state": "success", "digest": None}


def test_blocked_nodes_become_problems_that_name_the_node():
    plan = mrp.plan_pool("a100", CFG, D, [node("n0", CFG, "failed", D), node("n1")], 1)
    assert plan["blocked"] == ["n0"] and plan["waves"] == [["n1"]]
    problems = mrp.blocked_problems([plan], "gpu-operator")
    assert problems[0][0] == "pool a100, node n0"
    assert "retry_failed: true" in problems[0][1] and "spec.nodeName=n0" in problems[0][1]
    assert "nothing was changed" in mrp.RolloutError(problems).render()


def test_patches():
    assert mrp.label_patch(CFG, D) == {"metadata": {"labels": {mrp.CONFIG_LABEL: CFG, mrp.STATE_LABEL: None},
                                                    "annotations": {mrp.DIGEST_ANNOTATION: D}}}
    assert mrp.unlabel_patch() == {"metadata": {"labels": {mrp.CONFIG_LABEL: None, mrp.STATE_LABEL: None}}}
    assert mrp.cordon_patch()["spec"] == {"unschedulable": True}
    assert mrp.uncordon_patch() == {"metadata": {"annotations": {mrp.CORDON_ANNOTATION: None}},
                                    "spec": {"unschedulable": None}}
    assert mrp.node_diff_view(CFG, "success", D) == {
        "metadata": {"labels": {mrp.CONFIG_LABEL: CFG, mrp.STATE_LABEL: "success"},
                     "annotations": {mrp.DIGEST_ANNOTATION: D}}}
    assert mrp.node_diff_view(None, None, None) == {"metadata": {"labels": {}, "annotations": {}}}


# ---- pods ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("p,why", [
    (pod("a", limits={"nvidia.com/gpu": "1"}), "requests nvidia.com/gpu"),
    (pod("a", requests={"nvidia.com/mig-3g.20gb": "1", "cpu": "1"}), "requests nvidia.com/mig-3g.20gb"),
    (pod("a", limits={"nvidia.com/gpu.shared": "1"}), "requests nvidia.com/gpu.shared"),
    (pod("a", limits={"gpupool.io/a100-3g.20gb": "1"}), "requests gpupool.io/a100-3g.20gb"),
    (pod("a", limits={"nvidia.com/gpu": "1"}, init=True), "requests nvidia.com/gpu"),
    (pod("a", claims=["gpu-claim"]), "has resource claim(s) gpu-claim"),
    (pod("a", limits={"cpu": "1", "memory": "1Gi"}), None),
    (pod("a", limits={"example.com/nvidia.com/gpu": "1"}), None),
    (pod("a"), None),
])
def test_gpu_use(p, why):
    assert mrp.gpu_use(p) == why


def test_pods_to_evict():
    pods = [
        pod("train", limits={"nvidia.com/gpu": "1"}),
        pod("infer", ns="a", claims=["c"]),
        pod("web", limits={"cpu": "1"}),
        pod("elsewhere", node_name="n1", limits={"nvidia.com/gpu": "1"}),
        pod("done", limits={"nvidia.com/gpu": "1"}, phase="Succeeded"),
        pod("crashed", limits={"nvidia.com/gpu": "1"}, phase="Failed"),
        pod("dcgm", limits={"nvidia.com/gpu": "1"}, owner="DaemonSet"),
        pod("static", limits={"nvidia.com/gpu": "1"}, mirror=True),
        pod("leaving", limits={"nvidia.com/gpu": "1"}, deleting=True),
        pod("job", limits={"nvidia.com/gpu": "1"}, owner="Job"),
    ]
    evict, wait_for, skipped = mrp.pods_to_evict(pods, "n0")
    assert [mrp.pod_ref(p) for p, dummy in evict] == ["a/infer", "ml/job", "ml/train"]
    assert [mrp.pod_ref(p) for p, dummy in wait_for] == ["ml/leaving"]
    assert [(mrp.pod_ref(p), why.split(" ")[0]) for p, why in skipped] == [
        ("ml/dcgm", "DaemonSet"), ("ml/static", "static")]
    assert mrp.pods_to_evict(pods, "n9") == ([], [], [])


def test_eviction_body():
    p = pod("train", limits={"nvidia.com/gpu": "1"})
    assert mrp.eviction(p) == {"apiVersion": "policy/v1", "kind": "Eviction",
                               "metadata": {"name": "train", "namespace": "ml"},
                               "deleteOptions": {"preconditions": {"uid": "uid-train"}}}
    assert mrp.eviction(p, 0)["deleteOptions"]["gracePeriodSeconds"] == 0


# ---- progress ---------------------------------------------------------------------------------------------

def test_wave_progress():
    now = {"a": node("a", CFG, "success", D), "b": node("b", CFG, "failed", D), "c": node("c", CFG, "pending", D),
           "d": node("d", CFG, None, D), "e": None, "f": node("f", "all-disabled", "success")}
    assert mrp.wave_progress(now, CFG) == {"a": "done", "b": "failed", "c": "busy", "d": "busy", "e": "gone",
                                           "f": "relabelled"}


def test_node_state():
    st_ = mrp.node_state(node("n0", CFG, "success", D, unschedulable=True, cordoned=True))
    assert st_ == {"name": "n0", "ready": True, "unschedulable": True, "config": CFG, "state": "success",
                   "digest": D, "cordoned_by_us": True}
    assert mrp.node_ready({"metadata": {"name": "x"}}) is False
