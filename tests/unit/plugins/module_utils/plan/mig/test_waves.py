"""Inside one wave of a MIG rollout (plan/mig/waves.py): pure, hand-made plans, entries and nodes."""

from __future__ import annotations

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.model import names as model_names
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig import rollout as plan_mig_rollout
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig import waves

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
    return {"name": name, "action": action, "before": {"config": config, "state": state, "digest": digest}}


def pool_plan(rows, wave_list):
    return {"pool": "a100", "config_name": CFG, "digest": DIGEST, "nodes": rows, "waves": wave_list}


def entry(index, nodes, actions, **more):
    return dict({"pool": "a100", "index": index, "nodes": nodes, "actions": actions, "result": "not started"}, **more)


def test_subject_and_status_lines():
    plan = pool_plan([], [["n0"], ["n1", "n2"]])
    assert waves.subject(plan, entry(1, ["n1", "n2"], {})) == "MIG wave 2/2 of a100"
    assert waves.start_status(["n1", "n2"], True) == "n1, n2 cordon, drain, then MIG"
    assert waves.start_status(["n1"], False) == "n1 MIG"
    assert waves.done_status(["n1", "n2"]) == "done: n1, n2 success"
    assert waves.stopped_status(["n1", "n2"], {"n1": "failed", "n2": "timeout"}) == "stopped: n1 failed, n2 timeout"


@pytest.mark.parametrize(
    "action,drains,together",
    [
        (CONFIGURE, False, True),  # nothing in between: cordon and label in one write
        (CONFIGURE, True, False),  # the drain comes between cordon and label
        (RECONFIGURE, False, False),  # the label is removed first, then set again
        (WAIT, False, False),  # already switching: nothing to label
        (WAIT, True, False),
    ],
)
def test_cordon_label_goes_with_the_cordon_only_when_nothing_comes_between(action, drains, together):
    label = waves.cordon_label(action, drains, CFG, DIGEST)
    assert label == (plan_mig_rollout.label_patch(CFG, DIGEST) if together else None)


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


def test_relabel_then_label_what_the_cordon_did_not():
    e = entry(0, ["n0", "n1", "n2", "n3"], {"n0": CONFIGURE, "n1": RECONFIGURE, "n2": WAIT, "n3": CONFIGURE})
    assert waves.to_relabel(e) == ["n1"]
    assert waves.to_label(e) == ["n0", "n1", "n3"]  # before any cordon (no "labelled" yet)
    e["labelled"] = {"n0": 1.0}
    assert waves.to_label(e) == ["n1", "n3"]


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
