# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host IMEX service on multi-node NVLink nodes: what to write and what systemd must do (pure).

Two modes, one per pool (``nvlink.mode``), facts from the DRA driver's docs
(site/content/docs/prerequisites.md at main 95932046; reference nvidia-dra-mig-imex.md §1.2, §1.9):

* **driver-managed** (``compute_domain``): the DRA driver runs its own IMEX daemon per ComputeDomain;
  a running host ``nvidia-imex.service`` clashes with it (daemons never go Ready, ``NV_ERR_IN_USE``).
  The host unit must be stopped, disabled **and** masked.
* **host-managed** (``host_imex``, driver 0.5 with ``imex.mode=hostManaged``): the host unit must be
  installed, configured and **running** on every member: ``nodes_config.cfg`` lists the IMEX domain's
  member addresses, one per line; ``config.cfg`` needs ``IMEX_CMD_ENABLED=1`` and
  ``IMEX_CMD_UNIX_DOMAIN_PATH`` = the socket the DRA plugin queries (``nvidia-imex-ctl -q``), and
  ``IMEX_NODE_CONFIG_FILE`` = the nodes file. IMEX reads its config only at start: a change needs a
  restart, and nothing else does.

In both modes the node's NVLink fabric registration (NVML ``nvmlDeviceGetGpuFabricInfoV``) must be
``completed`` with one clique on every GPU before the domain counts as healthy (`fabric_health`).
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.gpupool.core.plugins.module_utils.model.dra_driver_versions import DEFAULT_IMEX_SOCKET

DRIVER_MANAGED = "driver_managed"
HOST_MANAGED = "host_managed"
UNIT = "nvidia-imex.service"
CONFIG_DIR = "/etc/nvidia-imex"
NODES_FILE = "nodes_config.cfg"
CONFIG_FILE = "config.cfg"
# At most this many nodes in one IMEX domain (MAX_NODES_PER_IMEX_DOMAIN in the DRA driver's CD controller).
MAX_DOMAIN_NODES = 18
_KEY = re.compile(r"^[A-Z][A-Z0-9_]*$")


def mode_for_pool(nvlink_mode: str) -> Optional[str]:
    """The IMEX mode of a pool's nvlink.mode: compute_domain -> driver_managed, host_imex ->
    host_managed, none -> None (the pool's nodes are not IMEX nodes)."""
    return {"compute_domain": DRIVER_MANAGED, "host_imex": HOST_MANAGED}.get(nvlink_mode)


def member_problems(addresses: Sequence[str], local: Optional[str] = None) -> List[str]:
    """What is wrong with a domain's member list (sentences)."""
    out = []
    if not addresses:
        out.append("host-managed IMEX needs the domain's member addresses (nvlink.imex_nodes); none given")
    seen = set()
    for addr in addresses:
        try:
            ipaddress.ip_address(str(addr))
        except ValueError:
            out.append("%r is not an IP address: nodes_config.cfg takes the members' IP addresses" % addr)
        if addr in seen:
            out.append("%s is listed twice" % addr)
        seen.add(addr)
    if len(set(addresses)) > MAX_DOMAIN_NODES:
        out.append("%d members: an IMEX domain has at most %d nodes" % (len(set(addresses)), MAX_DOMAIN_NODES))
    if local and addresses and local not in addresses:
        out.append(
            "this node's address %s is not a member (%s): IMEX would not start here" % (local, ", ".join(addresses))
        )
    return out


def nodes_config(addresses: Sequence[str]) -> str:
    """nodes_config.cfg: the members' IP addresses, one per line, in inventory order (every member
    gets the same file, so the order is the same everywhere)."""
    seen, lines = set(), []
    for addr in addresses:
        if addr not in seen:
            seen.add(addr)
            lines.append(str(addr))
    return "\n".join(lines) + "\n"


def required_settings(
    config_dir: str = CONFIG_DIR, socket_path: str = DEFAULT_IMEX_SOCKET, extra: Optional[Mapping[str, Any]] = None
) -> Dict[str, str]:
    """The config.cfg keys host-managed IMEX needs (extra settings win)."""
    settings = {
        "IMEX_CMD_ENABLED": "1",
        "IMEX_CMD_UNIX_DOMAIN_PATH": socket_path,
        "IMEX_NODE_CONFIG_FILE": "%s/%s" % (config_dir.rstrip("/"), NODES_FILE),
    }
    for key, value in (extra or {}).items():
        settings[str(key)] = _text(value)
    return settings


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def settings_problems(settings: Mapping[str, Any]) -> List[str]:
    return [
        "%r is not an IMEX config key (UPPER_CASE letters, digits, _)" % k for k in settings if not _KEY.match(str(k))
    ]


