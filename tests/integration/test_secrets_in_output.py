"""Secrets never reach the output, even at -vvv: the Magnum cloud's password, an application credential's
secret, a Kubernetes bearer token and the kubeconfig's contents (client key and certificate data).

One ansible-playbook run at -vvv: playbooks/site.yml on an inventory whose cluster carries a password-auth
Magnum cloud (the emulator checks the password) and a kubeconfig with a client certificate; then tasks that
fail with an application credential and with a bearer token (their error paths print too).

Then an inline cloud through run_changes.yml (site.yml with gpupool_node_count, run by ansible-runner as AWX runs
it) and teardown.yml at -vvv, with the DRA driver from a chart repository behind basic auth: no secret in the
output, in any ansible-runner event, or on the command line of any child process (recorded by shims and read
from /proc while the runs go).
"""

from __future__ import annotations

import base64
import json
import os
import sys
import threading
import uuid
from pathlib import Path

import yaml

from tests.integration import k8s_helpers as h
from tests.integration.playbook import ROOT, run_playbook

PASSWORD = "pw-7d3c91e2-must-not-print"
APP_SECRET = "appcred-5b8e04aa-must-not-print"
TOKEN = "token-c2f61d9b-must-not-print"


def kubeconfig_secrets(path):
    """Strings of the kubeconfig that must never be printed: its key and certificate data, as in the file
    and decoded (PEM body lines)."""
    user = yaml.safe_load(Path(path).read_text())["users"][0]["user"]
    out = []
    for field in ("client-key-data", "client-certificate-data"):
        data = user[field]
        out.append(data[:40])
        pem = base64.b64decode(data).decode()
        out += [line for line in pem.splitlines() if line and not line.startswith("-----")][:2]
    return out


def test_no_secret_in_the_output_at_vvv(control_plane, magnum_factory, tmp_path):
    emu = magnum_factory(password=PASSWORD)
    kubeconfig = control_plane.mint_kubeconfig("gpupool-secrets", ["system:masters"])
    cloud = emu.cloud_config()
    assert cloud["auth"]["password"] == PASSWORD
    app_cloud = {
        "auth_type": "v3applicationcredential",
        "region_name": cloud["region_name"],
        "auth": {
            "auth_url": cloud["auth"]["auth_url"],
            "application_credential_id": "4e1f0c2d",
            "application_credential_secret": APP_SECRET,
        },
    }
    cluster = {
        "name": "secrets",
        "kubeconfig": str(kubeconfig),
        # No DRA driver chart or helm on this bed: the driver role (tested in test_dra_driver_module.py and
        # molecule) is off, so site.yml runs what this test is about.
        "dra_driver": {"enabled": False},
        "magnum": {"cloud": cloud, "cluster": "k8s"},
        "pools": [
            {"name": "secrets-t4", "gpu": {"model": "T4"}, "nodegroup": {"flavor": "g2.5xlarge", "node_count": 1}}
        ],
    }
    inventory = yaml.safe_dump(
        {
            "all": {
                "children": {
                    "gpupool_clusters": {
                        "hosts": {
                            "secrets": {
                                "ansible_connection": "local",
                                "ansible_python_interpreter": h.PYTHON,
                                "gpupool_cluster": cluster,
                                "app_cloud": app_cloud,
                                "bearer_token": TOKEN,
                            }
                        }
                    }
                }
            }
        }
    )
    playbook = [
        {"import_playbook": str(Path(ROOT) / "playbooks" / "site.yml")},
        {
            "name": "Error paths",
            "hosts": "gpupool_clusters",
            "gather_facts": False,
            "tasks": [
                {
                    "name": "Magnum with an application credential the cloud refuses",
                    "gpupool.core.nodegroup_info": {"cloud": "{{ app_cloud }}", "cluster": "k8s"},
                    "register": "app",
                    "ignore_errors": True,
                },
                {
                    "name": "Kubernetes with a bearer token",
                    "gpupool.core.node_pool": {
                        "cluster": "{{ gpupool_cluster }}",
                        "api_key": "{{ bearer_token }}",
                        "host": control_plane.server,
                        "validate_certs": False,
                    },
                    "register": "token",
                    "ignore_errors": True,
                },
                {"name": "Both ran", "ansible.builtin.assert": {"that": ["app is failed"]}},
            ],
        },
    ]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(playbook, sort_keys=False))
    res = run_playbook(str(tmp_path / "play.yml"), inventory, tmp_path, extra_vars=None, env={"ANSIBLE_VERBOSITY": "3"})
    out = res.stdout + res.stderr
    assert "PLAY RECAP" in out and "secrets-t4" in out, out[-3000:]
    assert res.recap["secrets"]["failed"] == 0, out[-5000:]  # site.yml converged, the error paths ran
    # really at -vvv: the steps' invocations (their options, secrets masked) are in the output
    assert "module_args" in out and "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER" in out
    assert emu.nodegroup("k8s", "secrets-t4")["node_count"] == 1  # the password was used
    leaked = [s for s in [PASSWORD, APP_SECRET, TOKEN] + kubeconfig_secrets(kubeconfig) if s in out]
    assert leaked == []


