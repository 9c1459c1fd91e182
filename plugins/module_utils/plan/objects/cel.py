# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""CEL selector expressions over the NVIDIA DRA driver's device attributes (reference nvidia-dra-driver-published.md)."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.model.names import DRIVER


def cel_string(text):
    """A CEL string literal."""
    return "'" + str(text).replace("\\", "\\\\").replace("'", "\\'") + "'"


def cel_attr(name, driver=DRIVER):
    return "device.attributes[%s].%s" % (cel_string(driver), name)


def cel_product(names):
    if len(names) == 1:
        return "%s == %s" % (cel_attr("productName"), cel_string(names[0]))
    return "%s in [%s]" % (cel_attr("productName"), ", ".join(cel_string(n) for n in names))


def cel_device(device_type, products, profile=None):
    terms = ["device.driver == %s" % cel_string(DRIVER), "%s == %s" % (cel_attr("type"), cel_string(device_type))]
    if profile:
        terms.append("%s == %s" % (cel_attr("profile"), cel_string(profile)))
    terms.append(cel_product(products))
    return " && ".join(terms)


def cel_min_memory(quantity):
    return "device.capacity[%s].memory.compareTo(quantity(%s)) >= 0" % (cel_string(DRIVER), cel_string(quantity))


def semver(version):
    """'9.0' -> '9.0.0' (DRA version attributes are semantic versions); the model accepts only such versions
    (model/syntax.py COMPUTE_CAPABILITY)."""
    parts = str(version).split(".")
    return ".".join(parts + ["0"] * (3 - len(parts)))


def cel_min_compute_capability(version):
    return "%s.compareTo(semver(%s)) >= 0" % (cel_attr("cudaComputeCapability"), cel_string(semver(version)))


def selector(expression):
    return {"cel": {"expression": expression}}
