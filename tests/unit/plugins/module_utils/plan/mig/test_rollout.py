"""Rolling MIG layout plan: pure tests (no I/O, no test bed) of inventory + ConfigMap + nodes + pods => actions."""

from __future__ import annotations

import copy

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpupool.core.plugins.module_utils.mig import mig_parted as mig_mig_parted
from ansible_collections.gpupool.core.plugins.module_utils.model import errors as model_errors
from ansible_collections.gpupool.core.plugins.module_utils.model import inventory as model_inventory
from ansible_collections.gpupool.core.plugins.module_utils.model import load as model_load
from ansible_collections.gpupool.core.plugins.module_utils.model import names as model_names
from ansible_collections.gpupool.core.plugins.module_utils.model.normalized import cluster_mig_parted_config
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig import rollout as plan_mig_rollout
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import eviction as plan_eviction
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import pool_nodes as plan_nodes

BASE = {
    "name": "c1",
    "pools": [
        {
            "name": "a100",
            "node_selector": {"gpu": "a100"},
            "gpu": {"model": "A100-40GB", "per_node": 2},
            "mig": {"mode": "static", "layout": {"3g.20gb": 1, "2g.10gb": 2}},
        },
        {
            "name": "h100",
            "node_selector": {"gpu": "h100"},
            "gpu": {"model": "H100-80GB", "per_node": 4},
            "mig": {"mode": "static", "layouts": {0: {"7g.80gb": 1}, 1: {"1g.10gb": 7}}},
        },
        {"name": "t4", "node_selector": {"gpu": "t4"}, "gpu": {"model": "T4"}},
        {"name": "whole", "node_selector": {"gpu": "whole"}, "gpu": {"model": "A100-80GB"}, "mig": {"mode": "off"}},
    ],
}
CFG = "gpupool-a100"


def cluster(mutate=None):
    data = copy.deepcopy(BASE)
    if mutate:
        mutate(data)
    return model_load.load_cluster(data)


def node(name, config=None, state=None, digest=None, ready=True, unschedulable=False, cordoned=False):
    labels = {"gpu": "a100"}
    if config is not None:
        labels[model_names.CONFIG_LABEL] = config
    if state is not None:
        labels[model_names.STATE_LABEL] = state
    ann = {}
    if digest is not None:
        ann[model_names.DIGEST_ANNOTATION] = digest
    if cordoned:
        ann[model_names.CORDON_ANNOTATION] = model_names.CORDON_VALUE
    out = {
        "metadata": {"name": name, "uid": "uid-" + name, "labels": labels, "annotations": ann},
        "spec": {"unschedulable": True} if unschedulable else {},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }
    return out


def pod(
    name,
    node_name="n0",
    ns="ml",
    limits=None,
    requests=None,
    claims=None,
    owner=None,
    phase="Running",
    mirror=False,
    deleting=False,
    init=False,
):
    container = {"name": "c", "image": "x", "resources": {}}
    if limits:
        container["resources"]["limits"] = limits
    if requests:
        container["resources"]["requests"] = requests
    spec = {"nodeName": node_name, "containers": [{"name": "main", "image": "x"}]}
    spec["initContainers" if init else "containers"] = [container] if init else [container]
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
            name, entries = plan_mig_rollout.pool_config(p)
            assert name == p.mig_config_name
            assert entries == whole[name]
    name, entries = plan_mig_rollout.pool_config(c.pool("a100"))
    assert entries == [{"devices": "all", "mig-enabled": True, "mig-devices": {"2g.10gb": 2, "3g.20gb": 1}}]
    h100 = plan_mig_rollout.pool_config(c.pool("h100"))[1]
    assert {"devices": [2, 3], "mig-enabled": False} in h100


def test_pool_config_refuses_an_infeasible_layout_even_without_load_cluster():
    raw = copy.deepcopy(BASE["pools"][0])
    raw["mig"]["layout"] = {"4g.20gb": 1, "3g.20gb": 1, "1g.5gb": 1}  # 8 compute slices
    pool = model_inventory.Pool.model_validate(raw)  # shape only: the semantic (planner) check is skipped
    with pytest.raises(model_errors.Problems) as err:
        plan_mig_rollout.pool_config(pool)
    assert "compute slices" in str(err.value) and "nothing was changed" in str(err.value)


