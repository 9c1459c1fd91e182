"""The MIG manager ConfigMap as mig_layout changes it (plan/mig/config_map.py): pure, hand-made documents."""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.gpupool.core.plugins.module_utils.model import names as model_names
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig import config_map

A100 = [{"devices": "all", "mig-enabled": True, "mig-devices": {"3g.20gb": 2}}]
H100 = [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}]
DOC = {"version": "v1", "mig-configs": {"team-x": H100, "gpupool-a100": A100}}


def labelled(name, config=None):
    labels = {} if config is None else {model_names.CONFIG_LABEL: config}
    return {"metadata": {"name": name, "labels": labels}}


def live(doc=None, owned="gpupool-a100", version="41"):
    doc = DOC if doc is None else doc
    return {
        "metadata": {
            "name": "cm",
            "namespace": "gpu-operator",
            "resourceVersion": version,
            "annotations": {model_names.CONFIGS_ANNOTATION: owned},
        },
        "data": {"config.yaml": yaml.safe_dump(doc)},
    }


def test_where_names_the_configmap_as_messages_do():
    assert config_map.where("gpu-operator", "cm") == "ConfigMap gpu-operator/cm"


def test_read_without_a_configmap_is_a_new_document_owning_nothing():
    assert config_map.read(None, "ConfigMap ns/cm") == ({"version": "v1", "mig-configs": {}}, [])


def test_read_gives_the_document_and_the_names_gpupool_wrote():
    doc, owned = config_map.read(live(owned="gpupool-a100, gpupool-old"), "ConfigMap ns/cm")
    assert doc == DOC
    assert owned == ["gpupool-a100", "gpupool-old"]


def test_read_of_a_configmap_without_data_or_annotation():
    doc, owned = config_map.read({"metadata": {"name": "cm"}}, "ConfigMap ns/cm")
    assert doc == {"version": "v1", "mig-configs": {}} and owned == []


def test_read_refuses_a_document_it_cannot_merge_naming_the_configmap():
    broken = {"metadata": {}, "data": {"config.yaml": "a: [unclosed"}}
    with pytest.raises(Problems) as err:
        config_map.read(broken, "ConfigMap gpu-operator/cm")
    assert "ConfigMap gpu-operator/cm" in str(err.value) and "is not YAML" in str(err.value)


@pytest.mark.parametrize(
    "prune,nodes,want",
    [
        (False, [], ([], [])),  # prune off (or a pools limit): nothing goes, nothing to warn about
        (True, [], (["gpupool-old", "gpupool-older"], [])),
        (True, [labelled("n0", "gpupool-old")], (["gpupool-older"], ["gpupool-old"])),
        (
            True,
            [labelled("n0", "gpupool-old"), labelled("n1", "gpupool-older")],
            ([], ["gpupool-old", "gpupool-older"]),
        ),
        (True, [labelled("n0"), labelled("n1", "gpupool-a100")], (["gpupool-old", "gpupool-older"], [])),
    ],
)
def test_prune_choice_removes_unwanted_configs_no_node_uses(prune, nodes, want):
    owned = ["gpupool-a100", "gpupool-old", "gpupool-older"]
    assert config_map.prune_choice(owned, {"gpupool-a100": A100}, nodes, prune) == want


def test_prune_choice_never_touches_configs_gpupool_did_not_write():
    assert config_map.prune_choice([], {"gpupool-a100": A100}, [labelled("n0", "team-x")], True) == ([], [])


def test_kept_warning_says_why_and_until_when():
    text = config_map.kept_warning("gpupool-old")
    assert text.startswith("MIG config gpupool-old is no longer wanted by any pool")
    assert "until they are switched to another config" in text


