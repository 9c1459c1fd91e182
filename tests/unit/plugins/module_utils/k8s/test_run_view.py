# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run's view: lists shared by the steps of one run, kept current with gpupool's writes, never stale."""

from __future__ import annotations

import os

from ansible_collections.gpupool.core.plugins.module_utils.k8s.paths import object_of
from ansible_collections.gpupool.core.plugins.module_utils.k8s.run_view import RunView, kind_key

NODES = kind_key("", "nodes")


def node(name, rv="1", **labels):
    return {"metadata": {"name": name, "resourceVersion": rv, "labels": labels}}


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def view(tmp_path, run="gpupool@ctl/abc", clock=None, host="https://10.0.0.1:6443"):
    return RunView(host, run, directory=str(tmp_path), clock=clock or Clock())


def test_a_later_step_of_the_same_run_reads_the_list_of_an_earlier_one(tmp_path):
    first, later = view(tmp_path), view(tmp_path)  # two steps: two processes, one run
    assert later.get(NODES) is None
    first.put(NODES, [node("n0"), node("n1")])
    first.flush()  # the step base does it when the step ends
    assert [n["metadata"]["name"] for n in later.get(NODES)] == ["n0", "n1"] and later.served == 1


def test_another_run_or_another_cluster_or_no_run_sees_nothing(tmp_path):
    first = view(tmp_path)
    first.put(NODES, [node("n0")])
    first.flush()
    assert view(tmp_path, run="gpupool@ctl/other").get(NODES) is None
    assert view(tmp_path, host="https://10.0.0.2:6443").get(NODES) is None
    nothing = view(tmp_path, run=None)
    nothing.put(NODES, [node("n9")])
    assert nothing.get(NODES) is None and not nothing.enabled


def test_writes_keep_the_view_current_and_a_delete_removes_the_object(tmp_path):
    v = view(tmp_path)
    v.put(NODES, [node("n0"), node("n1")])
    v.record(NODES, node("n1", rv="7", pool="t4"))
    v.record(NODES, node("n2", rv="8"))
    v.drop(NODES, None, "n0")
    v.flush()
    for reader in (v, view(tmp_path)):  # this step, and the next one
        items = {n["metadata"]["name"]: n for n in reader.get(NODES)}
        assert sorted(items) == ["n1", "n2"] and items["n1"]["metadata"]["labels"] == {"pool": "t4"}


def test_a_steps_writes_reach_the_file_once_when_it_ends(tmp_path):
    """At 2,000 nodes a step writes 2,000 nodes: one file write at the end, not 2,000 rewrites of 10 MB."""
    v = view(tmp_path)
    v.put(NODES, [node("n%d" % i) for i in range(50)])
    v.flush()
    path = v._path(NODES)
    before = os.stat(path).st_mtime_ns, open(path, "rb").read()
    for i in range(50):
        v.record(NODES, node("n%d" % i, rv="9"))
    assert (os.stat(path).st_mtime_ns, open(path, "rb").read()) == before
    v.flush()
    assert all(n["metadata"]["resourceVersion"] == "9" for n in view(tmp_path).get(NODES))


def test_a_write_to_a_kind_not_in_the_view_starts_no_list(tmp_path):
    v = view(tmp_path)
    v.record(NODES, node("n0"))
    assert v.get(NODES) is None  # one object is not a list of every node


def test_a_list_older_than_max_age_is_read_again(tmp_path):
    clock = Clock()
    v = view(tmp_path, clock=clock)
    v.put(NODES, [node("n0")])
    clock.now += v.max_age + 1
    assert v.get(NODES) is None


def test_forget_drops_the_whole_run(tmp_path):
    v = view(tmp_path)
    v.put(NODES, [node("n0")])
    v.flush()
    v.forget()
    assert v.get(NODES) is None and not os.path.exists(v.directory)


def test_the_view_can_be_switched_off(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUPOOL_RUN_VIEW", "off")
    v = view(tmp_path)
    v.put(NODES, [node("n0")])
    assert v.get(NODES) is None


def test_folders_of_runs_killed_a_day_ago_are_swept(tmp_path):
    clock = Clock()
    old = view(tmp_path, run="gpupool@ctl/killed", clock=clock)
    old.put(NODES, [node("n0")])
    old.flush()
    os.utime(old.directory, (0, 0))
    clock.now = 2 * 86400.0
    new = view(tmp_path, run="gpupool@ctl/new", clock=clock)
    new.put(NODES, [node("n1")])
    new.flush()
    assert not os.path.exists(old.directory)


def test_object_of_names_the_kind_and_object_of_an_api_path():
    assert object_of("/api/v1/nodes/n0") == ("core_nodes", None, "n0", None)
    assert object_of("/api/v1/nodes") == ("core_nodes", None, None, None)
    assert object_of("/api/v1/namespaces/ml/pods/p/eviction") == ("core_pods", "ml", "p", "eviction")
    assert object_of("/apis/resource.k8s.io/v1/deviceclasses/gpu-t4") == (
        "resource.k8s.io_deviceclasses",
        None,
        "gpu-t4",
        None,
    )
    assert object_of("/apis/resource.nvidia.com/v1beta1/namespaces/ml/computedomains/cd") == (
        "resource.nvidia.com_computedomains",
        "ml",
        "cd",
        None,
    )
    assert object_of("/version") is None and object_of("/apis/resource.k8s.io") is None


def test_the_view_keeps_objects_without_managed_fields(tmp_path):
    """Half of a Node is its managedFields; no step that plans from the view reads them (node_pool reads live)."""
    v = view(tmp_path)
    listed = node("n0")
    listed["metadata"]["managedFields"] = [{"manager": "kubelet"}]
    v.put(NODES, [listed])
    written = node("n1", rv="5")
    written["metadata"]["managedFields"] = [{"manager": "gpupool"}]
    v.record(NODES, written)
    v.flush()
    kept = view(tmp_path).get(NODES)
    assert [n["metadata"].get("managedFields") for n in kept] == [None, None]
    assert listed["metadata"]["managedFields"] == [{"manager": "kubelet"}]  # the caller's objects are untouched
