# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Python's cyclic garbage collector, paused while a plan is worked out. Pure.

Why: a plan reads the whole cluster - at 2,000 nodes x 8 GPUs about a million dicts and lists from the API - and
every full pass of the cyclic collector walks all of them. At the advisor's 2,000-node bench point those passes were
about 40% of the planning CPU, for nothing: planning builds tuples, dicts and lists that reference counting frees,
and no reference cycles worth collecting. Reference counting goes on as usual; the collector is restored (if it was
on) when the plan is done, so any cycle made meanwhile is collected then.
"""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic collector within a `with` block (or a function, used as a decorator)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
