"""A surveyed job run the way AWX runs it: ansible-runner's Python API on a private data directory laid out as AWX
lays it out, from the project template the collection ships (extensions/awx/templates/project), with the credentials
of the shipped credential types injected, against the sandbox.

What AWX does and this test reproduces (ansible-runner docs "intro"; AWX docs/collections.md):
- credentials: each credential type's injectors (extensions/awx/templates/configure.yml) rendered over the
  credential's inputs - the kubeconfig file and K8S_AUTH_KUBECONFIG, the Magnum cloud's clouds.yaml and
  OS_CLIENT_CONFIG_FILE - into the job's environment; the cluster description names only `magnum.cloud`;
- inventory update: the inventory source (the project's gpupool.core.pools file) is parsed with `ansible-inventory
  --list --export` with the kubeconfig credential, and a job gets the result as an executable script in inventory/;
- project update: the project is checked out into project/ (the job's working directory), and the collections of its
  collections/requirements.yml are installed into requirements_collections/ (here: from this checkout's tarball);
- a launch of the job template "gpupool converge" with its survey: the answers in env/extravars; runner settings in
  env/settings; the template's playbook;
- the job's result: artifacts/<ident>/status and rc, and the playbook_on_stats event in job_events/.
Two runs with the same survey answers: the first changes the selected pool, the second changes nothing; no event of
either holds the cloud's password.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml

from testbed.sandbox import SIMULATION_CHART
from tests.support.awx_objects import AWX, configure_play, inject, named
from tests.support.user_install import build_tarball

pytestmark = pytest.mark.sandbox
VENV_BIN = Path(sys.executable).parent
MV = {"OpenStack-API-Version": "container-infra 1.14"}


def clean_env(**extra) -> dict:
    """No trace of this checkout: collections only from where AWX would put them. helm is on PATH, as the
    execution environment (extensions/ee/execution-environment.yml) puts it there for the DRA driver role."""
    from testbed import binaries

    helm_dir = str(binaries.find("helm", allow_fetch=False).path.parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PYTHONPATH", "K8S_AUTH", "OS_"))}
    env.update(PATH=os.pathsep.join([str(VENV_BIN), helm_dir, env.get("PATH", "")]), ANSIBLE_NOCOLOR="1", **extra)
    return env


def survey_answers(template: dict, answers: dict) -> dict:
    """The extra vars a launch with this survey sets: one answer per question of the template's survey, no more."""
    variables = {q["variable"] for q in template["survey_spec"]["spec"]}
    assert set(answers) == variables, (sorted(answers), sorted(variables))
    return answers


