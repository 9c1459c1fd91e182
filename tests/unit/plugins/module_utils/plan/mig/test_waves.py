"""Inside one wave of a MIG rollout (plan/mig/waves.py): pure, hand-made plans, entries and nodes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpupool.core.plugins.module_utils.model import names as model_names
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig import rollout as plan_mig_rollout
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig import waves
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.rollout_data import Before, NodeRow, PoolPlan, Wave

CFG, DIGEST = "gpupool-a100", "d1"
CONFIGURE, RECONFIGURE, WAIT, NONE = (
    plan_mig_rollout.CONFIGURE,
    plan_mig_rollout.RECONFIGURE,
    plan_mig_rollout.WAIT,
    plan_mig_rollout.NONE,
)


def node(name, config=CFG, state=None):
    labels = {}
    if config is not None:
        labels[model_names.CONFIG_LABEL] = config
    if state is not None:
        labels[model_names.STATE_LABEL] = state
    return {"metadata": {"name": name, "labels": labels}}


def row(name, action, config=None, state=None, digest=None):
    return NodeRow(name, action, before=Before(config, state, digest))


def pool_plan(rows, wave_list):
    return PoolPlan("a100", CFG, DIGEST, nodes=rows, waves=wave_list)


def entry(index, nodes, actions, **more):
    return Wave("a100", index, nodes, actions, "not started", **more)


def test_subject_and_status_lines():
    plan = pool_plan([], [["n0"], ["n1", "n2"]])
    assert waves.subject(plan, entry(1, ["n1", "n2"], {})) == "MIG wave 2/2 of a100"
    assert waves.start_status(["n1", "n2"], True) == "n1, n2 cordon, drain, then MIG"
    assert waves.start_status(["n1"], False) == "n1 MIG"
    assert waves.done_status(["n1", "n2"]) == "done: n1, n2 success"
    assert waves.stopped_status(["n1", "n2"], {"n1": "failed", "n2": "timeout"}) == "stopped: n1 failed, n2 timeout"


@pytest.mark.parametrize(
    "action,idle,sent",
    [
        (CONFIGURE, True, "label"),  # nothing to evict first (no drain, or a node without GPU pods): one write
        (CONFIGURE, False, None),  # GPU pods to evict first: the label waits for the drain
        (RECONFIGURE, True, "unlabel"),  # the label's removal goes with the cordon: the MIG manager ignores it
        (RECONFIGURE, False, "unlabel"),  # ... whatever runs on the node
        (WAIT, True, None),  # already switching: nothing to label
        (WAIT, False, None),
        (NONE, True, None),
    ],
)
def test_the_cordon_carries_the_first_label_write_the_node_needs(action, idle, sent):
    want = {
        "label": plan_mig_rollout.label_patch(CFG, DIGEST),
        "unlabel": plan_mig_rollout.unlabel_patch(),
        None: None,
    }[sent]
    assert waves.cordon_write(action, idle, CFG, DIGEST) == want


@pytest.mark.parametrize(
    "action,drains,read", [(CONFIGURE, True, True), (CONFIGURE, False, False), (RECONFIGURE, True, False)]
)
def test_pods_are_read_before_the_cordon_only_where_they_decide_the_write(action, drains, read):
    assert waves.needs_pods_read(action, drains) is read


@pytest.mark.parametrize(
    "done,with_label,want",
    [
        ("cordoned", False, (True, True, False)),
        ("cordoned", True, (True, True, True)),
        ("ours", False, (True, False, False)),  # an earlier run's cordon: ours to uncordon, no write now
        ("ours", True, (True, True, True)),  # ... but the label went with the (otherwise empty) write
        ("theirs", False, (False, False, False)),  # someone else's: left so, never uncordoned by gpupool
        ("theirs", True, (False, True, True)),
        (None, True, (False, False, False)),  # the node is gone: nothing was written
        (None, False, (False, False, False)),
    ],
)
def test_after_cordon(done, with_label, want):
    label = plan_mig_rollout.label_patch(CFG, DIGEST) if with_label else None
    assert waves.after_cordon(done, label) == want


def test_what_the_cordon_wrote_decides_what_is_left_to_relabel_and_label():
    e = entry(0, ["n0", "n1", "n2", "n3"], {"n0": CONFIGURE, "n1": RECONFIGURE, "n2": WAIT, "n3": CONFIGURE})
    assert waves.to_relabel(e) == ["n1"]  # before any cordon (cordon: false)
    assert waves.to_label(e) == ["n0", "n1", "n3"]
    waves.record_cordon_write(e, "n0", plan_mig_rollout.label_patch(CFG, DIGEST), 1.0)
    waves.record_cordon_write(e, "n1", plan_mig_rollout.unlabel_patch(), 2.0)
    assert e.labelled == {"n0": 1.0} and e.unlabelled == {"n1": 2.0}
    assert waves.to_relabel(e) == []  # the cordon removed n1's label already
    assert waves.to_label(e) == ["n1", "n3"]  # n3: GPU pods were evicted first
    assert "unlabelled" not in e.as_dict()  # the runner's own bookkeeping


@pytest.mark.parametrize(
    "unlabelled,now,pause",
    [
        ({}, 100.0, 0.0),  # nothing unlabelled: no wait
        ({"n1": 99.0}, 100.0, 4.0),  # the delay counts from the removal
        ({"n1": 90.0, "n2": 98.0}, 100.0, 3.0),  # ... the last one
        ({"n1": 90.0}, 100.0, 0.0),  # the drain took longer than the delay
    ],
)
def test_relabel_pause_counts_the_time_since_the_label_went(unlabelled, now, pause):
    e = entry(0, ["n1", "n2"], {"n1": RECONFIGURE, "n2": RECONFIGURE}, unlabelled=dict(unlabelled))
    assert waves.relabel_pause(e, 5.0, now) == pause


def test_config_selector_is_the_label_of_the_config():
    assert waves.config_selector(CFG) == "nvidia.com/mig.config=gpupool-a100"


def test_settle_records_only_final_states():
    states = {"n0": "success"}  # settled in an earlier round: not read again
    now = {
        "n1": node("n1", state="success"),
        "n2": node("n2", state="failed"),
        "n3": node("n3", state="pending"),
        "n4": None,
        "n5": node("n5", config="team-x", state="success"),
        "n6": node("n6"),
    }
    waves.settle(states, now, CFG)
    assert states == {"n0": "success", "n1": "success", "n2": "failed", "n4": "gone", "n5": "relabelled"}


def test_timed_out_gives_the_last_state_label_of_the_unsettled_nodes():
    now = {"n1": node("n1", state="pending"), "n2": node("n2"), "n3": None}
    last = waves.timed_out(["n0", "n1", "n2", "n3", "n4"], {"n0": "success"}, now)
    assert last == {"n1": "pending", "n2": None, "n3": None, "n4": None}


@pytest.mark.parametrize(
    "states,bad,result",
    [
        ({"n0": "success", "n1": "success"}, [], "success"),
        ({"n0": "timeout", "n1": "timeout"}, ["n0", "n1"], "timeout"),
        ({"n0": "success", "n1": "timeout"}, ["n1"], "timeout"),
        ({"n0": "timeout", "n1": "failed"}, ["n0", "n1"], "failed"),
        ({"n0": "gone", "n1": "success"}, ["n0"], "failed"),
        ({"n0": "relabelled", "n1": "success"}, ["n0"], "failed"),
    ],
)
def test_bad_nodes_and_wave_result(states, bad, result):
    assert waves.bad_nodes(["n0", "n1"], states) == bad
    assert waves.wave_result(bad, states) == result


def test_left_cordoned_names_the_nodes_a_rerun_uncordons():
    assert waves.left_cordoned("boom", []) == "boom"
    assert waves.left_cordoned("boom.", ["n0", "n1"]) == (
        "boom. Cordoned by this run and left so: n0, n1 (a rerun continues the rollout and uncordons them)."
    )


def test_node_diffs_cover_the_labelled_nodes_of_the_wave():
    plan = pool_plan(
        [
            row("n0", CONFIGURE, config="all-disabled", state="success"),
            row("n1", RECONFIGURE, config=CFG, state="success", digest="old"),
            row("n2", WAIT, config=CFG, state="pending"),
            row("n3", CONFIGURE),  # in another wave
            row("n4", NONE, config=CFG, state="success", digest=DIGEST),
        ],
        [["n0", "n1", "n2"], ["n3"]],
    )
    diffs = waves.node_diffs(plan, ["n0", "n1", "n2"], {"n0": "success", "n1": "failed"})
    assert [d["before_header"] for d in diffs] == ["Node n0 (pool a100)", "Node n1 (pool a100)"]
    assert diffs[0]["before"] == plan_mig_rollout.node_diff_view("all-disabled", "success", None)
    assert diffs[0]["after"] == plan_mig_rollout.node_diff_view(CFG, "success", DIGEST)
    assert diffs[1]["before"] == plan_mig_rollout.node_diff_view(CFG, "success", "old")
    assert diffs[1]["after"] == plan_mig_rollout.node_diff_view(CFG, "failed", DIGEST)
    # check mode: no states yet, the diff shows what the run is for
    assert waves.node_diffs(plan, ["n3"], {})[0]["after"]["metadata"]["labels"][model_names.STATE_LABEL] == "success"


def test_failure_message_says_each_node_what_was_not_touched_and_where_to_look():
    plan = pool_plan([], [["n0", "n1", "n2", "n3"], ["n4"]])
    e = entry(0, ["n0", "n1", "n2", "n3"], {}, cordoned=["n0", "n1"], last_state={"n1": "pending"})
    states = {"n0": "failed", "n1": "timeout", "n2": "gone", "n3": "relabelled"}
    text = waves.failure_message(plan, e, ["n0", "n1", "n2", "n3"], states, ["n4", "n5"], 60, "gpu-operator")
    assert text == (
        "MIG layout rollout of pool a100 stopped: node n0 reports nvidia.com/mig.config.state=failed for config "
        "gpupool-a100; node n1 did not reach nvidia.com/mig.config.state=success within 60s (last state: "
        "pending); node n2 was deleted during the change; node n3 got another nvidia.com/mig.config while "
        "gpupool waited. Not touched: n4, n5. n0, n1 stay cordoned. Read the nvidia-mig-manager log on the node "
        "(kubectl -n gpu-operator logs -l app=nvidia-mig-manager --field-selector spec.nodeName=n0), fix the "
        "cause, then rerun with retry_failed: true."
    )


def test_failure_message_of_the_last_wave_with_one_node_not_cordoned_by_gpupool():
    plan = pool_plan([], [["n0"]])
    text = waves.failure_message(plan, entry(0, ["n0"], {}), ["n0"], {"n0": "timeout"}, [], 5, "ops")
    assert "(last state: not set)" in text
    assert "Not touched" not in text and "cordoned" not in text
    assert "kubectl -n ops logs" in text
    one = waves.failure_message(plan, entry(0, ["n0"], {}, cordoned=["n0"]), ["n0"], {"n0": "failed"}, [], 5, "ops")
    assert " n0 stays cordoned." in one


def wave_writes(actions, idle, cordons):
    """The node patches of one wave in the runner's order (k8s/mig_rollout.run_wave), from waves.py's decisions
    alone: {node: [patch, ...]} (the cordon's patch is the label write it carries, {} when none)."""
    e = entry(0, sorted(actions), dict(actions))
    writes = {n: [] for n in e.nodes}
    clock = iter(range(1, 1000))
    if cordons:
        for n in e.nodes:
            sent = waves.cordon_write(e.actions[n], idle[n], CFG, DIGEST)
            _ours, _changed, written = waves.after_cordon("cordoned", sent)
            writes[n].append(sent or {})
            if written:
                waves.record_cordon_write(e, n, sent, float(next(clock)))
    for n in waves.to_relabel(e):
        writes[n].append(plan_mig_rollout.unlabel_patch())
        e.unlabelled[n] = float(next(clock))
    for n in waves.to_label(e):
        writes[n].append(plan_mig_rollout.label_patch(CFG, DIGEST))
        e.labelled[n] = float(next(clock))
    if cordons:
        for n in e.nodes:
            writes[n].append("uncordon")
    return writes


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["n0", "n1", "n2", "n3"]),
        st.tuples(st.sampled_from([CONFIGURE, RECONFIGURE, WAIT]), st.booleans()),
        min_size=1,
    ),
    st.booleans(),
)
def test_property_each_node_gets_its_label_once_after_a_removal_and_two_writes_when_nothing_is_to_evict(nodes, cordons):
    actions = {n: a for n, (a, _idle) in nodes.items()}
    idle = {n: i for n, (_a, i) in nodes.items()}
    writes = wave_writes(actions, idle, cordons)
    label, unlabel = plan_mig_rollout.label_patch(CFG, DIGEST), plan_mig_rollout.unlabel_patch()
    for n, action in actions.items():
        labels = [i for i, w in enumerate(writes[n]) if w == label]
        removals = [i for i, w in enumerate(writes[n]) if w == unlabel]
        if action == WAIT:  # already switching: only the cordon and the uncordon, nothing labelled
            assert labels == [] and removals == []
            continue
        assert len(labels) == 1  # the config label is set exactly once
        if action == RECONFIGURE:  # ... after exactly one removal (the MIG manager acts on changes only)
            assert len(removals) == 1 and removals[0] < labels[0]
        else:
            assert removals == []
        if cordons:
            assert writes[n][-1] == "uncordon" and labels[0] < len(writes[n]) - 1  # labelled while cordoned
            # the patch count: 2 for a configure with nothing to evict first, else 3 (empty cordons are cordons)
            assert len(writes[n]) == (2 if action == CONFIGURE and idle[n] else 3), writes[n]
            if not idle[n] and action == CONFIGURE:
                assert labels[0] == 1  # GPU pods to evict first: the label waits for the drain, not in the cordon
