#!/usr/bin/env python3
"""Run `ansible-test sanity|units` on a clean copy of the collection.

ansible-test wants the collection at .../ansible_collections/gpupool/core and
checks every file it finds, so we copy only what ships (git-tracked files plus
untracked ones git does not ignore) minus the test bed, tools and integration
tests, into .build/ansible-test/. Uses --venv: ansible-test installs its own
pinned sanity tools (ansible-test's own requirement files) into a venv of
its own, .build/ansible-test-venv, once; ansible-test's --requirements would
fetch a pip bootstrap script from outside the package registries, so we do
that part here and run ansible-test with --local in that venv.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEST = os.path.join(ROOT, ".build", "ansible-test", "ansible_collections", "gpupool", "core")
SKIP = (
    "testbed/",
    "tools/",
    "bench/",
    "tests/integration/",
    "tests/fixtures/",
    ".ci/",
    "conftest.py",
    "extensions/molecule/",
    "tests/__init__.py",
    "pyproject.toml",
    "Makefile",
    "ansible.cfg",
)


def shipped_files():
    out = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.split("\n")
    return [f for f in out if f and not f.startswith(SKIP) and os.path.isfile(os.path.join(ROOT, f))]


def needs_test_bed(rel):
    """Unit tests that hold the code against the test bed's own tables (testbed/ is not shipped, so ansible-test
    cannot import it); `make test` runs them with pytest from the checkout."""
    if not (rel.startswith("tests/unit/") and rel.endswith(".py")):
        return False
    with open(os.path.join(ROOT, rel)) as f:
        return any(line.startswith(("from testbed", "import testbed")) for line in f)


def copy_tree():
    shutil.rmtree(DEST, ignore_errors=True)
    for rel in shipped_files():
        if needs_test_bed(rel):
            continue
        target = os.path.join(DEST, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, rel), target)
    # ansible-test needs a git-free tree it can walk; mark it as its own root.
    subprocess.run(["git", "init", "-q"], cwd=DEST, check=True)
    subprocess.run(["git", "add", "-A"], cwd=DEST, check=True)


VENV = os.path.join(ROOT, ".build", "ansible-test-venv")


def ensure_venv():
    import ansible
    import ansible_test

    stamp = os.path.join(VENV, ".stamp-" + ansible.__version__)
    if os.path.exists(stamp):
        return
    print("[ansible-test] creating %s with ansible-test's pinned sanity tools (first run only)" % VENV, flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", VENV], check=True)
    reqdir = os.path.join(os.path.dirname(ansible_test.__file__), "_data", "requirements")
    reqs = sorted(f for f in os.listdir(reqdir) if f.startswith("sanity.") and f.endswith(".txt"))
    args = ["ansible-core==" + ansible.__version__]
    for f in reqs + ["units.txt"]:
        args += ["-r", os.path.join(reqdir, f)]
    args += ["-r", os.path.join(ROOT, "tests", "unit", "requirements.txt")]
    pip = os.path.join(VENV, "bin", "pip")
    subprocess.run([pip, "install", "-q", "--disable-pip-version-check"] + args, check=True)
    open(stamp, "w").close()


def install_pip_bootstrap():
    """ansible-test bootstraps pip in each venv with a script it downloads; give it ours."""
    import re

    import ansible_test

    src = open(os.path.join(os.path.dirname(ansible_test.__file__), "_internal", "python_requirements.py")).read()
    version = re.search(r"default_packages = dict\(\s*pip='([0-9.]+)'", src).group(1)
    cache = os.path.expanduser("~/.ansible/test/cache/get_pip_%s.py" % version.replace(".", "_"))
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    shutil.copy2(os.path.join(ROOT, "tools", "get_pip_bootstrap.py"), cache)


def main(argv):
    what = argv[1] if len(argv) > 1 else "sanity"
    ensure_venv()
    install_pip_bootstrap()
    copy_tree()
    py = "%d.%d" % sys.version_info[:2]
    cmd = [os.path.join(VENV, "bin", "ansible-test"), what, "--local", "--python", py, "--color", "no"]
    print("[ansible-test] %s (in %s)" % (" ".join(cmd[1:]), DEST), flush=True)
    t0 = time.time()
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=os.path.dirname(os.path.dirname(os.path.dirname(DEST))),
        PATH=os.path.join(VENV, "bin") + os.pathsep + os.environ.get("PATH", ""),
    )
    env.pop("PYTHONPATH", None)
    rc = subprocess.call(cmd, cwd=DEST, env=env)
    print("[ansible-test] %s finished rc=%d in %.0fs" % (what, rc, time.time() - t0), flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
