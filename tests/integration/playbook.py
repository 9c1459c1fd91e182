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
from dataclasses import dataclass

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
    full_env = dict(os.environ)
    full_env.update(
        {
            "ANSIBLE_COLLECTIONS_PATH": os.path.join(ROOT, ".build", "collections"),
            "ANSIBLE_CONFIG": os.path.join(ROOT, "ansible.cfg"),
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_FORCE_COLOR": "0",
            "ANSIBLE_LOCALHOST_WARNING": "false",
            "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false",
            "PATH": VENV_BIN + os.pathsep + full_env.get("PATH", ""),
        }
    )
    full_env.update(env or {})
    proc = subprocess.run(cmd, capture_output=True, text=True, env=full_env, cwd=ROOT, timeout=timeout)
    return PlaybookResult(proc.returncode, proc.stdout, proc.stderr)