# ---- run_changes.yml and teardown.yml at -vvv, the ansible-runner event stream, every child's argv --------------
class ArgvRecorder:
    """What every child process gpupool starts was given on its command line: `helm` (and a module's Python, if
    any step ran as a module) are shims first on PATH (and ansible_python_interpreter) that append their argv to
    a log and exec the real binary (which does the work); and a sampler reads /proc/*/cmdline of every process
    on the host meanwhile (whatever else runs: ansible's workers, /bin/sh)."""

    def __init__(self, tmp_path, real_helm):
        self.dir = tmp_path / "shims"
        self.dir.mkdir()
        self.log = tmp_path / "argv.log"
        self.log.touch()
        for name, real in (("helm", real_helm), ("python", sys.executable)):
            shim = self.dir / name
            shim.write_text('#!/bin/sh\necho "$0 $*" >> %s\nexec %s "$@"\n' % (self.log, real))
            shim.chmod(0o755)
        self.seen = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self):
        while not self._stop.wait(0.02):
            for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
                try:
                    self.seen.add(cmdline.read_bytes().replace(b"\0", b" ").decode("utf-8", "replace"))
                except OSError:
                    pass

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def recorded(self):
        return self.log.read_text().splitlines()


def test_no_secret_from_run_changes_teardown_events_or_argv(
    control_plane, magnum_factory, private_chart_repo, tmp_path
):
    import ansible_runner

    from tests.fixtures.helm_charts import REPO_PASSWORD, REPO_USER

    served_before = len(private_chart_repo.requests)  # the repository is the session's: other tests' requests too
    emu = magnum_factory(password=PASSWORD)
    cloud = emu.cloud_config()
    app_cloud = {
        "auth_type": "v3applicationcredential",
        "region_name": cloud["region_name"],
        "auth": {
            "auth_url": cloud["auth"]["auth_url"],
            "application_credential_id": "4e1f0c2d",
            "application_credential_secret": APP_SECRET,
        },
    }
    tag = uuid.uuid4().hex[:6]
    pool, namespace = "sec-t4-%s" % tag, "sec-dra-%s" % tag
    kubeconfig = control_plane.mint_kubeconfig("gpupool-secrets-%s" % tag, ["system:masters"])
    recorder = ArgvRecorder(tmp_path, private_chart_repo.helm)

    def inventory(magnum_cloud):
        cluster = {
            "name": "sec-%s" % tag,
            "kubeconfig": str(kubeconfig),
            # the driver from a chart repository behind basic auth: the step's registry credentials are used
            "dra_driver": {
                "chart": "dra-driver-nvidia-gpu",
                "repository": private_chart_repo.url,
                "version": "0.5.1",
                "namespace": namespace,
            },
            "magnum": {"cloud": magnum_cloud, "cluster": "k8s"},
            "pools": [{"name": pool, "gpu": {"model": "T4"}, "nodegroup": {"flavor": "g2.5xlarge", "node_count": 1}}],
        }
        host = {
            "ansible_connection": "local",
            "ansible_python_interpreter": str(recorder.dir / "python"),
            "gpupool_cluster": cluster,
            "dra_driver_registry_username": REPO_USER,
            "dra_driver_registry_password": REPO_PASSWORD,
            "dra_driver_wait": False,  # no simulator plays the driver's pods on this bed
        }
        return {"all": {"children": {"gpupool_clusters": {"hosts": {"sec-%s" % tag: host}}}}}

    env = {
        "ANSIBLE_COLLECTIONS_PATH": os.path.join(ROOT, ".build", "collections"),
        "ANSIBLE_CONFIG": os.path.join(ROOT, "ansible.cfg"),
        "ANSIBLE_NOCOLOR": "1",
        "PATH": os.pathsep.join([str(recorder.dir), os.path.dirname(sys.executable), os.environ.get("PATH", "")]),
    }
    secrets = [PASSWORD, APP_SECRET, REPO_PASSWORD]
    try:
        with recorder:
            # site.yml with this run's change (run_changes.yml's set_fact), as AWX runs it: ansible-runner at -vvv
            pdd = tmp_path / "pdd"
            (pdd / "inventory").mkdir(parents=True)
            (pdd / "inventory" / "hosts.yml").write_text(yaml.safe_dump(inventory(cloud)))
            runner = ansible_runner.run(
                private_data_dir=str(pdd),
                playbook=str(Path(ROOT) / "playbooks" / "site.yml"),
                extravars={"gpupool_pools": pool, "gpupool_node_count": 2},
                envvars=env,
                verbosity=3,
                quiet=True,
            )
            stdout = runner.stdout.read()
            assert runner.status == "successful", stdout[-5000:]
            events = [json.dumps(e, default=str) for e in runner.events]
            # teardown.yml at -vvv with an application credential (the emulator refuses it: its error path prints)
            (tmp_path / "teardown-inventory.yml").write_text(yaml.safe_dump(inventory(app_cloud)))
            teardown = run_playbook(
                str(Path(ROOT) / "playbooks" / "teardown.yml"),
                str(tmp_path / "teardown-inventory.yml"),
                tmp_path,
                extra_vars={"gpupool_pools": pool},
                env=dict(env, ANSIBLE_VERBOSITY="3"),
            )
        # the runs did what they say: the pool resized, the driver installed from the private repository
        assert emu.nodegroup("k8s", pool)["node_count"] == 2
        assert "pool %s for this run: nodegroup.node_count 2" % pool in stdout
        assert "module_args" in stdout and "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER" in stdout  # really -vvv
        served = private_chart_repo.requests[served_before:]
        assert (REPO_USER, 200) in served and (None, 401) not in served
        teardown_out = teardown.stdout + teardown.stderr
        assert "tearing down %s" % pool in teardown_out and "module_args" in teardown_out, teardown_out[-3000:]
        helm_calls = [line for line in recorder.recorded() if line.split(" ", 1)[0].endswith("/helm")]
        assert any(" upgrade " in line for line in helm_calls) and any(" repo add " in line for line in helm_calls)
        leaks = {
            "stdout of site.yml (ansible-runner)": [s for s in secrets if s in stdout],
            "ansible-runner events": [s for s in secrets if any(s in e for e in events)],
            "teardown.yml at -vvv": [s for s in secrets if s in teardown_out],
            "recorded argv": [s for s in secrets if any(s in line for line in recorder.recorded())],
            "argv in /proc": [s for s in secrets if any(s in line for line in recorder.seen)],
        }
        assert leaks == {k: [] for k in leaks}
        assert len(events) > 20 and len(recorder.seen) > 10
    finally:
        control_plane.helm("uninstall", "dra-driver-nvidia-gpu", "-n", namespace, "--wait", check=False)
        control_plane.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


