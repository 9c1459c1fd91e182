#!/usr/bin/env python3
"""Regenerate nvml_symbols.txt: every C function the installed pynvml looks up.

The fake libnvidia-ml exports each of these names; the ones fakenvml.c does
not implement become weak stubs returning NVML_ERROR_NOT_SUPPORTED (the
Makefile generates them), so pynvml never raises NVMLError_FunctionNotFound.

    .venv/bin/python testbed/fakenvml/gen_symbols.py > testbed/fakenvml/nvml_symbols.txt

tests/integration/test_fake_nvml.py fails when the installed pynvml looks up a
name that is missing here, so a pynvml upgrade is noticed.
"""

import re
import sys

import pynvml


def names():
    with open(pynvml.__file__, encoding="utf-8") as fh:
        source = fh.read()
    return sorted(set(re.findall(r'_nvmlGetFunctionPointer\("([A-Za-z0-9_]+)"\)', source)))


if __name__ == "__main__":
    version = getattr(pynvml, "__version__", None)
    if version is None:
        try:
            from importlib.metadata import version as _v

            version = _v("nvidia-ml-py")
        except Exception:  # pragma: no cover
            version = "unknown"
    sys.stdout.write("# C functions nvidia-ml-py %s resolves (testbed/fakenvml/gen_symbols.py)\n" % version)
    for n in names():
        sys.stdout.write(n + "\n")
