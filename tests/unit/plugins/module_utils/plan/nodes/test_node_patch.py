"""plan.nodes.node_patch: labels, taints and their records in ONE merge patch per node, nothing for a node
already right, nobody else's labels or taints touched."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.model.names import LABELS_ANNOTATION, TAINTS_ANNOTATION
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.pool_nodes import gpupool_label_keys, node_patch

GPU = {"key": "node-role.kubernetes.io/gpu", "value": "true", "effect": "NoSchedule"}
FOREIGN = {"key": "example.org/maintenance", "effect": "PreferNoSchedule"}


def node(labels=None, taints=None, annotations=None, managed=None, rv="42"):
    return {
        "metadata": {
            "name": "n1",
            "resourceVersion": rv,
            "labels": dict(labels or {}),
            "annotations": dict(annotations or {}),
            "managedFields": list(managed or []),
        },
        "spec": {"taints": list(taints or [])},
    }


def test_a_new_node_gets_labels_taints_and_their_records_in_one_patch():
    n = node({"kubernetes.io/hostname": "n1"}, [FOREIGN])
    patch, reasons = node_patch(n, {"gpupool.io/pool": "a", "team": "ml"}, [GPU])
    assert patch == {
        "metadata": {
            "resourceVersion": "42",
            "labels": {"gpupool.io/pool": "a", "team": "ml"},
            "annotations": {
                LABELS_ANNOTATION: "gpupool.io/pool,team",
                TAINTS_ANNOTATION: "node-role.kubernetes.io/gpu:NoSchedule",
            },
        },
        "spec": {"taints": [FOREIGN, GPU]},
    }
    assert "metadata.labels.team differs" in reasons and "spec.taints differs" in reasons


def test_a_converged_node_needs_no_request():
    n = node(
        {"gpupool.io/pool": "a", "team": "ml"},
        [FOREIGN, GPU],
        {LABELS_ANNOTATION: "gpupool.io/pool,team", TAINTS_ANNOTATION: "node-role.kubernetes.io/gpu:NoSchedule"},
    )
    assert node_patch(n, {"gpupool.io/pool": "a", "team": "ml"}, [GPU]) == (None, [])


def test_only_recorded_labels_are_removed_and_others_stay():
    n = node(
        {"gpupool.io/pool": "a", "team": "ml", "rack": "r1"},
        [GPU],
        {LABELS_ANNOTATION: "gpupool.io/pool,team", TAINTS_ANNOTATION: "node-role.kubernetes.io/gpu:NoSchedule"},
    )
    patch, reasons = node_patch(n, {"gpupool.io/pool": "a"}, [GPU])
    assert patch == {
        "metadata": {
            "resourceVersion": "42",
            "labels": {"team": None},
            "annotations": {LABELS_ANNOTATION: "gpupool.io/pool"},
        }
    }
    assert reasons[0] == "metadata.labels.team no longer set"


def test_labels_owned_by_an_earlier_server_side_apply_still_count_as_ours():
    managed = [
        {
            "manager": "gpupool",
            "operation": "Apply",
            "fieldsV1": {"f:metadata": {"f:labels": {"f:old": {}, "f:gpupool.io/pool": {}}}},
        },
        {"manager": "kubectl-label", "operation": "Update", "fieldsV1": {"f:metadata": {"f:labels": {"f:rack": {}}}}},
    ]
    n = node({"gpupool.io/pool": "a", "old": "x", "rack": "r1"}, managed=managed)
    assert gpupool_label_keys(n) == {"old", "gpupool.io/pool"}
    patch, _unused = node_patch(n, {"gpupool.io/pool": "a"}, None)
    assert patch["metadata"]["labels"] == {"old": None}
    assert "spec" not in patch and TAINTS_ANNOTATION not in patch["metadata"]["annotations"]


def test_a_released_node_loses_everything_gpupool_set_and_nothing_else():
    n = node(
        {"gpupool.io/pool": "a", "rack": "r1"},
        [FOREIGN, GPU],
        {LABELS_ANNOTATION: "gpupool.io/pool", TAINTS_ANNOTATION: "node-role.kubernetes.io/gpu:NoSchedule"},
    )
    patch, _unused = node_patch(n, {}, [])
    assert patch == {
        "metadata": {
            "resourceVersion": "42",
            "labels": {"gpupool.io/pool": None},
            "annotations": {LABELS_ANNOTATION: None, TAINTS_ANNOTATION: None},
        },
        "spec": {"taints": [FOREIGN]},
    }


def test_another_field_manager_keeps_its_own_record():
    n = node(
        {"gpupool.io/pool": "a", "site": "cern"},
        [GPU],
        {LABELS_ANNOTATION: "gpupool.io/pool,site", TAINTS_ANNOTATION: "node-role.kubernetes.io/gpu:NoSchedule"},
    )
    patch, _unused = node_patch(n, {"nvidia.com/mig.config": "all-1g.5gb"}, None, field_manager="gpupool-mig")
    assert patch["metadata"]["labels"] == {"nvidia.com/mig.config": "all-1g.5gb"}  # node_pool's labels stay
    assert patch["metadata"]["annotations"] == {LABELS_ANNOTATION + ".gpupool-mig": "nvidia.com/mig.config"}