def test_desired_configs_digest_and_skips_non_static_pools():
    c = cluster()
    got = plan_mig_rollout.desired_configs(c.pools)
    assert sorted(got) == ["gpupool-a100", "gpupool-h100"]
    assert got["gpupool-a100"].pools == ["a100"]
    assert got["gpupool-a100"].digest == plan_mig_rollout.config_digest(got["gpupool-a100"].entries)
    assert len(got["gpupool-a100"].digest) == 16


def test_absent_pools_have_no_config():
    c = cluster(lambda d: d["pools"][0].update(state="absent"))
    assert "gpupool-a100" not in plan_mig_rollout.desired_configs(c.pools)


def shape_only(data):
    """A cluster validated for shape only, as a module that skipped load_cluster's semantic checks would hold it."""
    return model_inventory.Cluster.model_validate(data)


def test_shared_config_name_needs_identical_layouts():
    def same(d):
        extra = copy.deepcopy(d["pools"][0])
        extra.update(name="a100b", node_selector={"gpu": "a100b"})
        extra["mig"]["config_name"] = "shared"
        d["pools"][0]["mig"]["config_name"] = "shared"
        d["pools"].append(extra)

    got = plan_mig_rollout.desired_configs(cluster(same).pools)
    assert got["shared"].pools == ["a100", "a100b"]

    data = copy.deepcopy(BASE)
    same(data)
    data["pools"][-1]["mig"]["layout"] = {"7g.40gb": 1}
    with pytest.raises(model_errors.Problems) as model_err:  # validate refuses first ...
        model_load.load_cluster(copy.deepcopy(data))
    with pytest.raises(model_errors.Problems) as err:  # ... with the message the builder gives on its own
        plan_mig_rollout.desired_configs(shape_only(data).pools)
    assert (
        err.value.problems
        == model_err.value.problems
        == [
            (
                "gpupool_cluster.pools[4] (a100b).mig.config_name",
                "MIG config 'shared' is also used by gpupool_cluster.pools[0] (a100) with a different layout; pools that "
                "share a config name share one mig-parted config, so give one of them its own mig.config_name",
            )
        ]
    )


def test_config_name_must_be_a_label_value():
    data = copy.deepcopy(BASE)
    data["pools"][0]["mig"]["config_name"] = "bad name!"
    with pytest.raises(model_errors.Problems) as model_err:
        model_load.load_cluster(copy.deepcopy(data))
    with pytest.raises(model_errors.Problems) as err:
        plan_mig_rollout.desired_configs(shape_only(data).pools)
    assert err.value.problems == model_err.value.problems
    assert err.value.problems[0][0] == "gpupool_cluster.pools[0] (a100).mig.config_name"
    assert "cannot be the value of the node label nvidia.com/mig.config" in err.value.problems[0][1]


