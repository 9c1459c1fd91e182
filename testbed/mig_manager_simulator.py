"""MIG manager SIMULATOR: acts on the ``nvidia.com/mig.config`` node label like NVIDIA's MIG manager.

Models ``nvidia-mig-manager`` / ``reconfigure-mig.sh`` of NVIDIA/mig-parted v0.15.0 (reference
nvidia-dra-mig-imex.md §2.1, §2.2) on the simulated GPUs of each node (GpuInventory):

1. the desired config is the node label ``nvidia.com/mig.config=<name>``; the manager reacts when
   the value changes (or when it first sees a node with the label);
2. the config is read from the mig-parted ``version: v1`` file in a ConfigMap (default
   ``gpupool-mig-parted-config`` in ``gpu-operator``, key ``config.yaml``: what the collection
   writes, model.inventory.MigManager) and validated like mig-parted does (``version: v1`` only,
   ``mig-configs`` non-empty, entries with ``devices`` (``all`` or indices) and ``mig-enabled``,
   ``mig-devices`` required when enabled and empty when disabled, optional ``device-filter``,
   unknown fields refused). ``all-disabled`` is always known. An unknown name or an invalid file
   sets ``nvidia.com/mig.config.state=failed`` at once;
3. if the node already has that layout ("mig-parted assert" passes) the state becomes ``success``
   at once; otherwise ``pending``, and after a configurable delay the layout is applied: each
   entry applies to the GPUs it selects (later entries win, indices the node lacks are ignored),
   every MIG layout must fit the GPU (the test bed's own MIG tables decide, testbed/mig_tables, as
   NVML would: an infeasible layout, or MIG on a GPU without MIG, is ``failed``); on success the node's MIG devices change, the DRA driver
   simulator republishes the node's ResourceSlices (new pool generation), then the state becomes
   ``success``;
4. fault injection: ``inject_fault(node=..., count=...)`` makes the next apply(s) end ``failed``.

The manager only runs on nodes with MIG-capable GPUs (the GPU Operator deploys it there), so the
label is ignored elsewhere. Not simulated: pausing GPU clients (``nvidia.com/gpu.deploy.*``), the
``rebooting`` state and WITH_REBOOT, GPU resets on Ampere, host GPU clients, the ConfigMaps the
manager generates itself, GFD relabelling after a change. A failed apply leaves the old layout.
"""

from __future__ import annotations

import copy
import sys
import threading
import time
from dataclasses import dataclass, field

import yaml

from testbed.mig_tables import LayoutRefused, placed
from testbed.simulator_client import Kube, KubeError, node_path

IDENTITY = "testbed:mig-manager-simulator"
CONFIG_LABEL = "nvidia.com/mig.config"
STATE_LABEL = "nvidia.com/mig.config.state"
DEFAULT_CONFIG_MAP = "gpupool-mig-parted-config"
DEFAULT_NAMESPACE = "gpu-operator"
DEFAULT_KEY = "config.yaml"
BUILTIN = {"all-disabled": [{"devices": "all", "mig-enabled": False}]}
ENTRY_KEYS = {"devices", "mig-enabled", "mig-devices", "device-filter"}


def _log(msg: str) -> None:
    print("[mig-manager-simulator] %s" % msg, file=sys.stderr, flush=True)


class ConfigError(ValueError):
    """The mig-parted file or the selected config is invalid (state failed without pending)."""


