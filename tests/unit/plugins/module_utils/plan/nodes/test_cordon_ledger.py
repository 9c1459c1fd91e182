"""The cordon ledger: every gpupool cordon whose reason no longer holds is lifted, whatever the inventory says now;
a cordon whose reason holds, a person's cordon and one of a run that may still be writing are never touched."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpupool.core.plugins.module_utils.model import load as model_load
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import cordon_ledger, cordon_reasons
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import eviction as plan_eviction
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import orphans as plan_orphans
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.pool_nodes import assign_nodes

NG = "magnum.openstack.org/nodegroup"
POOL = "gpupool.io/pool"
BY, REASON, RUN = "gpupool.io/cordoned-by", "gpupool.io/cordon-reason", "gpupool.io/cordon-run"
A100 = {"flavor": "g4.p2.40g", "node_count": 1}


def inventory(mig="static", state="present", count=1):
    return model_load.load_cluster(
        {
            "name": "c1",
            "magnum": {"cloud": "x", "cluster": "y"},
            "pools": [
                {
                    "name": "a100",
                    "state": state,
                    "nodegroup": dict(A100, node_count=count),
                    "gpu": {"model": "A100-40GB", "per_node": 2},
                    "mig": {"mode": "static", "layout": {"3g.20gb": 1, "2g.10gb": 2}}
                    if mig == "static"
                    else {"mode": mig},
                },
                {"name": "l4", "node_selector": {"gpu": "l4"}, "gpu": {"model": "L4"}},
            ],
        }
    )


def managed(*managers):
    """metadata.managedFields as the API server writes them: each manager named owns spec.unschedulable."""
    return [
        {"manager": manager, "operation": "Update", "fieldsV1": {"f:spec": {"f:unschedulable": {}}}}
        for manager in managers
    ]


def node(name, labels, by=None, reason=None, run=None, cordoned=True, set_by=None):
    """A node; set_by: who set spec.unschedulable last (default: gpupool for a gpupool cordon, kubectl-cordon
    for a person's)."""
    annotations = {key: value for key, value in ((BY, by), (REASON, reason), (RUN, run)) if value}
    if set_by is None:
        set_by = ("gpupool" if by else "kubectl-cordon") if cordoned else ()
    fields = managed(*((set_by,) if isinstance(set_by, str) else set_by))
    fields.append({"manager": "kubelet", "operation": "Update", "fieldsV1": {"f:status": {}}})
    meta = {"name": name, "labels": dict(labels), "annotations": annotations, "resourceVersion": "41"}
    return {
        "metadata": dict(meta, managedFields=fields),
        "spec": {"unschedulable": True} if cordoned else {},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def ledger(cluster, nodes, busy_runs=frozenset(), scope=None):
    present = [p for p in cluster.pools if p.state == "present"]
    assigned = assign_nodes(present, nodes)
    members = {n["metadata"]["name"]: pool for pool, ns in assigned.items() for n in ns}
    orphans = [n["metadata"]["name"] for n, _pool in plan_orphans.find_orphans(nodes, members, scope)]
    return cordon_ledger.plan_ledger(nodes, cluster.pools, members, orphans, scope, busy_runs)


def verdicts(cluster, nodes, **kw):
    return {v.node: v.action for v in ledger(cluster, nodes, **kw)}


MIG_CORDON = dict(by="mig-layout", reason=cordon_reasons.mig_layout("a100", "gpupool-a100"), run="run-1")


# ---- the three holes of issue 24 --------------------------------------------------------------------------------
def test_a_mig_cordon_is_kept_while_the_pool_is_static_and_lifted_once_it_turns_mig_off():
    nodes = [node("a-0", {NG: "a100", POOL: "a100"}, **MIG_CORDON)]
    assert verdicts(inventory(), nodes) == {"a-0": "keep"}
    lifted = ledger(inventory(mig="off"), nodes)
    assert [(v.node, v.action) for v in lifted] == [("a-0", "lift")]
    assert "no longer a static MIG pool" in lifted[0].why and lifted[0].reason == MIG_CORDON["reason"]


def test_a_mig_cordon_of_an_absent_pool_stays_as_an_orphan():
    nodes = [node("a-0", {NG: "a100", POOL: "a100"}, **MIG_CORDON)]
    assert verdicts(inventory(state="absent"), nodes) == {"a-0": "keep"}  # node_pool holds orphans


def test_a_shrink_cordon_is_lifted_once_the_inventory_is_back_at_the_old_size():
    nodes = [
        node("a-0", {NG: "a100", POOL: "a100"}, by="nodegroup", reason=cordon_reasons.shrink("a100", 1)),
        node("a-1", {NG: "a100", POOL: "a100"}, cordoned=False),
    ]
    assert verdicts(inventory(count=1), nodes) == {"a-0": "keep"}  # 1 wanted, 2 there: still shrinking
    assert verdicts(inventory(count=2), nodes) == {"a-0": "lift"}


def test_a_delete_cordon_is_lifted_when_a_present_pool_wants_the_nodegroup_again():
    nodes = [node("a-0", {NG: "a100", POOL: "a100"}, by="nodegroup", reason=cordon_reasons.delete("a100"))]
    assert verdicts(inventory(), nodes) == {"a-0": "lift"}


def test_a_persons_cordon_is_never_touched_nor_one_of_a_run_that_may_be_writing():
    nodes = [
        node("a-0", {NG: "a100", POOL: "a100"}),  # kubectl cordon
        node("a-1", {NG: "a100", POOL: "a100"}, by="mig-layout", reason="mig-layout:a100:x", run="other"),
    ]
    assert verdicts(inventory(mig="off"), nodes, busy_runs=frozenset({"other"})) == {"a-1": "keep"}
    assert verdicts(inventory(mig="off"), nodes, busy_runs=None) == {"a-1": "keep"}  # no lease: not known
    assert verdicts(inventory(mig="off"), nodes) == {"a-1": "lift"}  # this run holds the lease


def test_a_cordon_without_a_reason_is_judged_by_its_step_and_one_not_understood_is_lifted():
    old = node("a-0", {NG: "a100", POOL: "a100"}, by="mig-layout")
    assert verdicts(inventory(), [old]) == {"a-0": "keep"}
    assert verdicts(inventory(mig="off"), [old]) == {"a-0": "lift"}
    odd = node("a-0", {NG: "a100", POOL: "a100"}, by="mig-layout", reason="mig-layout")
    assert verdicts(inventory(), [odd]) == {"a-0": "lift"}


def test_a_limited_run_leaves_the_other_pools_cordons_alone():
    nodes = [node("a-0", {NG: "a100", POOL: "a100"}, **MIG_CORDON)]
    assert verdicts(inventory(mig="off"), nodes, scope=["l4"]) == {}
    assert verdicts(inventory(mig="off"), nodes, scope=["a100"]) == {"a-0": "lift"}


def test_reasons_round_trip_and_junk_is_not_understood():
    for text in (cordon_reasons.mig_layout("p", "c"), cordon_reasons.shrink("g", 3), cordon_reasons.delete("g")):
        assert str(cordon_reasons.parse(text)) == text
    for junk in ("", "shrink:g:x", "mig-layout:p", "orphan:", "what:ever", "delete:a:b"):
        assert cordon_reasons.parse(junk) is None


# ---- properties -------------------------------------------------------------------------------------------------
POOLS = st.sampled_from(["a100", "l4", "gone", None])
REASONS = st.sampled_from(
    [
        None,
        cordon_reasons.mig_layout("a100", "gpupool-a100"),
        cordon_reasons.mig_layout("l4", "x"),
        cordon_reasons.mig_layout("gone", "x"),
        cordon_reasons.shrink("a100", 1),
        cordon_reasons.shrink("gone", 0),
        cordon_reasons.delete("a100"),
        cordon_reasons.delete("gone"),
        cordon_reasons.orphan("gone"),
        cordon_reasons.orphan("a100"),
        "junk",
    ]
)


# who set spec.unschedulable last: None the usual (gpupool for its cordon, kubectl-cordon for a person's), a person
# after gpupool's cordon, both (a shared field: not gpupool's alone), nobody recorded
SETTERS = st.sampled_from([None, None, "kubectl-cordon", ("gpupool", "kubectl-cordon"), ()])


def setters(one):
    return sorted(
        e["manager"] for e in one["metadata"]["managedFields"] if "f:unschedulable" in e["fieldsV1"].get("f:spec", {})
    )


@st.composite
def beds(draw):
    cluster = inventory(
        mig=draw(st.sampled_from(["static", "off"])),
        state=draw(st.sampled_from(["present", "absent"])),
        count=draw(st.integers(0, 3)),
    )
    nodes = []
    for index in range(draw(st.integers(0, 6))):
        pool = draw(POOLS)
        labels = {}
        if pool == "a100" or (pool == "gone" and draw(st.booleans())):
            labels[NG] = pool
        if pool == "l4":
            labels["gpu"] = "l4"
        if pool and draw(st.booleans()):
            labels[POOL] = pool
        nodes.append(
            node(
                "n-%d" % index,
                labels,
                by=draw(st.sampled_from([None, "mig-layout", "nodegroup", "node-pool"])),
                reason=draw(REASONS),
                run=draw(st.sampled_from([None, "run-1", "run-2"])),
                cordoned=draw(st.booleans()),
                set_by=draw(SETTERS),
            )
        )
    return cluster, nodes


def live(cluster, nodes, one):
    """The ledger's promise, written out plainly: does the cordon on `one` have a reason that still holds?"""
    pools = {p.name: p for p in cluster.pools}
    present = [p for p in cluster.pools if p.state == "present"]
    assigned = assign_nodes(present, nodes)
    member = {n["metadata"]["name"]: pool for pool, ns in assigned.items() for n in ns}
    name, labels = one["metadata"]["name"], one["metadata"]["labels"]
    if labels.get(POOL) and name not in member:
        return True  # an orphan: node_pool holds it
    ann = one["metadata"]["annotations"]
    reason = cordon_reasons.parse(ann.get(REASON))
    if reason is None and not ann.get(REASON) and ann.get(BY) == "mig-layout" and labels.get(POOL):
        reason = cordon_reasons.Reason("mig-layout", (labels[POOL], ""))
    if reason is None:
        return False
    a100 = pools["a100"]
    if reason.kind == "mig-layout":
        pool = pools.get(reason.args[0])
        return bool(pool and pool.state == "present" and pool.mig.mode == "static" and member.get(name) == pool.name)
    if reason.kind == "shrink":
        have = sum(1 for n in nodes if n["metadata"]["labels"].get(NG) == reason.args[0])
        return (
            reason.args[0] == "a100"
            and a100.state == "present"
            and labels.get(NG) == "a100"
            and a100.nodegroup.node_count < have
        )
    if reason.kind == "delete":
        return not (reason.args[0] == "a100" and a100.state == "present")
    return False


def apply(nodes, plan):
    lifted = {v.node for v in plan if v.action == cordon_ledger.LIFT}
    out = copy.deepcopy(nodes)
    released = {v.node for v in plan if v.action == cordon_ledger.RELEASE}
    for one in out:
        if one["metadata"]["name"] in released:
            for key in plan_eviction.record_patch()["metadata"]["annotations"]:
                one["metadata"]["annotations"].pop(key, None)
        if one["metadata"]["name"] in lifted:
            patch = plan_eviction.uncordon_patch()
            one["spec"].pop("unschedulable", None)
            for key in patch["metadata"]["annotations"]:
                one["metadata"]["annotations"].pop(key, None)
    return out


def gpupool_cordoned(one):
    return bool(one["spec"].get("unschedulable")) and bool(one["metadata"]["annotations"].get(BY))


@settings(max_examples=300, deadline=None)
@given(beds())
def test_a_lifted_cordon_never_has_a_reason_that_holds(bed):
    cluster, nodes = bed
    by_name = {n["metadata"]["name"]: n for n in nodes}
    for verdict in ledger(cluster, nodes):
        if verdict.action != cordon_ledger.RELEASE:
            assert (verdict.action == cordon_ledger.LIFT) == (not live(cluster, nodes, by_name[verdict.node])), verdict


@settings(max_examples=300, deadline=None)
@given(beds())
def test_after_the_plan_no_gpupool_cordon_without_a_live_reason_remains(bed):
    cluster, nodes = bed
    after = apply(nodes, ledger(cluster, nodes))
    for one in after:
        if gpupool_cordoned(one):
            assert live(cluster, after, one), one
    assert all(v.action == cordon_ledger.KEEP for v in ledger(cluster, after))  # nothing left to do: idempotent


@settings(max_examples=300, deadline=None)
@given(beds(), st.sampled_from([None, frozenset({"run-1"})]))
def test_persons_cordons_and_busy_runs_cordons_are_never_touched(bed, busy):
    cluster, nodes = bed
    plan = ledger(cluster, nodes, busy_runs=busy)
    by_name = {n["metadata"]["name"]: n for n in nodes}
    for verdict in plan:
        assert gpupool_cordoned(by_name[verdict.node])  # a person's cordon (no cordoned-by) never even appears
        if verdict.action == cordon_ledger.LIFT:
            run = by_name[verdict.node]["metadata"]["annotations"].get(RUN)
            assert not run if busy is None else run not in busy
    persons = [n["metadata"]["name"] for n in nodes if n["spec"].get("unschedulable") and not gpupool_cordoned(n)]
    after = {n["metadata"]["name"]: n for n in apply(nodes, plan)}
    assert all(after[name] == by_name[name] for name in persons)


@settings(max_examples=300, deadline=None)
@given(beds(), st.sampled_from([None, frozenset(), frozenset({"run-1"})]))
def test_no_cordon_is_lifted_unless_gpupool_alone_set_it_last(bed, busy):
    cluster, nodes = bed
    by_name = {n["metadata"]["name"]: n for n in nodes}
    for verdict in ledger(cluster, nodes, busy_runs=busy):
        one = by_name[verdict.node]
        patch = cordon_ledger.ledger_patch(verdict, one)
        if verdict.action == cordon_ledger.LIFT:
            assert setters(one) == ["gpupool"], verdict
            assert patch["spec"] == {"unschedulable": None}
        elif setters(one) != ["gpupool"] and verdict.action == cordon_ledger.RELEASE:
            assert "spec" not in patch and verdict.manager  # the person's cordon stays; who set it is named
        if patch is not None:  # every write carries the version it was decided from
            assert patch["metadata"]["resourceVersion"] == one["metadata"]["resourceVersion"]
        else:
            assert verdict.action == cordon_ledger.KEEP


# ---- issue 32: a person's cordon after gpupool's -------------------------------------------------------------------
def test_a_cordon_a_person_set_again_after_a_killed_runs_cordon_is_left_and_named():
    # the killed run's annotations stay; kubectl uncordon + kubectl cordon moved spec.unschedulable to kubectl-cordon
    recordoned = node("a-0", {NG: "a100", POOL: "a100"}, **MIG_CORDON, set_by="kubectl-cordon")
    (verdict,) = ledger(inventory(mig="off"), [recordoned])  # the reason is gone: gpupool's own would be lifted
    assert verdict.action == cordon_ledger.RELEASE and verdict.manager == "kubectl-cordon"
    assert cordon_ledger.released_message(verdict).startswith(
        "node a-0: cordoned by kubectl-cordon after gpupool's cordon; left cordoned"
    )
    patch = cordon_ledger.ledger_patch(verdict, recordoned)
    assert patch == {
        "metadata": {"annotations": {BY: None, REASON: None, RUN: None}, "resourceVersion": "41"}
    }  # gpupool's record goes, the cordon stays
    after = apply([recordoned], [verdict])
    assert after[0]["spec"]["unschedulable"] and ledger(inventory(mig="off"), after) == []  # never judged again
    # shared with another manager, or not recorded at all: not gpupool's alone, not lifted
    for set_by in (("gpupool", "kubectl-cordon"), ()):
        one = node("a-0", {NG: "a100", POOL: "a100"}, **MIG_CORDON, set_by=set_by)
        assert verdicts(inventory(mig="off"), [one]) == {"a-0": cordon_ledger.RELEASE}
    # gpupool's own: lifted, with its version as precondition
    own = node("a-0", {NG: "a100", POOL: "a100"}, **MIG_CORDON)
    (lift,) = ledger(inventory(mig="off"), [own])
    assert lift.action == cordon_ledger.LIFT
    assert cordon_ledger.ledger_patch(lift, own)["metadata"]["resourceVersion"] == "41"
