"""The awx.awx collection (AWX's own modules), for checking the AWX objects gpupool.core ships against the argument
specs of the modules that create them. It comes from the `ansible` package on PyPI (the bench's
requirements-bench.txt names ansible 12.x): only its wheel is downloaded (pip download, pip's cache), and only
ansible_collections/awx/awx is unpacked, once, into $GPUPOOL_CACHE/awx-collection/<version>.
"""

from __future__ import annotations

import fcntl
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ANSIBLE_PACKAGE = "12.3.0"  # the newest 12.x on PyPI (2026-11)
CACHE = Path(os.environ.get("GPUPOOL_CACHE") or os.path.expanduser("~/.cache/gpupool"))


def awx_collection_root() -> Path:
    """A directory holding ansible_collections/awx/awx (the path to put on sys.path)."""
    root = CACHE / "awx-collection" / ANSIBLE_PACKAGE
    stamp = root / ".complete"
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(str(root) + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stamp.exists():
            shutil.rmtree(root, ignore_errors=True)
            with tempfile.TemporaryDirectory() as tmp:
                proc = subprocess.run(
                    [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps"]
                    + ["--only-binary=:all:", "-d", tmp, "ansible==%s" % ANSIBLE_PACKAGE],
                    capture_output=True,
                    text=True,
                    timeout=900,
                    check=False,
                )
                assert proc.returncode == 0, proc.stdout + proc.stderr
                (wheel,) = Path(tmp).glob("ansible-*.whl")
                with zipfile.ZipFile(wheel) as zf:
                    members = [n for n in zf.namelist() if n.startswith("ansible_collections/awx/awx/")]
                    assert members, "the ansible %s wheel holds no awx.awx" % ANSIBLE_PACKAGE
                    zf.extractall(root, members)
            stamp.write_text("ansible %s\n" % ANSIBLE_PACKAGE)
    return root


class _Captured(Exception):
    pass


def module_argument_spec(name: str) -> dict:
    """awx.awx.<name>'s argument_spec as its main() builds it: main() runs until it constructs its
    ControllerAPIModule, which here records the spec and stops."""
    root = str(awx_collection_root())
    if root not in sys.path:
        sys.path.insert(0, root)
    module = importlib.import_module("ansible_collections.awx.awx.plugins.modules.%s" % name)
    captured = {}

    class Recorder:
        def __init__(self, argument_spec=None, **kwargs):
            captured.update(argument_spec=argument_spec, kwargs=kwargs)
            raise _Captured()

    saved = module.ControllerAPIModule
    module.ControllerAPIModule = Recorder
    try:
        module.main()
    except _Captured:
        pass
    finally:
        module.ControllerAPIModule = saved
    assert captured.get("argument_spec"), name
    return captured
