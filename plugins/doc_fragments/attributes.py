# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The attributes every gpupool step shares, said once (descriptions come from ansible.builtin.action_common_attributes).

A module lists ``ansible.builtin.action_common_attributes`` (and ``.flow`` for the steps that run in the controller)
and one of these; its own ``attributes`` then only add what is particular to it (the details of its check mode).
"""


class ModuleDocFragment:
    # A step that runs in the controller (an action plugin) and writes: check mode sends server dry runs.
    DOCUMENTATION = r"""
attributes:
  action:
    support: full
    details:
      - Runs in the controller, as an action plugin; the task's host only names the cluster, no connection to it is made.
  async:
    support: none
    details:
      - Says what it waits for while it runs instead (a line when something changes, at least every 5 seconds).
  bypass_host_loop:
    support: none
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: all
"""

    # A step that runs in the controller and only reads.
    INFO = r"""
attributes:
  action:
    support: full
    details:
      - Runs in the controller, as an action plugin; the task's host only names the cluster, no connection to it is made.
  async:
    support: none
  bypass_host_loop:
    support: none
  check_mode:
    support: full
    details: Only reads.
  diff_mode:
    support: none
  platform:
    platforms: all
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