def test_digest_ignores_key_order():
    a = [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb": 7}}]
    b = [{"mig-devices": {"1g.5gb": 7}, "mig-enabled": True, "devices": "all"}]
    assert plan_mig_rollout.config_digest(a) == plan_mig_rollout.config_digest(b)
    assert plan_mig_rollout.config_digest(a) != plan_mig_rollout.config_digest(
        [{"devices": "all", "mig-enabled": False}]
    )


# ---- the ConfigMap document -------------------------------------------------------------------------------

OTHERS = (
    "version: v1\nmig-configs:\n  team-x:\n    - devices: all\n      mig-enabled: true\n"
    "      mig-devices: {1g.5gb: 7}\n"
)
OURS = {"gpupool-a100": [{"devices": "all", "mig-enabled": True, "mig-devices": {"3g.20gb": 2}}]}


@pytest.mark.parametrize("text", [None, "", "   \n"])
def test_parse_empty_is_a_new_document(text):
    assert mig_mig_parted.parse_document(text) == {"version": "v1", "mig-configs": {}}


def test_parse_keeps_others_configs():
    doc = mig_mig_parted.parse_document(OTHERS)
    assert doc["mig-configs"]["team-x"][0]["mig-devices"] == {"1g.5gb": 7}


@pytest.mark.parametrize(
    "text,needle",
    [
        ("a: [unclosed", "is not YAML"),
        ("- a list", "is not a mig-parted document"),
        ("version: v1\nmig-configs: [1]\n", "is not a mig-parted document"),
        ("version: v2\nmig-configs: {}\n", "only v1"),
        (
            "version: v1\nmig-configs: {a: [{devices: all, mig-enabled: true, mig-devicez: {}}]}\n",
            "unknown key(s) mig-devicez",
        ),
        ("version: v1\nmig-configs: {a: [{devices: [0, x], mig-enabled: true}]}\n", "devices must be 'all'"),
        ("version: v1\nmig-configs: {a: {devices: all}}\n", "must be a list of entries"),
        ("version: v1\nmig-configs: {}\nextra: 1\n", "unknown top-level key"),
    ],
)
def test_parse_refuses_what_it_cannot_merge(text, needle):
    with pytest.raises(mig_mig_parted.SpecError):
        mig_mig_parted.parse_document(text, "ConfigMap gpu-operator/x")
    with pytest.raises(model_errors.Problems) as err:
        plan_mig_rollout.read_document(text, "ConfigMap gpu-operator/x")
    assert needle in str(err.value) and "ConfigMap gpu-operator/x" in str(err.value)


def test_merge_creates_ours_keeps_others_and_adds_all_disabled_once():
    doc = mig_mig_parted.parse_document(OTHERS)
    new, names, changes = plan_mig_rollout.merge_document(doc, OURS, [])
    assert changes == {"gpupool-a100": "created"}
    assert names == ["gpupool-a100"]
    assert new["mig-configs"]["team-x"] == doc["mig-configs"]["team-x"]
    assert new["mig-configs"]["gpupool-a100"] == OURS["gpupool-a100"]
    assert new["mig-configs"]["all-disabled"] == [{"devices": "all", "mig-enabled": False}]
    assert list(new["mig-configs"])[0] == "team-x"  # others' order kept, ours appended
    # idempotent: merging again changes nothing
    again, names2, changes2 = plan_mig_rollout.merge_document(new, OURS, names)
    assert again == new and names2 == names and changes2 == {"gpupool-a100": "unchanged"}
    assert doc == mig_mig_parted.parse_document(OTHERS)  # input not mutated


def test_merge_updates_only_ours():
    doc = mig_mig_parted.parse_document(OTHERS)
    first, names = plan_mig_rollout.merge_document(doc, OURS, [])[:2]
    changed = {"gpupool-a100": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb": 7}}]}
    new, names, changes = plan_mig_rollout.merge_document(first, changed, names)
    assert changes == {"gpupool-a100": "updated"}
    assert new["mig-configs"]["team-x"] == first["mig-configs"]["team-x"]
    assert new["mig-configs"]["gpupool-a100"] == changed["gpupool-a100"]


def test_merge_refuses_someone_elses_config_of_the_same_name():
    doc = mig_mig_parted.parse_document(OTHERS)
    with pytest.raises(model_errors.Problems) as err:
        plan_mig_rollout.merge_document(doc, {"team-x": OURS["gpupool-a100"]}, [], where="ConfigMap gpu-operator/cm")
    assert "'team-x' already exists" in str(err.value) and "not written by gpupool" in str(err.value)


def test_merge_adopts_an_identical_foreign_config():
    doc = mig_mig_parted.parse_document(OTHERS)
    new, names, changes = plan_mig_rollout.merge_document(doc, {"team-x": doc["mig-configs"]["team-x"]}, [])
    assert changes == {"team-x": "adopted"} and names == ["team-x"]


def test_merge_prunes_only_owned_unwanted_names():
    doc = mig_mig_parted.parse_document(OTHERS)
    first, names = plan_mig_rollout.merge_document(doc, dict(OURS, **{"gpupool-old": OURS["gpupool-a100"]}), [])[:2]
    assert names == ["gpupool-a100", "gpupool-old"]
    new, names, changes = plan_mig_rollout.merge_document(first, OURS, names, prune=["gpupool-old", "team-x-not-ours"])
    assert changes == {"gpupool-a100": "unchanged", "gpupool-old": "deleted"}
    assert "gpupool-old" not in new["mig-configs"] and "team-x" in new["mig-configs"]
    assert names == ["gpupool-a100"]


def test_render_round_trips_and_owned_names():
    doc = plan_mig_rollout.merge_document(mig_mig_parted.parse_document(OTHERS), OURS, [])[0]
    text = mig_mig_parted.render_document(doc)
    assert yaml.safe_load(text) == doc
    assert mig_mig_parted.parse_document(text) == doc
    assert text.startswith("version: v1\n")
    assert plan_mig_rollout.owned_names({model_names.CONFIGS_ANNOTATION: "a, b,,c"}) == ["a", "b", "c"]
    assert plan_mig_rollout.owned_names(None) == []
    assert plan_mig_rollout.ours_view(doc, ["gpupool-a100", "missing"]) == OURS


# ---- nodes -------------------------------------------------------------------------------------------------

D = "d" * 16


@pytest.mark.parametrize(
    "n,changed,retry,want",
    [
        (node("n0"), False, False, plan_mig_rollout.CONFIGURE),
        (node("n0", "all-disabled", "success"), False, False, plan_mig_rollout.CONFIGURE),
        (node("n0", "other", "failed"), False, False, plan_mig_rollout.CONFIGURE),
        (node("n0", CFG, "success", D), False, False, plan_mig_rollout.NONE),
        (node("n0", CFG, "success", D), True, False, plan_mig_rollout.NONE),  # digest says it has the new content
        (
            node("n0", CFG, "success"),
            False,
            False,
            plan_mig_rollout.NONE,
        ),  # no digest, config unchanged: label equal + success
        (node("n0", CFG, "success"), True, False, plan_mig_rollout.RECONFIGURE),  # no digest, config changes now
        (node("n0", CFG, "success", "old"), False, False, plan_mig_rollout.RECONFIGURE),
        (node("n0", CFG, "failed", "old"), False, False, plan_mig_rollout.RECONFIGURE),  # new content may fix it
        (node("n0", CFG, "failed", D), False, False, plan_mig_rollout.BLOCKED),
        (node("n0", CFG, "failed", D), False, True, plan_mig_rollout.RECONFIGURE),
        (node("n0", CFG, "pending", D), False, False, plan_mig_rollout.WAIT),
        (node("n0", CFG, "rebooting", D), False, False, plan_mig_rollout.WAIT),
        (node("n0", CFG, None, D), False, False, plan_mig_rollout.WAIT),
        (node("n0", None, None, None, ready=False), False, False, plan_mig_rollout.SKIP),
        (node("n0", CFG, "success", "old", ready=False), False, False, plan_mig_rollout.SKIP),
        (node("n0", CFG, "pending", D, ready=False), False, False, plan_mig_rollout.WAIT),
        (node("n0", CFG, "success", D, ready=False), False, False, plan_mig_rollout.NONE),
    ],
)
def test_classify(n, changed, retry, want):
    action, reason = plan_mig_rollout.classify(n, CFG, D, config_changed=changed, retry_failed=retry)
    assert action == want, reason
    assert reason


def test_classify_reasons_are_readable():
    assert (
        plan_mig_rollout.classify(node("n0", "all-disabled"), CFG, D)[1]
        == "nvidia.com/mig.config is all-disabled, wants gpupool-a100"
    )
    assert "not set" in plan_mig_rollout.classify(node("n0"), CFG, D)[1]
    assert "NotReady" in plan_mig_rollout.classify(node("n0", ready=False), CFG, D)[1]


@pytest.mark.parametrize(
    "max_unavailable,want",
    [
        (1, [["n1"], ["n0"], ["n2"], ["n3"]]),
        (2, [["n1", "n0"], ["n2", "n3"]]),
        (3, [["n1", "n0", "n2"], ["n3"]]),
        (10, [["n1", "n0", "n2", "n3"]]),
    ],
)
def test_waves_put_busy_nodes_first(max_unavailable, want):
    changing = [
        ("n3", plan_mig_rollout.CONFIGURE),
        ("n0", plan_mig_rollout.RECONFIGURE),
        ("n2", plan_mig_rollout.CONFIGURE),
        ("n1", plan_mig_rollout.WAIT),
    ]
    assert plan_mig_rollout.waves(changing, max_unavailable) == want


def test_waves_need_max_unavailable():
    with pytest.raises(ValueError):
        plan_mig_rollout.waves([("n0", plan_mig_rollout.CONFIGURE)], 0)
    assert plan_mig_rollout.waves([], 1) == []


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.from_regex(r"n[0-9]{1,3}", fullmatch=True),
        st.sampled_from([plan_mig_rollout.CONFIGURE, plan_mig_rollout.RECONFIGURE, plan_mig_rollout.WAIT]),
        max_size=30,
    ),
    st.integers(min_value=1, max_value=8),
)
def test_waves_partition_the_nodes(actions, max_unavailable):
    result = plan_mig_rollout.waves(list(actions.items()), max_unavailable)
    flat = [n for w in result for n in w]
    assert sorted(flat) == sorted(actions)  # every node exactly once
    assert all(1 <= len(w) <= max_unavailable for w in result)
    assert all(len(w) == max_unavailable for w in result[:-1])  # only the last wave may be short
    busy = [n for n in flat if actions[n] == plan_mig_rollout.WAIT]
    assert flat[: len(busy)] == sorted(busy)


