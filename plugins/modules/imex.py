#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: imex
short_description: Put the host NVIDIA IMEX service of a multi-node NVLink node in the mode its pool uses
version_added: "1.0.0"
description:
  - Runs on a GPU node of a multi-node NVLink pool (GB200/GB300 NVL72) and makes the host
    C(nvidia-imex.service) match how the NVIDIA DRA driver handles IMEX for that pool.
  - O(mode=driver_managed) (pool C(nvlink.mode=compute_domain)) - the DRA driver runs its own IMEX daemon per
    ComputeDomain, and a running host service clashes with it (the daemons never become ready, C(NV_ERR_IN_USE)).
    The unit is stopped, disabled and masked.
  - O(mode=host_managed) (pool C(nvlink.mode=host_imex), DRA driver 0.5 with C(imex.mode=hostManaged)) - the host
    service is the IMEX daemon. C(nodes_config.cfg) gets the domain's member addresses, C(config.cfg) gets
    C(IMEX_CMD_ENABLED=1), C(IMEX_CMD_UNIX_DOMAIN_PATH) (the socket the DRA kubelet plugin queries with
    C(nvidia-imex-ctl -q)) and C(IMEX_NODE_CONFIG_FILE); other lines of C(config.cfg) are kept. The unit is
    unmasked, enabled and started, and restarted only when one of the two files changed (IMEX reads its
    configuration only when it starts).
  - In both modes the GPUs' NVLink fabric registration is read through NVML (C(nvmlDeviceGetGpuFabricInfoV));
    every GPU must report state C(completed) and one clique (C(<clusterUuid>.<cliqueId>)) before the node counts
    as a healthy IMEX member. With O(require_healthy_fabric=true) an unhealthy fabric fails the task, with the
    reason per GPU.
author:
  - gpupool.core developers (@gpupool)