@pytest.fixture(scope="module")
def job(sandbox, tmp_path_factory):
    """A private data directory for the job template "gpupool converge" with survey answers, and cleanup."""
    suffix = uuid.uuid4().hex[:5]
    cluster, selected, other = "awx-%s" % suffix, "awx-t4-%s" % suffix, "awx-h100-%s" % suffix
    driver_namespace = "awx-dra-%s" % suffix
    tmp = tmp_path_factory.mktemp("awx-job")
    pdd = tmp / "private_data_dir"
    for sub in ("inventory", "env", "requirements_collections"):
        (pdd / sub).mkdir(parents=True)

    # Credentials, injected from the shipped credential types: a kubeconfig and the Magnum cloud under its own name.
    cloud = sandbox.cloud
    cloud_name = "site-magnum-%s" % suffix
    injected = inject("gpupool kubeconfig", {"kubeconfig": Path(sandbox.kubeconfig).read_text()}, tmp / "creds")
    injected.update(
        inject(
            "gpupool magnum cloud",
            {"cloud_name": cloud_name, "region_name": cloud.get("region_name") or "", **cloud["auth"]},
            tmp / "creds",
        )
    )
    assert set(injected) == {"K8S_AUTH_KUBECONFIG", "OS_CLIENT_CONFIG_FILE"}

    # Project update: the shipped project template with the site's cluster file, and its collections/requirements.yml
    # satisfied the way AWX installs project requirements (from this checkout's tarball: the same release).
    shutil.copytree(AWX / "project", pdd / "project")
    project = pdd / "project"
    requirements = yaml.safe_load((project / "collections" / "requirements.yml").read_text())
    assert [c["name"] for c in requirements["collections"]] == ["gpupool.core"]
    tarball = build_tarball(tmp / "dist")
    collections = pdd / "requirements_collections"
    install = subprocess.run(
        [str(VENV_BIN / "ansible-galaxy"), "collection", "install", "--offline", "-p", str(collections), str(tarball)],
        capture_output=True,
        text=True,
        timeout=300,
        env=clean_env(ANSIBLE_COLLECTIONS_PATH=str(collections)),
        cwd=tmp,
    )
    assert install.returncode == 0, install.stdout + install.stderr

    # The site's cluster: no kubeconfig, no cloud secrets - the credentials give them.
    declared = {
        "name": cluster,
        "magnum": {"cloud": cloud_name, "cluster": sandbox.cluster_name},
        # As the sandbox's own inventory does: NVIDIA's chart cannot be pulled here, so the DRA driver role
        # installs the simulation chart (same name and values keys; the DRA driver simulator plays its pods).
        "dra_driver": {
            "chart": str(SIMULATION_CHART),
            "version": yaml.safe_load((SIMULATION_CHART / "Chart.yaml").read_text())["version"],
            "namespace": driver_namespace,
        },
        "pools": [
            {
                "name": selected,
                "nodegroup": {"flavor": "g2.5xlarge", "node_count": 1},
                "gpu": {"model": "T4"},
                "sharing": {"time_slicing": {"interval": "Medium"}},
            },
            {
                "name": other,
                "nodegroup": {"flavor": "g5.h100x4", "node_count": 1},
                "gpu": {"model": "H100-80GB", "per_node": 4},
            },
        ],
    }
    host_vars = project / "inventory" / "host_vars"
    shutil.rmtree(host_vars)
    (host_vars / cluster).mkdir(parents=True)
    (host_vars / cluster / "gpupool.yml").write_text(yaml.safe_dump({"gpupool_cluster": declared}))

    # Inventory update: the inventory source's file, parsed as AWX parses it, with the source's credential.
    source = named("inventory_source", "gpupool pools")
    assert source["credential"] == "{{ gpupool_awx_kubeconfig_credential }}"
    source_path = configure_play()["vars"]["gpupool_awx_inventory_file"]
    imported = subprocess.run(
        [str(VENV_BIN / "ansible-inventory"), "-i", str(project / source_path), "--list", "--export"],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env(ANSIBLE_COLLECTIONS_PATH=str(collections), K8S_AUTH_KUBECONFIG=injected["K8S_AUTH_KUBECONFIG"]),
        cwd=project,
    )
    assert imported.returncode == 0, imported.stderr
    listing = json.loads(imported.stdout)
    assert listing["gpupool_clusters"]["hosts"] == [cluster]
    script = pdd / "inventory" / "hosts"
    script.write_text(
        "#!%s\nimport json, sys\nprint(json.dumps(%r) if '--list' in sys.argv else '{}')\n" % (sys.executable, listing)
    )
    script.chmod(0o700)

    # Launch of "gpupool converge": its survey's answers, its playbook, both credentials' environment.
    template = named("job_template", "gpupool converge")
    assert template["credentials"] == [
        "{{ gpupool_awx_kubeconfig_credential }}",
        "{{ gpupool_awx_openstack_credential }}",
    ]
    survey = survey_answers(template, {"gpupool_limit": cluster, "gpupool_pools": selected})
    (pdd / "env" / "extravars").write_text(yaml.safe_dump(survey))
    (pdd / "env" / "settings").write_text(
        yaml.safe_dump({"idle_timeout": 600, "job_timeout": 900, "suppress_ansible_output": True})
    )
    (pdd / "env" / "envvars").write_text(
        yaml.safe_dump({"ANSIBLE_COLLECTIONS_PATH": str(collections), "ANSIBLE_NOCOLOR": "1", **injected})
    )
    yield {
        "pdd": pdd,
        "playbook": template["playbook"],
        "cluster": cluster,
        "selected": selected,
        "other": other,
        "sandbox": sandbox,
    }
    cleanup(sandbox, [selected, other], driver_namespace)


