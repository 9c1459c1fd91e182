# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of the `dra_driver:` section against the chosen driver version: what helm or the driver would
reject, refused before anything runs (gates are checked in gates.py, from the same version table).

* `version`: plain SemVer (no leading v) of a supported line (0.4.x, 0.5.x);
* `namespace`: never `default` (the chart fails there), a DNS label;
* `values`: no `namespace` key (the chart fails), only keys the version's chart has (helm would ignore
  the others silently), an IMEX mode the version has;
* a pool with `nvlink.mode: host_imex` needs a version with host-managed IMEX (0.5).
"""
from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.model import dra_driver_versions as versions
from ansible_collections.gpupool.core.plugins.module_utils.model.gates import driver_line
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import DNS_LABEL


def dra_driver_problems(cluster, root="gpupool_cluster"):
    at = root + ".dra_driver"
    settings = cluster.dra_driver
    out = []
    try:
        versions.line_for(settings.version)
    except ValueError as exc:
        out.append((at + ".version", str(exc)))
    line = driver_line(cluster)
    if settings.namespace == "default":
        out.append((at + ".namespace", "the DRA driver chart refuses the 'default' namespace; use its own namespace, "
                    "e.g. dra-driver-nvidia-gpu"))
    elif not DNS_LABEL.match(settings.namespace) or len(settings.namespace) > 63:
        out.append((at + ".namespace", "%r is not a namespace name (a DNS label)" % settings.namespace))
    if not DNS_LABEL.match(settings.release_name) or len(settings.release_name) > 53:
        out.append((at + ".release_name", "%r is not a Helm release name (a DNS label of at most 53 characters)"
                    % settings.release_name))
    values = settings.values or {}
    if "namespace" in values:
        out.append((at + ".values.namespace", "the chart fails when a 'namespace' value is set; use "
                    "gpupool_cluster.dra_driver.namespace instead"))
    if line is not None:
        for key in versions.unknown_values(line, {k: v for k, v in values.items() if k != "namespace"}):
            out.append((at + ".values." + key, "the %s.x chart has no value %s: helm would silently ignore it%s"
                        % (line.line, key, _newer(key))))
        for i, pool in enumerate(cluster.pools):
            if pool.state == "present" and pool.nvlink.mode == "host_imex":
                for message in versions.imex_mode_problems(line, versions.HOST_MANAGED, settings.feature_gates):
                    out.append(("%s.pools[%d].nvlink.mode" % (root, i), "pool %s: %s; set %s.version to a 0.5 release "
                                "or use nvlink.mode: compute_domain" % (pool.name, message, at)))
    return out


def _newer(key):
    lines = sorted(k + ".x" for k, other in versions.LINES.items() if not versions.unknown_values(other, _tree(key)))
    return "; it exists in %s" % ", ".join(lines) if lines else ""


def _tree(dotted):
    tree = {}
    node = tree
    parts = dotted.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = None
    return tree
