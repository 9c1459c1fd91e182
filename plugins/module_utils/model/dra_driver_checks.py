# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""DRA driver Helm release settings the chart or Helm would refuse (reference nvidia-dra-mig-imex.md §1.1).

Feature gate names and IMEX modes per driver version are checked against model/dra_driver_versions.py.
"""
from __future__ import annotations

import re
from typing import List, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import DNS_LABEL_RULE
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import is_dns_label
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import is_dns_subdomain

# Helm: a release name is a DNS-1123 subdomain of at most 53 characters (its objects append suffixes).
RELEASE_NAME_MAX = 53


def dra_driver_problems(cluster, root: str) -> List[Tuple[str, str]]:
    """The driver's namespace is a DNS label other than default, its version has no leading v, and its release name is one Helm accepts."""
    driver = cluster.dra_driver
    at = root + ".dra_driver"
    out = []
    if driver.namespace == "default":
        out.append((at + ".namespace", "the chart refuses to install into the default namespace "
                    "(templates/validation.yaml, allowDefaultNamespace is false); use namespace: dra-driver-nvidia-gpu"))
    elif not is_dns_label(driver.namespace):
        out.append((at + ".namespace", "%r is not a valid namespace name (%s)" % (driver.namespace, DNS_LABEL_RULE)))
    if re.match(r"^[vV][0-9]", driver.version):
        out.append((at + ".version", "chart versions have no leading v (the image tag is v + the chart's "
                    "appVersion); use version: %r" % driver.version[1:]))
    if len(driver.release_name) > RELEASE_NAME_MAX or not is_dns_subdomain(driver.release_name):
        out.append((at + ".release_name", "%r is not a Helm release name: at most %d lowercase letters, digits, "
                    "'-' and '.', starting and ending with a letter or digit" % (driver.release_name, RELEASE_NAME_MAX)))
    return out
