"""The MIG rollout plan as text for --diff: waves, each node's layout now and after, evictions (pure)."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.plan.mig import rollout as plan_mig_rollout
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig import rollout_text as plan_mig_rollout_text
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.rollout_data import Wave

OLD = [{"devices": "all", "mig-enabled": True, "mig-devices": {"3g.20gb": 1, "2g.10gb": 2}}]
NEW = [{"devices": [0], "mig-enabled": True, "mig-devices": {"1g.5gb": 7}}, {"devices": [1], "mig-enabled": False}]


def node(name, config=None, state=None, digest=None):
    labels = {}
    if config:
        labels["nvidia.com/mig.config"] = config
    if state:
        labels["nvidia.com/mig.config.state"] = state
    annotations = {"gpupool.io/mig-config-digest": digest} if digest else {}
    return {
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": {},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def rollout():
    nodes = [
        node("a100-0", "gpupool-a100", "success", "old"),
        node("a100-1"),
        node("a100-2", "all-disabled", "success"),
    ]
    plan = plan_mig_rollout.plan_pool("a100", "gpupool-a100", "new", nodes, 2, config_changed=True)
    waves = []
    for index, wave in enumerate(plan.waves):
        actions = {r.name: r.action for r in plan.nodes if r.name in wave}
        waves.append(
            Wave(
                pool="a100",
                index=index,
                nodes=wave,
                actions=actions,
                result="planned",
                evict=[{"namespace": "ml", "name": "train-0"}] if "a100-0" in wave else [],
            )
        )
    return plan, waves


def test_each_wave_with_its_nodes_layouts_and_evictions():
    plan, waves = rollout()
    text = plan_mig_rollout_text.rollout_text(
        [plan], waves, {"gpupool-a100": NEW}, {"gpupool-a100": OLD}, cordon=True, drain=True, max_unavailable=2
    )
    assert text.splitlines() == [
        "MIG rollout of pool a100 to gpupool-a100 (GPU 0: 1g.5gb x7; GPU 1: MIG off), 2 wave(s) of at most 2 node(s):",
        "  wave 1/2: cordon, evict the GPU pods, set nvidia.com/mig.config, wait for the MIG manager, uncordon",
        "    a100-0: reconfigure; now gpupool-a100 (all GPUs: 3g.20gb x1 + 2g.10gb x2)",
        "    a100-1: configure; now not set",
        "    evict: ml/train-0",
        "  wave 2/2: cordon, evict the GPU pods, set nvidia.com/mig.config, wait for the MIG manager, uncordon",
        "    a100-2: configure; now all-disabled (MIG off)",
        "    evict: no GPU pod",
    ]


def test_without_drain_or_cordon_it_says_what_that_risks_and_nothing_to_do_is_empty():
    plan, waves = rollout()
    text = plan_mig_rollout_text.rollout_text(
        [plan], waves, {"gpupool-a100": NEW}, {}, cordon=True, drain=False, max_unavailable=2
    )
    assert "    a100-0: reconfigure; now gpupool-a100 (not in the ConfigMap)" in text.splitlines()
    assert "evict" not in text.replace("are not evicted", "")
    assert text.splitlines()[-1].startswith("  (drain: false - GPU pods already on a node are not evicted")
    text = plan_mig_rollout_text.rollout_text([plan], waves, {}, {}, cordon=False, drain=False, max_unavailable=2)
    assert "to gpupool-a100 (not in the ConfigMap)" in text and "set nvidia.com/mig.config, wait" in text
    assert text.splitlines()[-1] == "  (cordon: false - pods may land on a node while its MIG layout changes)"
    assert plan_mig_rollout_text.rollout_text([plan], [], {}, {}, True, True, 1) == ""


def test_entries_in_words():
    assert plan_mig_rollout_text.describe_entries(OLD) == "all GPUs: 3g.20gb x1 + 2g.10gb x2"
    assert plan_mig_rollout_text.describe_entries([{"devices": [0, 1], "mig-enabled": True, "mig-devices": {}}]) == (
        "GPU 0, 1: no instance"
    )
    assert plan_mig_rollout_text.describe_entries(None) == "content unknown"


def test_cordon_and_drain_per_pool_follow_each_pools_drain_policy():
    """mig_layout passes its per-pool answers (each pool has its own drain policy): a pool that does not drain
    gets no eviction step and the warning that says what that risks."""
    plan, waves = rollout()
    asked = []

    def drains(pool):
        asked.append(pool)
        return False

    text = plan_mig_rollout_text.rollout_text(
        [plan], waves, {"gpupool-a100": NEW}, {"gpupool-a100": OLD}, lambda pool: True, drains, max_unavailable=2
    )
    lines = text.splitlines()
    assert lines[1] == "  wave 1/2: cordon, set nvidia.com/mig.config, wait for the MIG manager, uncordon"
    assert not [line for line in lines if line.strip().startswith("evict:")]
    assert lines[-1].startswith("  (drain: false - GPU pods already on a node are not evicted")
    assert asked == ["a100"]
