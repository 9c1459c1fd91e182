"""Secrets never reach the output, even at -vvv: the Magnum cloud's password, an application credential's
secret, a Kubernetes bearer token and the kubeconfig's contents (client key and certificate data).

One ansible-playbook run at -vvv: playbooks/site.yml on an inventory whose cluster carries a password-auth
Magnum cloud (the emulator checks the password) and a kubeconfig with a client certificate; then tasks that
fail with an application credential and with a bearer token (their error paths print too).
"""

from __future__ import annotations

import base64
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