def test_plan_pool():
    nodes = [
        node("n3"),
        node("n1", CFG, "success", D),
        node("n0", CFG, "success", D, cordoned=True, unschedulable=True),
        node("n2", CFG, "pending", D),
        node("n4", ready=False),
        node("n5", "x", "success"),
    ]
    plan = plan_mig_rollout.plan_pool("a100", CFG, D, nodes, 2)
    assert [r.name for r in plan.nodes] == ["n0", "n1", "n2", "n3", "n4", "n5"]
    actions = {r.name: r.action for r in plan.nodes}
    assert actions == {"n0": "none", "n1": "none", "n2": "wait", "n3": "configure", "n4": "skip", "n5": "configure"}
    assert plan.waves == [["n2", "n3"], ["n5"]]
    assert plan.skipped == ["n4"] and plan.blocked == []
    assert [r.name for r in plan.nodes if r.uncordon] == ["n0"]
    assert plan.nodes[5].before.as_dict() == {"config": "x", "state": "success", "digest": None}
    # the result's entry of a plan: the same keys as before the plan was typed (the module's RETURN docs)
    assert plan.nodes[5].as_dict() == {
        "name": "n5",
        "action": plan_mig_rollout.CONFIGURE,
        "reason": "nvidia.com/mig.config is x, wants gpupool-a100",
        "ready": True,
        "before": {"config": "x", "state": "success", "digest": None},
        "uncordon": False,
    }
    assert set(plan.as_dict()) == {"config_name", "digest", "selector", "nodes", "waves"}


