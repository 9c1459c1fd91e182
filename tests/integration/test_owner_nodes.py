"""Two gpupool_cluster entries on one Kubernetes cluster and their NODES: node_pool labels each pool's nodes with
gpupool.io/owner, never orphans, relabels or uncordons another owner's node, refuses before any write a pool that
selects one, adopts once a node made before owner labels, leaves alone one of a pool it does not declare, and removes
its owner label when it hands a node back. Through ansible-playbook against the real control plane; writes from its
audit log.
"""

from __future__ import annotations

import copy

import pytest

from tests.integration import k8s_helpers as h

pytestmark = pytest.mark.controlplane
OWNER, POOL = "gpupool.io/owner", "gpupool.io/pool"
TEAM_A = {
    "name": "ownn-a",
    "pools": [{"name": "ownn-a100", "node_selector": {"ownn-gpu": "a100"}, "gpu": {"model": "A100-40GB"}}],
}
TEAM_B = {"name": "ownn-b", "pools": [{"name": "ownn-l4", "node_selector": {"ownn-gpu": "l4"}, "gpu": {"model": "L4"}}]}
A_NODES = ["ownn-a-0", "ownn-a-1"]
B_NODES = ["ownn-b-0"]
LEGACY = "ownn-legacy-0"  # B's pool label, no owner: made before owner labels
STRANGER = "ownn-stranger-0"  # a pool label neither inventory declares, no owner
ALL = A_NODES + B_NODES + [LEGACY, STRANGER]
NODE_POOL = ("gpupool.core.node_pool", {"cluster": "{{ gpupool_cluster }}"})


def node(cp, name):
    return h.kubectl_json(cp, "get", "node", name)


def versions(cp, names):
    return {name: node(cp, name)["metadata"]["resourceVersion"] for name in names}


def touched(window, names):
    """The audit log's writes that name one of `names`."""
    return [w for w in h.writes(window) if w[2] in names]


def test_two_inventories_never_write_each_others_nodes_and_a_pool_selecting_one_is_refused(control_plane, tmp_path):
    cp = control_plane
    for name in A_NODES:
        h.make_node(cp, name, {"ownn-gpu": "a100"})
    h.make_node(cp, B_NODES[0], {"ownn-gpu": "l4", POOL: "ownn-l4"})  # as Magnum gives it from birth: new, not adopted
    h.make_node(cp, LEGACY, {"ownn-gpu": "l4", POOL: "ownn-l4"})
    cp.kubectl("annotate", "node", LEGACY, "gpupool.io/labels=gpupool.io/pool")  # as node_pool left it, before owners
    h.make_node(cp, STRANGER, {"ownn-gpu": "v100", POOL: "ownn-v100"})
    a = h.GpupoolPlay(cp, tmp_path / "a", copy.deepcopy(TEAM_A))
    b = h.GpupoolPlay(cp, tmp_path / "b", copy.deepcopy(TEAM_B))
    try:
        (first_a,), _res, _window = a.run([NODE_POOL])
        assert h.actions(first_a) == dict.fromkeys(A_NODES, "updated"), first_a
        for name in A_NODES:
            meta = node(cp, name)["metadata"]
            assert meta["labels"][OWNER] == "ownn-a" and meta["labels"][POOL] == "ownn-a100"
            assert OWNER in meta["annotations"]["gpupool.io/labels"].split(",")  # recorded: a release removes it
        before = versions(cp, A_NODES + [STRANGER])

        # B converges: its own node and the legacy one (adopted, once), nothing of A's, nothing of the stranger's
        (first_b,), _res, window = b.run([NODE_POOL])
        assert not first_b.get("failed"), first_b
        assert h.actions(first_b) == {B_NODES[0]: "updated", LEGACY: "updated"}, first_b
        assert touched(window, A_NODES + [STRANGER]) == []
        assert versions(cp, A_NODES + [STRANGER]) == before
        for name in A_NODES:
            got = node(cp, name)
            assert not got["spec"].get("unschedulable") and "gpupool.io/orphaned" not in got["metadata"]["labels"]
        assert node(cp, LEGACY)["metadata"]["labels"][OWNER] == "ownn-b"
        warnings = "\n".join(first_b.get("warnings", []))
        assert "adopted 1 node(s) made before owner labels (they now carry gpupool.io/owner=ownn-b)" in warnings
        assert LEGACY in warnings
        assert "node %s carries gpupool.io/pool=ownn-v100" % STRANGER in warnings
        assert "label the node gpupool.io/owner=ownn-b" in warnings
        assert first_b["nodes_adopted"] == [LEGACY] and first_b["orphaned"] == []

        (again,), _res, window = b.run([NODE_POOL])  # adopted once: the second run changes nothing, says nothing
        assert again["changed"] is False and h.writes(window) == [] and again["nodes_adopted"] == []
        assert "made before owner labels" not in "\n".join(again.get("warnings", []))

        # a B pool whose selector reaches A's nodes: refused before any write, naming node, both owners and the fix
        b.cluster["pools"].append(
            {"name": "ownn-b-a100", "node_selector": {"ownn-gpu": "a100"}, "gpu": {"model": "A100-40GB"}}
        )
        (refused,), _res, window = b.run([NODE_POOL])
        assert refused["failed"] and h.writes(window) == []
        assert (
            versions(cp, A_NODES + [STRANGER]) == before
            and node(cp, A_NODES[0])["metadata"]["labels"][POOL] == "ownn-a100"
        )
        msg = refused["msg"]
        assert "node_pool did not write anything" in msg and "- node ownn-a-0" in msg and "- node ownn-a-1" in msg
        assert "its owner is 'ownn-a' (label gpupool.io/owner), not this inventory's 'ownn-b'" in msg
        assert "pool ownn-b-a100 (gpupool_cluster.pools[1]) selects it with ownn-gpu=a100" in msg
        assert "narrow the pool's node_selector" in msg and "release the node from the other inventory" in msg
        assert max(len(line) for line in msg.splitlines()) <= 200

        # A hands its pool back on purpose: its owner label goes with the pool label and taints
        a.cluster["pools"][0]["state"] = "absent"
        a.cluster["allow_empty"] = True
        release = ("gpupool.core.node_pool", {"cluster": "{{ gpupool_cluster }}", "release_orphans": True})
        (released,), _res, window = a.run([release])
        assert h.actions(released) == dict.fromkeys(A_NODES, "released"), released
        assert {w[2] for w in h.writes(window)} == set(A_NODES)  # B's nodes and the stranger untouched
        for name in A_NODES:
            labels = node(cp, name)["metadata"]["labels"]
            assert OWNER not in labels and POOL not in labels
    finally:
        h.delete_nodes(cp, ALL)
