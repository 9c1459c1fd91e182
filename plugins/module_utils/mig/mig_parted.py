# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The mig-parted ``version: v1`` config document as a small typed, versioned spec.

Modelled on NVIDIA mig-parted ``api/spec/v1/spec.go`` (reference nvidia-dra-mig-imex.md §2.1): a document is
``{version: v1, mig-configs: {name: [entry, ...]}}`` and each entry has ``devices`` (``all`` or a list of GPU
indices), ``mig-enabled``, optional ``mig-devices`` ({profile: count}) and optional ``device-filter``
(PCI device IDs). Like mig-parted, the parser refuses a version or a key it does not know, naming the config
and the entry, because a document we misread is a document we would rewrite wrongly: the MIG manager's
ConfigMap is shared with other teams' configs, which we must carry over untouched.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple, Union

try:
    import yaml

    YAML_IMPORT_ERROR = None
except ImportError as _exc:  # modules report it with missing_required_lib()
    yaml = None
    YAML_IMPORT_ERROR = _exc

VERSION = "v1"
CONFIG_KEY = "config.yaml"  # the ConfigMap key the MIG manager reads
BUILTIN_DISABLED = "all-disabled"
ENTRY_KEYS = ("devices", "mig-enabled", "mig-devices", "device-filter")

Devices = Union[str, List[int]]
Layout = Dict[str, int]


class SpecError(ValueError):
    """A mig-parted document we cannot read or write; `where` says which document or entry."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__("%s: %s" % (where, message))
        self.where = where
        self.message = message


def _check_entry(entry: object, where: str) -> None:
    if not isinstance(entry, dict):
        raise SpecError(where, "an entry must be a mapping with devices and mig-enabled, got %s" % type(entry).__name__)
    unknown = sorted(set(entry) - set(ENTRY_KEYS))
    if unknown:
        raise SpecError(
            where,
            "unknown key(s) %s in a mig-parted v1 entry (known: %s)"
            % (", ".join(map(str, unknown)), ", ".join(ENTRY_KEYS)),
        )
    devices = entry.get("devices")
    if devices != "all" and not (isinstance(devices, list) and all(isinstance(d, int) for d in devices)):
        raise SpecError(where, "devices must be 'all' or a list of GPU indices, got %r" % (devices,))
    if not isinstance(entry.get("mig-enabled"), bool):
        raise SpecError(where, "mig-enabled must be true or false")
    mig_devices = entry.get("mig-devices")
    if mig_devices is not None and not (
        isinstance(mig_devices, dict) and all(isinstance(c, int) and c >= 0 for c in mig_devices.values())
    ):
        raise SpecError(where, "mig-devices must map MIG profile names to counts")


def validate_document(doc: object, where: str = "the mig-parted config") -> dict:
    """A checked copy of a parsed document; SpecError on anything mig-parted v1 would not accept."""
    if not isinstance(doc, dict) or not isinstance(doc.get("mig-configs", {}) or {}, dict):
        raise SpecError(
            where,
            "key %s is not a mig-parted document (a mapping with version: v1 and mig-configs); "
            "fix it so gpupool can merge its configs" % CONFIG_KEY,
        )
    if doc.get("version", VERSION) != VERSION:
        raise SpecError(
            where, "mig-parted config version %r is not supported (only %s)" % (doc.get("version"), VERSION)
        )
    unknown = sorted(set(doc) - {"version", "mig-configs"})
    if unknown:
        raise SpecError(
            where,
            "unknown top-level key(s) %s (a v1 document has version and mig-configs)" % ", ".join(map(str, unknown)),
        )
    configs = dict(doc.get("mig-configs") or {})
    for name, entries in configs.items():
        if not isinstance(entries, list):
            raise SpecError("%s, config %s" % (where, name), "a config must be a list of entries")
        for index, entry in enumerate(entries):
            _check_entry(entry, "%s, config %s entry %d" % (where, name, index))
    return {"version": VERSION, "mig-configs": configs}


def parse_document(text: Optional[str], where: str = "the ConfigMap") -> dict:
    """The mig-parted document in the ConfigMap's config.yaml (None or empty: a new document)."""
    if text is None or not str(text).strip():
        return {"version": VERSION, "mig-configs": {}}
    if yaml is None:
        raise SpecError(where, "PyYAML is needed to read the mig-parted config")
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SpecError(
            where,
            "key %s is not YAML (%s); fix or remove it so gpupool can add its configs "
            "without losing anyone else's" % (CONFIG_KEY, str(exc).splitlines()[0]),
        )
    return validate_document(doc, where)


def render_document(doc: dict) -> str:
    if yaml is None:
        raise SpecError("mig-parted config", "PyYAML is needed to write the mig-parted config")
    return yaml.safe_dump(validate_document(doc), sort_keys=False, default_flow_style=False)


def config_entries(entries: Sequence[Tuple[Devices, Optional[Layout]]]) -> List[dict]:
    """Entries of one config from [(devices, layout or None)]; GPUs with identical layouts are grouped."""
    grouped: list = []
    for devices, layout in entries:
        key = None if layout is None else tuple(sorted((n, c) for n, c in layout.items() if c))
        for group in grouped:
            if group[0] == key and group[1] != "all" and devices != "all":
                group[1].extend(devices)
                break
        else:
            grouped.append([key, devices if devices == "all" else list(devices)])
    spec = []
    for key, devices in grouped:
        entry: dict = {"devices": devices if devices == "all" else sorted(devices)}
        entry["mig-enabled"] = key is not None
        if key is not None:
            entry["mig-devices"] = dict(key)
        spec.append(entry)
    return spec


def mig_parted_config(configs: Dict[str, Sequence[Tuple[Devices, Optional[Layout]]]]) -> dict:
    """A whole v1 document: the built-in all-disabled config plus {config name: [(devices, layout)]}."""
    out = {"version": VERSION, "mig-configs": {BUILTIN_DISABLED: [{"devices": "all", "mig-enabled": False}]}}
    for name, entries in sorted(configs.items()):
        out["mig-configs"][name] = config_entries(entries)
    return out
