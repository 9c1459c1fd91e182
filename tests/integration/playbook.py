"""Run ansible-playbook as a user would, and read its recap and JSON results.

Shared by integration tests: the modules run through real Ansible (AnsiballZ,
argument validation, check/diff modes), with the collection found through
ANSIBLE_COLLECTIONS_PATH at .build/collections.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV_BIN = os.path.dirname(sys.executable)


@dataclass
class PlaybookResult:
    rc: int
    stdout: str
    stderr: str

    @property
    def recap(self):
        """{host: {ok, changed, failed, ...}} from the PLAY RECAP."""
        out = {}
        for host, counts in re.findall(r"^(\S+)\s+:\s+(ok=.*)$", self.stdout, re.M):
            out[host] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", counts)}
        return out

    def changed(self, host="localhost"):
        return self.recap[host]["changed"]


def run_playbook(
    playbook, inventory, tmp_path, check=False, diff=False, extra_vars=None, env=None, timeout=600, args=()
):
    """playbook: a path or YAML text; inventory: a path or YAML text; args: more command-line arguments."""
    if "\n" in playbook:
        path = tmp_path / "playbook.yml"
        path.write_text(playbook)
        playbook = str(path)
    if "\n" in inventory:
        inv = tmp_path / "inventory.yml"
        inv.write_text(inventory)
        inventory = str(inv)
    cmd = [os.path.join(VENV_BIN, "ansible-playbook"), "-i", inventory, playbook]
    if check:
        cmd.append("--check")
    if diff:
        cmd.append("--diff")
    if extra_vars:
        cmd += ["-e", json.dumps(extra_vars)]
    cmd += list(args)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=playbook_env(env), cwd=ROOT, timeout=timeout)
    return PlaybookResult(proc.returncode, proc.stdout, proc.stderr)


def playbook_env(extra=None):
    """The environment ansible-playbook runs with in these tests: this checkout's collection, its ansible.cfg, the
    venv's binaries first, no colour."""
    env = dict(os.environ)
    env.update(
        {
            "ANSIBLE_COLLECTIONS_PATH": os.path.join(ROOT, ".build", "collections"),
            "ANSIBLE_CONFIG": os.path.join(ROOT, "ansible.cfg"),
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_FORCE_COLOR": "0",
            "ANSIBLE_LOCALHOST_WARNING": "false",
            "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false",
            "PATH": VENV_BIN + os.pathsep + env.get("PATH", ""),
        }
    )
    env.update(extra or {})
    return env


def site_argv(directory, host, cluster, variables=None, playbook="site.yml", host_vars=None):
    """ansible-playbook's argv for playbooks/<playbook> on an inventory of one cluster host (`host`, run on the
    controller with this Python, its gpupool_cluster `cluster`, more `host_vars`), written to a new file in
    `directory`; `variables`: extra vars (-e)."""
    path = directory / ("inventory-%d.yml" % time.monotonic_ns())
    vars_ = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "gpupool_cluster": cluster}
    vars_.update(host_vars or {})
    path.write_text(yaml.safe_dump({"all": {"children": {"gpupool_clusters": {"hosts": {host: vars_}}}}}))
    argv = [os.path.join(VENV_BIN, "ansible-playbook"), "-i", str(path), os.path.join(ROOT, "playbooks", playbook)]
    if variables:
        argv += ["-e", json.dumps(variables)]
    return argv


def recap_changed(stdout, host):
    """The changed count of `host` in a PLAY RECAP."""
    return int(re.search(r"^%s\s+: ok=\d+\s+changed=(\d+)" % re.escape(host), stdout, re.M).group(1))
