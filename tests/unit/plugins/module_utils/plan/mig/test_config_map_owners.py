"""Whose MIG configs (plan/mig/config_map.py): each owner records its own names in the ConfigMap, prunes only
those, adopts the shared record of before owners, and is refused a name another owner wrote otherwise."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpupool.core.plugins.module_utils.model import names as model_names
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig import config_map

A100 = [{"devices": "all", "mig-enabled": True, "mig-devices": {"3g.20gb": 2}}]
H100 = [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}]
WHERE = "ConfigMap gpu-operator/cm"
LEGACY = model_names.CONFIGS_ANNOTATION


def doc(**configs):
    return {"version": "v1", "mig-configs": dict(configs)}


def node(config=None):
    return {"metadata": {"name": "n", "labels": {} if config is None else {model_names.CONFIG_LABEL: config}}}


def live(annotations):
    return {"metadata": {"name": "cm", "resourceVersion": "1", "annotations": annotations}}


def rec(owner, mine=(), legacy=(), **others):
    return config_map.Records(
        owner, tuple(mine), tuple(legacy), {o.replace("_", "-"): tuple(n) for o, n in others.items()}
    )


def test_owner_annotation_is_a_valid_key_for_the_longest_owner():
    owner = "a" * 63  # a DNS label at its longest
    prefix, name = model_names.owner_configs_annotation(owner).split("/")
    assert prefix == "mig-configs.gpupool.io" and name == owner and len(name) <= 63


def test_records_reads_this_owners_the_shared_and_the_others_records():
    got = config_map.records(
        live(
            {
                "mig-configs.gpupool.io/team-a": "a1, a2",
                "mig-configs.gpupool.io/team-b": "b1",
                "mig-configs.gpupool.io/team-c": "",
                LEGACY: "old,a1",
                "other.io/x": "y",
            }
        ),
        "team-a",
    )
    assert got == rec("team-a", ["a1", "a2"], ["old", "a1"], team_b=["b1"])
    assert config_map.records(None, "team-a") == rec("team-a")


def test_one_inventory_after_the_upgrade_adopts_its_names_and_prunes_the_rest_as_before():
    before = rec("team-a", legacy=["gpupool-a100", "gpupool-old"])
    merged = config_map.merge(
        doc(**{"gpupool-a100": A100, "gpupool-old": H100}), {"gpupool-a100": A100}, before, [], True
    )
    assert merged.doc["mig-configs"] == {
        "gpupool-a100": A100,
        "all-disabled": [{"devices": "all", "mig-enabled": False}],
    }
    assert merged.changes == {"gpupool-a100": "adopted", "gpupool-old": "deleted"}
    assert merged.records == rec("team-a", ["gpupool-a100"])
    assert merged.records.annotations() == {"mig-configs.gpupool.io/team-a": "gpupool-a100", LEGACY: None}
    assert merged.warnings == [
        "adopted 1 MIG config(s) recorded before owners (annotation gpupool.io/mig-configs);\n"
        "annotation mig-configs.gpupool.io/team-a records them now:\n"
        "  gpupool-a100"
    ]
    again = config_map.merge(merged.doc, {"gpupool-a100": A100}, merged.records, [], True)
    assert again.changes == {"gpupool-a100": "unchanged"} and again.warnings == []
    assert not config_map.needs_write({}, merged.doc, merged.records.written(), again.doc, again.records.written())


def test_warnings_keep_their_lines_within_200_characters_for_the_longest_names():
    owner, names = "o" * 63, ["n%02d" % i + "x" * 60 for i in range(7)]
    text = config_map.adopted_warning(names, owner) + "\n" + config_map.kept_warning(names[0])
    assert all(len(line) <= 200 for line in text.splitlines())
    assert all(name in text for name in names)


def test_a_shared_name_a_node_still_uses_is_kept_in_the_shared_record_with_a_warning():
    before = rec("team-a", legacy=["gpupool-b"])
    merged = config_map.merge(doc(**{"gpupool-b": H100}), {}, before, [node("gpupool-b")], True)
    assert "gpupool-b" in merged.doc["mig-configs"] and merged.changes == {}
    assert merged.records.legacy == ("gpupool-b",)
    assert merged.warnings == [config_map.kept_warning("gpupool-b")]


def test_a_shared_name_another_owner_recorded_is_left_to_it():
    before = rec("team-a", legacy=["gpupool-b"], team_b=["gpupool-b"])
    merged = config_map.merge(doc(**{"gpupool-b": H100}), {}, before, [], True)
    assert merged.doc["mig-configs"]["gpupool-b"] == H100 and merged.changes == {}
    assert merged.records.legacy == () and merged.records.others == {"team-b": ("gpupool-b",)}


def test_a_name_both_owners_recorded_is_only_let_go_of_by_the_one_that_no_longer_wants_it():
    before = rec("team-a", ["shared", "mine-old"], team_b=["shared"])
    merged = config_map.merge(doc(shared=A100, **{"mine-old": H100}), {}, before, [], True)
    assert merged.doc["mig-configs"]["shared"] == A100 and "mine-old" not in merged.doc["mig-configs"]
    assert merged.changes == {"mine-old": "deleted"}
    assert merged.records.mine == ()
    assert merged.records.annotations()["mig-configs.gpupool.io/team-a"] is None  # the record goes with a null


def test_the_same_name_with_the_same_entries_is_recorded_by_both():
    merged = config_map.merge(doc(shared=A100), {"shared": A100}, rec("team-a", team_b=["shared"]), [], True)
    assert merged.changes == {"shared": "adopted"} and merged.records.mine == ("shared",)


def test_the_same_name_with_other_entries_is_refused_naming_both_owners_and_the_fix():
    before = rec("team-a", team_b=["gpupool-gpu"])
    path = "gpupool_cluster.pools[0] (gpu).mig.config_name"
    with pytest.raises(Problems) as err:
        config_map.merge(
            doc(**{"gpupool-gpu": H100}), {"gpupool-gpu": A100}, before, [], True, WHERE, {"gpupool-gpu": path}
        )
    text = str(err.value)
    assert err.value.problems[0][0] == path
    assert (
        "MIG config 'gpupool-gpu' in ConfigMap gpu-operator/cm was written by the gpupool inventory with owner 'team-b'"
        in text
    )
    assert "inventory (owner 'team-a') wants, so nothing was written" in text
    assert "set this pool's mig.config_name to another" in text and "set gpupool_cluster.owner: team-b" in text
    assert all(len(line) <= 200 for line in text.splitlines())


def test_prune_off_removes_nothing_and_keeps_the_shared_record():
    before = rec("team-a", ["mine-old"], ["old"])
    merged = config_map.merge(doc(old=H100, **{"mine-old": H100}), {}, before, [], False)
    assert merged.changes == {} and merged.records == before


# ---- properties -----------------------------------------------------------------------------------------------

OWNERS = ["team-a", "team-b", "team-c"]
NAMES = st.sampled_from(["c%d" % i for i in range(8)])
ENTRIES = [A100, H100]


@st.composite
def cluster_state(draw):
    """A ConfigMap's document and records, the nodes' labels, and each owner's desired names. One entry per name
    in `contents`, so owners that want one name want it alike (a clash is refused: its own test)."""
    contents = {n: draw(st.sampled_from(ENTRIES)) for n in draw(st.sets(NAMES))}
    present = draw(st.sets(NAMES))
    configs = {n: contents.get(n, H100) for n in present}
    recorded = {o: draw(st.sets(NAMES)) for o in OWNERS}
    legacy = draw(st.sets(NAMES))
    annotations = {model_names.owner_configs_annotation(o): ",".join(sorted(n)) for o, n in recorded.items()}
    annotations[LEGACY] = ",".join(sorted(legacy))
    wants = st.sets(st.sampled_from(sorted(contents))) if contents else st.just(set())
    desired = {o: {n: contents[n] for n in draw(wants)} for o in OWNERS}
    nodes = [node(n) for n in draw(st.sets(NAMES))]
    for owner in OWNERS:  # a name recorded with other entries than an owner wants: refused, not this property
        for name in list(desired[owner]):
            if name in configs and configs[name] != desired[owner][name]:
                del desired[owner][name]
    return doc(**configs), annotations, desired, nodes


def apply(state_doc, annotations, owner, merged):
    """What the API server holds after the owner's merge patch (its annotations; null removes)."""
    out = dict(annotations)
    for key, value in config_map.update_patch({"metadata": {"resourceVersion": "1"}}, merged.doc, merged.records)[
        "metadata"
    ]["annotations"].items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return merged.doc, out


