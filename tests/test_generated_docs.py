"""Generated docs (inventory reference, MIG catalog, compatibility, role READMEs) match the code."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))

import gen_docs  # noqa: E402
import role_readmes  # noqa: E402


def test_generated_docs_are_current():
    stale = [
        os.path.relpath(path, gen_docs.ROOT)
        for path, text in gen_docs.targets().items()
        if not os.path.exists(path) or open(path).read() != text
    ]
    assert not stale, "run `make docs`: %s out of date" % ", ".join(stale)


def test_every_role_has_a_generated_readme():
    """Galaxy's importer refuses a collection with a role that has no README (and each role needs a spec for one)."""
    base = os.path.join(gen_docs.ROOT, "roles")
    missing = [r for r in sorted(os.listdir(base)) if r not in role_readmes.roles()]
    assert not missing, "roles without meta/argument_specs.yml, so without a README: %s" % ", ".join(missing)
    assert set(gen_docs.targets()) >= {os.path.join(base, r, "README.md") for r in os.listdir(base)}


def test_readme_examples_are_playbooks_ansible_accepts(tmp_path):
    """Each README's example is a playbook that `ansible-playbook --syntax-check` accepts (the role resolves)."""
    plays = []
    for path, text in role_readmes.targets().items():
        (block,) = re.findall(r"```yaml\n(.*?)```", text, re.S)
        example = yaml.safe_load(block)
        assert isinstance(example, list) and example, "%s: the example is no playbook" % path
        plays += example
    playbook = tmp_path / "examples.yml"
    playbook.write_text(yaml.safe_dump(plays, sort_keys=False))
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "--syntax-check", str(playbook)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,  # its output is the assertion's message
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