# ---- mig-parted config (pure) ------------------------------------------------------------------------
def parse_config(text: str) -> dict:
    """{config name: [entry, ...]} from a mig-parted `version: v1` file; raises ConfigError."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError("the mig-parted config is not YAML: %s" % exc)
    if not isinstance(data, dict):
        raise ConfigError("the mig-parted config must be a mapping with version and mig-configs")
    unknown = sorted(set(data) - {"version", "mig-configs"})
    if unknown:
        raise ConfigError("unknown top-level field(s) %s in the mig-parted config" % ", ".join(unknown))
    if data.get("version") != "v1":
        raise ConfigError("unsupported mig-parted config version %r (only v1)" % data.get("version"))
    configs = data.get("mig-configs")
    if not isinstance(configs, dict) or not configs:
        raise ConfigError("mig-configs must be a non-empty mapping")
    for name, entries in configs.items():
        if not isinstance(entries, list) or not entries:
            raise ConfigError("mig-configs.%s must be a non-empty list" % name)
        for i, entry in enumerate(entries):
            _check_entry("mig-configs.%s[%d]" % (name, i), entry)
    return configs


def _check_entry(where: str, entry) -> None:
    if not isinstance(entry, dict):
        raise ConfigError("%s must be a mapping" % where)
    unknown = sorted(set(entry) - ENTRY_KEYS)
    if unknown:
        raise ConfigError("%s: unknown field(s) %s" % (where, ", ".join(unknown)))
    devices = entry.get("devices")
    if devices != "all" and not (
        isinstance(devices, list)
        and devices
        and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in devices)
    ):
        raise ConfigError("%s.devices must be 'all' or a list of GPU indices, got %r" % (where, devices))
    enabled = entry.get("mig-enabled")
    if not isinstance(enabled, bool):
        raise ConfigError("%s.mig-enabled is required (true or false)" % where)
    mig_devices = entry.get("mig-devices")
    if enabled and not isinstance(mig_devices, dict):
        raise ConfigError("%s.mig-devices is required when mig-enabled is true (use {} for none)" % where)
    if not enabled and mig_devices:
        raise ConfigError("%s.mig-devices must be empty when mig-enabled is false" % where)
    for profile, count in (mig_devices or {}).items():
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise ConfigError("%s.mig-devices.%s must be a count, got %r" % (where, profile, count))
    flt = entry.get("device-filter")
    if flt is not None and not isinstance(flt, (str, list)):
        raise ConfigError("%s.device-filter must be a PCI device ID or a list of them" % where)


def select(configs: dict, name: str) -> list:
    if name in configs:
        return configs[name]
    if name in BUILTIN:
        return BUILTIN[name]
    raise ConfigError(
        "MIG config %r is not in the mig-parted config (known: %s)"
        % (name, ", ".join(sorted(set(configs) | set(BUILTIN))))
    )


def _filter_matches(flt, gpu) -> bool:
    """mig-parted's device-filter against the simulated GPU's PCI device ID (the table's first ID)."""
    if flt is None:
        return True
    wanted = {f.lower() for f in ([flt] if isinstance(flt, str) else flt)}
    return any(pid.lower() in wanted for pid in gpu.pci_device_ids[:1])


def resolve(entries: list, gpu, count: int, current: dict) -> dict:
    """New {GPU index: None | {profile: count}} after applying the entries; GPUs no entry selects
    keep their layout. Pure: raises LayoutRefused when a layout cannot be applied."""
    layouts = {i: copy.deepcopy(current.get(i)) for i in range(count)}
    for entry in entries:
        if not _filter_matches(entry.get("device-filter"), gpu):
            continue
        indices = range(count) if entry["devices"] == "all" else [d for d in entry["devices"] if d < count]
        for i in indices:
            if not entry["mig-enabled"]:
                layouts[i] = None
                continue
            layout = {p: c for p, c in (entry.get("mig-devices") or {}).items() if c}
            if not gpu.mig:
                raise LayoutRefused("GPU %d (%s) does not support MIG" % (i, gpu.key))
            if layout:
                placed(gpu, layout)  # raises LayoutRefused with the reason NVML would give
            layouts[i] = layout
    return layouts


# ---- the simulator -----------------------------------------------------------------------------------
@dataclass
class NodeMigState:
    handled: str | None = None  # the label value last acted on
    state: str | None = None
    due: float | None = None  # when a pending apply finishes
    target: dict | None = None  # entries being applied
    message: str = ""
    history: list = field(default_factory=list)  # [(config, state, message)]


class MigManagerSimulator:
    """See the module docstring. tick(nodes) runs from the sandbox loop thread."""

    def __init__(
        self,
        kube: Kube,
        inventory,
        *,
        config_map: str = DEFAULT_CONFIG_MAP,
        namespace: str = DEFAULT_NAMESPACE,
        key: str = DEFAULT_KEY,
        delay: float = 1.0,
        republish=None,
        log=_log,
    ):
        """republish(node name): called after a new layout is in place, before `success` (the DRA
        driver simulator republishes the node's ResourceSlices)."""
        self.kube = kube
        self.inventory = inventory
        self.config_map, self.namespace, self.key = config_map, namespace, key
        self.delay = delay
        self.republish = republish
        self.log = log
        self._lock = threading.RLock()
        self._nodes: dict[str, NodeMigState] = {}
        self._faults: list[dict] = []

    # ---- Python API for tests ---------------------------------------------------------------------
    def inject_fault(
        self, node: str | None = None, count: int = 1, reason: str = "injected fault: nvidia-mig-parted apply failed"
    ) -> None:
        """The next `count` applies (on `node`, or on any node) end in state failed."""
        with self._lock:
            self._faults.append({"node": node, "count": count, "reason": reason})

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def layout(self, node: str) -> dict:
        """Current MIG layout of the node: {GPU index: None (MIG off) or {profile: count}}."""
        return self.inventory.layouts(node)

    def state(self, node: str) -> dict:
        with self._lock:
            st = self._nodes.get(node) or NodeMigState()
            return {"config": st.handled, "state": st.state, "message": st.message, "history": list(st.history)}

    # ---- reconcile ----------------------------------------------------------------------------------
    def tick(self, nodes: list[dict]) -> None:
        now = time.monotonic()
        names = set()
        for node in nodes:
            name = node["metadata"]["name"]
            names.add(name)
            value = (node["metadata"].get("labels") or {}).get(CONFIG_LABEL)
            machine = self.inventory.for_node(node)
            if machine is None or not machine.mig_capable:
                continue  # no MIG manager runs there
            with self._lock:
                st = self._nodes.setdefault(name, NodeMigState())
            if value is None:
                st.handled = None  # label removed: setting it again (even to the same value) re-applies
            elif value != st.handled:
                self._start(name, machine, value, st)
            elif st.state == "pending" and st.due is not None and now >= st.due:
                self._finish(name, machine, st)
        with self._lock:
            for gone in [n for n in self._nodes if n not in names]:
                del self._nodes[gone]

    def _set_state(self, name: str, st: NodeMigState, state: str, message: str = "") -> None:
        st.state, st.message = state, message
        try:
            self.kube.patch(node_path(name), {"metadata": {"labels": {STATE_LABEL: state}}})
        except KubeError as exc:
            if exc.status != 404:
                raise
        st.history.append((st.handled, state, message))  # after the label is written
        self.log("%s: %s=%s -> %s%s" % (name, CONFIG_LABEL, st.handled, state, (": " + message) if message else ""))

    def _load(self) -> dict:
        path = "/api/v1/namespaces/%s/configmaps/%s" % (self.namespace, self.config_map)
        cm = self.kube.get(path)
        if cm is None:
            return {}
        text = (cm.get("data") or {}).get(self.key)
        if text is None:
            raise ConfigError("ConfigMap %s/%s has no key %s" % (self.namespace, self.config_map, self.key))
        return parse_config(text)

    def _start(self, name: str, machine, value: str, st: NodeMigState) -> None:
        st.handled, st.due, st.target = value, None, None
        try:
            entries = select(self._load(), value)
        except ConfigError as exc:
            return self._set_state(name, st, "failed", str(exc))
        try:
            wanted = resolve(entries, machine.gpu, machine.count, self.inventory.layouts(name))
        except LayoutRefused:
            wanted = None  # found out while applying: pending, then failed (as NVML would refuse it)
        if wanted is not None and wanted == self.inventory.layouts(name) and not self._has_fault(name):
            return self._set_state(name, st, "success", "already applied (mig-parted assert passed)")
        st.target, st.due = entries, time.monotonic() + self.delay
        self._set_state(name, st, "pending")

    def _has_fault(self, name: str) -> bool:
        with self._lock:
            return any(f["node"] in (None, name) for f in self._faults)

    def _take_fault(self, name: str) -> str | None:
        with self._lock:
            for f in self._faults:
                if f["node"] in (None, name):
                    f["count"] -= 1
                    if f["count"] <= 0:
                        self._faults.remove(f)
                    return f["reason"]
        return None

    def _finish(self, name: str, machine, st: NodeMigState) -> None:
        st.due = None
        fault = self._take_fault(name)
        if fault:
            return self._set_state(name, st, "failed", fault)
        try:
            layouts = resolve(st.target, machine.gpu, machine.count, self.inventory.layouts(name))
        except LayoutRefused as exc:
            return self._set_state(name, st, "failed", str(exc))
        self.inventory.set_layouts(name, layouts)
        if self.republish is not None:
            self.republish(name)
        self._set_state(name, st, "success")
