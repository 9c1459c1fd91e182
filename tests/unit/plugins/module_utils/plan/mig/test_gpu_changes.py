"""Which GPUs of a node a MIG change touches and whether it can go GPU by GPU (plan/mig/gpu_changes.py, issue #35):
hand-made layouts, the MIG catalog's models, and properties over generated layouts."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpupool.core.plugins.module_utils.mig.catalog import CATALOG
from ansible_collections.gpupool.core.plugins.module_utils.model.names import (
    CONFIG_LABEL,
    DIGEST_ANNOTATION,
    STATE_LABEL,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.gpu_changes import (
    UNKNOWN,
    applied_layouts,
    describe_layout,
    gpu_changes,
    layouts_of_entries,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.rollout import config_digest

A100, H100 = CATALOG["A100-40GB"], CATALOG["H100-80GB"]
SEVEN = {"1g.10gb": 7}
TWO = {"3g.40gb": 2}


def eight(layout):
    return dict.fromkeys(range(8), layout)


def test_the_catalog_says_which_models_need_a_reset_for_a_mode_toggle():
    # reference nvidia-dra-mig-imex.md §1.8 (driver PR #1018): Ampere needs a GPU reset, Hopper and later do not
    assert CATALOG["A100-40GB"].mig_mode_needs_reset and CATALOG["A30"].mig_mode_needs_reset
    assert not any(CATALOG[k].mig_mode_needs_reset for k in ("H100-80GB", "H200-141GB", "B200", "GB200"))
    assert not CATALOG["T4"].mig_mode_needs_reset  # no MIG at all


def test_no_change_is_an_empty_change():
    out = gpu_changes(eight(SEVEN), eight(dict(SEVEN)), H100)
    assert out.changed == () and out.indices == () and not out.per_gpu and out.node_wide is None


def test_zero_counts_are_no_change():
    assert gpu_changes({0: {"1g.10gb": 7, "3g.40gb": 0}}, {0: SEVEN}, A100).changed == ()


def test_one_gpu_repartitioned_in_mig_mode_is_per_gpu_even_on_ampere():
    new = eight(SEVEN)
    new[3] = TWO
    out = gpu_changes(eight(SEVEN), new, A100)
    assert out.indices == (3,) and out.per_gpu and out.model == "A100-40GB"
    assert not out.changed[0].mode_toggles and not out.changed[0].needs_reset
    assert out.changed[0].describe() == "GPU 3: 1g.10gb x7 -> 3g.40gb x2"


def test_a_mode_toggle_on_hopper_is_per_gpu():
    new = eight(SEVEN)
    new[5] = None
    out = gpu_changes(eight(SEVEN), new, H100)
    assert out.indices == (5,) and out.per_gpu
    assert out.changed[0].mode_toggles and not out.changed[0].needs_reset


def test_a_mode_toggle_on_ampere_is_node_wide_with_the_reason():
    old = eight(SEVEN)
    new = eight(SEVEN)
    new[3] = None
    out = gpu_changes(old, new, A100)
    assert not out.per_gpu and out.changed[0].needs_reset
    assert out.node_wide == (
        "GPU 3's MIG mode changes, which needs a GPU reset on A100-40GB: the node's other GPUs must be quiet"
    )
    assert out.changed[0].describe() == "GPU 3: 1g.10gb x7 -> MIG off (MIG mode change, needs a GPU reset)"


def test_two_toggles_are_named_together():
    out = gpu_changes({0: None, 1: {}, 2: {}}, {0: {}, 1: None, 2: {}}, A100)
    assert out.indices == (0, 1)
    assert out.node_wide.startswith("the MIG mode of GPUs 0, 1 changes")


def test_an_unknown_model_is_taken_to_need_a_reset():
    out = gpu_changes({0: {}}, {0: None}, None)
    assert out.model is None and "on an unknown GPU model" in out.node_wide


def test_an_unknown_layout_may_toggle_the_mode():
    out = gpu_changes({0: UNKNOWN, 1: SEVEN}, {0: SEVEN, 1: SEVEN}, A100)
    assert out.indices == (0,) and out.changed[0].mode_toggles
    assert "may change (its layout now or after is not known)" in out.node_wide
    # on Hopper the same is per GPU: a toggle there needs no reset
    assert gpu_changes({0: UNKNOWN}, {0: SEVEN}, H100).per_gpu


def test_an_index_on_one_side_only_counts_as_unknown_on_the_other():
    out = gpu_changes({0: SEVEN}, {0: SEVEN, 1: SEVEN}, H100)
    assert out.indices == (1,) and out.changed[0].before == UNKNOWN


def test_describe_layout():
    assert describe_layout(None) == "MIG off"
    assert describe_layout({}) == "MIG on, no instance"
    assert describe_layout({"3g.40gb": 1, "1g.10gb": 2}) == "1g.10gb x2 + 3g.40gb x1"
    assert describe_layout(UNKNOWN) == "not known"


@pytest.mark.parametrize(
    "entries, count, pci, expected",
    [
        ([{"devices": "all", "mig-enabled": False}], 2, None, {0: None, 1: None}),
        ([{"devices": "all", "mig-enabled": True, "mig-devices": {}}], 1, None, {0: {}}),
        (
            [
                {"devices": [0], "mig-enabled": True, "mig-devices": SEVEN},
                {"devices": [1], "mig-enabled": False},
            ],
            3,
            None,
            {0: SEVEN, 1: None, 2: UNKNOWN},
        ),
        (None, 2, None, {0: UNKNOWN, 1: UNKNOWN}),
        ([{"devices": "all", "mig-enabled": False, "device-filter": "0x20B010DE"}], 1, None, {0: UNKNOWN}),
        ([{"devices": "all", "mig-enabled": False, "device-filter": ["0x20b010de"]}], 1, "0x20B010DE", {0: None}),
        (
            [
                {"devices": "all", "mig-enabled": False, "device-filter": "0x233010DE"},
                {"devices": "all", "mig-enabled": True, "mig-devices": TWO, "device-filter": "0x20B010DE"},
            ],
            1,
            "0x20B010DE",
            {0: TWO},
        ),
        (
            [{"devices": [0], "mig-enabled": False}, {"devices": [0], "mig-enabled": True, "mig-devices": {}}],
            1,
            None,
            {0: UNKNOWN},
        ),
        ([{"devices": [0, 9], "mig-enabled": False}], 1, None, {0: None}),
    ],
)
def test_layouts_of_entries(entries, count, pci, expected):
    assert layouts_of_entries(entries, count, pci) == expected


PROFILES = st.sampled_from(["1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb"])
LAYOUT = st.one_of(st.none(), st.dictionaries(PROFILES, st.integers(0, 3), max_size=3), st.just(UNKNOWN))
NODE = st.dictionaries(st.integers(0, 7), LAYOUT, max_size=8)
MODEL = st.sampled_from([A100, H100, CATALOG["A30"], CATALOG["GB200"], None])


def _mig(layout):
    return layout is not None and layout != UNKNOWN


@settings(max_examples=300, deadline=None)
@given(NODE, NODE, MODEL)
def test_changes_are_exactly_the_gpus_that_differ(old, new, model):
    out = gpu_changes(old, new, model)
    for index in set(old) | set(new):
        a, b = old.get(index, UNKNOWN), new.get(index, UNKNOWN)
        same = (
            UNKNOWN not in (a, b)
            and {p: c for p, c in (a or {}).items() if c} == {p: c for p, c in (b or {}).items() if c}
            and (a is None) == (b is None)
        )
        assert (index in out.indices) == (not same)
    assert list(out.indices) == sorted(out.indices)


@settings(max_examples=300, deadline=None)
@given(NODE, NODE, MODEL)
def test_a_toggle_needing_a_reset_is_always_node_wide(old, new, model):
    out = gpu_changes(old, new, model)
    needs = model is None or model.mig_mode_needs_reset
    toggles = [c for c in out.changed if UNKNOWN in (c.before, c.after) or _mig(c.before) != _mig(c.after)]
    if toggles and needs:
        assert not out.per_gpu and out.node_wide
        for c in toggles:
            assert str(c.index) in out.node_wide
    else:
        assert out.node_wide is None
        assert out.per_gpu == bool(out.changed)


@settings(max_examples=200, deadline=None)
@given(NODE, MODEL)
def test_no_change_is_an_empty_plan(layouts, model):
    known = {i: v for i, v in layouts.items() if v != UNKNOWN}
    out = gpu_changes(known, dict(known), model)
    assert out.changed == () and out.node_wide is None and not out.per_gpu


def labelled(config, state="success", digest=None):
    labels = {CONFIG_LABEL: config} if config else {}
    if state:
        labels[STATE_LABEL] = state
    annotations = {DIGEST_ANNOTATION: digest} if digest else {}
    return {"metadata": {"name": "n", "labels": labels, "annotations": annotations}}


ENTRIES = [{"devices": [0], "mig-enabled": True, "mig-devices": SEVEN}, {"devices": [1], "mig-enabled": False}]


def test_the_applied_layout_is_the_labelled_configs_when_the_manager_said_success():
    configs = {"gpupool-a100": ENTRIES}
    assert applied_layouts(labelled("gpupool-a100"), configs, 2) == {0: SEVEN, 1: None}
    assert applied_layouts(labelled("gpupool-a100", digest=config_digest(ENTRIES)), configs, 2) == {0: SEVEN, 1: None}
    assert applied_layouts(labelled("all-disabled"), {}, 2) == {0: None, 1: None}


@pytest.mark.parametrize(
    "node",
    [
        labelled(None),  # never configured
        labelled("gpupool-a100", state="pending"),  # the manager is still at it
        labelled("gpupool-a100", state="failed"),
        labelled("gpupool-a100", digest="0123456789abcdef"),  # the config changed since the node was switched
        labelled("someone-elses"),  # not in the ConfigMap
    ],
)
def test_otherwise_the_applied_layout_is_not_known(node):
    assert applied_layouts(node, {"gpupool-a100": ENTRIES}, 2) == {0: UNKNOWN, 1: UNKNOWN}
    # ... and on Ampere that makes the change node-wide
    assert not gpu_changes(applied_layouts(node, {"gpupool-a100": ENTRIES}, 2), {0: SEVEN, 1: None}, A100).per_gpu
