"""The execution environment: `ansible-builder create` turns execution-environment.yml into a build context
that holds the collection, its Python dependencies and the helm install step.

There is no container engine here, so the image itself is never built. What can be run is: ansible-builder
(the real one) on the real definition, and the helm install step of the generated Containerfile in a shell,
with a local stand-in for get.helm.sh (a `curl` on PATH that serves fixture files: it models the download,
nothing else), so its checksum check and install path are exercised.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from tests.integration.playbook import ROOT

VENV_BIN = Path(sys.executable).parent
HELM_VERSION = "v3.22.0"


@pytest.fixture(scope="module")
def context(tmp_path_factory):
    """`make ee-context` on a copy of the definition: collection tarball, then ansible-builder create."""
    tmp = tmp_path_factory.mktemp("ee")
    for name in ("execution-environment.yml", "requirements.txt"):
        shutil.copy2(Path(ROOT, name), tmp / name)
    dist = tmp / ".build" / "ee"
    build = subprocess.run(
        [str(VENV_BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(dist), ROOT],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    (tarball,) = dist.glob("gpupool-core-*.tar.gz")
    shutil.copy2(tarball, dist / "gpupool-core.tar.gz")
    create = subprocess.run(
        [
            str(VENV_BIN / "ansible-builder"),
            "create",
            "-f",
            "execution-environment.yml",
            "-c",
            str(tmp / "context"),
            "--output-filename",
            "Containerfile",
        ],
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert create.returncode == 0, create.stdout + create.stderr
    return tmp / "context"


def test_the_definition_is_ansible_builder_v3():
    definition = yaml.safe_load(Path(ROOT, "execution-environment.yml").read_text())
    assert definition["version"] == 3
    assert definition["dependencies"]["python"] == "requirements.txt"


def test_the_context_installs_the_collection_with_its_python_dependencies(context):
    containerfile = (context / "Containerfile").read_text()
    assert containerfile.startswith('ARG EE_BASE_IMAGE="quay.io/centos/centos:stream9"')
    assert 'ARG ANSIBLE_INSTALL_REFS="ansible-core>=2.16,<2.20 ansible-runner>=2.4"' in containerfile
    assert "ansible-galaxy collection install $ANSIBLE_GALAXY_CLI_COLLECTION_OPTS -r requirements.yml" in containerfile
    galaxy = yaml.safe_load((context / "_build" / "requirements.yml").read_text())
    assert galaxy == {"collections": [{"name": "collections/gpupool-core.tar.gz", "type": "file"}]}
    with tarfile.open(context / "_build" / "collections" / "gpupool-core.tar.gz") as tar:
        manifest = json.load(tar.extractfile("MANIFEST.json"))
        names = set(tar.getnames())
    assert (manifest["collection_info"]["namespace"], manifest["collection_info"]["name"]) == ("gpupool", "core")
    # ansible-builder reads this file of the installed collection when it assembles the image's Python packages.
    assert "meta/execution-environment.yml" in names and "requirements.txt" in names
    python = (context / "_build" / "requirements.txt").read_text()
    for package in ("pydantic", "kubernetes", "openstacksdk", "nvidia-ml-py", "PyYAML"):
        assert re.search(r"^%s[<>=]" % package, python, re.M), package
    assert (context / "_build" / "bindep.txt").read_text().split("\n")[:2] == [
        "tar [platform:rpm]",
        "gzip [platform:rpm]",
    ]


def helm_step(context) -> str:
    """The shell command of the Containerfile's helm RUN step."""
    lines = [line for line in (context / "Containerfile").read_text().splitlines() if "get.helm.sh" in line]
    assert len(lines) == 1, lines
    assert "ARG HELM_VERSION=%s" % HELM_VERSION in (context / "Containerfile").read_text()
    return lines[0][len("RUN ") :]


def fake_release(directory: Path, tamper: bool = False) -> None:
    """A helm release as get.helm.sh serves it: helm-<v>-linux-<arch>.tar.gz and its bare SHA-256 file."""
    arch = {"x86_64": "amd64", "aarch64": "arm64"}[os.uname().machine]
    name = "helm-%s-linux-%s.tar.gz" % (HELM_VERSION, arch)
    script = b"#!/bin/sh\necho %s+gstandin\n" % HELM_VERSION.encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("linux-%s/helm" % arch)
        info.size, info.mode = len(script), 0o755
        tar.addfile(info, io.BytesIO(script))
    data = buffer.getvalue()
    (directory / name).write_bytes(data + (b"tampered" if tamper else b""))
    (directory / (name + ".sha256")).write_text(hashlib.sha256(data).hexdigest())


def run_helm_step(context, tmp_path, tamper=False):
    served, shims, prefix = tmp_path / "served", tmp_path / "shims", tmp_path / "prefix"
    for directory in (served, shims, prefix):
        directory.mkdir()
    fake_release(served, tamper)
    # curl -fsSLO <url>: copy the file named like the URL's last part into the current directory.
    (shims / "curl").write_text('#!/bin/sh\nfor a; do url="$a"; done\ncp "%s/${url##*/}" .\n' % served)
    (shims / "curl").chmod(0o755)
    command = (
        helm_step(context).replace("/usr/local/bin/helm", str(prefix / "helm")).replace("cd /tmp", "cd %s" % tmp_path)
    )
    env = dict(
        os.environ, HELM_VERSION=HELM_VERSION, PATH=os.pathsep.join([str(shims), str(prefix), os.environ["PATH"]])
    )
    return subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=60), prefix


def test_the_helm_step_installs_a_checked_release(context, tmp_path):
    proc, prefix = run_helm_step(context, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (prefix / "helm").stat().st_mode & 0o111
    assert proc.stdout.strip().endswith("%s+gstandin" % HELM_VERSION)


def test_the_helm_step_refuses_a_tarball_that_does_not_match_its_checksum(context, tmp_path):
    proc, prefix = run_helm_step(context, tmp_path, tamper=True)
    assert proc.returncode != 0
    assert "FAILED" in proc.stdout + proc.stderr
    assert not (prefix / "helm").exists()
