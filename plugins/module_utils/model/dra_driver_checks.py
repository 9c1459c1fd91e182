# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""DRA driver Helm release settings the chart, Helm or the chosen driver version would refuse
(reference nvidia-dra-mig-imex.md §1.1, nvidia-dra-driver-published.md "Chart facts").

* `version`: plain SemVer (no leading v) of a supported line - model/dra_driver_versions.py is the one
  per-version table; feature gates per version are checked in gates.py from the same table;
* `namespace`: a DNS label other than `default` (the chart fails there);
* `release_name`: one Helm accepts;
* `values`: no `namespace` or `nvidiaCtkPath` key (the chart fails), only keys the version's chart has
  (helm would silently ignore the others);
* a pool with `nvlink.mode: host_imex` needs a version with host-managed IMEX (0.5).
"""

from __future__ import annotations

import re
from typing import List, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.mig.name_lists import below, inline
from ansible_collections.gpupool.core.plugins.module_utils.model import dra_driver_versions as versions
from ansible_collections.gpupool.core.plugins.module_utils.model.gates import driver_line
from ansible_collections.gpupool.core.plugins.module_utils.model.paths import pool_path
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import (
    DNS_LABEL_RULE,
    is_dns_label,
    is_dns_subdomain,
)

# Helm: a release name is a DNS-1123 subdomain of at most 53 characters (its objects append suffixes).
RELEASE_NAME_MAX = 53


def dra_driver_problems(cluster, root: str) -> List[Tuple[str, str]]:
    """The driver's namespace (not default), version (supported, no leading v), release name, values and IMEX mode are ones the chart version accepts."""
    driver = cluster.dra_driver
    at = root + ".dra_driver"
    out = []
    if driver.namespace == "default":
        out.append(
            (
                at + ".namespace",
                "the chart refuses to install into the default namespace "
                "(templates/validation.yaml, allowDefaultNamespace is false); use namespace: dra-driver-nvidia-gpu",
            )
        )
    elif not is_dns_label(driver.namespace):
        out.append((at + ".namespace", "%r is not a valid namespace name (%s)" % (driver.namespace, DNS_LABEL_RULE)))
    if re.match(r"^[vV][0-9]", driver.version):
        out.append(
            (
                at + ".version",
                "chart versions have no leading v (the image tag is v + the chart's "
                "appVersion); use version: %r" % driver.version[1:],
            )
        )
    else:
        try:
            versions.line_for(driver.version)
        except ValueError as exc:
            out.append((at + ".version", str(exc)))
    if len(driver.release_name) > RELEASE_NAME_MAX or not is_dns_subdomain(driver.release_name):
        out.append(
            (
                at + ".release_name",
                "%r is not a Helm release name: at most %d lowercase letters, digits, "
                "'-' and '.', starting and ending with a letter or digit" % (driver.release_name, RELEASE_NAME_MAX),
            )
        )
    values = driver.values or {}
    for key, why in sorted(versions.CHART_REFUSED_VALUES.items()):
        if key in values:
            out.append((at + ".values." + key, why.replace("gpupool_cluster.dra_driver", at)))
    line = driver_line(cluster)
    if line is None:
        return out
    rest = {k: v for k, v in values.items() if k not in versions.CHART_REFUSED_VALUES}
    for key in versions.unknown_values(line, rest):
        # What the chart has there: its top-level values, or those under resources. A deeper key only some lines
        # have is named with the lines that have it (_where_else); the chart's other deep keys are not tabled.
        if key.startswith("resources."):
            there = ["resources." + p for p in sorted(line.resources_values)]
        elif "." not in key:
            there = sorted(line.top_level_values)
        else:
            there = []
        has = "; it has %s%s" % (inline(key, there), below("its values", key, there)) if there else ""
        out.append(
            (
                at + ".values." + key,
                "the %s.x chart has no value %s: helm would silently ignore it%s%s"
                % (line.line, key, _where_else(key), has),
            )
        )
    for pool in cluster.pools:
        if pool.state == "present" and pool.nvlink.mode == "host_imex":
            for message in versions.imex_mode_problems(line, versions.HOST_MANAGED, driver.feature_gates):
                out.append(
                    (
                        pool_path(root, pool) + ".nvlink.mode",
                        "%s; set %s.version to a 0.5 release or use nvlink.mode: compute_domain" % (message, at),
                    )
                )
    return out


def _where_else(key: str) -> str:
    lines = sorted(k + ".x" for k, other in versions.LINES.items() if not versions.unknown_values(other, _tree(key)))
    return "; it exists in %s" % ", ".join(lines) if lines else ""


def _tree(dotted: str) -> dict:
    tree: dict = {}
    node = tree
    parts = dotted.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = None
    return tree
