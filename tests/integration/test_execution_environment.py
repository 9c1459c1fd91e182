"""The execution environment as a user builds it (#33): `ansible-builder create` on the definition that ships in the
collection (extensions/ee/execution-environment.yml), run from an installed copy of the built tarball, outside this
checkout. The build context must install gpupool.core of this release from Galaxy, the collection's Python
dependencies (what ansible-builder's introspection finds in the installed collection, as it does in the image),
ansible-core and ansible-runner, and helm of a pinned version checked against a pinned SHA-256.

There is no container engine here, so the image itself is never built. What can be run is: ansible-builder (the
real one) on the shipped definition, its introspection on the installed collection, and the helm install step of
the generated Containerfile in a shell, with a local stand-in for get.helm.sh (a `curl` on PATH that serves fixture
files: it models the download, nothing else), so its checksum check and install path are exercised.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml

from tests.support.user_install import NEWEST_CORE, ROOT, VENV_BIN, build_tarball, clean_env, install_collection

HELM_ARG = re.compile(r"^ARG HELM_VERSION=(v\S+)$", re.M)
SHA_ARG = re.compile(r"^ARG HELM_SHA256=([0-9a-f]{64})$", re.M)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ee")
    home = tmp / "home"
    home.mkdir()
    path = install_collection(build_tarball(tmp / "dist"), tmp / "collections", home)
    return {"path": path, "collections": tmp / "collections", "home": home, "tmp": tmp}


@pytest.fixture(scope="module")
def context(installed):
    """`ansible-builder create -f <installed collection>/extensions/ee/execution-environment.yml`, as docs/awx.md
    tells a user, from outside the checkout."""
    definition = installed["path"] / "extensions" / "ee" / "execution-environment.yml"
    assert definition.is_file(), "the EE definition does not ship in the tarball"
    out = installed["tmp"] / "context"
    create = subprocess.run(
        [str(VENV_BIN / "ansible-builder"), "create", "-f", str(definition), "-c", str(out)],
        cwd=str(installed["home"]),
        env=clean_env(installed["home"]),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert create.returncode == 0, create.stdout + create.stderr
    assert "No matches" not in create.stdout + create.stderr and "does not exist" not in create.stderr
    return out


def containerfile(context) -> str:
    (path,) = [p for p in (context / "Containerfile", context / "Dockerfile") if p.exists()]
    return path.read_text()


def test_the_context_installs_this_release_from_galaxy_with_the_tested_ansible_core(context):
    text = containerfile(context)
    assert text.startswith('ARG EE_BASE_IMAGE="quay.io/centos/centos:stream9"')
    assert 'ARG ANSIBLE_INSTALL_REFS="ansible-core==%s ansible-runner>=2.4"' % NEWEST_CORE in text
    assert "ansible-galaxy collection install $ANSIBLE_GALAXY_CLI_COLLECTION_OPTS -r requirements.yml" in text
    galaxy = yaml.safe_load((context / "_build" / "requirements.yml").read_text())
    version = yaml.safe_load(Path(ROOT, "galaxy.yml").read_text())["version"]
    assert galaxy == {"collections": [{"name": "gpupool.core", "version": "==%s" % version}]}
    assert (context / "_build" / "bindep.txt").read_text().split("\n")[:2] == [
        "tar [platform:rpm]",
        "gzip [platform:rpm]",
    ]


def test_the_image_gets_the_collections_python_dependencies_by_introspection(installed, context):
    """In the image, ansible-builder's `introspect` reads the installed collection's meta/execution-environment.yml;
    the same command on the installed copy here finds every library of requirements.txt (and no ansible-core, which
    would replace the image's)."""
    assert "introspect" in containerfile(context)
    proc = subprocess.run(
        [str(VENV_BIN / "ansible-builder"), "introspect", "--sanitize", str(installed["collections"])],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env(installed["home"]),
    )
    assert proc.returncode == 0, proc.stderr
    found = yaml.safe_load(proc.stdout.split("---", 1)[1])["python"]
    for package in ("pydantic", "kubernetes", "openstacksdk", "nvidia-ml-py"):
        assert any(re.match(r"%s[<>=]" % package, line) for line in found), (package, found)
    assert not any(line.startswith("ansible-core") for line in found), found


def test_helm_is_the_test_beds_version_with_a_pinned_checksum(context):
    """The EE's helm is the one the tests run (tools/helm/go.mod), and its digest is written in the definition,
    not fetched next to the tarball."""
    text = containerfile(context)
    gomod = Path(ROOT, "tools", "helm", "go.mod").read_text()
    (tested,) = re.findall(r"^\s*helm\.sh/helm/v3 (v\S+)", gomod, re.M)
    assert HELM_ARG.findall(text) == [tested]
    assert len(SHA_ARG.findall(text)) == 1
    assert ".sha256" not in helm_step(context)


def helm_step(context) -> str:
    """The shell command of the Containerfile's helm RUN step."""
    lines = [line for line in containerfile(context).splitlines() if "get.helm.sh" in line]
    assert len(lines) == 1, lines
    return lines[0][len("RUN ") :]


def fake_release(directory: Path, version: str, tamper: bool = False) -> str:
    """A helm release as get.helm.sh serves it (helm-<v>-linux-amd64.tar.gz); its SHA-256."""
    import hashlib

    script = b"#!/bin/sh\necho %s+gstandin\n" % version.encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("linux-amd64/helm")
        info.size, info.mode = len(script), 0o755
        tar.addfile(info, io.BytesIO(script))
    data = buffer.getvalue()
    (directory / ("helm-%s-linux-amd64.tar.gz" % version)).write_bytes(data + (b"tampered" if tamper else b""))
    return hashlib.sha256(data).hexdigest()


def run_helm_step(context, tmp_path, tamper=False, pinned=False):
    """The RUN step with the Containerfile's ARGs as its environment (as a build sets them); pinned=False passes the
    stand-in's digest as --build-arg HELM_SHA256 would, pinned=True keeps the definition's."""
    text = containerfile(context)
    (version,) = HELM_ARG.findall(text)
    (digest,) = SHA_ARG.findall(text)
    served, shims, prefix = tmp_path / "served", tmp_path / "shims", tmp_path / "prefix"
    for directory in (served, shims, prefix):
        directory.mkdir()
    standin = fake_release(served, version, tamper)
    # curl -fsSLO <url>: copy the file named like the URL's last part into the current directory.
    (shims / "curl").write_text('#!/bin/sh\nfor a; do url="$a"; done\ncp "%s/${url##*/}" .\n' % served)
    (shims / "curl").chmod(0o755)
    command = re.sub(r"/tmp\b", str(tmp_path), helm_step(context)).replace("/usr/local/bin/helm", str(prefix / "helm"))
    env = dict(
        os.environ,
        HELM_VERSION=version,
        HELM_ARCH="amd64",
        HELM_SHA256=digest if pinned else standin,
        PATH=os.pathsep.join([str(shims), str(prefix), os.environ["PATH"]]),
    )
    return subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=60), prefix, version


def test_the_helm_step_installs_a_release_that_matches_the_digest(context, tmp_path):
    proc, prefix, version = run_helm_step(context, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (prefix / "helm").stat().st_mode & 0o111
    assert proc.stdout.strip().endswith("%s+gstandin" % version)


def test_the_helm_step_refuses_a_tarball_that_does_not_match_its_digest(context, tmp_path):
    proc, prefix, _ = run_helm_step(context, tmp_path, tamper=True)
    assert proc.returncode != 0
    assert "FAILED" in proc.stdout + proc.stderr
    assert not (prefix / "helm").exists()


def test_the_pinned_digest_is_enforced(context, tmp_path):
    """With the definition's own digest, a tarball that is not helm's real release (the stand-in) is refused."""
    proc, prefix, _ = run_helm_step(context, tmp_path, pinned=True)
    assert proc.returncode != 0 and "FAILED" in proc.stdout + proc.stderr
    assert not (prefix / "helm").exists()
