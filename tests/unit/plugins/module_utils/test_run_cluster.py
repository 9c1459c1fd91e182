# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inventory is checked once per run: later steps of the run trust the verdict for the same data only."""

from __future__ import annotations

import copy
import os

import pytest

from ansible_collections.gpupool.core.plugins.module_utils import run_cluster as shared
from ansible_collections.gpupool.core.plugins.module_utils.argument_specs import LEASE
from ansible_collections.gpupool.core.plugins.module_utils.model import load as model_load
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.module import PoolModule

DATA = {
    "name": "c1",
    "magnum": {"cloud": "openstack", "cluster": "k8s"},
    "pools": [
        {"name": "t4", "nodegroup": {"flavor": "g2.5xlarge", "node_count": 2}, "gpu": {"model": "T4"}},
        {
            "name": "a100",
            "nodegroup": {"flavor": "g4.p2.40g"},
            "gpu": {"model": "A100-40GB", "per_node": 2},
            "mig": {"mode": "static", "layout": {"3g.20gb": 1, "2g.10gb": 2}},
        },
    ],
}
RUN = "gpupool@controller/1a2b3c4d"


@pytest.fixture
def checks(monkeypatch):
    """Counts the full validations (load_cluster) the shared result leaves to do."""
    calls = []

    def counted(data, root="gpupool_cluster"):
        calls.append(root)
        return model_load.load_cluster(data, root)

    monkeypatch.setattr(shared, "load_cluster", counted)
    return calls


def same(a, b):
    assert a.model_dump() == b.model_dump()
    assert [p._index for p in a.pools] == [p._index for p in b.pools]
    assert a.pool("a100").mig_config_name == b.pool("a100").mig_config_name


def test_a_later_step_of_the_run_trusts_the_verdict_and_gets_the_same_cluster(tmp_path, checks):
    first = shared.RunCluster(RUN, base=str(tmp_path)).load(copy.deepcopy(DATA))
    later = shared.RunCluster(RUN, base=str(tmp_path))
    cluster = later.load(copy.deepcopy(DATA))
    assert checks == ["gpupool_cluster"] and later.shared
    same(cluster, first)
    same(cluster, model_load.load_cluster(copy.deepcopy(DATA)))
    folder = shared.run_folder(RUN, str(tmp_path))
    assert os.stat(folder).st_mode & 0o777 == 0o700


def test_other_data_another_run_or_no_run_is_checked_again(tmp_path, checks):
    shared.RunCluster(RUN, base=str(tmp_path)).load(copy.deepcopy(DATA))
    changed = copy.deepcopy(DATA)
    changed["pools"][0]["nodegroup"]["node_count"] = 3
    for run, data in ((RUN, changed), ("gpupool@controller/other", DATA), (None, DATA)):
        view = shared.RunCluster(run, base=str(tmp_path))
        view.load(copy.deepcopy(data))
        assert not view.shared
    assert len(checks) == 4


def test_a_refused_inventory_is_never_recorded_and_says_every_problem(tmp_path, checks):
    shared.RunCluster(RUN, base=str(tmp_path)).load(copy.deepcopy(DATA))
    bad = copy.deepcopy(DATA)
    bad["pools"][1]["name"] = "t4"  # a name another pool already has
    bad["pools"][0]["gpu"]["model"] = "T5"
    with pytest.raises(Problems) as err:
        model_load.load_cluster(copy.deepcopy(bad))
    for _attempt in range(2):
        with pytest.raises(Problems) as again:
            shared.RunCluster(RUN, base=str(tmp_path)).load(copy.deepcopy(bad))
        assert again.value.problems == err.value.problems and len(err.value.problems) >= 2
    assert len(checks) == 3


def test_a_record_in_a_folder_others_can_write_is_not_trusted(tmp_path, checks):
    shared.RunCluster(RUN, base=str(tmp_path)).load(copy.deepcopy(DATA))
    os.chmod(shared.run_folder(RUN, str(tmp_path)), 0o777)
    view = shared.RunCluster(RUN, base=str(tmp_path))
    view.load(copy.deepcopy(DATA))
    assert not view.shared and len(checks) == 2


def test_a_record_of_other_data_under_this_name_is_not_trusted(tmp_path, checks):
    view = shared.RunCluster(RUN, base=str(tmp_path))
    view.load(copy.deepcopy(DATA))
    (name,) = os.listdir(view.folder)
    other = copy.deepcopy(DATA)
    other["name"] = "c2"
    os.replace(os.path.join(view.folder, name), os.path.join(view.folder, shared.data_digest(other) + ".marshal"))
    later = shared.RunCluster(RUN, base=str(tmp_path))
    later.load(other)
    assert not later.shared and len(checks) == 2


def test_switched_off_and_forgotten(tmp_path, checks, monkeypatch):
    view = shared.RunCluster(RUN, base=str(tmp_path))
    view.load(copy.deepcopy(DATA))
    view.forget()
    assert not os.path.exists(view.folder)
    shared.RunCluster(RUN, base=str(tmp_path)).load(copy.deepcopy(DATA))
    monkeypatch.setenv("GPUPOOL_RUN_VIEW", "off")
    off = shared.RunCluster(RUN, base=str(tmp_path))
    off.load(copy.deepcopy(DATA))
    assert not off.shared and len(checks) == 3


class Host:
    check_mode = diff_mode = False
    name = ""

    def __init__(self, params):
        self.params = params

    def hide(self, secret):
        pass

    def show(self, line):
        pass


class Step(PoolModule):
    shared = (LEASE,)

    def run(self):
        return {"pools": [p.name for p in self.selected]}


def test_the_steps_of_one_run_validate_once(tmp_path, checks, monkeypatch):
    monkeypatch.setattr(shared.tempfile, "tempdir", str(tmp_path))
    lease = {"namespace": "kube-system", "name": "gpupool-run", "holder": RUN, "duration": 60}
    for _step in range(3):
        result = Step(Host({"cluster": copy.deepcopy(DATA), "pools": None, "run_lease": lease})).execute()
        assert result["pools"] == ["t4", "a100"]
    assert len(checks) == 1
    bad = copy.deepcopy(DATA)
    bad["pools"][0]["gpu"]["model"] = "T5"
    failed = Step(Host({"cluster": bad, "pools": None, "run_lease": lease})).execute()
    assert failed["failed"] and "pools[0] (t4).gpu.model" in failed["msg"]


def test_a_record_of_another_copy_of_the_collection_is_not_trusted(tmp_path, checks, monkeypatch):
    assert shared.collection_version().startswith("0.") or "@" in shared.collection_version()
    shared.RunCluster(RUN, base=str(tmp_path)).load(copy.deepcopy(DATA))
    monkeypatch.setattr(shared, "collection_version", lambda: "9.9.9@/elsewhere")
    view = shared.RunCluster(RUN, base=str(tmp_path))
    view.load(copy.deepcopy(DATA))
    assert not view.shared and len(checks) == 2


def test_the_step_that_names_the_run_records_what_it_checked_before(tmp_path, checks):
    model_load.load_cluster(copy.deepcopy(DATA))  # the run lease's take: checked before the run had a name
    shared.RunCluster(RUN, base=str(tmp_path)).record(copy.deepcopy(DATA))
    view = shared.RunCluster(RUN, base=str(tmp_path))
    view.load(copy.deepcopy(DATA))
    assert view.shared and checks == []