def test_blocked_nodes_become_problems_that_name_the_node():
    plan = plan_mig_rollout.plan_pool("a100", CFG, D, [node("n0", CFG, "failed", D), node("n1")], 1)
    assert plan.blocked == ["n0"] and plan.waves == [["n1"]]
    assert plan.as_dict()["blocked"] == ["n0"]
    problems = plan_mig_rollout.blocked_problems([plan], "gpu-operator")
    assert problems[0][0] == "pool a100, node n0"
    assert "retry_failed: true" in problems[0][1] and "spec.nodeName=n0" in problems[0][1]
    assert "nothing was changed" in model_errors.Problems(problems).render()


def test_patches():
    assert plan_mig_rollout.label_patch(CFG, D) == {
        "metadata": {
            "labels": {model_names.CONFIG_LABEL: CFG, model_names.STATE_LABEL: None},
            "annotations": {model_names.DIGEST_ANNOTATION: D},
        }
    }
    assert plan_mig_rollout.unlabel_patch() == {
        "metadata": {"labels": {model_names.CONFIG_LABEL: None, model_names.STATE_LABEL: None}}
    }
    assert plan_eviction.cordon_patch(model_names.CORDON_VALUE) == {
        "metadata": {"annotations": {model_names.CORDON_ANNOTATION: model_names.CORDON_VALUE}},
        "spec": {"unschedulable": True},
    }
    assert plan_eviction.cordon_patch(model_names.CORDON_VALUE, "mig-layout:p:c", "run-1") == {
        "metadata": {
            "annotations": {
                model_names.CORDON_ANNOTATION: model_names.CORDON_VALUE,
                model_names.CORDON_REASON_ANNOTATION: "mig-layout:p:c",
                model_names.CORDON_RUN_ANNOTATION: "run-1",
            }
        },
        "spec": {"unschedulable": True},
    }
    # the uncordon removes the cordon's whole record: who, why, which run
    assert plan_eviction.uncordon_patch() == {
        "metadata": {
            "annotations": {
                model_names.CORDON_ANNOTATION: None,
                model_names.CORDON_REASON_ANNOTATION: None,
                model_names.CORDON_RUN_ANNOTATION: None,
            }
        },
        "spec": {"unschedulable": None},
    }
    assert plan_mig_rollout.node_diff_view(CFG, "success", D) == {
        "metadata": {
            "labels": {model_names.CONFIG_LABEL: CFG, model_names.STATE_LABEL: "success"},
            "annotations": {model_names.DIGEST_ANNOTATION: D},
        }
    }
    assert plan_mig_rollout.node_diff_view(None, None, None) == {"metadata": {"labels": {}, "annotations": {}}}