@settings(max_examples=300, deadline=None)
@given(cluster_state(), st.sampled_from(OWNERS), st.booleans())
def test_an_owners_prune_never_removes_or_changes_a_name_another_owner_recorded(state, owner, prune):
    document, annotations, desired, nodes = state
    before = config_map.records(live(annotations), owner)
    merged = config_map.merge(document, desired[owner], before, nodes, prune, WHERE)
    for other, names in before.others.items():
        for name in names:
            if name in document["mig-configs"]:
                assert merged.doc["mig-configs"][name] == document["mig-configs"][name], (other, name)
    _doc, after = apply(document, annotations, owner, merged)
    for key, value in annotations.items():  # another owner's record is never written
        if key.startswith(model_names.OWNER_CONFIGS_PREFIX) and key != model_names.owner_configs_annotation(owner):
            assert after.get(key) == value or (not value and key not in after)
    for name in set(desired[owner]):
        assert merged.doc["mig-configs"][name] == desired[owner][name]
        assert name in merged.records.mine
    for name in document["mig-configs"]:  # whatever gpupool never recorded is left as it is
        if name not in set(before.mine) | set(before.legacy) | set(desired[owner]):
            assert merged.doc["mig-configs"][name] == document["mig-configs"][name]


@settings(max_examples=200, deadline=None)
@given(cluster_state(), st.permutations(OWNERS))
def test_owners_taking_turns_keep_all_they_want_and_then_change_nothing(state, order):
    document, annotations, desired, nodes = state
    for _round in range(2):
        for owner in order:
            merged = config_map.merge(
                document, desired[owner], config_map.records(live(annotations), owner), nodes, True
            )
            document, annotations = apply(document, annotations, owner, merged)
    wanted = {n for o in OWNERS for n in desired[o]}
    assert wanted <= set(document["mig-configs"])
    for owner in order:  # the round after: nothing to write for anyone
        before = config_map.records(live(annotations), owner)
        merged = config_map.merge(document, desired[owner], before, nodes, True)
        assert not config_map.needs_write({}, document, before.written(), merged.doc, merged.records.written())
        assert merged.warnings == [] or all("nodes are still labelled" in w for w in merged.warnings)
