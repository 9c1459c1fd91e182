# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node-side MIG request (the options of gpupool.core.mig_config) as a model.

What one GPU node is asked to do: a layout for every GPU (or the GPUs in `devices`), a layout per GPU
index, or MIG on/off, and whether to only export the current layout. The checks live here, like the
inventory's, so the module refuses a malformed request before NVML is opened.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple, Union

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems

Layout = Dict[str, int]
Target = Union[int, str]  # a GPU index, or "all"


def _count(value: object) -> Optional[int]:
    """A whole number >= 0 as YAML may give it (2, "2", 2.0), else None."""
    try:
        number = int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if number < 0 or str(value).strip() not in (str(number), "%d.0" % number):
        return None
    return number


def _layout(value: object, where: str, problems: list) -> Layout:
    out: Layout = {}
    if not isinstance(value, dict):
        problems.append(
            (where, "must be a mapping of MIG profile to count, e.g. {3g.20gb: 1, 2g.10gb: 2}; got %r" % (value,))
        )
        return out
    for name, count in value.items():
        number = _count(count)
        if number is None:
            problems.append((where, "the count for %s must be a whole number >= 0, got %r" % (name, count)))
            continue
        out[str(name)] = number
    return out


class NodeMigRequest:
    """A validated request: `targets()` maps GPU index or "all" to (mig_enabled, layout or None)."""

    def __init__(
        self,
        layout: Optional[Layout],
        layouts: Optional[Dict[int, Layout]],
        devices: Optional[List[int]],
        mig_enabled: Optional[bool],
        export: bool,
    ) -> None:
        self.layout = layout
        self.layouts = layouts
        self.devices = devices
        self.mig_enabled = mig_enabled
        self.export = export

    @classmethod
    def from_options(cls, options: dict) -> "NodeMigRequest":
        problems: List[Tuple[str, str]] = []
        enabled = options.get("mig_enabled")
        layout = layouts = None
        if (
            options.get("layout") is None
            and options.get("layouts") is None
            and enabled is None
            and not options.get("export")
        ):
            raise Problems(
                "nothing to do: give layout, layouts or mig_enabled to change MIG, or export: true to only "
                "read the node's MIG layout"
            )
        if options.get("layouts") is not None:
            if enabled is False:
                problems.append(
                    (
                        "layouts",
                        "layouts need MIG enabled: drop mig_enabled: false, or use devices with "
                        "mig_enabled: false to disable MIG",
                    )
                )
            layouts = {}
            for key, value in options["layouts"].items():
                index = _count(key)
                if index is None:
                    problems.append(("layouts", "layouts keys must be GPU indices (0, 1, ...), got %r" % (key,)))
                    continue
                layouts[index] = _layout(value, "layouts[%s]" % key, problems)
        elif options.get("layout") is not None:
            if enabled is False:
                problems.append(
                    ("layout", "a layout needs MIG enabled: drop mig_enabled: false, or drop the layout to disable MIG")
                )
            layout = _layout(options["layout"], "layout", problems)
        if problems:
            raise Problems(problems, subject="in the MIG request")
        return cls(layout, layouts, options.get("devices"), enabled, bool(options.get("export")))

    def targets(self) -> Dict[Target, Tuple[bool, Optional[Layout]]]:
        if self.layouts is not None:
            return {index: (True, layout) for index, layout in self.layouts.items()}
        if self.layout is not None:
            spec: Tuple[bool, Optional[Layout]] = (True, self.layout)
        elif self.mig_enabled is not None:
            spec = (self.mig_enabled, None)
        else:
            return {}
        if self.devices is None:
            return {"all": spec}
        return dict.fromkeys(self.devices, spec)
