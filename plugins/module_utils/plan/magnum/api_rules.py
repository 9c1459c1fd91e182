# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the nodegroup planner knows of Magnum's API (pure): the microversion each feature it plans needs, and
the status names it decides on.

The client's side of the API - negotiating the microversion from the response headers
(openstack/magnum_versions.py) and waiting on a status (openstack/magnum_wait.py) - sits beside the client; it
imports these facts from here, never the other way round (plan/ does no I/O)."""

from __future__ import annotations

from typing import Tuple

Version = Tuple[int, int]

ZERO_NODES_VERSION: Version = (1, 10)  # a nodegroup of 0 nodes
NODE_LABELS_VERSION: Version = (1, 14)  # node_labels and node_taints; the newest microversion a plan uses

# The statuses a nodegroup's operation ends in once it went well; any of them after a patch or resize, since a
# patch of the bounds alone starts no stack update and leaves the status as it was.
COMPLETE_STATES = frozenset(
    (
        "CREATE_COMPLETE",
        "UPDATE_COMPLETE",
        "RESUME_COMPLETE",
        "RESTORE_COMPLETE",
        "ROLLBACK_COMPLETE",
        "SNAPSHOT_COMPLETE",
        "CHECK_COMPLETE",
        "ADOPT_COMPLETE",
    )
)
# An operation still running: the nodegroup is waited for before it is planned.
IN_PROGRESS_STATES = frozenset(
    ("CREATE_IN_PROGRESS", "UPDATE_IN_PROGRESS", "DELETE_IN_PROGRESS", "ROLLBACK_IN_PROGRESS")
)


def format_version(version: Version) -> str:
    """(1, 10) -> '1.10'."""
    return "%d.%d" % tuple(version)
