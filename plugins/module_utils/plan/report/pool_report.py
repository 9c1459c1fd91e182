# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the GPU pools look like in the cluster, against what the inventory declares: pure, no I/O.

Input: the validated `Cluster`, and plain dicts as the API returns them - Nodes, ResourceSlices and
ResourceClaims (resource.k8s.io v1, v1beta2 or v1beta1). Output: one report per pool and a list of
mismatches, each with a sentence a person can act on.

Facts used (reference nvidia-dra-mig-imex.md §1.5-1.6, §2.2):

* the NVIDIA DRA driver (``gpu.nvidia.com``) publishes one pool per node, named after the node; a
  full GPU is device ``gpu-<minor>`` with attribute ``type`` = gpu, a MIG device is
  ``gpu-<parent minor>-mig-...`` with ``type`` = mig and ``profile``. The number is the /dev/nvidiaN
  *minor*, not the NVML index that mig-parted's ``devices`` and the inventory's ``mig.layouts`` use
  (driver issue #563), so it only tells which devices share a GPU. The index is the ``index`` /
  ``parentIndex`` attribute where the driver publishes it (v25.3.x); newer drivers do not, and then
  the GPUs are put in NVML's enumeration order, by ``resource.kubernetes.io/pciBusID``;
* a ResourceSlice pool may span several slices and is republished with a higher
  ``spec.pool.generation``; only the newest generation counts;
* an allocated device is listed in a ResourceClaim's ``status.allocation.devices.results`` by
  ``driver``, ``pool`` and ``device``;
* the MIG manager reports ``nvidia.com/mig.config.state`` on the node.

A layout is compared per GPU index as {profile: count}: the MIG manager (mig-parted) picks the
placements, so the same layout at other placements is not a mismatch.
"""

from __future__ import annotations

import re

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.gates import pool_gates
from ansible_collections.gpupool.core.plugins.module_utils.model.names import compute_domain_name, mig_config_name
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.node_groups import assign_groups
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.node_owners import may_write
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.orphans import orphan_message, orphan_rows
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.pool_nodes import (
    desired_node_taints,
    match_nodes,
    node_matcher,
    node_ready,
)

GPU_DRIVER = "gpu.nvidia.com"
CONFIG_LABEL = "nvidia.com/mig.config"
STATE_LABEL = "nvidia.com/mig.config.state"
NODEGROUP_LABEL = "magnum.openstack.org/nodegroup"
# The parent's minor in a device name: which devices belong to one GPU (not its index).
_FULL = re.compile(r"^gpu-(\d+)$")
_MIG = re.compile(r"^gpu-(\d+)-mig-")
PCI_BUS_ID = "resource.kubernetes.io/pciBusID"
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"

# Mismatch kinds, in the order they are reported.
KINDS = (
    "no_node_selector",
    "node_in_two_pools",
    "missing_nodes",
    "extra_nodes",
    "gate_missing",
    "compute_domain_missing",
    "compute_domain_not_ready",
    "node_not_ready",
    "taint_missing",
    "mig_failed",
    "mig_config_label",
    "not_published",
    "wrong_layout",
    "orphaned_node",
)
PLUGIN_SUFFIX = "-kubelet-plugin"


def _meta(obj):
    return obj.get("metadata") or {}


def _attr(device, name):
    """An attribute value of a device (v1: device.attributes; v1beta1: device.basic.attributes)."""
    attrs = (device.get("basic") or device).get("attributes") or {}
    value = attrs.get(name)
    if value is None:
        value = attrs.get("%s/%s" % (GPU_DRIVER, name))
    if isinstance(value, dict):
        for key in ("string", "int", "bool", "version"):
            if key in value:
                return value[key]
    return value


# ---- ResourceSlices and claims ------------------------------------------------------------------------


def current_slices(slices, driver=GPU_DRIVER):
    """Slices of `driver` in the newest generation of their pool: {pool name: [slices]}."""
    newest = {}
    for sl in slices:
        spec = sl.get("spec") or {}
        if spec.get("driver") != driver:
            continue
        pool = (spec.get("pool") or {}).get("name") or spec.get("nodeName")
        gen = int((spec.get("pool") or {}).get("generation") or 0)
        have = newest.get(pool)
        if have is None or gen > have[0]:
            newest[pool] = (gen, [sl])
        elif gen == have[0]:
            have[1].append(sl)
    return {pool: sls for pool, (gen, sls) in newest.items()}


def node_devices(slices_by_pool, node_name, driver=GPU_DRIVER):
    """[(pool, device dict)] the driver publishes for a node (pool named after the node, or nodeName)."""
    out = []
    for pool, sls in sorted(slices_by_pool.items()):
        for sl in sls:
            spec = sl.get("spec") or {}
            if spec.get("nodeName") != node_name and pool != node_name:
                continue
            for dev in spec.get("devices") or []:
                out.append((pool, dev))
    return out


def allocated_devices(claims):
    """{(driver, pool, device): "namespace/claim"} from ResourceClaim status.allocation."""
    out = {}
    for claim in claims:
        meta = _meta(claim)
        alloc = (claim.get("status") or {}).get("allocation") or {}
        for res in (alloc.get("devices") or {}).get("results") or []:
            key = (res.get("driver"), res.get("pool"), res.get("device"))
            out.setdefault(key, "%s/%s" % (meta.get("namespace"), meta.get("name")))
    return out


def _value(value):
    """A published attribute's value: {"string": v} (or int, bool, version) unwrapped; a bare value as is."""
    if isinstance(value, dict):
        for key in ("string", "int", "bool", "version"):
            if key in value:
                return value[key]
    return value


def _get(attrs, name):
    value = attrs.get(name)
    if value is None:
        value = attrs.get(GPU_DRIVER + "/" + name)
    return _value(value) if value is not None else None


_NAMES: dict = {}  # device name -> ("gpu" | "mig", minor) or None: names repeat on every node of a pool


def _name_facts(name):
    if name not in _NAMES:
        if len(_NAMES) > 100000:
            _NAMES.clear()
        full, mig = _FULL.match(name), _MIG.match(name)
        _NAMES[name] = ("gpu", int(full.group(1))) if full else ("mig", int(mig.group(1))) if mig else None
    return _NAMES[name]


_Q_TYPE, _Q_PROFILE = GPU_DRIVER + "/type", GPU_DRIVER + "/profile"
_Q_INDEX, _Q_PARENT = GPU_DRIVER + "/index", GPU_DRIVER + "/parentIndex"


def read_gpu_devices(devices):
    """[(owner, device, kind, minor, profile, index, bus, root)] of the whole-GPU ("gpu") and MIG ("mig") devices
    the driver published, each device's attributes read once; its other devices (channels, daemons) are left out.
    minor: from the device name (gpu-<minor>...); profile: a MIG device's; index: the published ``index`` /
    ``parentIndex`` (older drivers) or None; bus: the PCI bus ID, lowercase, or None; root: the pcieRoot or None.
    Hot at scale (2,000 nodes x 8 GPUs is 150,000 devices): plain tuples and direct lookups."""
    out = []
    names = _NAMES
    for owner, dev in devices:
        name = dev.get("name") or ""
        facts = names.get(name) if name in names else _name_facts(name)
        if facts is None:
            continue
        attrs = (dev.get("basic") or dev).get("attributes") or {}
        get = attrs.get
        kind = _value(get("type") or get(_Q_TYPE))
        if kind != facts[0]:
            continue
        index = get("index" if kind == "gpu" else "parentIndex")
        if index is None:  # a bare 0 is an index too
            index = get(_Q_INDEX if kind == "gpu" else _Q_PARENT)
        bus = get(PCI_BUS_ID) or get("pcieBusID") or get(GPU_DRIVER + "/pcieBusID")
        root = get(PCIE_ROOT)
        profile = (_value(get("profile") or get(_Q_PROFILE)) or "unknown") if kind == "mig" else None
        bus = _value(bus) if bus is not None else None
        index = _value(index) if index is not None else None
        out.append(
            (
                owner,
                dev,
                kind,
                facts[1],
                profile,
                int(index) if index is not None else None,
                str(bus).lower() if bus else None,
                _value(root) if root is not None else None,
            )
        )
    return out


def gpu_devices(devices):
    """(owner, device, type, minor) of each whole-GPU ("gpu") and MIG ("mig") device the driver published; its
    other devices (channels, daemons) are left out. The minor comes from the device name (gpu-<minor>...)."""
    for d in read_gpu_devices(devices):
        yield d[0], d[1], d[2], d[3]


def published_gpus(devices, read=None):
    """The node's GPUs as published: [{"minor", "index" (or None), "order", "bus", "layout"}] where layout is None
    for a full GPU or {profile: count} of its MIG devices; "order" sorts like NVML enumerates (PCI bus ID, else the
    minor). `read`: the devices already read (read_gpu_devices), else they are read from `devices`."""
    gpus = {}
    for d in read if read is not None else read_gpu_devices(devices):
        gpu = gpus.get(d[3])
        if gpu is None:
            gpu = gpus[d[3]] = {"minor": d[3], "index": None, "order": None, "bus": None, "layout": None}
        if d[5] is not None:
            gpu["index"] = d[5]
        if d[6]:
            gpu["order"] = gpu["bus"] = d[6]
        if d[2] == "mig":
            layout = gpu["layout"]
            if layout is None:
                layout = gpu["layout"] = {}
            layout[d[4]] = layout.get(d[4], 0) + 1
    return sorted(gpus.values(), key=lambda g: (g["order"] is None, g["order"] or "", g["minor"]))


def pool_bus_ids(gpus_of_nodes):
    """The sorted PCI bus IDs the GPUs of a pool's nodes publish (`gpus_of_nodes`: published_gpus of each node).
    The nodes of one pool share a flavor, so the same PCI slots: NVML numbers the GPUs in PCI bus order, so when
    the set has one bus ID per GPU of a node, a GPU's index is its bus ID's place in it, on every node, whether
    the node publishes all its GPUs or not (a GPU with MIG on and no instances publishes nothing)."""
    return sorted({g["bus"] for gpus in gpus_of_nodes for g in gpus if g["bus"]})


def published_layout(devices, expected=None, gpus_per_node=None, bus_ids=None):
    """{GPU index: None (full GPU) or {profile: count}} from a node's gpu.nvidia.com devices, by the rule of
    place_gpus."""
    return {idx: g["layout"] for idx, g in indexed_gpus(devices, expected, gpus_per_node, bus_ids)}


def indexed_gpus(devices, expected=None, gpus_per_node=None, bus_ids=None):
    """[(GPU index, published GPU)] of a node's devices, by the rule of place_gpus."""
    return place_gpus(published_gpus(devices), expected, gpus_per_node, bus_ids)


def place_gpus(gpus, expected=None, gpus_per_node=None, bus_ids=None):
    """[(GPU index, published GPU)]: each GPU the node publishes at the inventory's GPU index, by identity.

    1. the ``index``/``parentIndex`` attribute, when every GPU publishes it (drivers v25.3.x);
    2. else the place of the GPU's PCI bus ID among `bus_ids` (pool_bus_ids: the pool's nodes together), when that
       set has one bus ID per GPU of a node (`gpus_per_node`) and holds the node's;
    3. else by position, which may be wrong: the GPUs in PCI bus order (else by minor) laid onto `expected`'s
       indices when as many GPUs publish as it has, else numbered from 0. Each GPU placed so gets "maybe": the
       indices it may really have (by its bus ID's place among the pool's, the indices no published GPU explains
       on either side; without a bus ID, any index), and the advisor freezes all of them where it is allocated.
    A GPU placed by rule 1 or 2 gets "maybe" None."""
    for gpu in gpus:
        gpu["maybe"] = None
    if gpus and all(g["index"] is not None for g in gpus):
        return [(g["index"], g) for g in gpus]
    if bus_ids and gpus_per_node and len(bus_ids) == gpus_per_node:
        where = {bus: k for k, bus in enumerate(bus_ids)}
        if all(g["bus"] in where for g in gpus):
            return sorted(((where[g["bus"]], g) for g in gpus), key=lambda p: p[0])
    indices = list(range(len(gpus)))
    if expected is not None and len(gpus) != gpus_per_node and len(expected) == len(gpus):
        indices = sorted(expected)
    elif expected is not None and gpus_per_node and len(gpus) < gpus_per_node:
        indices = _matched_indices(gpus, expected, gpus_per_node, bus_ids) or indices
    if gpus_per_node:
        known = bus_ids if bus_ids and len(bus_ids) <= gpus_per_node else [g["bus"] for g in gpus]
        where = {bus: k for k, bus in enumerate(known)}
        spare = gpus_per_node - len(known)
        for index, gpu in zip(indices, gpus):
            if gpu["bus"] in where and spare >= 0:
                start = where[gpu["bus"]]
                gpu["maybe"] = sorted(set(range(start, start + spare + 1)) | {index})
            else:  # no bus ID: NVML's order is not known (the minor is not the index, driver issue #563)
                gpu["maybe"] = sorted(set(range(gpus_per_node)) | {index})
    return list(zip(indices, gpus))


def _matched_indices(gpus, expected, gpus_per_node, bus_ids):
    """The indices, in bus order, on which the most published GPUs show the layout the inventory expects there (a
    whole GPU where the inventory keeps GPUs whole): a node publishing only its whole GPU of three, the other two
    MIG GPUs without instances, has it at the whole GPU's index, not at 0. Ties go to the lowest indices. Each GPU
    stays within the indices its bus ID's place among the pool's allows. None when no placement fits."""
    count = len(gpus)
    known = {bus: k for k, bus in enumerate(bus_ids or [])}
    spare = gpus_per_node - len(known)
    allowed = []
    for gpu in gpus:
        if gpu["bus"] in known and spare >= 0:
            allowed.append(range(known[gpu["bus"]], known[gpu["bus"]] + spare + 1))
        else:
            allowed.append(range(gpus_per_node))
    memo = {}

    def best(k, start):
        """(matches, indices) placing gpus[k:] on indices >= start in order, or None."""
        if k == count:
            return (0, ())
        if (k, start) not in memo:
            found = None
            for index in range(start, gpus_per_node - (count - k) + 1):
                if index not in allowed[k]:
                    continue
                rest = best(k + 1, index + 1)
                if rest is None:
                    continue
                score = rest[0] + (1 if index in expected and expected[index] == gpus[k]["layout"] else 0)
                if found is None or score > found[0]:
                    found = (score, (index,) + rest[1])
            memo[(k, start)] = found
        return memo[(k, start)]

    answer = best(0, 0)
    return list(answer[1]) if answer else None


def expected_layout(pool, group=None):
    """{GPU index: None (full GPU) or {profile: count}} the inventory wants on the pool's nodes (group None) or on
    the nodes of its MIG group `group`, or None when not fixed (dynamic MIG: the driver creates MIG devices on
    demand). A GPU with MIG on and no instances publishes nothing and is left out."""
    if pool.mig.mode == "dynamic":
        return None
    out = {}
    for idx in range(pool.gpu.per_node):
        layout = pool.layout_for(idx, group) if pool.mig.mode == "static" else None
        if pool.mig.mode == "static" and layout is not None:
            layout = {p: c for p, c in layout.items() if c}
            if not layout:
                continue
        out[idx] = layout
    return out


def describe_gpu(layout):
    if layout is None:
        return "full GPU"
    return "MIG " + " + ".join("%s x%d" % (p, c) for p, c in sorted(layout.items()))


def layout_differences(expected, published):
    """Human lines for each GPU index whose published devices differ from the expected ones."""
    lines = []
    for idx in sorted(set(expected) | set(published)):
        want, have = expected.get(idx, "nothing"), published.get(idx, "nothing")
        if want == have:
            continue
        lines.append(
            "GPU %d: wants %s, publishes %s"
            % (
                idx,
                describe_gpu(want) if want != "nothing" else "nothing",
                describe_gpu(have) if have != "nothing" else "nothing",
            )
        )
    return lines


def _count(bucket, allocated):
    bucket["total"] += 1
    bucket["allocated" if allocated else "free"] += 1


def _bucket():
    return {"total": 0, "allocated": 0, "free": 0}


# ---- the DRA driver and ComputeDomains -------------------------------------------------------------------


def _env(container, name):
    for env in container.get("env") or []:
        if env.get("name") == name:
            return env.get("value")
    return None


def driver_plugin(daemonsets, namespace=None):
    """The NVIDIA DRA driver's kubelet plugin as deployed: {"name", "namespace", "gates"} or None.

    The DaemonSet named *-kubelet-plugin with a `gpus` container; the one in `namespace` (the inventory's
    dra_driver.namespace) wins, else the only one in the cluster. Gates from its FEATURE_GATES env
    ("K=V,K=V," as the chart renders it)."""
    found = []
    for ds in daemonsets:
        containers = ((ds.get("spec") or {}).get("template") or {}).get("spec", {}).get("containers") or []
        gpus = [c for c in containers if c.get("name") == "gpus"]
        if _meta(ds).get("name", "").endswith(PLUGIN_SUFFIX) and gpus:
            gates = {}
            for item in (_env(gpus[0], "FEATURE_GATES") or "").split(","):
                if "=" in item:
                    key, value = item.split("=", 1)
                    gates[key.strip()] = value.strip().lower() == "true"
            found.append({"name": _meta(ds).get("name"), "namespace": _meta(ds).get("namespace"), "gates": gates})
    mine = [f for f in found if f["namespace"] == namespace]
    if mine:
        return mine[0]
    return found[0] if len(found) == 1 else None


def gate_mismatches(pool, plugin):
    """The gates the pool uses that the deployed driver does not have on (claims would fail at prepare)."""
    out = []
    for gate, key in sorted(pool_gates(pool).items()):
        if plugin is None:
            out.append(
                _mm(
                    pool.name,
                    None,
                    "gate_missing",
                    "pool %s uses %s, which needs the DRA driver feature gate %s, but no NVIDIA DRA driver "
                    "kubelet plugin was found; install it with gpupool.core.dra_driver" % (pool.name, key, gate),
                    gate=gate,
                )
            )
        elif not plugin["gates"].get(gate):
            out.append(
                _mm(
                    pool.name,
                    None,
                    "gate_missing",
                    "pool %s uses %s but the DRA driver (%s/%s) runs without the feature gate %s: its claims "
                    "fail at prepare time; run gpupool.core.dra_driver (it derives the gates from the pools)"
                    % (pool.name, key, plugin["namespace"], plugin["name"], gate),
                    gate=gate,
                )
            )
    return out


def compute_domain_state(cd):
    """Ready | NotReady | idle (no status, or no node yet: the domain follows its workloads) | None (absent)."""
    if cd is None:
        return None
    status = cd.get("status") or {}
    if status.get("status") == "Ready":
        return "Ready"
    if not status.get("nodes"):
        return "idle"
    return "NotReady"


def compute_domain_report(pool, compute_domains, served=True):
    """({name, namespace, state, nodes} or None, mismatches) for a pool with multi-node NVLink."""
    if pool.nvlink.mode not in ("compute_domain", "host_imex"):
        return None, []
    name, namespace = compute_domain_name(pool), pool.nvlink.compute_domain.namespace
    cd = next(
        (c for c in compute_domains if _meta(c).get("name") == name and _meta(c).get("namespace") == namespace), None
    )
    state = compute_domain_state(cd)
    nodes = ((cd or {}).get("status") or {}).get("nodes") or []
    info = {
        "name": name,
        "namespace": namespace,
        "state": state,
        "nodes": [{"name": n.get("name"), "status": n.get("status")} for n in nodes],
    }
    if cd is None:
        why = (
            "the cluster does not serve ComputeDomains (the DRA driver's CRD; gpupool.core.dra_driver enables "
            "them for NVLink pools)"
            if not served
            else "run gpupool.core.compute_domain"
        )
        return info, [
            _mm(
                pool.name,
                None,
                "compute_domain_missing",
                "pool %s: ComputeDomain %s/%s does not exist; %s" % (pool.name, namespace, name, why),
            )
        ]
    if state == "NotReady":
        waiting = [n.get("name") for n in nodes if n.get("status") != "Ready"]
        return info, [
            _mm(
                pool.name,
                None,
                "compute_domain_not_ready",
                "pool %s: ComputeDomain %s/%s is NotReady (IMEX daemon not ready on %s); check the IMEX "
                "daemons in the driver namespace%s"
                % (
                    pool.name,
                    namespace,
                    name,
                    ", ".join(waiting) or "its nodes",
                    " and the host nvidia-imex service (gpupool.core.imex)" if pool.nvlink.mode == "host_imex" else "",
                ),
            )
        ]
    return info, []


# ---- the report ---------------------------------------------------------------------------------------


def assign(pools, nodes, nodegroup_label=NODEGROUP_LABEL, name_pattern=None):
    """({pool: [nodes]}, mismatches) - like node_pool's assignment, but a problem is reported, not raised."""
    mismatches, matchers = [], []
    for pool in pools:
        try:
            matchers.append((pool, node_matcher(pool, nodegroup_label, name_pattern)))
        except Problems as exc:  # only a cluster that skipped load_cluster's checks gets here
            mismatches.append(_mm(pool.name, None, "no_node_selector", exc.problems[0][1]))
    named = [n for n in nodes if _meta(n).get("name")]
    matched, conflicts = match_nodes(matchers, named)
    out = {pool.name: matched.get(pool.name, []) for pool in pools}
    mismatches += [_mm(pool, node, "node_in_two_pools", text) for pool, node, text in conflicts]
    return out, mismatches, {p.name: m.describe for p, m in matchers}


def taint_text(taint) -> str:
    """key=value:effect, as kubectl taint writes it."""
    value = taint.get("value")
    return "%s%s:%s" % (taint["key"], "=%s" % value if value else "", taint.get("effect", ""))


def missing_taints(pool, node) -> list:
    """The pool's taints (key, value and effect) the node does not carry."""
    have = {
        (t.get("key"), t.get("value") or "", t.get("effect")) for t in ((node.get("spec") or {}).get("taints") or [])
    }
    return [t for t in desired_node_taints(pool) if (t["key"], t.get("value") or "", t.get("effect")) not in have]


def _mm(pool, node, kind, message, **extra):
    out = {"pool": pool, "node": node, "kind": kind, "message": message}
    out.update(extra)
    return out


def pool_report(pool, nodes, slices_by_pool, allocated, selector=None):
    """Report and mismatches of one present pool (see build_report)."""
    expected = expected_layout(pool)
    static = pool.mig.mode == "static"
    config_name = pool.mig_config_name if static else None
    rep = {
        "mig_mode": pool.mig.mode,
        "gpu_model": pool.gpu.model,
        "gpus_per_node": pool.gpu.per_node,
        "selector": selector,
        "config_name": config_name,
        "expected_nodes": pool.nodegroup.node_count if pool.nodegroup is not None else None,
        "expected_layout": _str_keys(expected),
        "nodes": [],
        "gpus": _bucket(),
        "mig_devices": {},
        "devices": _bucket(),
        "ready_nodes": 0,
    }
    mismatches = []
    # MIG groups: each node is expected to carry its group's layout and config (plan/mig/node_groups decides which)
    groups = assign_groups(pool, nodes) if static and pool.mig.groups else {}
    pool_expected, pool_config = expected, config_name
    # GPUs by identity: the pool's nodes share PCI slots, so their bus IDs together number every node's GPUs
    devs_of = {_meta(n).get("name"): node_devices(slices_by_pool, _meta(n).get("name")) for n in nodes}
    bus_ids = pool_bus_ids(published_gpus(d) for d in devs_of.values())
    for node in sorted(nodes, key=lambda n: _meta(n).get("name")):
        name = _meta(node).get("name")
        labels = _meta(node).get("labels") or {}
        devs = devs_of[name]
        expected, config_name = pool_expected, pool_config
        if groups.get(name) is not None:
            expected, config_name = expected_layout(pool, groups[name]), mig_config_name(pool, groups[name])
        published = published_layout(devs, expected, pool.gpu.per_node, bus_ids)
        row = {
            "name": name,
            "ready": node_ready(node),
            "schedulable": not (node.get("spec") or {}).get("unschedulable", False),
            "mig_config": labels.get(CONFIG_LABEL),
            "mig_state": labels.get(STATE_LABEL),
            "published": bool(devs),
            "layout": _str_keys(published),
            "gpus": _bucket(),
            "mig_devices": {},
            "allocated": [],
        }
        if groups:
            row.update(mig_group=groups.get(name), expected_layout=_str_keys(expected))
        for pool_name, dev in devs:
            key = (GPU_DRIVER, pool_name, dev.get("name"))
            is_alloc = key in allocated
            if is_alloc:
                row["allocated"].append({"device": dev.get("name"), "claim": allocated[key]})
            dtype = _attr(dev, "type")
            if dtype == "mig":
                profile = _attr(dev, "profile") or "unknown"
                _count(row["mig_devices"].setdefault(profile, _bucket()), is_alloc)
                _count(rep["mig_devices"].setdefault(profile, _bucket()), is_alloc)
            elif dtype == "gpu":
                _count(row["gpus"], is_alloc)
                _count(rep["gpus"], is_alloc)
            else:
                continue
            _count(rep["devices"], is_alloc)
        rep["nodes"].append(row)
        if row["ready"]:
            rep["ready_nodes"] += 1
        else:
            mismatches.append(
                _mm(
                    pool.name,
                    name,
                    "node_not_ready",
                    "node %s is NotReady; its GPUs cannot be used (check the kubelet and the machine)" % name,
                )
            )
        for taint in missing_taints(pool, node):
            # A GPU node without the pool's taint takes any pod: report it, never call it OK.
            mismatches.append(
                _mm(
                    pool.name,
                    name,
                    "taint_missing",
                    "node %s lacks the taint %s the pool declares, so pods that do not tolerate it can land "
                    "there; run gpupool.core.node_pool (site.yml's node_pools step) to put it back"
                    % (name, taint_text(taint)),
                )
            )
        if row["mig_state"] == "failed":
            mismatches.append(
                _mm(
                    pool.name,
                    name,
                    "mig_failed",
                    "node %s: the MIG manager reports %s=failed for config %s; read the nvidia-mig-manager "
                    "log on the node, fix the cause, then rerun gpupool.core.mig_layout with "
                    "retry_failed: true" % (name, STATE_LABEL, row["mig_config"]),
                )
            )
        if static and row["mig_config"] != config_name:
            mismatches.append(
                _mm(
                    pool.name,
                    name,
                    "mig_config_label",
                    "node %s has %s=%s, the %s config is %s; run gpupool.core.mig_layout"
                    % (
                        name,
                        CONFIG_LABEL,
                        row["mig_config"] or "(not set)",
                        "pool's" if groups.get(name) is None else "MIG group %s's" % groups[name],
                        config_name,
                    ),
                )
            )
        if not devs:
            mismatches.append(
                _mm(
                    pool.name,
                    name,
                    "not_published",
                    "node %s publishes no %s devices (no ResourceSlice); check that the NVIDIA DRA "
                    "driver's kubelet plugin runs there (its node affinity needs nvidia.com/gpu.present"
                    "=true or an NFD PCI label, and it must tolerate the node's taints)" % (name, GPU_DRIVER),
                )
            )
        elif expected is not None:
            diffs = layout_differences(expected, published)
            if diffs:
                hint = (
                    "run gpupool.core.mig_layout, or wait while %s=%s" % (STATE_LABEL, row["mig_state"])
                    if row["mig_state"] in ("pending", "rebooting")
                    else "run gpupool.core.mig_layout"
                    if static
                    else "disable MIG on the node (mig.mode is off)"
                )
                mismatches.append(
                    _mm(
                        pool.name,
                        name,
                        "wrong_layout",
                        "node %s: %s; %s" % (name, "; ".join(diffs), hint),
                        expected=_str_keys(expected),
                        published=_str_keys(published),
                    )
                )
    want = rep["expected_nodes"]
    found = len(rep["nodes"])
    if want is not None and found < want:
        mismatches.insert(
            0,
            _mm(
                pool.name,
                None,
                "missing_nodes",
                "pool %s has %d of the %d nodes of its nodegroup (found: %s); check the nodegroup "
                "(gpupool.core.nodegroup_info) and that the nodes joined the cluster"
                % (pool.name, found, want, ", ".join(r["name"] for r in rep["nodes"]) or "none"),
                expected=want,
                found=found,
            ),
        )
    elif want is not None and found > want:
        mismatches.insert(
            0,
            _mm(
                pool.name,
                None,
                "extra_nodes",
                "pool %s has %d nodes but its nodegroup's node_count is %d; a resize may be in progress, "
                "or nodes of another group match the pool" % (pool.name, found, want),
                expected=want,
                found=found,
            ),
        )
    rep["mismatches"] = mismatches
    return rep


def _str_keys(layouts):
    if layouts is None:
        return None
    return {str(k): (dict(v) if v is not None else None) for k, v in sorted(layouts.items())}


def build_report(
    cluster,
    nodes,
    slices,
    claims,
    pools=None,
    nodegroup_label=NODEGROUP_LABEL,
    name_pattern=None,
    daemonsets=None,
    compute_domains=None,
    compute_domains_served=True,
):
    """{"pools": {name: report}, "mismatches": [...], "totals": {...}, "driver": {...}} for the present pools.

    pools: pool objects in scope (default: every present pool of the cluster). daemonsets: every DaemonSet
    (for the DRA driver's gates; None skips that check); compute_domains: every ComputeDomain (None skips it)."""
    scope = [p for p in (pools if pools is not None else cluster.pools) if p.state == "present"]
    assigned, mismatches, selectors = assign(scope, nodes, nodegroup_label, name_pattern)
    slices_by_pool = current_slices(slices)
    allocated = allocated_devices(claims)
    plugin = driver_plugin(daemonsets, cluster.dra_driver.namespace) if daemonsets is not None else None
    reports = {}
    for pool in scope:
        rep = pool_report(pool, assigned.get(pool.name, []), slices_by_pool, allocated, selectors.get(pool.name))
        extra = []
        if daemonsets is not None:
            extra += gate_mismatches(pool, plugin)
        if compute_domains is not None:
            rep["compute_domain"], cd_mismatches = compute_domain_report(pool, compute_domains, compute_domains_served)
            extra += cd_mismatches
        rep["mismatches"] = extra + rep["mismatches"]
        reports[pool.name] = rep
        mismatches += rep["mismatches"]
    # Nodes of pools that left (removed, absent, no longer selected): listed on every run until they are gone.
    members = [_meta(n).get("name") for group in assigned.values() for n in group]
    # A run limited to some pools (fewer than the inventory's) only reports the orphans of those.
    limited = pools is not None and {p.name for p in pools} != {p.name for p in cluster.pools}
    # Only this inventory's nodes: another owner's (gpupool.io/owner), or one of a pool it does not declare without
    # an owner label, is never this inventory's orphan (node_pool leaves them alone: plan/nodes/node_owners.py).
    names = [p.name for p in cluster.pools]
    own = [n for n in nodes if may_write(n, cluster.owner_id, names, members)]
    orphaned = orphan_rows(cluster, own, members, [p.name for p in pools] if limited else None)
    for row in orphaned:
        mismatches.append(_mm(row["pool"], row["name"], "orphaned_node", orphan_message(row)))
    order = {k: i for i, k in enumerate(KINDS)}
    pool_order = {p.name: i for i, p in enumerate(scope)}
    mismatches.sort(key=lambda m: (pool_order.get(m["pool"], len(scope)), order.get(m["kind"], 99), m["node"] or ""))
    totals = {
        "nodes": sum(len(r["nodes"]) for r in reports.values()),
        "ready_nodes": sum(r["ready_nodes"] for r in reports.values()),
        "gpus": _sum(r["gpus"] for r in reports.values()),
        "mig_devices": {},
        "devices": _sum(r["devices"] for r in reports.values()),
    }
    for r in reports.values():
        for profile, b in r["mig_devices"].items():
            t = totals["mig_devices"].setdefault(profile, _bucket())
            for k in t:
                t[k] += b[k]
    return {"pools": reports, "mismatches": mismatches, "totals": totals, "driver": plugin, "orphaned": orphaned}


def _sum(buckets):
    out = _bucket()
    for b in buckets:
        for k in out:
            out[k] += b[k]
    return out


MISMATCHES_SHOWN = 3  # of each kind; a cluster of 2,000 unpublished nodes is three lines and a count, not 2,000


def mismatch_lines(mismatches, indent="  "):
    """The mismatches as lines a person reads, at most MISMATCHES_SHOWN of each kind (the report holds them all)."""
    lines, shown = [], {}
    for m in mismatches:
        shown[m["kind"]] = shown.get(m["kind"], 0) + 1
        if shown[m["kind"]] <= MISMATCHES_SHOWN:
            lines.append("%s- [%s] %s" % (indent, m["kind"], m["message"]))
    for kind, count in shown.items():
        if count > MISMATCHES_SHOWN:
            lines.append(
                "%s- [%s] and %d more like these (all in the report)" % (indent, kind, count - MISMATCHES_SHOWN)
            )
    return lines


def summary(report):
    """A few lines a person reads: per pool nodes, devices and free counts, then the mismatches."""
    lines = []
    for name, rep in report["pools"].items():
        want = rep["expected_nodes"]
        nodes = "%d/%d nodes Ready" % (rep["ready_nodes"], len(rep["nodes"]))
        if want is not None:
            nodes += " (nodegroup wants %d)" % want
        parts = []
        if rep["gpus"]["total"]:
            parts.append("%d full GPU(s), %d free" % (rep["gpus"]["total"], rep["gpus"]["free"]))
        for profile, b in sorted(rep["mig_devices"].items()):
            parts.append("%d x %s, %d free" % (b["total"], profile, b["free"]))
        devices = "; ".join(parts) or "no devices published"
        state = "OK" if not rep["mismatches"] else "%d mismatch(es)" % len(rep["mismatches"])
        lines.append("%s: %s; %s; %s" % (name, nodes, devices, state))
    lines += mismatch_lines(report["mismatches"])
    if not report["pools"]:
        lines.append("no pools in scope")
    return "\n".join(lines)
