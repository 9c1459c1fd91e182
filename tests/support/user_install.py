"""The collection as a user gets it: the tarball `ansible-galaxy collection build` makes, installed with
`ansible-galaxy collection install` into a fresh directory, run from a venv that holds only what the docs tell a
user to install (ansible-core, then the installed collection's requirements.txt), with no trace of this checkout
(no PYTHONPATH, no ANSIBLE_* settings, a private HOME, a working directory outside the repository).

The venvs are cached under $GPUPOOL_CACHE/user-venv, one per (Python, ansible-core version, requirements.txt
content): a warm run reuses them, a change to the requirements makes a new one. pip uses its own cache.

The supported ansible-core range is meta/runtime.yml's `requires_ansible`; its two ends are tested:
OLDEST_CORE is the range's floor, NEWEST_CORE the newest release on PyPI that installs on this Python (3.11:
2.19.x; 2.20 needs Python 3.12 - `pip index versions ansible-core`, 2026-11). GPUPOOL_NEWEST_CORE overrides it.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent.parent
VENV_BIN = Path(sys.executable).parent
CACHE = Path(os.environ.get("GPUPOOL_CACHE") or os.path.expanduser("~/.cache/gpupool"))


def oldest_core() -> str:
    """The floor of meta/runtime.yml's requires_ansible (">=2.16.0" -> "2.16.0")."""
    spec = yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text())["requires_ansible"]
    match = re.fullmatch(r">=\s*(\d+\.\d+\.\d+)", spec.strip())
    assert match, "meta/runtime.yml requires_ansible %r is not '>=X.Y.Z'" % spec
    return match.group(1)


OLDEST_CORE = oldest_core()
NEWEST_CORE = os.environ.get("GPUPOOL_NEWEST_CORE", "2.19.14")


def build_tarball(dest: Path) -> Path:
    """`ansible-galaxy collection build` of this checkout into dest; the tarball's path."""
    dest.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [str(VENV_BIN / "ansible-galaxy"), "collection", "build", "--force", "--output-path", str(dest), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (tarball,) = dest.glob("gpupool-core-*.tar.gz")
    return tarball


def clean_env(home: Path, **extra: str) -> dict:
    """The environment of a user's shell: no PYTHONPATH, no ANSIBLE_* (so no ansible.cfg of this checkout, no
    collections path to it), a private HOME (no ~/.ansible/collections copy from another run)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PYTHONPATH", "VIRTUAL_ENV"))}
    env.update(HOME=str(home), ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", **extra)
    return env


def install_collection(tarball: Path, dest: Path, home: Path) -> Path:
    """`ansible-galaxy collection install <tarball> -p <dest>` as a user runs it (outside the checkout); the path
    of the installed collection (dest/ansible_collections/gpupool/core)."""
    proc = subprocess.run(
        [str(VENV_BIN / "ansible-galaxy"), "collection", "install", "--offline", "-p", str(dest), str(tarball)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=str(home),
        env=clean_env(home, ANSIBLE_COLLECTIONS_PATH=str(dest)),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    installed = dest / "ansible_collections" / "gpupool" / "core"
    assert (installed / "MANIFEST.json").is_file(), proc.stdout
    return installed


def user_venv(core: str, requirements: Path) -> Path:
    """A venv with ansible-core==core, then `pip install -r requirements` (the installed collection's file), as
    the docs tell a user; cached by (Python, core, requirements content). Fails if installing the requirements
    replaced the user's ansible-core."""
    digest = hashlib.sha256(("%s\n%s\n" % (sys.version, core)).encode() + requirements.read_bytes()).hexdigest()
    venv = CACHE / "user-venv" / ("%s-%s" % (core, digest[:12]))
    stamp = venv / ".complete"  # written last: a venv cut short is rebuilt, never used
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(str(venv) + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stamp.exists():
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
            pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
            for args in (["ansible-core==%s" % core], ["-r", str(requirements)]):
                proc = subprocess.run(pip + args, capture_output=True, text=True, timeout=900, check=False)
                assert proc.returncode == 0, "pip install %s: %s" % (" ".join(args), proc.stdout + proc.stderr)
            stamp.write_text("ansible-core %s\n" % core)
    version = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import ansible; print(ansible.__version__)"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=clean_env(venv),
    ).stdout.strip()
    assert version == core, "pip install -r %s replaced ansible-core %s with %s" % (requirements, core, version)
    return venv


def main(argv: list[str]) -> int:
    """`python -m tests.support.user_install venv oldest|newest`: the path of that end's user venv (made if missing),
    for the Makefile's sanity run on the oldest ansible-core."""
    if len(argv) != 2 or argv[0] != "venv" or argv[1] not in ("oldest", "newest"):
        print("usage: python -m tests.support.user_install venv oldest|newest", file=sys.stderr)
        return 2
    core = OLDEST_CORE if argv[1] == "oldest" else NEWEST_CORE
    print(user_venv(core, ROOT / "requirements.txt"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