# ---- pods ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "p,why",
    [
        (pod("a", limits={"nvidia.com/gpu": "1"}), "requests nvidia.com/gpu"),
        (pod("a", requests={"nvidia.com/mig-3g.20gb": "1", "cpu": "1"}), "requests nvidia.com/mig-3g.20gb"),
        (pod("a", limits={"nvidia.com/gpu.shared": "1"}), "requests nvidia.com/gpu.shared"),
        (pod("a", limits={"gpupool.io/a100-3g.20gb": "1"}), "requests gpupool.io/a100-3g.20gb"),
        (pod("a", limits={"nvidia.com/gpu": "1"}, init=True), "requests nvidia.com/gpu"),
        (pod("a", claims=["gpu-claim"]), "has resource claim(s) gpu-claim"),
        (pod("a", limits={"cpu": "1", "memory": "1Gi"}), None),
        (pod("a", limits={"example.com/nvidia.com/gpu": "1"}), None),
        (pod("a"), None),
    ],
)
def test_gpu_use(p, why):
    assert plan_eviction.gpu_use(p) == why


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
    evict, wait_for, skipped = plan_eviction.pods_to_evict(pods, "n0")
    assert [plan_eviction.pod_ref(p) for p, dummy in evict] == ["a/infer", "ml/job", "ml/train"]
    assert [plan_eviction.pod_ref(p) for p, dummy in wait_for] == ["ml/leaving"]
    assert [(plan_eviction.pod_ref(p), why.split(" ")[0]) for p, why in skipped] == [
        ("ml/dcgm", "DaemonSet"),
        ("ml/static", "static"),
    ]
    assert plan_eviction.pods_to_evict(pods, "n9") == ([], [], [])


def test_eviction_body():
    p = pod("train", limits={"nvidia.com/gpu": "1"})
    assert plan_eviction.eviction(p) == {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "train", "namespace": "ml"},
        "deleteOptions": {"preconditions": {"uid": "uid-train"}},
    }
    assert plan_eviction.eviction(p, 0)["deleteOptions"]["gracePeriodSeconds"] == 0


# ---- progress ---------------------------------------------------------------------------------------------


def test_wave_progress():
    now = {
        "a": node("a", CFG, "success", D),
        "b": node("b", CFG, "failed", D),
        "c": node("c", CFG, "pending", D),
        "d": node("d", CFG, None, D),
        "e": None,
        "f": node("f", "all-disabled", "success"),
    }
    assert plan_mig_rollout.wave_progress(now, CFG) == {
        "a": "done",
        "b": "failed",
        "c": "busy",
        "d": "busy",
        "e": "gone",
        "f": "relabelled",
    }


def test_node_state():
    st_ = plan_mig_rollout.node_state(node("n0", CFG, "success", D, unschedulable=True, cordoned=True))
    assert st_ == {
        "name": "n0",
        "ready": True,
        "unschedulable": True,
        "config": CFG,
        "state": "success",
        "digest": D,
        "cordoned_by_us": True,
    }
    assert plan_nodes.node_ready({"metadata": {"name": "x"}}) is False


def test_parse_keeps_device_filters_of_others():
    text = "version: v1\nmig-configs:\n  theirs:\n  - device-filter: ['0x20B010DE']\n    devices: all\n    mig-enabled: true\n    mig-devices: {1g.5gb: 7}\n"
    doc = plan_mig_rollout.read_document(text)
    assert doc["mig-configs"]["theirs"][0]["device-filter"] == ["0x20B010DE"]
    assert mig_mig_parted.parse_document(plan_mig_rollout.write_document(doc)) == doc


def test_wave_status_says_each_nodes_state_in_the_managers_words():
    def labelled(config, state=None):
        labels = {"nvidia.com/mig.config": config}
        if state:
            labels["nvidia.com/mig.config.state"] = state
        return {"metadata": {"labels": labels}}

    now = {"n0": labelled(CFG, "success"), "n1": labelled(CFG, "pending"), "n2": labelled(CFG), "n3": labelled("x")}
    assert plan_mig_rollout.wave_status(["n0", "n1", "n2", "n3", "n4"], now, CFG) == (
        "n0 success, n1 pending, n2 waiting for the MIG manager, "
        "n3 relabelled nvidia.com/mig.config=x by someone else, n4 gone"
    )
