"""Two gpupool_cluster entries (two owners) with static MIG pools on one Kubernetes cluster share the MIG manager's
ConfigMap: each records its configs in its own annotation (mig-configs.gpupool.io/<owner>), neither prunes the
other's, the run after changes nothing, and one owner's config name wanted with other entries by the other is refused
before any write. Through ansible-playbook against the sandbox's real kube-apiserver; writes from its audit log.
"""

from __future__ import annotations

import copy

import pytest

from tests.integration import k8s_helpers as h

pytestmark = [pytest.mark.controlplane, pytest.mark.sandbox]
FLAVOR = "g4.p2.40g"  # 2 x A100-40GB
LAYOUT_A = {"3g.20gb": 1, "2g.10gb": 2}
LAYOUT_B = {"7g.40gb": 1}
FAST = {"wait_sleep": 0.2, "relabel_delay": 0.5, "wait_timeout": 60}
RECORD = "mig-configs.gpupool.io/"
LEGACY = "gpupool.io/mig-configs"  # the one shared record of gpupool before owners


def inventory(sandbox, owner, pool, layout, config_name=None):
    mig = {"mode": "static", "layout": copy.deepcopy(layout)}
    if config_name:
        mig["config_name"] = config_name
    return {
        "name": owner,
        "kubeconfig": str(sandbox.kubeconfig),
        "magnum": {"cloud": "unused", "cluster": "unused"},
        "mig_manager": {"config_map": sandbox.mig_config_map, "namespace": sandbox.mig_namespace},
        "pools": [
            {
                "name": pool,
                "nodegroup": {"name": pool, "flavor": FLAVOR, "node_count": 1},
                "gpu": {"model": "A100-40GB", "per_node": 2},
                "mig": mig,
            }
        ],
    }


def task():
    return ("gpupool.core.mig_layout", dict({"cluster": "{{ gpupool_cluster }}"}, **FAST))


def config_map(cp, sandbox):
    import yaml

    cm = h.kubectl_json(cp, "-n", sandbox.mig_namespace, "get", "configmap", sandbox.mig_config_map)
    return cm["metadata"].get("annotations") or {}, yaml.safe_load(cm["data"]["config.yaml"])["mig-configs"]


def forget(cp, sandbox, owners, configs):
    """Take this test's configs and records out of the session's shared ConfigMap (read-modify-write)."""
    import yaml
    from kubernetes import client

    api = client.CoreV1Api(cp.api_client())
    cm = api.read_namespaced_config_map(sandbox.mig_config_map, sandbox.mig_namespace)
    doc = yaml.safe_load(cm.data["config.yaml"])
    for name in configs:
        doc["mig-configs"].pop(name, None)
    patch = {
        "metadata": {
            "resourceVersion": cm.metadata.resource_version,
            "annotations": dict({RECORD + o: None for o in owners}, **{LEGACY: None}),
        },
        "data": {"config.yaml": yaml.safe_dump(doc)},
    }
    api.patch_namespaced_config_map(sandbox.mig_config_map, sandbox.mig_namespace, patch)


@pytest.fixture
def two_owners(sandbox, tmp_path):
    nodes = {"ownmig-a": "ownmig-a-0", "ownmig-b": "ownmig-b-0"}
    for pool, name in nodes.items():
        sandbox.nodes.register_node(name, FLAVOR, nodegroup=pool)
    a = h.GpupoolPlay(sandbox.cp, tmp_path / "a", inventory(sandbox, "ownmig-team-a", "ownmig-a", LAYOUT_A))
    b = h.GpupoolPlay(sandbox.cp, tmp_path / "b", inventory(sandbox, "ownmig-team-b", "ownmig-b", LAYOUT_B))
    yield sandbox, a, b, nodes
    for name in nodes.values():
        sandbox.nodes.remove_node(name)
    forget(
        sandbox.cp,
        sandbox,
        ["ownmig-team-a", "ownmig-team-b"],
        ["gpupool-ownmig-a", "gpupool-ownmig-b", "gpupool-ownmig-old"],
    )


