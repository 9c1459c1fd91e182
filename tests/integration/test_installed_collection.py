"""The collection as users receive it (#33): the built tarball installed with `ansible-galaxy collection install`
into a fresh directory, run from a fresh venv that holds only the documented user dependencies (ansible-core, then
the installed collection's requirements.txt), with no repository on any path: no PYTHONPATH, no ANSIBLE_* settings
(so no ansible.cfg of this checkout), a private HOME, the working directory outside the checkout, and the dev venv
off PATH. On the sandbox, by full name: `gpupool.core.validate`, `gpupool.core.site --check --diff` on an empty
cluster (no driver, no nodegroup yet), `gpupool.core.site`, and a second `gpupool.core.site` with changed=0.

Once for each end of the supported ansible-core range (tests/support/user_install.py: the floor of meta/runtime.yml's
requires_ansible, and the newest release for this Python). A module that imports what does not ship (testbed/, a
test helper) fails here: every plugin file is imported in the user's venv, and the playbooks run from it.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import yaml

from tests.support.user_install import (
    NEWEST_CORE,
    OLDEST_CORE,
    ROOT,
    VENV_BIN,
    build_tarball,
    clean_env,
    install_collection,
    user_venv,
)

pytestmark = pytest.mark.sandbox
MV = {"OpenStack-API-Version": "container-infra 1.14"}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The tarball, installed once into a fresh directory (the same files for every ansible-core version)."""
    tmp = tmp_path_factory.mktemp("user")
    home = tmp / "home"
    home.mkdir()
    collections = tmp / "collections"
    path = install_collection(build_tarball(tmp / "dist"), collections, home)
    assert not str(path).startswith(str(ROOT))
    return {"collections": collections, "path": path, "home": home, "tmp": tmp}


def user_environment(installed, venv: Path) -> dict:
    """A user's shell with the venv activated: its bin first, the dev venv and this checkout off PATH."""
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != str(VENV_BIN) and str(ROOT) not in p]
    return clean_env(
        installed["home"],
        ANSIBLE_COLLECTIONS_PATH=str(installed["collections"]),
        PATH=os.pathsep.join([str(venv / "bin"), *path]),
        VIRTUAL_ENV=str(venv),
    )