options:
  mode:
    description:
      - C(driver_managed) or C(host_managed), see the description.
    type: str
    required: true
    choices: [driver_managed, host_managed]
  members:
    description:
      - The IP addresses of every node of the IMEX domain (the pool's C(nvlink.imex_nodes)), the same list on every
        member. Required with O(mode=host_managed); at most 18.
    type: list
    elements: str
    default: []
  address:
    description:
      - This node's own IMEX address. When given it must be one of O(members) (IMEX would not start otherwise).
    type: str
  socket_path:
    description:
      - The IMEX command socket; must equal the DRA driver chart's C(resources.computeDomains.imex.hostSocketPath).
    type: path
    default: /etc/nvidia-imex/imex_ctrl.sock
  settings:
    description:
      - Further C(config.cfg) keys to set (e.g. C(IMEX_ENABLE_AUTH_ENCRYPTION)), over the required ones.
    type: dict
    default: {}
  config_dir:
    description:
      - Where the IMEX configuration lives on the node.
    type: path
    default: /etc/nvidia-imex
  root:
    description:
      - A directory that stands for C(/) for every file the module reads and writes (O(config_dir) is taken under
        it). Meant for tests and image builds; C(systemctl) still acts on the running system.
    type: path
    default: /
  unit:
    description:
      - The systemd unit of the host IMEX daemon.
    type: str
    default: nvidia-imex.service
  check_fabric:
    description:
      - Read the NVLink fabric state of every GPU through NVML.
    type: bool
    default: true
  require_healthy_fabric:
    description:
      - Fail when the fabric is not healthy (after the service was put in place, so a later run only has the
        fabric left to wait for).
    type: bool
    default: true
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpupool.core.attributes.node
requirements:
  - systemd (C(systemctl)) on the node
  - nvidia-ml-py (C(import pynvml)) and the NVIDIA driver on the node, for the fabric check
notes:
  - Check mode reads the unit and the files and reports what would change; it writes and runs nothing.
  - The DRA driver chart must be set to the same mode (gpupool.core.dra_driver derives it from the same pools).
seealso:
  - module: gpupool.core.gpu_facts
"""

EXAMPLES = r"""
- name: Driver-managed IMEX (ComputeDomains) - keep the host service out of the way
  gpupool.core.imex:
    mode: driver_managed

- name: Host-managed IMEX for a GB200 rack
  gpupool.core.imex:
    mode: host_managed
    members: [10.0.0.11, 10.0.0.12, 10.0.0.13]
    address: "{{ ansible_default_ipv4.address }}"
"""

RETURN = r"""
mode:
  description: The mode applied.
  returned: always
  type: str
unit:
  description: The unit's state before and after (installed, masked, enabled, active).
  returned: always
  type: dict
  sample: {before: {installed: true, masked: false, enabled: true, active: true},
           after: {installed: true, masked: true, enabled: false, active: false}}
actions:
  description: The systemctl verbs run (or, in check mode, that would run), in order.
  returned: always
  type: list
  elements: str
  sample: [stop, disable, mask]
files:
  description: Per file written (host_managed) whether it changed.
  returned: always
  type: dict
  sample: {/etc/nvidia-imex/nodes_config.cfg: true, /etc/nvidia-imex/config.cfg: false}
fabric:
  description:
    - C(healthy), C(clique) (when healthy), C(problems) (one sentence per problem) and C(gpus) (each GPU's fabric
      facts as gpupool.core.gpu_facts reports them). Absent with O(check_fabric=false).
  returned: when check_fabric
  type: dict
"""

import os

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError, Problems
from ansible_collections.gpupool.core.plugins.module_utils.module import NvmlModule
from ansible_collections.gpupool.core.plugins.module_utils.nvml import facts as nvml_facts
from ansible_collections.gpupool.core.plugins.module_utils.plan.driver import imex as plan


def host_path(root, path):
    """`path` under `root` (root "/" leaves it as is)."""
    return os.path.join(root, path.lstrip("/")) if root and root != "/" else path


class Systemd:
    """systemctl through Ansible's run_command (no subprocess of our own)."""

    def __init__(self, ansible):
        self.ansible = ansible
        self.binary = ansible.get_bin_path("systemctl", required=True)

    def state(self, unit):
        rc, out, err = self.ansible.run_command(
            [self.binary, "show", unit, "-p", "LoadState,ActiveState,UnitFileState"]
        )
        if rc != 0:
            raise GpupoolError("systemctl show %s failed (exit %d): %s" % (unit, rc, (err or out).strip()))
        props = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        return plan.unit_state(props)

    def run(self, verb, unit):
        rc, out, err = self.ansible.run_command([self.binary, verb, unit])
        if rc != 0:
            raise GpupoolError(
                "systemctl %s %s failed (exit %d): %s" % (verb, unit, rc, (err or out).strip()), action=verb
            )


def read_fabric():
    with nvml_facts.Session() as session:
        return [dict(nvml_facts.read_fabric(session.handle(index)), index=index) for index in range(session.count())]


class ImexModule(NvmlModule):
    argument_spec = dict(
        mode=dict(type="str", required=True, choices=[plan.DRIVER_MANAGED, plan.HOST_MANAGED]),
        members=dict(type="list", elements="str", default=[]),
        address=dict(type="str"),
        socket_path=dict(type="path", default="/etc/nvidia-imex/imex_ctrl.sock"),
        settings=dict(type="dict", default={}),
        config_dir=dict(type="path", default=plan.CONFIG_DIR),
        root=dict(type="path", default="/"),
        unit=dict(type="str", default=plan.UNIT),
        check_fabric=dict(type="bool", default=True),
        require_healthy_fabric=dict(type="bool", default=True),
    )

    def __init__(self):
        super().__init__()
        self.result = {"changed": False, "mode": self.params["mode"], "files": {}, "actions": []}

    def partial_result(self):
        return dict(self.result)

    def prepare(self):
        super().prepare()
        p = self.params
        if p["mode"] == plan.HOST_MANAGED:
            problems = plan.member_problems(p["members"], p["address"]) + plan.settings_problems(p["settings"])
            if problems:
                raise Problems(
                    [("members" if "setting" not in m else "settings", m) for m in problems],
                    subject="in the host-managed IMEX settings",
                )
        elif p["members"]:
            self.warn("members are ignored with mode=driver_managed: the DRA driver finds the domain's nodes itself")

    def write_file(self, path, content):
        """Write `content` if it differs (not in check mode); returns (changed, old content)."""
        old = None
        if os.path.exists(path):
            with open(path) as fh:
                old = fh.read()
        if old == content:
            return False, old
        if not self.check_mode:
            directory = os.path.dirname(path)
            if not os.path.isdir(directory):
                os.makedirs(directory, 0o755)
            tmp = path + ".gpupool-tmp"
            with open(tmp, "w") as fh:
                fh.write(content)
            os.chmod(tmp, 0o644)
            self.ansible.atomic_move(tmp, path)
        return True, old

    def host_files(self):
        """nodes_config.cfg and config.cfg (host_managed); returns (changed, diff before, diff after)."""
        p = self.params
        config_dir = p["config_dir"].rstrip("/")
        nodes_file, config_file = "%s/%s" % (config_dir, plan.NODES_FILE), "%s/%s" % (config_dir, plan.CONFIG_FILE)
        existing = None
        if os.path.exists(host_path(p["root"], config_file)):
            with open(host_path(p["root"], config_file)) as fh:
                existing = fh.read()
        settings = plan.required_settings(p["config_dir"], p["socket_path"], p["settings"])
        changed, before, after = False, {}, {}
        for path, content in (
            (nodes_file, plan.nodes_config(p["members"])),
            (config_file, plan.edit_config(existing, settings)),
        ):
            file_changed, old = self.write_file(host_path(p["root"], path), content)
            self.result["files"][path] = file_changed
            if file_changed:
                changed = True
                before[path], after[path] = old or "", content
        return changed, before, after

    def run(self):
        p = self.params
        systemd = Systemd(self.ansible)
        unit_before = systemd.state(p["unit"])
        if p["mode"] == plan.HOST_MANAGED and not unit_before["installed"]:
            raise GpupoolError(
                "%s is not installed on this node: host-managed IMEX needs the nvidia-imex package of "
                "the NVIDIA driver (it provides the unit, nvidia-imex and nvidia-imex-ctl)" % p["unit"]
            )
        files_changed, diff_before, diff_after = False, {}, {}
        if p["mode"] == plan.HOST_MANAGED:
            files_changed, diff_before, diff_after = self.host_files()
            self.result["changed"] = files_changed
        actions = plan.service_actions(p["mode"], unit_before, files_changed)
        self.result["actions"] = actions
        self.result["unit"] = {"before": unit_before, "after": unit_before}
        if not self.check_mode:
            for verb in actions:
                systemd.run(verb, p["unit"])
                self.result["changed"] = True
            if actions:
                self.result["unit"]["after"] = systemd.state(p["unit"])
        self.result["changed"] = files_changed or bool(actions)
        if actions:
            diff_before["unit"] = unit_before
            diff_after["unit"] = (
                self.result["unit"]["after"] if not self.check_mode else dict(unit_before, planned=actions)
            )
        if self.diff_mode and self.result["changed"]:
            self.result["diff"] = {"before": diff_before, "after": diff_after}
        if p["check_fabric"]:
            self.check_fabric()
        return self.result

    def check_fabric(self):
        try:
            gpus = read_fabric()
        except nvml_facts.NvmlUnavailable as exc:
            raise GpupoolError("cannot read the NVLink fabric state: %s" % exc)
        except nvml_facts.NvmlError as exc:
            raise GpupoolError("reading the NVLink fabric state through NVML failed: %s" % exc)
        health = plan.fabric_health(gpus)
        self.result["fabric"] = dict(health, gpus=gpus)
        if self.params["require_healthy_fabric"] and not health["healthy"]:
            raise GpupoolError("this node is not a healthy IMEX member yet: %s" % "; ".join(health["problems"]))


def main():
    ImexModule()()


if __name__ == "__main__":
    main()