# ---- secrets that are not strings: a numeric password and a TOTP passcode (issue #32) ---------------------------
NUMERIC_PASSWORD = 123456789  # YAML reads both as int: masked by their text, whatever their type
PASSCODE = 314159


def test_a_numeric_password_and_a_passcode_are_in_no_output_nor_event_at_vvv(control_plane, magnum_factory, tmp_path):
    import ansible_runner

    emu = magnum_factory(password=str(NUMERIC_PASSWORD))
    cloud = emu.cloud_config()
    # password + TOTP (keystoneauth's v3multifactor); the emulator checks the password, the passcode travels with it
    cloud.update(auth_type="v3multifactor", auth_methods=["v3password", "v3totp"])
    cloud["auth"].update(password=NUMERIC_PASSWORD, passcode=PASSCODE)
    tag = uuid.uuid4().hex[:6]
    pool = "num-t4-%s" % tag
    kubeconfig = control_plane.mint_kubeconfig("gpupool-numeric-%s" % tag, ["system:masters"])
    cluster = {
        "name": "num-%s" % tag,
        "kubeconfig": str(kubeconfig),
        "dra_driver": {"enabled": False},
        "magnum": {"cloud": cloud, "cluster": "k8s"},
        "pools": [{"name": pool, "gpu": {"model": "T4"}, "nodegroup": {"flavor": "g2.5xlarge", "node_count": 1}}],
    }
    host = {"ansible_connection": "local", "ansible_python_interpreter": h.PYTHON, "gpupool_cluster": cluster}
    pdd = tmp_path / "pdd"
    (pdd / "inventory").mkdir(parents=True)
    # written as YAML, as an inventory or an AWX survey would hold it: the numbers stay numbers
    text = yaml.safe_dump({"all": {"children": {"gpupool_clusters": {"hosts": {"num-%s" % tag: host}}}}})
    assert "password: %d\n" % NUMERIC_PASSWORD in text and "passcode: %d\n" % PASSCODE in text
    (pdd / "inventory" / "hosts.yml").write_text(text)
    env = {
        "ANSIBLE_COLLECTIONS_PATH": os.path.join(ROOT, ".build", "collections"),
        "ANSIBLE_CONFIG": os.path.join(ROOT, "ansible.cfg"),
        "ANSIBLE_NOCOLOR": "1",
    }
    runner = ansible_runner.run(
        private_data_dir=str(pdd),
        playbook=str(Path(ROOT) / "playbooks" / "site.yml"),
        envvars=env,
        verbosity=3,
        quiet=True,
    )
    stdout = runner.stdout.read()
    assert runner.status == "successful", stdout[-5000:]
    assert emu.nodegroup("k8s", pool)["node_count"] == 1  # the password (and passcode) were used
    events = [json.dumps(e, default=str) for e in runner.events]
    forms = {str(NUMERIC_PASSWORD), str(PASSCODE), json.dumps(str(NUMERIC_PASSWORD)), json.dumps(str(PASSCODE))}
    leaks = {
        "stdout": sorted(s for s in forms if s in stdout),
        "events": sorted(s for s in forms if any(s in e for e in events)),
    }
    assert leaks == {"stdout": [], "events": []}
    assert "module_args" in stdout and "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER" in stdout  # really -vvv
    assert len(events) > 20
