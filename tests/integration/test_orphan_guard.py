"""The orphan guard on the test bed: a node_selector typo that would orphan (cordon and taint) every node of a pool
is refused before any write; confirmed through the role's variable, the same run orphans them.
Through ansible-playbook against the real control plane; writes from its audit log.
"""

from __future__ import annotations

import copy

import pytest

from tests.integration import k8s_helpers as h

pytestmark = pytest.mark.controlplane
CLUSTER = {
    "name": "guard",
    "pools": [{"name": "guard-a100", "node_selector": {"guard-gpu": "a100"}, "gpu": {"model": "A100-40GB"}}],
}
NODES = ["guard-a100-%d" % i for i in range(4)]
NODE_POOL = ("gpupool.core.node_pool", {"cluster": "{{ gpupool_cluster }}"})


def test_a_selector_typo_is_refused_before_any_write_and_orphans_only_when_confirmed(control_plane, tmp_path):
    cp = control_plane
    for name in NODES:
        h.make_node(cp, name, {"guard-gpu": "a100"})
    play = h.GpupoolPlay(cp, tmp_path, copy.deepcopy(CLUSTER))
    try:
        (first,), _res, _window = play.run([NODE_POOL])
        assert h.actions(first) == dict.fromkeys(NODES, "updated"), first

        play.cluster["pools"][0]["node_selector"] = {"guard-gpu": "a10"}  # the typo
        before = {n: h.kubectl_json(cp, "get", "node", n)["metadata"]["resourceVersion"] for n in NODES}
        (refused,), _res, window = play.run([NODE_POOL])
        assert refused["failed"] and h.writes(window) == []
        assert {n: h.kubectl_json(cp, "get", "node", n)["metadata"]["resourceVersion"] for n in NODES} == before
        msg = refused["msg"]
        assert "pool guard-a100 (gpupool_cluster.pools[0]): its selector guard-gpu=a10 no longer matches all" in msg
        assert "guard-a100-0, guard-a100-1, guard-a100-2 and 1 more" in msg
        assert "-e gpupool_confirm_orphans=true" in msg
        assert max(len(line) for line in msg.splitlines()) <= 200

        role = [
            ("ansible.builtin.include_role", {"name": "gpupool.core.node_pools"}),
            ("ansible.builtin.debug", {"var": "node_pools_result"}),
        ]
        (_include, shown), _res, window = play.run(role, play_extras={"vars": {"gpupool_confirm_orphans": True}})
        confirmed = shown["node_pools_result"]
        assert not confirmed.get("failed"), confirmed
        assert h.actions(confirmed) == dict.fromkeys(NODES, "orphaned")
        for name in NODES:
            node = h.kubectl_json(cp, "get", "node", name)
            assert node["spec"].get("unschedulable") is True
            assert node["metadata"]["labels"].get("gpupool.io/orphaned") == "true"

        (after,), _res, window = play.run([NODE_POOL])  # orphaned once, confirmed: not refused again
        assert not after.get("failed") and after["changed"] is False and h.writes(window) == []
    finally:
        h.delete_nodes(cp, NODES)