def cleanup(sandbox, pools, driver_namespace):
    """The job's nodegroups, DeviceClasses and DRA driver release go: the sandbox is shared with the rest of the
    session, and a release left behind owns the chart's cluster-wide objects (DeviceClasses, ClusterRoles), so
    every later install of the driver chart would be refused."""
    import openstack
    from kubernetes import client

    proxy = openstack.connect(
        load_yaml_config=False, load_envvars=False, **sandbox.cloud
    ).container_infrastructure_management
    path = "/clusters/%s/nodegroups/" % sandbox.cluster()["uuid"]
    for pool in pools:
        proxy.request(path + pool, "DELETE", headers=MV, raise_exc=False)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(
        proxy.request(path + p, "GET", headers=MV, raise_exc=False).status_code != 404 for p in pools
    ):
        time.sleep(0.2)
    api = client.CustomObjectsApi(sandbox.cp.api_client())
    for pool in pools:
        for item in api.list_cluster_custom_object(
            "resource.k8s.io", "v1", "deviceclasses", label_selector="gpupool.io/pool=%s" % pool
        )["items"]:
            api.delete_cluster_custom_object("resource.k8s.io", "v1", "deviceclasses", item["metadata"]["name"])
    sandbox.cp.helm("uninstall", "dra-driver-nvidia-gpu", "-n", driver_namespace, "--wait", check=False)
    sandbox.cp.kubectl("delete", "namespace", driver_namespace, "--wait=false", check=False)


def run_job(pdd: Path, ident: str, playbook: str):
    import ansible_runner

    # ansible-runner starts ansible-playbook with this process's environment plus env/envvars.
    saved, env = dict(os.environ), clean_env()
    os.environ.clear()
    os.environ.update(env)
    try:
        return ansible_runner.run(private_data_dir=str(pdd), playbook=playbook, ident=ident)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def stats_event(pdd: Path, ident: str) -> dict:
    """The playbook_on_stats event from the job's artifacts (what AWX stores as the job's host summaries)."""
    events = [json.loads(p.read_text()) for p in (pdd / "artifacts" / ident / "job_events").glob("*.json")]
    (stats,) = [e for e in events if e.get("event") == "playbook_on_stats"]
    return stats["event_data"]


def leaked_password(pdd: Path, ident: str, password: str) -> list:
    """The job's events (every field, as AWX stores them) that hold the inline cloud's password, JSON or YAML."""
    forms = ['"password": %s' % json.dumps(password), "password: %s" % password]
    out = []
    for path in sorted((pdd / "artifacts" / ident / "job_events").glob("*.json")):
        text = json.dumps(json.loads(path.read_text()))
        if any(form in text or json.dumps(form)[1:-1] in text for form in forms):
            out.append(path.name)
    return out


def nodegroup_exists(sandbox, name) -> bool:
    try:
        sandbox.magnum.nodegroup(sandbox.cluster_name, name)
    except Exception:  # the emulator's not-found error
        return False
    return True


def test_a_job_converges_the_surveyed_pool_and_a_second_job_changes_nothing(job):
    pdd = job["pdd"]
    first = run_job(pdd, "converge-1", job["playbook"])
    stdout = (pdd / "artifacts" / "converge-1" / "stdout").read_text()
    assert first.status == "successful", stdout[-4000:]
    assert (pdd / "artifacts" / "converge-1" / "status").read_text().strip() == "successful"
    assert (pdd / "artifacts" / "converge-1" / "rc").read_text().strip() == "0"
    stats = stats_event(pdd, "converge-1")
    assert stats["changed"].get(job["cluster"], 0) > 0 and stats["failures"] == {}
    # No event holds the cloud's password (only the clouds.yaml the credential wrote does)
    password = job["sandbox"].cloud["auth"]["password"]
    assert leaked_password(pdd, "converge-1", password) == []
    # The survey's pool answer was honoured: only that pool got a nodegroup.
    assert nodegroup_exists(job["sandbox"], job["selected"])
    assert not nodegroup_exists(job["sandbox"], job["other"])

    second = run_job(pdd, "converge-2", job["playbook"])
    assert second.status == "successful", (pdd / "artifacts" / "converge-2" / "stdout").read_text()[-4000:]
    assert (pdd / "artifacts" / "converge-2" / "status").read_text().strip() == "successful"
    stats = stats_event(pdd, "converge-2")
    assert stats["changed"] == {} and stats["failures"] == {}
    assert stats["ok"].get(job["cluster"], 0) > 0
    assert second.stats["changed"] == {}
    assert leaked_password(pdd, "converge-2", password) == []
