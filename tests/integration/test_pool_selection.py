"""Playbooks and roles: `gpupool_pools` in every form a person writes it, and runs with no cluster in them.

The nodegroups role hands the selection to gpupool.core.nodegroup like every role; it is run through
ansible-playbook against the Magnum API emulator: the nodegroups that exist afterwards are the ones that
were selected. The no-cluster checks need nothing but Ansible.
"""

from __future__ import annotations

import json
import re

import pytest
import yaml

from tests.integration.playbook import ROOT, run_playbook

SITE = ROOT + "/playbooks/site.yml"
VALIDATE = ROOT + "/playbooks/validate.yml"
EXAMPLE = ROOT + "/inventories/example"

# "gpu-t" is a prefix of "gpu-t4": `item.name in "gpu-t4"` used to select it.
POOLS = ["gpu-t4", "gpu-t", "gpu-h100"]
ROLE_PLAY = (
    """
- name: Check the run
  ansible.builtin.import_playbook: %s/playbooks/clusters_matched.yml
- name: Nodegroups of the selected pools
  hosts: gpupool_clusters
  gather_facts: false
  tasks:
    - name: Nodegroups
      ansible.builtin.include_role:
        name: gpupool.core.nodegroups
"""
    % ROOT
)


def cluster_inventory(tmp_path, magnum, extra_hosts=None):
    cluster = {
        "name": "k8s",
        "magnum": {"cloud": magnum.cloud_name, "cluster": "k8s"},
        "pools": [
            {"name": name, "nodegroup": {"flavor": "g2.5xlarge", "node_count": 1}, "gpu": {"model": "T4"}}
            for name in POOLS
        ],
    }
    hosts = {
        "all": {
            "children": {
                "gpupool_clusters": {
                    "hosts": {
                        "k8s": {
                            "ansible_connection": "local",
                            "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                            "gpupool_cluster": cluster,
                        }
                    }
                }
            }
        }
    }
    if extra_hosts:
        hosts["all"]["hosts"] = extra_hosts
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(hosts))
    return str(path)


def nodegroups(magnum):
    """The pools' nodegroups that exist in the emulator."""
    found = []
    for name in POOLS:
        try:
            magnum.nodegroup("k8s", name)
        except Exception:  # the emulator's not-found error; any other failure shows up as a missing name
            continue
        found.append(name)
    return sorted(found)


@pytest.mark.parametrize(
    "args, selected",
    [
        (["-e", "gpupool_pools=gpu-t4"], ["gpu-t4"]),
        (["-e", "gpupool_pools=[gpu-t4]"], ["gpu-t4"]),  # site.yml's old header example
        (["-e", "gpupool_pools=gpu-t4,gpu-h100"], ["gpu-h100", "gpu-t4"]),
        (["-e", json.dumps({"gpupool_pools": ["gpu-t"]})], ["gpu-t"]),
        ([], POOLS),
    ],
    ids=["one-name", "bracket-string", "comma-string", "json-list", "no-selection"],
)
def test_the_selected_pools_and_only_those_get_a_nodegroup(tmp_path, magnum, args, selected):
    res = run_playbook(
        ROLE_PLAY,
        cluster_inventory(tmp_path, magnum),
        tmp_path,
        args=args,
        env={"OS_CLIENT_CONFIG_FILE": str(magnum.clouds_yaml)},
    )
    assert res.rc == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert nodegroups(magnum) == sorted(selected)
    assert res.recap["k8s"]["changed"] == 1


def test_an_unknown_pool_fails_before_magnum_is_touched(tmp_path, magnum):
    res = run_playbook(
        ROLE_PLAY,
        cluster_inventory(tmp_path, magnum),
        tmp_path,
        args=["-e", "gpupool_pools=gpu"],
        env={"OS_CLIENT_CONFIG_FILE": str(magnum.clouds_yaml)},
    )
    assert res.rc != 0
    # the known pools closest to what was asked first
    assert "pool(s) 'gpu' not in gpupool_cluster.pools; known pools: gpu-t, gpu-t4, gpu-h100" in res.stdout, res.stdout[
        -3000:
    ]
    assert magnum.magnum_requests() == [], "refused by the model before any request"
    assert nodegroups(magnum) == []


@pytest.mark.parametrize("playbook", [SITE, VALIDATE], ids=["site", "validate"])
def test_a_run_without_clusters_fails(tmp_path, playbook):
    empty = tmp_path / "empty.yml"
    empty.write_text("all: {}\n")
    res = run_playbook(playbook, str(empty), tmp_path)
    assert res.rc != 0
    assert (
        "No host of the group gpupool_clusters is in this run (inventory: %s; limit: none; gpupool_limit: none)" % empty
    ) in res.stdout


