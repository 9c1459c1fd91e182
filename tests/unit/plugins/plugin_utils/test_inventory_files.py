"""The files that can define a host's variables, found as ansible-core finds them, and the keys written twice in them."""

from __future__ import annotations

import os

from ansible_collections.gpupool.core.plugins.plugin_utils.inventory_files import (
    inventory_var_files,
    keys_written_twice,
    shown,
    vars_files,
)


def write(root, rel, text="x: 1\n"):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def test_a_static_inventory_file_its_host_vars_directory_and_group_vars(tmp_path):
    inv = tmp_path / "inv"
    hosts = write(inv, "hosts.yml")
    a = write(inv, "host_vars/c1/gpupool.yml")
    b = write(inv, "host_vars/c1/sub/more.yaml")
    write(inv, "host_vars/c1/.hidden.yml")
    write(inv, "host_vars/c1/backup.yml~")
    write(inv, "host_vars/c1/notes.txt")
    write(inv, "host_vars/c2.yml")  # another host
    all_ = write(inv, "group_vars/all.yml")
    clusters = write(inv, "group_vars/gpupool_clusters/main.yml")
    write(inv, "group_vars/other.yml")  # a group the host is not in
    got = inventory_var_files([hosts], "c1", ["gpupool_clusters"])
    assert got == [hosts, all_, clusters, a, b]


def test_a_directory_source_is_read_whole_but_its_vars_directories_are_not_sources(tmp_path):
    inv = tmp_path / "inv"
    one = write(inv, "01-hosts.yml")
    two = write(inv, "sub/02-more.yaml")
    ini = write(inv, "03-static")  # no extension: may be YAML, read
    script = write(inv, "04-script")
    os.chmod(script, 0o755)  # an inventory script is no YAML
    write(inv, "05.cfg")
    hv = write(inv, "host_vars/c1.yml")
    got = inventory_var_files([str(inv)], "c1")
    assert got == [one, ini, two, hv]


def test_vars_next_to_the_playbook_host_lists_and_missing_sources(tmp_path):
    play = tmp_path / "play"
    hv = write(play, "host_vars/c1")  # a file without extension
    got = inventory_var_files(["c1,c2,", None, str(tmp_path / "missing.yml")], "c1", [], playbook_dir=str(play))
    assert got == [hv]


def test_the_first_spelling_that_exists_wins_as_in_ansible_core(tmp_path):
    d = tmp_path / "host_vars"
    yml = write(tmp_path, "host_vars/c1.yml")
    write(tmp_path, "host_vars/c1.yaml")
    assert vars_files(str(d), "c1") == [yml]
    assert vars_files(str(d), "nobody") == [] and vars_files(str(tmp_path / "none"), "c1") == []


def test_each_file_once_when_two_sources_share_a_directory(tmp_path):
    inv = tmp_path / "inv"
    a, b = write(inv, "a.yml"), write(inv, "b.yml")
    hv = write(inv, "host_vars/c1.yml")
    assert inventory_var_files([a, b, a], "c1", [], playbook_dir=str(inv)) == [a, b, hv]


def test_keys_written_twice_across_files_with_paths_as_shown(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    good = write(tmp_path, "inv/host_vars/c1/a.yml", "a: &a {x: 1}\nb: {<<: *a, x: 2}\n")
    bad = write(tmp_path, "inv/host_vars/c1/b.yml", "gpupool_cluster:\n  name: c1\n  name: c2\n")
    unreadable = str(tmp_path / "gone.yml")
    found = keys_written_twice([good, bad, unreadable], lambda p: open(p).read())
    assert [(d.file, d.line, d.first_line, d.path) for d in found] == [
        ("inv/host_vars/c1/b.yml", 3, 2, "gpupool_cluster.name")
    ]
    assert shown("/elsewhere/x.yml", str(tmp_path)) == "/elsewhere/x.yml"
