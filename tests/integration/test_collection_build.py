"""Packaging: the tarball `ansible-galaxy collection build` makes holds only what galaxy.yml's allow-list
(`manifest:`) names - no site data, secrets, test bed, developer tests or test output - nothing in it imports
what does not ship, its docs do not speak of shipped parts as missing, and installed from the tarball alone
into a clean path the collection validates the example inventory.

A checkout that has been used holds files git ignores but ansible-galaxy does not read .gitignore: the
sandbox's inventory (its real writer, testbed.sandbox.Sandbox.write_inventory, puts a kubeconfig path and
the Magnum emulator's cloud with its password there), site inventories, clouds.yaml, kubeconfigs, test,
molecule and ansible-runner output. The test copies the checkout, plants each of those, builds and looks.
"""

from __future__ import annotations

import ast
import os
import posixpath
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.integration.playbook import ROOT

VENV_BIN = Path(sys.executable).parent
KUBECONFIG = "/home/operator/.kube/cern-prod.conf"


def checkout_copy(dest: Path) -> Path:
    """The files of this checkout (tracked, and untracked ones git does not ignore)."""
    names = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.split("\n")
    for name in filter(None, names):
        src = Path(ROOT, name)
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


def plant(tree: Path, magnum) -> list[str]:
    """What a used checkout holds besides its files; returns the planted paths (relative)."""
    from testbed.sandbox import Sandbox

    sandbox = Sandbox(example=tree / "inventories" / "example")
    sandbox.magnum, sandbox.cp = magnum, SimpleNamespace(kubeconfig=Path(KUBECONFIG))
    sandbox.write_inventory(tree / "inventories" / "sandbox")
    site = {
        "inventories/cern-prod/hosts.yml": "all: {children: {gpupool_clusters: {hosts: {cern-prod: {}}}}}\n",
        "inventories/cern-prod/host_vars/cern-prod/gpupool.yml": "gpupool_cluster: {kubeconfig: %s}\n" % KUBECONFIG,
        "inventories/examples-prod/hosts.yml": "kubeconfig: %s\n" % KUBECONFIG,
        "inventories/example-prod/hosts.yml": "kubeconfig: %s\n" % KUBECONFIG,
        "inventories/exam/hosts.yml": "kubeconfig: %s\n" % KUBECONFIG,
        "inventories/hosts.yml": "kubeconfig: %s\n" % KUBECONFIG,
        "inventories/example/.vault_pass": "secret\n",
        "clouds.yaml": "clouds: {prod: {auth: {password: secret}}}\n",
        "playbooks/clouds.yml": "clouds: {prod: {auth: {password: secret}}}\n",
        "secure.yaml": "clouds: {prod: {auth: {password: secret}}}\n",
        "cern-prod.kubeconfig": "users: [{user: {token: secret}}]\n",
        ".kube/config": "users: [{user: {token: secret}}]\n",
        "admin.pem": "secret\n",
        "admin.key": "secret\n",
        "group_vars/all/vault.yml": "password: secret\n",
        ".env": "OS_PASSWORD=secret\n",
        ".build/sandbox/state.json": '{"kubeconfig": "%s"}\n' % KUBECONFIG,
        ".venv/pyvenv.cfg": "home = /usr\n",
        "tests/output/junit.xml": "<testsuite/>\n",
        ".pytest_cache/v/cache/lastfailed": "{}\n",
        ".hypothesis/examples/x": "x\n",
        "extensions/molecule/default/.cache/state.yml": "converged: true\n",
        "artifacts/4f3c/stdout": "password: secret\n",
        "awx/artifacts/4f3c/job_events/1.json": "{}\n",
        "ansible.log": "password: secret\n",
        "gpupool-core-0.0.9.tar.gz": "old build\n",
        "plugins/modules/__pycache__/validate.cpython-311.pyc": "bytecode\n",
        # Credentials under the names they have in the wild, at the top and inside shipped folders.
        "admin.conf": "users: [{user: {client-key-data: c2VjcmV0}}]\n",
        "id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\n",
        "roles/nodegroups/files/id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\n",
        "docs/admin.conf": "users: [{user: {client-key-data: c2VjcmV0}}]\n",
        "inventories/example/group_vars/x/secret.yml": "password: secret\n",
        "inventories/example/host_vars/cern-gpu/secret.yml": "password: secret\n",
        # Shipped folders: ansible-runner output and dot directories in them, and the molecule test beds.
        "extensions/awx/artifacts/4f3c/stdout": "password: secret\n",
        "extensions/awx/artifacts/4f3c/job_events/1.json": "{}\n",
        "extensions/awx/project/.cache/facts.yml": "password: secret\n",
        "roles/nodegroups/tasks/.ansible/state.yml": "password: secret\n",
        "extensions/molecule/default/molecule.yml": "password: secret\n",
    }
    for name, text in site.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(text)
    sandbox_files = [str(p.relative_to(tree)) for p in (tree / "inventories" / "sandbox").rglob("*") if p.is_file()]
    return sorted(site) + sandbox_files


