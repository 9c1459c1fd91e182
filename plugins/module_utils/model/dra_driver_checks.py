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
* `values`: a key gpupool also derives is refused or merged as driver_values_rules.py's table says (a
  merged list must be a list of maps, a raw `featureGates` map holds booleans); a non-map on the way to one
  would replace everything gpupool derives below it;
* a pool with `nvlink.mode: host_imex` needs a version with host-managed IMEX (0.5).
"""

from __future__ import annotations

import re
from typing import List, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.mig.name_lists import below, inline
from ansible_collections.gpupool.core.plugins.module_utils.model import dra_driver_versions as versions
from ansible_collections.gpupool.core.plugins.module_utils.model import driver_values_rules as rules
from ansible_collections.gpupool.core.plugins.module_utils.model.gates import driver_line, explicit_gates
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
    out += derived_value_problems(values, at + ".values", root)
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
            gates = {gate: value for gate, (value, _path) in explicit_gates(cluster).items()}
            for message in versions.imex_mode_problems(line, versions.HOST_MANAGED, gates):
                out.append(
                    (
                        pool_path(root, pool) + ".nvlink.mode",
                        "%s; set %s.version to a 0.5 release or use nvlink.mode: compute_domain" % (message, at),
                    )
                )
    return out


def derived_value_problems(values, at: str, root: str) -> List[Tuple[str, str]]:
    """Raw chart values at a key gpupool derives: refused ones, merged ones of the wrong shape, and a non-map on
    the way to one (driver_values_rules.py's table; `at`: the path of `values`)."""
    out = []
    for key, below_it in rules.replaced_prefixes(values):
        out.append(
            (
                "%s.%s" % (at, key),
                "%r is not a map: helm would replace with it everything gpupool derives under %s (%s); write a map "
                "with only the keys you set" % (rules.get_path(values, key), key, ", ".join(below_it)),
            )
        )
    for rule in rules.VALUE_RULES:
        value = rules.get_path(values, rule.path, _ABSENT)
        if value is _ABSENT:
            continue
        path = "%s.%s" % (at, rule.path)
        if rule.rule == rules.REFUSED:
            out.append(
                (path, "gpupool derives this value: %s; %s" % (rule.why, rule.instead.replace("gpupool_cluster", root)))
            )
        elif rule.path == "featureGates":
            if not isinstance(value, dict):
                out.append((path, "a map of gate names to true or false, e.g. {TimeSlicingSettings: true}"))
                continue
            for gate, on in sorted(value.items(), key=lambda kv: str(kv[0])):
                if not isinstance(on, bool):
                    out.append(("%s.%s" % (path, gate), "%r is not true or false; write %s: true" % (on, gate)))
        elif rule.rule == rules.MERGED and not (isinstance(value, list) and all(isinstance(e, dict) for e in value)):
            out.append(
                (
                    path,
                    "a list of tolerations (maps such as {key: example.com/team, operator: Exists, effect: "
                    "NoSchedule}) is expected: it is added to %s"
                    % ("gpupool's" if rule.chart_default is None else "the chart's"),
                )
            )
    return out


_ABSENT = object()


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
