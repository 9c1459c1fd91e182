# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pydantic validation errors -> (path, message) pairs a person can act on.

Paths are written the way the inventory is (``gpupool_cluster.pools[1].mig.layout``); unknown keys get a
did-you-mean hint and the keys allowed at that place.
"""
from __future__ import annotations

import difflib
import re

from ansible_collections.gpupool.core.plugins.module_utils.model.inventory import BaseModel, Cluster


def _path(root, loc):
    out = root
    for part in loc:
        out += "[%d]" % part if isinstance(part, int) else ("." + str(part) if re.match(r"^\w+$", str(part)) else "[%r]" % part)
    return out


def _model_at(loc):
    """The pydantic model class that owns the key at `loc` (for typo hints)."""
    model = Cluster
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(str(part))
        if field is None:
            return None
        ann = field.annotation
        for cand in (ann, *getattr(ann, "__args__", ())):
            for sub in (cand, *getattr(cand, "__args__", ())):
                if isinstance(sub, type) and issubclass(sub, BaseModel):
                    model = sub
                    break
            else:
                continue
            break
        else:
            return None
    return model


def _pydantic_problems(err, root):
    problems = []
    for e in err.errors():
        loc = tuple(p for p in e["loc"] if p not in ("function-after[_key(), str]",))
        if e["type"] == "extra_forbidden":
            owner = _model_at(loc)
            known = list(owner.model_fields) if owner else []
            close = difflib.get_close_matches(str(loc[-1]), known, n=1)
            msg = "unknown key %r" % loc[-1]
            msg += "; did you mean %r?" % close[0] if close else ""
            msg += " Allowed here: %s." % ", ".join(known) if known else ""
            problems.append((_path(root, loc), msg))
        elif e["type"] == "missing":
            problems.append((_path(root, loc), "required key is missing"))
        elif e["type"] == "literal_error":
            problems.append((_path(root, loc), "%r is not allowed: %s" % (e.get("input"), e["msg"].replace("Input should be", "use"))))
        else:
            msg = e["msg"].replace("Value error, ", "")
            problems.append((_path(root, loc), "%s (got %r)" % (msg, e.get("input"))))
    return problems
