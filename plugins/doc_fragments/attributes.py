# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The attributes every gpupool step shares, said once (descriptions come from ansible.builtin.action_common_attributes).

A module lists ``ansible.builtin.action_common_attributes`` (and ``.flow`` for the steps that run in the controller)
and these (a step in the controller: ``.controller`` and the plain fragment or ``.info``; a module on a GPU node:
``.node``, with ``.nvml`` where it uses NVML); its own ``attributes`` then only add what is particular to it (the
details of its check mode).
"""


class ModuleDocFragment:
    # Every step that runs in the controller (an action plugin) lists this one and DOCUMENTATION or INFO below.
    CONTROLLER = r"""
attributes:
  action:
    support: full
    details:
      - Runs in the controller, as an action plugin; the task's host only names the cluster, no connection to it is made.
  bypass_host_loop:
    support: none
  platform:
    platforms: all
"""

    # A step that runs in the controller and writes: check mode sends server dry runs.
    DOCUMENTATION = r"""
attributes:
  async:
    support: none
    details:
      - Says what it waits for while it runs instead (a line when something changes, at least every 5 seconds).
  check_mode:
    support: full
  diff_mode:
    support: full
"""

    # A step that runs in the controller and only reads.
    INFO = r"""
attributes:
  async:
    support: none
  check_mode:
    support: full
    details: Only reads.
  diff_mode:
    support: none
"""

    # A module that runs on a GPU node (NVML, the host IMEX service).
    NODE = r"""
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
"""

    # A module that reads or changes a GPU node's GPUs through NVML (with NODE): its action group and what it needs there.
    NVML = r"""
attributes:
  action_group:
    membership:
      - gpupool.core.nvml
requirements:
  - nvidia-ml-py (C(import pynvml)) on the managed node
  - the NVIDIA driver (C(libnvidia-ml.so.1)) on the managed node
"""
