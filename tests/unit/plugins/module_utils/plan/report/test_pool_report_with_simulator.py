# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pool report against devices named as the DRA driver simulator names them (needs the test bed: run by
pytest from the checkout, not by ansible-test, which does not ship testbed/)."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.plan.report.gpu_identity import published_layout
from testbed import dra_resourceslices, mig_tables


def test_the_dra_simulators_devices_report_by_index():
    """The DRA driver simulator names devices by minor like the real driver; the report still finds the
    layout per NVML index."""
    devs = dra_resourceslices.devices(
        "n", mig_tables.get("A100-40GB"), 3, {0: {"7g.40gb": 1}, 1: None, 2: {"3g.20gb": 2}}, minors=[2, 0, 1]
    )
    assert {d["name"].split("-mig-")[0] for d in devs} == {"gpu-2", "gpu-0", "gpu-1"}
    assert published_layout([("n", d) for d in devs]) == {0: {"7g.40gb": 1}, 1: None, 2: {"3g.20gb": 2}}
