# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The base of every inventory model class (`Strict`: unknown keys refused) and the validators several sections share.

The one import guard of pydantic is here: without pydantic the model stays importable, and the modules report the
missing library (PYDANTIC_IMPORT_ERROR) with missing_required_lib().
"""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.model.bounds import MAX_NODES_PER_POOL, nodes_problem
from ansible_collections.gpupool.core.plugins.module_utils.model.describe import cut
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import (
    LABEL_VALUE_RULE,
    is_label_key,
    is_label_value,
    label_key_rule,
)

try:
    # the names the model's files take from pydantic, all through this one guard
    from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator  # pylint: disable=unused-import

    PYDANTIC_IMPORT_ERROR = None
except ImportError as _exc:  # modules report it with missing_required_lib()
    PYDANTIC_IMPORT_ERROR = _exc
    BaseModel, ValidationError = object, Exception

    def ConfigDict(**kwargs):  # noqa: N802 - stand-in keeps the module importable
        return kwargs

    def Field(default=None, **kwargs):  # noqa: N802
        return default

    def PrivateAttr(default=None):  # noqa: N802
        return default

    def field_validator(*args, **kwargs):
        return lambda func: func

    def model_validator(*args, **kwargs):
        return lambda func: func


# Magnum stores node counts and volume sizes in Integer (int32) columns: a larger number fails in the database.
INT32_MAX = 2147483647


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, validate_default=True)


def checked_labels(value):
    for key, val in (value or {}).items():
        if not is_label_key(str(key)):
            raise ValueError("%s is not a valid Kubernetes label key: use %s" % (cut(key), label_key_rule(key)))
        if not is_label_value(str(val)):
            raise ValueError("label %s=%s: values are %s" % (key, cut(val), LABEL_VALUE_RULE))
    return {str(k): str(v) for k, v in (value or {}).items()}


def within_int32(value):
    if value is not None and value > INT32_MAX:
        raise ValueError("%d is more than Magnum can store: at most %d (a 32-bit integer)" % (value, INT32_MAX))
    return value


def within_node_bound(value):
    if value is not None and value > MAX_NODES_PER_POOL:
        raise ValueError(nodes_problem(value))
    return value
