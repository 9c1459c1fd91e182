"""The inventory plugin gpupool.core.pools on the sandbox, through the real ansible-inventory and ansible-playbook.

A Magnum nodegroup is created with the unmodified openstacksdk (the node simulator registers its Nodes in
the real apiserver); the plugin must then find the same nodes from Kubernetes (names, InternalIP) and from
Magnum (addresses), fall back to the declared data when neither answers, and refuse an invalid cluster.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml

from tests.integration.playbook import ROOT, run_playbook

pytestmark = pytest.mark.sandbox
MV = {"OpenStack-API-Version": "container-infra 1.14"}
NG_LABEL = "magnum.openstack.org/nodegroup"
VENV_BIN = Path(sys.executable).parent


def wait_for(what, fn, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = fn()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("timed out waiting for %s" % what)


@pytest.fixture(scope="module")
def bed(sandbox):
    """A GPU nodegroup of two T4 nodes, created through Magnum's API; removed afterwards."""
    import openstack
    from kubernetes import client

    proxy = openstack.connect(
        load_yaml_config=False, load_envvars=False, **sandbox.cloud
    ).container_infrastructure_management
    cluster = sandbox.cluster()["uuid"]
    pool = "inv-%s" % uuid.uuid4().hex[:5]
    path = "/clusters/%s/nodegroups" % cluster
    created = proxy.request(
        path,
        "POST",
        headers=MV,
        raise_exc=False,
        json={
            "name": pool,
            "flavor_id": "g2.5xlarge",
            "node_count": 2,
            "merge_labels": True,
            "labels": {"nvidia_gpu_enabled": "true"},
        },
    )
    assert created.status_code == 202, created.text
    view = wait_for(
        "nodegroup %s" % pool,
        lambda: (lambda r: r.status_code == 200 and r.json()["status"] == "CREATE_COMPLETE" and r.json())(
            proxy.request(path + "/" + pool, "GET", headers=MV, raise_exc=False)
        ),
    )
    core = client.CoreV1Api(sandbox.cp.api_client())
    nodes = wait_for(
        "the nodegroup's Nodes",
        lambda: (lambda items: len(items) == 2 and items)(
            core.list_node(label_selector="%s=%s" % (NG_LABEL, pool)).items
        ),
    )
    internal = {n.metadata.name: next(a.address for a in n.status.addresses if a.type == "InternalIP") for n in nodes}
    yield {"sandbox": sandbox, "pool": pool, "addresses": sorted(view["node_addresses"]), "internal": internal}
    proxy.request(path + "/" + pool, "DELETE", headers=MV, raise_exc=False)
    wait_for(
        "deletion of %s" % pool,
        lambda: proxy.request(path + "/" + pool, "GET", headers=MV, raise_exc=False).status_code == 404,
    )


def cluster_data(bed, **overrides):
    sandbox = bed["sandbox"]
    data = {
        "name": "inv-cluster",
        "kubeconfig": str(sandbox.kubeconfig),
        "magnum": {"cloud": sandbox.cloud, "cluster": sandbox.cluster_name},
        "pools": [
            {"name": bed["pool"], "nodegroup": {"flavor": "g2.5xlarge", "node_count": 2}, "gpu": {"model": "T4"}},
            {"name": "inv-lab", "node_selector": {"gpupool-test": "inv-lab-nobody"}, "gpu": {"model": "T4"}},
        ],
    }
    data.update(overrides)
    return data