def build(tree: Path, out: Path) -> Path:
    proc = subprocess.run(
        [str(VENV_BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(out), str(tree)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (tarball,) = out.glob("gpupool-core-*.tar.gz")
    return tarball


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(tarball, planted paths): one build of a used checkout for the tests below."""
    from testbed.magnum_emulator import MagnumEmulator

    tmp = tmp_path_factory.mktemp("collection-build")
    tree = checkout_copy(tmp / "ansible_collections" / "gpupool" / "core")
    with MagnumEmulator(delay=0.0) as magnum:
        planted = plant(tree, magnum)
    assert "password: secret" in (tree / "inventories/sandbox/host_vars/cern-gpu/gpupool.yml").read_text(), (
        "the sandbox writer no longer writes the cloud's password: plant it here some other way"
    )
    return build(tree, tmp / "dist"), planted


def test_the_tarball_holds_no_site_data_secrets_or_test_output(built):
    tarball, planted = built
    with tarfile.open(tarball) as tar:
        members = {m.name.rstrip("/"): m for m in tar.getmembers()}
        texts = {name: tar.extractfile(m).read().decode(errors="replace") for name, m in members.items() if m.isfile()}
    shipped = sorted(set(planted) & set(members))
    assert shipped == [], "shipped: %s" % shipped
    assert not [name for name in members if name.startswith(("inventories/sandbox", "tests/integration", "testbed"))]
    leaks = [name for name, text in texts.items() if "password: secret" in text or KUBECONFIG in text]
    assert leaks == [], "secrets or site paths in: %s" % leaks


# What may ship (the test's own statement of galaxy.yml's allow-list): a path matches one of these in full.
ALLOWED = [
    r"MANIFEST\.json|FILES\.json|README\.md|COPYING|requirements\.txt",
    r"meta/(runtime|execution-environment)\.yml",
    r"plugins/.+\.(py|yml|yaml)",  # filter plugins' documentation is YAML beside them
    r"roles/[a-z_]+/.+\.(yml|yaml|md|j2)",
    r"playbooks/[^/]+\.(yml|yaml)",
    r"docs/.+\.(md|yml|yaml|png)",
    r"changelogs/.+\.(yml|yaml)",
    r"inventories/example/hosts\.yml|inventories/example/host_vars/[^/]+/gpupool\.yml",
    r"extensions/(?!molecule/).+\.(yml|yaml|json|md|txt|j2|py|cfg)",
    r"tests/config\.yml|tests/sanity/[^/]+\.txt",
]
# Top-level packages of the repository that never ship: importing one from a shipped file breaks the installed copy.
NOT_SHIPPED_PACKAGES = {"testbed", "tests", "tools", "bench", "conftest"}


def shipped_files(tarball: Path) -> dict[str, str]:
    with tarfile.open(tarball) as tar:
        return {m.name: tar.extractfile(m).read().decode(errors="replace") for m in tar.getmembers() if m.isfile()}


def test_the_tarball_holds_only_what_the_allow_list_names(built):
    tarball, _ = built
    outside = [name for name in shipped_files(tarball) if not any(re.fullmatch(p, name) for p in ALLOWED)]
    assert outside == [], "shipped outside the allow-list: %s" % outside


def test_no_shipped_python_file_imports_what_does_not_ship(built):
    tarball, _ = built
    wrong = []
    for name, text in shipped_files(tarball).items():
        if name.endswith(".py"):
            for node in ast.walk(ast.parse(text, name)):
                modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                if isinstance(node, ast.ImportFrom) and node.level == 0:
                    modules = [node.module or ""]
                wrong += ["%s: %s" % (name, m) for m in modules if m.split(".")[0] in NOT_SHIPPED_PACKAGES]
    assert wrong == []


def test_no_shipped_doc_calls_a_shipped_role_missing(built):
    tarball, _ = built
    files = shipped_files(tarball)
    roles = {name.split("/")[1] for name in files if name.startswith("roles/")}
    assert "dra_driver" in roles
    missing = re.compile(
        r"(role|step|module)s? (arrives|will arrive|has not arrived|is not (here|written) yet)|until then,? (install|upgrade)",
        re.I,
    )
    wrong = [
        "%s: ...%s..." % (name, match.group(0))
        for name, text in files.items()
        if name.endswith(".md")
        for match in missing.finditer(" ".join(text.split()))  # a sentence may wrap anywhere
    ]
    assert wrong == []


def test_every_relative_link_in_a_shipped_doc_reaches_a_shipped_file(built):
    tarball, _ = built
    files = shipped_files(tarball)
    folders = {posixpath.dirname(name) for name in files}
    broken = []
    for name, text in files.items():
        if name.endswith(".md"):
            for link in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
                target = posixpath.normpath(posixpath.join(posixpath.dirname(name), link)).rstrip("/")
                if not re.match(r"[a-z]+:", link) and target not in files and target not in folders:
                    broken.append("%s -> %s" % (name, link))
    assert broken == [], "links to what does not ship: %s" % broken


def test_the_tarball_holds_what_a_user_runs(built):
    tarball, _ = built
    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
    for name in [
        "inventories/example/hosts.yml",
        "inventories/example/host_vars/cern-gpu/gpupool.yml",
        "playbooks/site.yml",
        "playbooks/validate.yml",
        "playbooks/clusters_matched.yml",
        "plugins/modules/validate.py",
        "plugins/filter/pool_names.py",
        "plugins/filter/pool_names.yml",
        "roles/nodegroups/tasks/main.yml",
        "roles/nodegroups/README.md",
        "meta/runtime.yml",
        "requirements.txt",
        "docs/rbac/gpupool-clusterrole.yaml",
        "README.md",
    ]:
        assert name in names, name
    # Nothing of the repository's test bed or developer tests (tests/config.yml is ansible-test's configuration).
    assert not [n for n in names if n.startswith(("testbed", "tests/unit", "tests/integration", "extensions/molecule"))]


def test_installed_from_the_tarball_it_validates_the_example_inventory(built, tmp_path):
    tarball, _ = built
    clean = tmp_path / "collections"
    # Nothing of this checkout is reachable: no PYTHONPATH, no ansible.cfg, only the clean collections path
    # (with this checkout's collections path, ansible-galaxy would find gpupool.core installed and do nothing).
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PYTHONPATH"))}
    env.update(
        ANSIBLE_COLLECTIONS_PATH=str(clean),
        ANSIBLE_CONFIG=str(tmp_path / "none.cfg"),
        ANSIBLE_NOCOLOR="1",
        PATH=str(VENV_BIN) + os.pathsep + env.get("PATH", ""),
        HOME=str(tmp_path),
    )
    galaxy = subprocess.run(
        [str(VENV_BIN / "ansible-galaxy"), "collection", "install", "--offline", "-p", str(clean), str(tarball)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
    )
    assert galaxy.returncode == 0, galaxy.stdout + galaxy.stderr
    installed = clean / "ansible_collections" / "gpupool" / "core"
    assert (installed / "MANIFEST.json").is_file(), galaxy.stdout
    proc = subprocess.run(
        [str(VENV_BIN / "ansible-playbook"), "-i", str(installed / "inventories" / "example"), "gpupool.core.validate"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "4 pool(s) valid: gpu-t4, gpu-a100-mig, gpu-h100, gpu-gb200" in proc.stdout
    assert ROOT not in proc.stdout + proc.stderr
