# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter gpupool.core.pool_names: every way a person writes a pool selection, as one list.

`gpupool_pools` arrives as a list (YAML, JSON extra vars), as a comma string (`-e gpupool_pools=a,b`) or as
what looks like a list but is a string (`-e gpupool_pools=[gpu-t4]`: key=value extra vars are never parsed).
A bare string must not reach a Jinja `in` test, which would match substrings ("gpu" in "gpu-t4"), so the
roles pass every selection through this filter. Whether the names exist is the pool model's check (the
modules report an unknown pool with the known ones), not this filter's.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def _split(text: str) -> list:
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    # Each item may be quoted as in a YAML/JSON flow list: ["gpu-t4", 'gpu-h100'].
    return [item.strip().strip("'\"").strip() for item in text.split(",")]


def pool_names(value: object) -> list:
    """Pool names in the order given, duplicates and empty items dropped; [] means every pool."""
    if value is None:
        return []
    if isinstance(value, str):
        items = _split(value)
    elif isinstance(value, (list, tuple)):
        items = []
        for index, item in enumerate(value):
            if not isinstance(item, str):
                raise AnsibleFilterError(
                    "gpupool_pools[%d] is %s %r; pool names are strings, e.g. gpupool_pools=[gpu-t4, gpu-h100]"
                    % (index, type(item).__name__, item)
                )
            items.extend(_split(item))
    else:
        raise AnsibleFilterError(
            "gpupool_pools is %s %r; give a list of pool names, a comma-separated string (gpu-t4,gpu-h100) "
            "or one name" % (type(value).__name__, value)
        )
    out = []
    for item in items:
        if item and item not in out:
            out.append(item)
    return out


class FilterModule:
    def filters(self):
        return {"pool_names": pool_names}