def inventory(tmp_path, bed, name="site.pools.yml", **options):
    config = dict({"plugin": "gpupool.core.pools", "clusters": [cluster_data(bed)]}, **options)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def ansible_inventory(path):
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".build", "collections"),
    )
    proc = subprocess.run(
        [str(VENV_BIN / "ansible-inventory"), "-i", str(path), "--list"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    return proc, (json.loads(proc.stdout) if proc.returncode == 0 and proc.stdout.strip() else None)


def group(listing, name):
    return sorted(listing.get(name, {}).get("hosts", []))


def test_nodes_come_from_kubernetes_with_their_internal_ip(tmp_path, bed):
    proc, listing = ansible_inventory(inventory(tmp_path, bed))
    assert listing is not None, proc.stderr
    pool_group = "pool_" + bed["pool"].replace("-", "_")
    assert group(listing, "gpupool_clusters") == ["inv-cluster"]
    assert group(listing, pool_group) == sorted(bed["internal"])
    assert group(listing, "gpupool_nodes") == sorted(bed["internal"])
    assert "pool_inv_lab" in listing["all"]["children"] and group(listing, "pool_inv_lab") == []
    hostvars = listing["_meta"]["hostvars"]
    for name, address in bed["internal"].items():
        assert hostvars[name]["ansible_host"] == address
        assert hostvars[name]["gpupool_pool"] == bed["pool"] and hostvars[name]["gpupool_node_source"] == "kubernetes"
        assert hostvars[name]["gpupool_node_ready"] is True
    assert hostvars["inv-cluster"]["ansible_connection"] == "local"
    assert hostvars["inv-cluster"]["gpupool_cluster"]["name"] == "inv-cluster"
    assert "no source of GPU nodes answered" not in proc.stderr


def test_nodes_come_from_magnum_by_address(tmp_path, bed):
    proc, listing = ansible_inventory(inventory(tmp_path, bed, sources=["magnum"]))
    assert listing is not None, proc.stderr
    hosts = group(listing, "pool_" + bed["pool"].replace("-", "_"))
    assert hosts == bed["addresses"]
    # Magnum's addresses are the Nodes' InternalIPs: both sources describe the same servers.
    assert sorted(bed["internal"].values()) == bed["addresses"]
    assert all(listing["_meta"]["hostvars"][h]["gpupool_node_source"] == "magnum" for h in hosts)


def test_neither_source_answering_leaves_the_declared_data_and_says_why(tmp_path, bed):
    dead = tmp_path / "dead.kubeconfig"
    config = yaml.safe_load(Path(bed["sandbox"].kubeconfig).read_text())
    for entry in config["clusters"]:
        entry["cluster"]["server"] = "https://127.0.0.1:9"  # discard port: refused
    dead.write_text(yaml.safe_dump(config))
    cloud = dict(bed["sandbox"].cloud)
    cloud["auth"] = dict(cloud["auth"], auth_url="http://127.0.0.1:9/identity/v3")
    path = inventory(tmp_path, bed)
    data = yaml.safe_load(path.read_text())
    data["clusters"][0].update(kubeconfig=str(dead), magnum={"cloud": cloud, "cluster": "x"})
    path.write_text(yaml.safe_dump(data))
    proc, listing = ansible_inventory(path)
    assert listing is not None, proc.stderr
    assert group(listing, "gpupool_clusters") == ["inv-cluster"]
    assert group(listing, "gpupool_nodes") == []
    assert "pool_" + bed["pool"].replace("-", "_") in listing["all"]["children"]
    stderr = " ".join(proc.stderr.split())
    assert "cluster inv-cluster: no source of GPU nodes answered" in stderr
    assert "kubernetes: cannot reach the Kubernetes API at https://127.0.0.1:9" in stderr
    assert "magnum:" in stderr and "secret" not in proc.stderr

    data["strict_discovery"] = True
    path.write_text(yaml.safe_dump(data))
    proc, listing = ansible_inventory(path)
    # The plugin fails, so Ansible parses nothing from the file (the playbooks then stop: no cluster in the run).
    assert listing is not None and "gpupool_clusters" not in listing["all"].get("children", []), proc.stdout
    assert "cluster inv-cluster: no source of GPU nodes answered and strict_discovery is set" in " ".join(
        proc.stderr.split()
    )


def test_an_invalid_cluster_fails_the_inventory_with_the_path(tmp_path, bed):
    path = inventory(tmp_path, bed)
    data = yaml.safe_load(path.read_text())
    data["clusters"][0]["pools"][0]["nodegroup"]["node_cout"] = 3
    path.write_text(yaml.safe_dump(data))
    proc = subprocess.run(
        [str(VENV_BIN / "ansible-inventory"), "-i", str(path), "--list"],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, ANSIBLE_INVENTORY_UNPARSED_FAILED="1", ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg")),
    )
    assert proc.returncode != 0
    # The model's path: the plugin's place of the cluster, then the key (the pool's name after its index).
    assert "clusters[0].pools[0] (%s).nodegroup.node_cout" % bed["pool"] in proc.stderr, proc.stderr
    assert "node_count" in proc.stderr


def test_cluster_files_of_a_static_inventory_work_and_playbooks_target_pools(tmp_path, bed):
    # The cluster lives in host_vars/<cluster>/gpupool.yml as in a static inventory; the plugin file points at it.
    (tmp_path / "host_vars" / "inv-cluster").mkdir(parents=True)
    (tmp_path / "host_vars" / "inv-cluster" / "gpupool.yml").write_text(
        yaml.safe_dump({"gpupool_cluster": cluster_data(bed)})
    )
    path = tmp_path / "site.pools.yml"
    # compose: node-side plays here run on the controller (the simulated nodes have no SSH).
    path.write_text(
        yaml.safe_dump(
            {
                "plugin": "gpupool.core.pools",
                "cluster_files": ["host_vars/*/gpupool.yml"],
                "compose": {"ansible_connection": "'local'"},
            }
        )
    )
    res = run_playbook(os.path.join(ROOT, "playbooks", "validate.yml"), str(path), tmp_path)
    assert res.rc == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert "2 pool(s) valid: %s, inv-lab" % bed["pool"] in res.stdout
    play = """
- name: A node-side play on one pool
  hosts: pool_%s
  gather_facts: false
  tasks:
    - name: Where the node is
      ansible.builtin.debug:
        msg: "{{ inventory_hostname }} at {{ ansible_host }} in {{ gpupool_pool }} of {{ gpupool_cluster_host }}"
""" % bed["pool"].replace("-", "_")
    res = run_playbook(play, str(path), tmp_path)
    assert res.rc == 0, res.stdout[-3000:] + res.stderr[-2000:]
    for name, address in bed["internal"].items():
        assert "%s at %s in %s of inv-cluster" % (name, address, bed["pool"]) in res.stdout


ANCHORED_CLUSTER = """\
a100_nodegroup: &a100_ng
  flavor: g4.p2.40g
  node_count: 1
  max_node_count: 4
gpupool_cluster:
  name: anchored
  kubeconfig: /nonexistent
  magnum: {cloud: openstack, cluster: k8s-gpu}
  pools:
    - name: gpu-a100-small
      nodegroup: *a100_ng
      gpu: &a100 {model: A100-40GB, per_node: 2}
    - name: gpu-a100-big
      nodegroup: {<<: *a100_ng, node_count: 2}
      gpu: *a100
"""


def declared_only(tmp_path, cluster_text):
    """A plugin file whose cluster lives in host_vars/anchored/gpupool.yml; no source of nodes is asked."""
    (tmp_path / "host_vars" / "anchored").mkdir(parents=True)
    (tmp_path / "host_vars" / "anchored" / "gpupool.yml").write_text(cluster_text)
    path = tmp_path / "site.pools.yml"
    path.write_text("plugin: gpupool.core.pools\nsources: []\ncluster_files: [host_vars/*/gpupool.yml]\n")
    return path


def test_cluster_files_with_anchors_and_merge_overrides_load_the_overridden_values(tmp_path):
    proc, listing = ansible_inventory(declared_only(tmp_path, ANCHORED_CLUSTER))
    assert listing is not None, proc.stderr
    pools = listing["_meta"]["hostvars"]["anchored"]["gpupool_cluster"]["pools"]
    assert pools[0]["nodegroup"] == {"flavor": "g4.p2.40g", "node_count": 1, "max_node_count": 4}
    assert pools[1]["nodegroup"] == {"flavor": "g4.p2.40g", "node_count": 2, "max_node_count": 4}
    assert "duplicate" not in proc.stderr.lower()


def test_a_key_written_twice_in_a_cluster_file_fails_the_inventory_with_file_and_line(tmp_path):
    twice = ANCHORED_CLUSTER.replace("      gpu: *a100\n", "      gpu: *a100\n      nodegroup: {flavor: g4.p2.80g}\n")
    proc = subprocess.run(
        [str(VENV_BIN / "ansible-inventory"), "-i", str(declared_only(tmp_path, twice)), "--list"],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(
            os.environ,
            ANSIBLE_INVENTORY_UNPARSED_FAILED="1",
            ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
            ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".build", "collections"),
        ),
    )
    assert proc.returncode != 0
    err = " ".join(proc.stderr.split())
    assert (
        "host_vars/anchored/gpupool.yml:16: gpupool_cluster.pools[1] (gpu-a100-big).nodegroup: written twice "
        "(first at line 14): YAML keeps only the last one" in err
    ), proc.stderr
