"""gpupool.core.validate run in-process: the model's checks, no API at all. It never writes, so check mode and a
second run are alike; a refused inventory names the key path, the pool and the fix."""

from __future__ import annotations

import copy

from ansible_collections.gpupool.core.plugins.action import validate
from tests.support.steps import run_action, said

CLUSTER = {
    "name": "unit",
    "dra_driver": {"version": "0.5.1"},
    "pools": [
        {
            "name": "a100",
            "node_selector": {"gpu": "a100"},
            "gpu": {"model": "A100-40GB", "per_node": 2},
            "mig": {"mode": "static", "layout": {"3g.20gb": 1, "2g.10gb": 2}},
        }
    ],
}


def run(cluster=None, **args):
    cluster = CLUSTER if cluster is None else cluster  # the module's inventory unless a test gives its own
    return run_action(validate, cluster=copy.deepcopy(cluster), **args)


def test_a_valid_inventory_is_normalized_and_changes_nothing(api):
    out = run()
    assert out.get("failed") is not True, out
    assert out["changed"] is False
    again = run(_ansible_check_mode=True)
    assert {k: v for k, v in again.items() if k != "invocation"} == {k: v for k, v in out.items() if k != "invocation"}
    assert api.requests == []


def test_a_refused_layout_names_the_key_path_and_the_pool(api):
    cluster = copy.deepcopy(CLUSTER)
    cluster["pools"][0]["mig"]["layout"] = {"3g.20gb": 3}
    out = run(cluster)
    assert out["failed"] is True
    assert "gpupool_cluster.pools[0] (a100).mig.layout" in said(out)
    assert all(len(line) <= 200 for line in out["msg"].splitlines())


def test_var_name_is_the_root_of_every_key_path(api):
    cluster = copy.deepcopy(CLUSTER)
    cluster["pools"][0]["gpu"]["model"] = "A999"
    out = run(cluster, var_name="site_pools")
    assert out["failed"] is True
    assert "site_pools.pools[0] (a100).gpu.model" in said(out) and "gpupool_cluster" not in said(out)
