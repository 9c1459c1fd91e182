# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What makes an object ours: the ownership labels, and the selector that finds our objects."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.model.names import MANAGED_BY, POOL_LABEL


def ownership_labels(pool_name):
    labels = dict(MANAGED_BY)
    labels[POOL_LABEL] = pool_name
    return labels


def owned_selector(pool_names=None):
    """Label selector of gpupool's objects (of some pools)."""
    key, value = list(MANAGED_BY.items())[0]
    sel = "%s=%s" % (key, value)
    if pool_names:
        sel += ",%s in (%s)" % (POOL_LABEL, ",".join(sorted(pool_names)))
    return sel


def is_owned(obj):
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in MANAGED_BY.items())


def pool_of(obj):
    return ((obj.get("metadata") or {}).get("labels") or {}).get(POOL_LABEL)