def edit_config(existing: Optional[str], settings: Mapping[str, str]) -> str:
    """config.cfg with `settings` applied: each KEY=... line replaced in place (the package's
    comments and other keys kept), keys not present appended; a missing file becomes just them."""
    lines = (existing or "").splitlines()
    done = set()
    out = []
    for line in lines:
        key = line.split("=", 1)[0].strip() if "=" in line and not line.lstrip().startswith("#") else None
        if key in settings:
            if key in done:
                continue  # a duplicate key: IMEX reads one; keep ours only
            out.append("%s=%s" % (key, settings[key]))
            done.add(key)
        else:
            out.append(line)
    missing = [k for k in settings if k not in done]
    if missing:
        if out and out[-1].strip():
            out.append("")
        out.append("# set by gpupool.core.imex")
        out += ["%s=%s" % (k, settings[k]) for k in missing]
    return "\n".join(out) + "\n"


def read_settings(text: Optional[str]) -> Dict[str, str]:
    out = {}
    for line in (text or "").splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            key, value = line.split("=", 1)
            out[key.strip()] = value.strip()
    return out


def service_actions(mode: str, unit: Mapping[str, Any], config_changed: bool) -> List[str]:
    """systemctl verbs, in order, that bring the unit where `mode` wants it.

    unit: {"installed": bool, "masked": bool, "enabled": bool, "active": bool} (from systemctl show).
    driver_managed: stop, disable, mask - a unit that is not installed needs nothing.
    host_managed: unmask, enable, then start (not running) or restart (running and its config
    changed) - nothing when all is already so."""
    actions = []
    if mode == DRIVER_MANAGED:
        if not unit.get("installed") and not unit.get("masked"):
            return []
        if unit.get("active"):
            actions.append("stop")
        if unit.get("enabled"):
            actions.append("disable")
        if not unit.get("masked"):
            actions.append("mask")
        return actions
    if mode != HOST_MANAGED:
        raise ValueError("unknown IMEX mode %r" % mode)
    if unit.get("masked"):
        actions.append("unmask")
    if not unit.get("enabled"):
        actions.append("enable")
    if not unit.get("active"):
        actions.append("start")
    elif config_changed:
        actions.append("restart")
    return actions


def unit_state(show: Mapping[str, str]) -> Dict[str, bool]:
    """`systemctl show -p LoadState,ActiveState,UnitFileState` properties -> the four booleans."""
    load = show.get("LoadState", "")
    file_state = show.get("UnitFileState", "")
    return {
        "installed": load not in ("not-found", "") and file_state != "",
        "masked": load == "masked" or file_state.startswith("masked"),
        "enabled": file_state in ("enabled", "enabled-runtime", "static", "alias"),
        "active": show.get("ActiveState", "") in ("active", "activating", "reloading"),
    }


def fabric_health(gpus: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """Whether this node can take part in an IMEX domain, from each GPU's fabric facts
    (nvml_facts.read_fabric: supported, state, status, clique): every GPU supported, state
    completed, status success, one and the same clique. Returns {healthy, clique, problems}."""
    problems = []
    cliques = set()
    if not gpus:
        problems.append("no GPU found through NVML")
    for index, fabric in enumerate(gpus):
        fabric = fabric or {}
        label = "GPU %s" % fabric.get("index", index)
        if not fabric.get("supported"):
            problems.append("%s has no NVLink fabric (multi-node NVLink not supported)" % label)
            continue
        if fabric.get("state") != "completed":
            problems.append(
                "%s NVLink fabric registration is %s, not completed (Fabric Manager / NVLink switch "
                "not done; IMEX cannot use it yet)" % (label, str(fabric.get("state")).replace("_", " "))
            )
        elif fabric.get("status") not in (None, "NVML_SUCCESS"):
            problems.append("%s NVLink fabric registration failed: %s" % (label, fabric.get("status")))
        elif not fabric.get("clique"):
            problems.append("%s has no clique (zero cluster UUID)" % label)
        else:
            cliques.add(fabric["clique"])
    if len(cliques) > 1:
        problems.append(
            "GPUs report different cliques (%s): one node must sit in one NVLink clique" % ", ".join(sorted(cliques))
        )
    clique = cliques.pop() if len(cliques) == 1 and not problems else None
    return {"healthy": not problems, "clique": clique, "problems": problems}
