"""Generated docs (inventory reference, MIG catalog) match the code."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))

import gen_docs  # noqa: E402


def test_generated_docs_are_current():
    stale = [
        os.path.relpath(path, gen_docs.ROOT)
        for path, text in gen_docs.targets().items()
        if not os.path.exists(path) or open(path).read() != text
    ]
    assert not stale, "run `make docs`: %s out of date" % ", ".join(stale)
