"""gpupool.core.imex through ansible-playbook: host IMEX service and files per mode, fabric through NVML.

Real parts: Ansible (AnsiballZ, check and diff modes), the real pynvml against the fake libnvidia-ml
(testbed/fakenvml, a SIMULATOR of NVML with fabric info), real files under a temporary root.
Stand-in: systemd. There is no systemd here, so `systemctl` on PATH is testbed/systemctl_simulator.py
(a SIMULATOR): it keeps unit state in a JSON file, answers `show`/`start`/`stop`/`enable`/`disable`/
`mask`/`unmask`/`restart` as systemd does (a masked unit refuses to start) and logs every call - the
tests count stops, masks and restarts from that log. What systemd itself would do (run nvidia-imex,
which reads the files) is not exercised.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

import pytest

from testbed import systemctl_simulator

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, ".build", "collections")
UNIT = "nvidia-imex.service"
GB200 = {"model": "GB200", "fabric": {"cluster_uuid": "6b1c2b3c-7a43-4a4e-9e4c-0123456789ab", "clique_id": 3}}
CLIQUE = "6b1c2b3c-7a43-4a4e-9e4c-0123456789ab.3"
MEMBERS = ["10.0.0.11", "10.0.0.12"]
PACKAGE_CONFIG = (
    "# NVIDIA IMEX configuration file (as the package ships it)\nLOG_LEVEL=4\nSERVER_PORT=50000\n"
    "IMEX_CMD_ENABLED=0\nIMEX_NODE_CONFIG_FILE=/etc/nvidia-imex/nodes_config.cfg\n"
)


class Node:
    """One simulated GB200 node: fake NVML, systemctl simulator, a root directory for files."""

    def __init__(self, fake, tmp_path, unit):
        self.fake = fake
        self.root = tmp_path / "root"
        (self.root / "etc/nvidia-imex").mkdir(parents=True)
        (self.root / "etc/nvidia-imex/config.cfg").write_text(PACKAGE_CONFIG)
        self.state = tmp_path / "systemd"
        self.bin = tmp_path / "bin"
        systemctl_simulator.install(self.bin, self.state, {UNIT: unit})

    def units(self):
        return systemctl_simulator.load(self.state)

    def calls(self, verb=None):
        return [c for c in systemctl_simulator.calls(self.state) if verb is None or c[0] == verb]

    def file(self, name):
        path = self.root / "etc/nvidia-imex" / name
        return path.read_text() if path.exists() else None

    def run(self, args, check=False, diff=False):
        """Run gpupool.core.imex once (root under tmp) and return its registered result."""
        return self.play(
            {
                "name": "imex",
                "gpupool.core.imex": dict({"root": str(self.root)}, **args),
                "check_mode": check,
                "diff": diff,
            }
        )

    def play(self, task):
        """Run one task (registered, errors ignored) in ansible-playbook; return its result."""
        directory = tempfile.mkdtemp(prefix="play-", dir=self.fake.directory)
        task = dict(task, register="r", ignore_errors=True)
        save = {
            "name": "save",
            "ansible.builtin.copy": {"content": "{{ r | to_json }}", "dest": os.path.join(directory, "r.json")},
            "check_mode": False,
            "diff": False,
        }
        playbook = os.path.join(directory, "play.yml")
        with open(playbook, "w") as fh:
            json.dump([{"hosts": "localhost", "gather_facts": False, "tasks": [task, save]}], fh)
        env = {
            "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS,
            "ANSIBLE_CONFIG": os.path.join(ROOT, "ansible.cfg"),
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_LOCALHOST_WARNING": "0",
            "PATH": str(self.bin) + os.pathsep + os.environ.get("PATH", ""),
        }
        proc = self.fake.run(
            [
                os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                "-i",
                "localhost,",
                "-c",
                "local",
                "-e",
                "ansible_python_interpreter=%s" % sys.executable,
                playbook,
            ],
            env=env,
            cwd=directory,
            timeout=300,
        )
        path = os.path.join(directory, "r.json")
        if not os.path.exists(path):
            raise AssertionError("ansible-playbook did not finish:\n%s\n%s" % (proc.stdout, proc.stderr))
        with open(path) as fh:
            return json.load(fh)


RUNNING = {"installed": True, "enabled": True, "masked": False, "active": True}
MASKED = {"installed": True, "enabled": False, "masked": True, "active": False}


@pytest.fixture
def gb200(fake_nvml, tmp_path):
    fake_nvml.configure([GB200, GB200])
    return lambda unit=RUNNING: Node(fake_nvml, tmp_path, unit)


def test_driver_managed_stops_disables_and_masks_once(gb200):
    node = gb200(RUNNING)
    first = node.run({"mode": "driver_managed"})
    assert not first.get("failed"), first.get("msg")
    assert first["changed"] and first["actions"] == ["stop", "disable", "mask"]
    assert node.units()[UNIT] == {"installed": True, "enabled": False, "masked": True, "active": False}
    assert first["fabric"]["healthy"] and first["fabric"]["clique"] == CLIQUE
    assert node.file("nodes_config.cfg") is None  # driver-managed writes no IMEX files
    second = node.run({"mode": "driver_managed"})
    assert second["changed"] is False and second["actions"] == []
    assert [c[0] for c in node.calls() if c[0] != "show"] == ["stop", "disable", "mask"]


def test_host_managed_writes_files_starts_and_restarts_only_on_change(gb200):
    node = gb200(MASKED)  # e.g. a node that was driver-managed before
    first = node.run({"mode": "host_managed", "members": MEMBERS, "address": "10.0.0.12"}, diff=True)
    assert not first.get("failed"), first.get("msg")
    assert first["actions"] == ["unmask", "enable", "start"]
    assert node.units()[UNIT] == {"installed": True, "enabled": True, "masked": False, "active": True}
    assert node.file("nodes_config.cfg") == "10.0.0.11\n10.0.0.12\n"
    config = node.file("config.cfg")
    assert config.startswith(
        "# NVIDIA IMEX configuration file (as the package ships it)\nLOG_LEVEL=4\n"
        "SERVER_PORT=50000\nIMEX_CMD_ENABLED=1\n"
    )  # the package's lines kept, ours in place
    assert "IMEX_CMD_UNIX_DOMAIN_PATH=/etc/nvidia-imex/imex_ctrl.sock" in config
    assert first["diff"]["after"]["/etc/nvidia-imex/nodes_config.cfg"] == "10.0.0.11\n10.0.0.12\n"

    again = node.run({"mode": "host_managed", "members": MEMBERS, "address": "10.0.0.12"})
    assert again["changed"] is False and again["actions"] == [] and node.calls("restart") == []

    # a third node joins: only the nodes file changes, and the service restarts once
    grown = node.run({"mode": "host_managed", "members": MEMBERS + ["10.0.0.13"], "address": "10.0.0.12"})
    assert grown["changed"] and grown["actions"] == ["restart"]
    assert grown["files"] == {"/etc/nvidia-imex/nodes_config.cfg": True, "/etc/nvidia-imex/config.cfg": False}
    assert node.file("nodes_config.cfg") == "10.0.0.11\n10.0.0.12\n10.0.0.13\n"
    assert len(node.calls("restart")) == 1 and node.units()[UNIT]["restarts"] == 1
    assert node.run({"mode": "host_managed", "members": MEMBERS + ["10.0.0.13"]})["changed"] is False


def test_check_mode_writes_and_runs_nothing(gb200):
    node = gb200(MASKED)
    planned = node.run({"mode": "host_managed", "members": MEMBERS}, check=True, diff=True)
    assert not planned.get("failed"), planned.get("msg")
    assert planned["changed"] and planned["actions"] == ["unmask", "enable", "start"]
    assert node.file("nodes_config.cfg") is None and node.file("config.cfg") == PACKAGE_CONFIG
    assert [c[0] for c in node.calls()] == ["show"]  # read only
    assert node.units()[UNIT] == MASKED


def test_fabric_not_completed_fails_with_the_reason(fake_nvml, tmp_path):
    in_progress = dict(GB200, fabric=dict(GB200["fabric"], state=2))  # NVML_GPU_FABRIC_STATE_IN_PROGRESS
    fake_nvml.configure([GB200, in_progress])
    node = Node(fake_nvml, tmp_path, MASKED)
    res = node.run({"mode": "host_managed", "members": MEMBERS})
    assert res["failed"]
    assert "not a healthy IMEX member yet" in res["msg"]
    assert "GPU 1 NVLink fabric registration is in progress, not completed" in res["msg"]
    assert res["fabric"]["healthy"] is False and res["fabric"]["clique"] is None
    # the service was still put in place: only the fabric is left to wait for
    assert res["changed"] and node.units()[UNIT]["active"] is True
    relaxed = node.run({"mode": "host_managed", "members": MEMBERS, "require_healthy_fabric": False})
    assert not relaxed.get("failed") and relaxed["fabric"]["healthy"] is False


def test_bad_members_fail_before_anything(gb200):
    node = gb200(MASKED)
    res = node.run({"mode": "host_managed", "members": ["10.0.0.11", "gb200-b"], "address": "10.0.0.99"})
    assert res["failed"]
    assert "'gb200-b' is not an IP address" in res["msg"] and "10.0.0.99 is not a member" in res["msg"]
    assert node.calls() == [] and node.file("nodes_config.cfg") is None


def test_host_managed_needs_the_unit(gb200):
    node = gb200({"installed": False})
    res = node.run({"mode": "host_managed", "members": MEMBERS})
    assert res["failed"] and "nvidia-imex.service is not installed" in res["msg"]
    assert node.file("nodes_config.cfg") is None  # refused before writing
    assert node.run({"mode": "driver_managed"})["changed"] is False  # nothing to keep out of the way


def test_role_follows_the_pool(gb200):
    node = gb200(RUNNING)
    cluster = {
        "name": "c",
        "pools": [
            {
                "name": "gb-host",
                "gpu": {"model": "GB200", "per_node": 4},
                "nvlink": {"mode": "host_imex", "imex_nodes": MEMBERS},
            },
            {"name": "gb-cd", "gpu": {"model": "GB200", "per_node": 4}, "nvlink": {"mode": "compute_domain"}},
            {"name": "t4", "gpu": {"model": "T4"}},
        ],
    }

    def role(pool):
        """The role's last task result (a role's failure is not ignorable from outside: catch it)."""
        try:
            return node.play(
                {
                    "name": "role",
                    "ansible.builtin.include_role": {"name": "gpupool.core.imex"},
                    "vars": {"imex_pool": pool, "imex_cluster": cluster, "imex_root": str(node.root)},
                }
            )
        except AssertionError as exc:
            return {"failed": True, "msg": str(exc)}

    assert not role("gb-host").get("failed")
    assert node.file("nodes_config.cfg") == "10.0.0.11\n10.0.0.12\n" and node.units()[UNIT]["active"]
    assert not role("gb-cd").get("failed")
    assert node.units()[UNIT]["masked"] and not node.units()[UNIT]["active"]
    refused = role("t4")
    assert refused.get("failed") and "pool t4 has nvlink.mode none" in refused["msg"]