def test_two_owners_keep_each_others_mig_configs_and_a_clash_is_refused_before_any_write(two_owners):
    sandbox, a, b, nodes = two_owners
    cp = sandbox.cp
    (first_a,), _res, _window = a.run([task()])
    assert not first_a.get("failed"), first_a.get("msg")
    assert first_a["config_map"]["configs"] == {"gpupool-ownmig-a": "created"}
    (first_b,), _res, _window = b.run([task()])
    assert not first_b.get("failed"), first_b.get("msg")
    assert first_b["config_map"]["configs"] == {"gpupool-ownmig-b": "created"}  # nothing of A's deleted

    records, configs = config_map(cp, sandbox)
    assert records[RECORD + "ownmig-team-a"] == "gpupool-ownmig-a"
    assert records[RECORD + "ownmig-team-b"] == "gpupool-ownmig-b"
    assert configs["gpupool-ownmig-a"] == [{"devices": "all", "mig-enabled": True, "mig-devices": LAYOUT_A}]
    assert configs["gpupool-ownmig-b"] == [{"devices": "all", "mig-enabled": True, "mig-devices": LAYOUT_B}]
    assert sandbox.mig.layout(nodes["ownmig-a"]) == {0: LAYOUT_A, 1: LAYOUT_A}
    assert sandbox.mig.layout(nodes["ownmig-b"]) == {0: LAYOUT_B, 1: LAYOUT_B}

    # The run after, each in turn: nothing to change, nothing written, no warning about the other's config
    # (with one shared record, A pruned B's config, or kept it with a warning on every run once B's node used it).
    for play in (a, b):
        (again,), _res, window = play.run([task()])
        assert not again.get("failed"), again.get("msg")
        assert again["changed"] is False and again["config_map"]["action"] == "unchanged"
        assert h.writes(window) == []
        assert not any("MIG config" in w for w in again.get("warnings", [])), again.get("warnings")
    assert config_map(cp, sandbox) == (records, configs)

    # B now names its pool's config as A's with other entries: refused before any write, naming both owners.
    b.cluster = inventory(sandbox, "ownmig-team-b", "ownmig-b", LAYOUT_B, config_name="gpupool-ownmig-a")
    (refused,), _res, window = b.run([task()])
    assert refused.get("failed") is True
    assert h.writes(window) == []
    text = " ".join(refused["msg"].split())
    assert "gpupool_cluster.pools[0] (ownmig-b).mig.config_name" in text
    assert "MIG config 'gpupool-ownmig-a'" in text and "with owner 'ownmig-team-a'" in text
    assert "inventory (owner 'ownmig-team-b') wants, so nothing was written" in text
    assert "set this pool's mig.config_name to another name" in text
    assert all(len(line) <= 200 for line in refused["msg"].splitlines())
    assert config_map(cp, sandbox) == (records, configs)


def seed_before_owners(cp, sandbox, configs, names):
    """The ConfigMap as gpupool before owners left it: configs and the one shared record of their names."""
    import yaml
    from kubernetes import client

    api = client.CoreV1Api(cp.api_client())
    cm = api.read_namespaced_config_map(sandbox.mig_config_map, sandbox.mig_namespace)
    doc = yaml.safe_load(cm.data["config.yaml"])
    doc["mig-configs"].update(copy.deepcopy(configs))
    patch = {
        "metadata": {"resourceVersion": cm.metadata.resource_version, "annotations": {LEGACY: ",".join(names)}},
        "data": {"config.yaml": yaml.safe_dump(doc)},
    }
    api.patch_namespaced_config_map(sandbox.mig_config_map, sandbox.mig_namespace, patch)


def test_the_record_of_before_owners_is_adopted_once_and_the_rest_pruned_as_before(two_owners):
    """One inventory upgraded from gpupool before owners: its config is adopted (not rewritten), an old one that no
    node uses is pruned as before, a name another owner recorded is left to it, and the shared record goes."""
    sandbox, a, b, _nodes = two_owners
    cp = sandbox.cp
    (first_b,), _res, _window = b.run([task()])  # B, upgraded already, records its own config
    assert not first_b.get("failed"), first_b.get("msg")
    entries_a = [{"devices": "all", "mig-enabled": True, "mig-devices": LAYOUT_A}]
    old = [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb": 7}}]
    seed_before_owners(
        cp,
        sandbox,
        {"gpupool-ownmig-a": entries_a, "gpupool-ownmig-old": old},
        ["gpupool-ownmig-a", "gpupool-ownmig-b", "gpupool-ownmig-old"],
    )
    (first_a,), _res, window = a.run([task()])
    assert not first_a.get("failed"), first_a.get("msg")
    assert first_a["config_map"]["configs"] == {"gpupool-ownmig-a": "adopted", "gpupool-ownmig-old": "deleted"}
    warnings = "\n".join(first_a.get("warnings", []))
    assert "adopted 1 MIG config(s) recorded before owners (annotation gpupool.io/mig-configs);" in warnings
    assert "annotation mig-configs.gpupool.io/ownmig-team-a records them now:\n  gpupool-ownmig-a" in warnings
    assert [w for w in h.writes(window) if w[1] == "configmaps"] == [("patch", "configmaps", sandbox.mig_config_map)]
    records, configs = config_map(cp, sandbox)
    assert LEGACY not in records  # emptied, so removed
    assert records[RECORD + "ownmig-team-a"] == "gpupool-ownmig-a"
    assert records[RECORD + "ownmig-team-b"] == "gpupool-ownmig-b"
    assert configs["gpupool-ownmig-a"] == entries_a and "gpupool-ownmig-old" not in configs
    assert configs["gpupool-ownmig-b"] == [{"devices": "all", "mig-enabled": True, "mig-devices": LAYOUT_B}]

    (again,), _res, window = a.run([task()])
    assert again["changed"] is False and h.writes(window) == []
    assert "adopted" not in "\n".join(again.get("warnings", []))
