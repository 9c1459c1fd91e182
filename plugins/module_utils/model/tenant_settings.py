# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tenants' settings: a tenant namespace and the ResourceClaimTemplates gpupool keeps there."""

from __future__ import annotations

from typing import List, Literal, Optional

from ansible_collections.gpupool.core.plugins.module_utils.model.describe import cut
from ansible_collections.gpupool.core.plugins.module_utils.model.pool_settings import Sharing
from ansible_collections.gpupool.core.plugins.module_utils.model.strict import Field, Strict, field_validator
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import (
    is_label_key,
    label_key_rule,
)


class ClaimTemplate(Strict):
    """One ResourceClaimTemplate of a tenant: `count` devices of one of a pool's DeviceClasses."""

    name: str = Field(
        ...,
        description="Template name (a DNS subdomain), unique in its namespace; workloads name it "
        "in resourceClaims[].resourceClaimTemplateName.",
    )
    pool: str = Field(..., description="The pool whose devices the template asks for.")
    mig_profile: Optional[str] = Field(
        None,
        description="Ask for the pool's MIG class of this profile, e.g. 3g.20gb. Default: the pool's full-GPU class.",
    )
    device_class: Optional[str] = Field(
        None, description="Ask for this one of the pool's DeviceClasses (an extra class, say) instead of mig_profile."
    )
    count: int = Field(1, ge=1, description="Devices per claim (allocation_mode ExactCount).")
    allocation_mode: Literal["ExactCount", "All"] = Field(
        "ExactCount", description="ExactCount: `count` devices; All: every matching device of the node."
    )
    sharing: Optional[Sharing] = Field(
        None,
        description="Sharing of the claim's devices between its containers, in "
        "the pool's sharing form ({time_slicing: {}} or {mps: {}}).",
    )
    match_attribute: Optional[str] = Field(
        None,
        description="Every device of the claim has the same value of this "
        "attribute, e.g. resource.kubernetes.io/pcieRoot.",
    )

    @field_validator("match_attribute")
    @classmethod
    def _attribute(cls, v):
        if v is not None and not is_label_key(v):
            raise ValueError(
                "%s is not a qualified attribute name such as resource.kubernetes.io/pcieRoot (%s)"
                % (cut(v), label_key_rule(v))
            )
        return v


class Tenant(Strict):
    """A tenant namespace and the ResourceClaimTemplates gpupool keeps there."""

    namespace: str = Field(..., description="The tenant's namespace (it must exist; gpupool does not create it).")
    templates: Optional[List[ClaimTemplate]] = Field(
        None,
        description="The templates. Default: one per DeviceClass of every present pool, named like the class, "
        "one device each; [] keeps none (gpupool's templates there are deleted).",
    )