def test_a_run_limited_to_hosts_that_are_not_clusters_fails(tmp_path):
    # An inventory with a cluster and another host; --limit keeps only the other host.
    inventory = tmp_path / "inv"
    inventory.mkdir()
    hosts = yaml.safe_load(open(EXAMPLE + "/hosts.yml"))
    hosts["all"]["hosts"] = {"gpu-node-1": {"ansible_connection": "local"}}
    (inventory / "hosts.yml").write_text(yaml.safe_dump(hosts))
    (inventory / "host_vars").symlink_to(EXAMPLE + "/host_vars")
    res = run_playbook(VALIDATE, str(inventory), tmp_path, args=["--limit", "gpu-node-1"])
    assert res.rc != 0
    assert "No host of the group gpupool_clusters is in this run" in res.stdout and "limit: gpu-node-1" in res.stdout
    # The same inventory without the limit validates the cluster.
    res = run_playbook(VALIDATE, str(inventory), tmp_path)
    assert res.rc == 0, res.stdout[-3000:]
    assert "4 pool(s) valid: gpu-t4, gpu-a100-mig, gpu-h100, gpu-gb200" in res.stdout


# ---- run_changes.yml: one run's change to one pool (the AWX survey variables) --------------------------------
CHANGE_PLAY = (
    """
- name: This run's change
  ansible.builtin.import_playbook: %s/playbooks/run_changes.yml
- name: What the converge play would get
  hosts: "gpupool_clusters:&{{ gpupool_limit | default('all', true) }}"
  gather_facts: false
  tasks:
    - name: Validate the changed cluster as site.yml does first
      gpupool.core.validate:
        cluster: "{{ gpupool_cluster }}"
      register: validated
    - name: Show the changed pools
      ansible.builtin.debug:
        msg: >-
          COUNTS {{ validated.cluster.pools | map(attribute='name')
                    | zip(validated.cluster.pools | map(attribute='nodegroup.node_count')) | map('join', '=') | join(' ') }}
          LAYOUT {{ (validated.cluster.pools | selectattr('name', 'eq', 'gpu-a100-mig') | first).mig.layout
                    | dict2items | map(attribute='key') | join(',') }}
"""
    % ROOT
)


def test_a_survey_changes_one_pool_for_the_run(tmp_path):
    res = run_playbook(
        CHANGE_PLAY,
        EXAMPLE,
        tmp_path,
        args=[
            "-e",
            "gpupool_limit=cern-gpu",
            "-e",
            "gpupool_pools=gpu-a100-mig",
            "-e",
            "gpupool_node_count=2",
            "-e",
            # 3g.20gb stays (the example's tenant template a100-3g asks for it; dropping it is refused)
            json.dumps({"gpupool_mig_layout": '{"3g.20gb": 1, "1g.5gb": 4}'}),
        ],
    )  # a survey's textarea answer is text
    assert res.rc == 0, res.stdout[-3000:]
    # Only gpu-a100-mig changed (its inventory says 1 node and 3g.20gb + 2 x 2g.10gb); the others keep theirs.
    assert "COUNTS gpu-t4=2 gpu-a100-mig=2 gpu-h100=1 gpu-gb200=2" in res.stdout, res.stdout[-2000:]
    layout = re.search(r"LAYOUT ([\w.,]+)", res.stdout)
    assert layout and set(layout.group(1).split(",")) == {"3g.20gb", "1g.5gb"}, res.stdout[-2000:]


def test_a_survey_change_the_model_refuses_fails_with_its_path(tmp_path):
    res = run_playbook(
        CHANGE_PLAY, EXAMPLE, tmp_path, args=["-e", "gpupool_pools=gpu-t4", "-e", "gpupool_node_count=9"]
    )
    assert res.rc != 0
    assert "gpupool_cluster.pools[0] (gpu-t4).nodegroup.node_count" in res.stdout, res.stdout[-3000:]
    assert "node_count 9 is greater than max_node_count 4" in res.stdout


def test_a_survey_change_needs_exactly_one_pool(tmp_path):
    res = run_playbook(
        CHANGE_PLAY, EXAMPLE, tmp_path, args=["-e", "gpupool_pools=gpu-t4,gpu-h100", "-e", "gpupool_node_count=3"]
    )
    assert res.rc != 0
    assert (
        "change one pool: set gpupool_pools to one of gpu-t4, gpu-a100-mig, gpu-h100, gpu-gb200 (got gpu-t4, "
        "gpu-h100)" in res.stdout
    )