@pytest.mark.parametrize(
    "live_cm,new_doc,names,want",
    [
        (None, DOC, ["gpupool-a100"], True),  # no ConfigMap yet
        ({}, DOC, ["gpupool-a100"], False),  # same document, same names
        ({}, {"version": "v1", "mig-configs": {"team-x": H100}}, ["gpupool-a100"], True),
        ({}, DOC, ["gpupool-a100", "gpupool-h100"], True),  # a name more in the annotation
    ],
)
def test_needs_write(live_cm, new_doc, names, want):
    assert config_map.needs_write(live_cm, DOC, ["gpupool-a100"], new_doc, names) is want


def test_needs_write_compares_the_names_not_their_order():
    assert not config_map.needs_write({}, DOC, ["b", "a"], DOC, ["a", "b"])


def test_diff_entry_shows_only_configs_that_change():
    new_doc = {"version": "v1", "mig-configs": {"team-x": H100, "gpupool-a100": H100, "gpupool-h100": H100}}
    changes = {"gpupool-a100": "updated", "gpupool-h100": "created", "gpupool-same": "unchanged"}
    entry = config_map.diff_entry("gpu-operator", "cm", DOC, new_doc, changes)
    assert entry == {
        "before": {"mig-configs": {"gpupool-a100": A100}},
        "after": {"mig-configs": {"gpupool-a100": H100, "gpupool-h100": H100}},
        "before_header": "ConfigMap gpu-operator/cm: mig-configs written by gpupool",
        "after_header": "ConfigMap gpu-operator/cm: mig-configs written by gpupool",
    }


def test_create_body_is_a_configmap_gpupool_manages_with_its_owners_names():
    names = config_map.Records("team-a", ("gpupool-h100", "gpupool-a100"), (), {})
    body = config_map.create_body("gpu-operator", "cm", DOC, names)
    assert body["apiVersion"] == "v1" and body["kind"] == "ConfigMap"
    assert body["metadata"] == {
        "name": "cm",
        "namespace": "gpu-operator",
        "labels": model_names.MANAGED_BY,
        "annotations": {"mig-configs.gpupool.io/team-a": "gpupool-a100,gpupool-h100"},  # no empty shared record
    }
    assert list(body["data"]) == ["config.yaml"]
    assert yaml.safe_load(body["data"]["config.yaml"]) == DOC
    body["metadata"]["labels"]["x"] = "y"  # a copy: the model's constant stays as it is
    assert "x" not in model_names.MANAGED_BY


def test_update_patch_carries_the_resource_version_as_read_and_only_this_owners_records():
    names = config_map.Records("team-a", ("gpupool-a100",), (), {"team-b": ("gpupool-b",)})
    patch = config_map.update_patch(live(version="77"), DOC, names)
    assert patch["metadata"] == {
        "resourceVersion": "77",
        # the shared record of before owners emptied: removed (merge patch null); team-b's record is not sent
        "annotations": {"mig-configs.gpupool.io/team-a": "gpupool-a100", model_names.CONFIGS_ANNOTATION: None},
    }
    assert yaml.safe_load(patch["data"]["config.yaml"]) == DOC


def test_bodies_refuse_a_document_the_mig_manager_could_not_read():
    bad = {"version": "v2", "mig-configs": {}}
    none = config_map.Records("team-a", (), (), {})
    for build in (
        lambda: config_map.create_body("ns", "cm", bad, none),
        lambda: config_map.update_patch(live(), bad, none),
    ):
        with pytest.raises(Problems) as err:
            build()
        assert "prevent the MIG layout rollout" in str(err.value)


def test_messages_say_what_to_do():
    message, hint = config_map.kept_changing("gpu-operator", "cm", 5)
    assert message == "ConfigMap gpu-operator/cm kept changing while gpupool merged its MIG configs (5 attempts)"
    assert hint == "rerun; if it persists, find the tool rewriting it"
    message, hint = config_map.namespace_missing("gpu-operator", "cm")
    assert message == "namespace gpu-operator does not exist, so the MIG manager ConfigMap cm cannot be created"
    assert "install the GPU Operator" in hint and "gpupool_cluster.mig_manager.namespace" in hint