def test_every_plugin_imports_from_the_installed_copy_alone(installed):
    """Every Python file under plugins/ of the installed copy imports in the user's venv with nothing of this
    checkout on sys.path: an import of testbed/ or of a test helper (which do not ship) fails here."""
    venv = user_venv(NEWEST_CORE, installed["path"] / "requirements.txt")
    script = (
        "import importlib, pathlib, sys\n"
        "root = pathlib.Path(sys.argv[1])\n"
        "sys.path.insert(0, str(root.parents[2]))\n"
        "assert not [p for p in sys.path if p.startswith(sys.argv[2])], sys.path\n"
        "names = sorted('ansible_collections.gpupool.core.' + '.'.join(p.relative_to(root).with_suffix('').parts)\n"
        "               for p in (root / 'plugins').rglob('*.py') if p.name != '__init__.py')\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        "print(len(names), 'imported')\n"
    )
    proc = subprocess.run(
        [str(venv / "bin" / "python"), "-c", script, str(installed["path"]), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=str(installed["home"]),
        env=user_environment(installed, venv),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    count = int(proc.stdout.split()[-2])
    assert count == len([p for p in (installed["path"] / "plugins").rglob("*.py") if p.name != "__init__.py"])
    assert count > 30, proc.stdout


def cluster_inventory(sandbox, names: dict) -> dict:
    """One new cluster on the shared sandbox with its own pool names and driver namespace: a T4 pool and an NVLink
    pool (a ComputeDomain, whose CRD only the DRA driver brings: the empty cluster's dry run must still work)."""
    from testbed import binaries
    from testbed.sandbox import SIMULATION_CHART

    cluster = {
        "name": names["cluster"],
        "kubeconfig": str(sandbox.kubeconfig),
        "magnum": {"cloud": sandbox.cloud, "cluster": sandbox.cluster_name},
        # The sandbox cannot pull NVIDIA's chart: the DRA driver role installs the simulation chart (same name and
        # values keys), as the sandbox's own inventory does (testbed/sandbox.py write_inventory).
        "dra_driver": {
            "chart": str(SIMULATION_CHART),
            "version": yaml.safe_load((SIMULATION_CHART / "Chart.yaml").read_text())["version"],
            "namespace": names["driver_ns"],
        },
        "pools": [
            {
                "name": names["t4"],
                "nodegroup": {"flavor": "g2.5xlarge", "node_count": 1},
                "gpu": {"model": "T4"},
                "sharing": {"time_slicing": {"interval": "Medium"}},
            },
            {
                "name": names["gb200"],
                "nodegroup": {"flavor": "g6.gb200x4", "node_count": 1},
                "gpu": {"model": "GB200", "per_node": 4},
                "nvlink": {
                    "mode": "compute_domain",
                    "compute_domain": {"name": names["domain"], "namespace": names["team_ns"]},
                },
            },
        ],
    }
    host = {
        "ansible_connection": "local",
        "ansible_python_interpreter": "{{ ansible_playbook_python }}",
        # the user's helm (in the execution environment: /usr/local/bin/helm); here the test bed's
        "dra_driver_helm_binary": str(binaries.find("helm", allow_fetch=False).path),
        "gpupool_cluster": cluster,
    }
    return {"all": {"children": {"gpupool_clusters": {"hosts": {names["cluster"]: host}}}}}


def cleanup(sandbox, names: dict) -> None:
    """The run's nodegroups, DeviceClasses, driver release and namespaces go: the sandbox is shared with the rest
    of the session, and a driver release left behind owns the chart's cluster-wide objects."""
    import openstack
    from kubernetes import client

    pools = [names["t4"], names["gb200"]]
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
    sandbox.cp.helm("uninstall", "dra-driver-nvidia-gpu", "-n", names["driver_ns"], "--wait", check=False)
    for namespace in (names["driver_ns"], names["team_ns"]):
        sandbox.cp.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def recap(stdout: str, host: str) -> dict:
    (counts,) = re.findall(r"^%s\s+:\s+(ok=.*)$" % re.escape(host), stdout, re.M)
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", counts)}


@pytest.mark.parametrize("core", [OLDEST_CORE, NEWEST_CORE])
def test_the_installed_collection_validates_dry_runs_converges_and_then_changes_nothing(
    installed, sandbox, core, tmp_path
):
    venv = user_venv(core, installed["path"] / "requirements.txt")
    suffix = uuid.uuid4().hex[:5]
    names = {
        "cluster": "inst-%s" % suffix,
        "t4": "inst-t4-%s" % suffix,
        "gb200": "inst-gb200-%s" % suffix,
        "domain": "inst-cd-%s" % suffix,
        "driver_ns": "inst-dra-%s" % suffix,
        "team_ns": "inst-team-%s" % suffix,
    }
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump(cluster_inventory(sandbox, names)))
    env = user_environment(installed, venv)
    # The tenant's namespace is the platform team's, as on a real cluster (gpupool creates no tenant namespace;
    # the dry run checks that it exists, as the converge needs it).
    sandbox.cp.kubectl("create", "namespace", names["team_ns"])

    def play(name, *args):
        proc = subprocess.run(
            [str(venv / "bin" / "ansible-playbook"), "-i", str(inventory), "gpupool.core.%s" % name, *args],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=str(tmp_path),
            env=env,
        )
        assert proc.returncode == 0, "%s %s (ansible-core %s):\n%s\n%s" % (
            name,
            " ".join(args),
            core,
            proc.stdout[-6000:],
            proc.stderr[-3000:],
        )
        return proc.stdout

    try:
        version = subprocess.run(
            [str(venv / "bin" / "ansible-playbook"), "--version"], capture_output=True, text=True, env=env, timeout=60
        ).stdout
        assert "[core %s]" % core in version, version

        out = play("validate")
        assert recap(out, names["cluster"])["failed"] == 0

        out = play("site", "--check", "--diff")
        assert recap(out, names["cluster"])["failed"] == 0
        # named whether the shared sandbox serves its CRD already or not ("... once the DRA driver's CRDs are
        # installed"; tests/integration/test_first_dry_run.py runs the empty cluster's case on its own apiserver)
        assert re.search(r"ComputeDomain \S*%s" % names["domain"], out), out
        assert sandbox.cp.helm("status", "dra-driver-nvidia-gpu", "-n", names["driver_ns"], check=False).returncode
        assert not _nodegroup_exists(sandbox, names["t4"])  # check mode created nothing

        out = play("site")
        assert recap(out, names["cluster"])["changed"] > 0
        assert _nodegroup_exists(sandbox, names["t4"]) and _nodegroup_exists(sandbox, names["gb200"])

        out = play("site")
        assert recap(out, names["cluster"])["changed"] == 0, out[-6000:]
    finally:
        cleanup(sandbox, names)


def _nodegroup_exists(sandbox, name) -> bool:
    try:
        sandbox.magnum.nodegroup(sandbox.cluster_name, name)
    except Exception:  # the emulator's not-found error
        return False
    return True
