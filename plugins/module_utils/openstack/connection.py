# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Connection factory for the collection's OpenStack modules (documented by the
``gpupool.core.openstack`` doc fragment).

Same contract as openstack.cloud's ``openstack_cloud_from_module()``: ``cloud`` is either the name
of a cloud in clouds.yaml or a whole cloud configuration as a dict; the separate auth/TLS options
apply to a named cloud (or to the ``OS_*`` environment when ``cloud`` is not set) and must not be
mixed with a dict. Every OpenStack module of the collection gets its connection here.
"""

from __future__ import annotations

import traceback
from typing import Any, Mapping

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError, MissingLibrary

try:
    import openstack
    from openstack import exceptions as sdk_exc

    HAS_OPENSTACKSDK = True
    OPENSTACKSDK_IMPORT_ERROR = None
except ImportError:
    HAS_OPENSTACKSDK = False
    OPENSTACKSDK_IMPORT_ERROR = traceback.format_exc()

MINIMUM_SDK_VERSION = "4.0.0"  # requirements.txt's floor (tests/unit/plugins/test_documented_requirements.py)
APP_NAME = "gpupool.core"

# Options that only make sense with a named cloud / environment, not with a cloud dict.
CONNECTION_OPTIONS = (
    "auth",
    "auth_type",
    "region_name",
    "validate_certs",
    "ca_cert",
    "client_cert",
    "client_key",
    "api_timeout",
    "interface",
)


class ConnectionConfigError(GpupoolError):
    """The connection cannot be configured; the message says what to fix."""


def _version_tuple(text):
    parts = []
    for piece in str(text).split(".")[:3]:
        digits = "".join(c for c in piece if c.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def connect_from_params(params: Mapping[str, Any]) -> Any:
    """openstack.connection.Connection from module parameters; raises ConnectionConfigError."""
    if not HAS_OPENSTACKSDK:
        raise MissingLibrary("openstacksdk>=%s" % MINIMUM_SDK_VERSION, traceback=OPENSTACKSDK_IMPORT_ERROR or "")
    version = getattr(openstack, "version", None)
    sdk_version = getattr(version, "__version__", None) if version else None
    if sdk_version and _version_tuple(sdk_version) < _version_tuple(MINIMUM_SDK_VERSION):
        raise ConnectionConfigError(
            "openstacksdk %s is too old; this collection needs >= %s (pip install -U openstacksdk on the host that "
            "runs the module)." % (sdk_version, MINIMUM_SDK_VERSION)
        )
    cloud = params.get("cloud")
    if isinstance(cloud, dict):
        mixed = [
            opt
            for opt in CONNECTION_OPTIONS
            if params.get(opt) is not None and not (opt == "interface" and params.get(opt) == "public")
        ]
        if mixed:
            raise ConnectionConfigError(
                "cloud is given as a dict, so the options %s must be left out: put them into the cloud dict "
                "(e.g. cloud.auth, cloud.region_name, cloud.cacert) or name a cloud from clouds.yaml instead."
                % ", ".join(mixed)
            )
        kwargs = dict(cloud)
        kwargs.setdefault("interface", params.get("interface") or "public")
        # The dict is the whole configuration: neither clouds.yaml nor OS_* variables leak into it.
        kwargs.update(load_yaml_config=False, load_envvars=False)
        cloud_name = None
    elif cloud is not None and not isinstance(cloud, str):
        raise ConnectionConfigError(
            "cloud must be the name of a cloud in clouds.yaml or a dict with the cloud's "
            "configuration, got %s." % type(cloud).__name__
        )
    else:
        cloud_name = cloud
        kwargs = dict(
            auth_type=params.get("auth_type"),
            auth=params.get("auth"),
            region_name=params.get("region_name"),
            verify=params.get("validate_certs"),
            cacert=params.get("ca_cert"),
            cert=params.get("client_cert"),
            key=params.get("client_key"),
            api_timeout=params.get("api_timeout"),
            interface=params.get("interface"),
        )
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
    try:
        return openstack.connect(cloud=cloud_name, app_name=APP_NAME, **kwargs)
    except sdk_exc.ConfigException as exc:
        raise ConnectionConfigError(
            "Cannot configure the OpenStack connection%s: %s. Name a cloud that exists in clouds.yaml (searched in "
            "./clouds.yaml, ~/.config/openstack/ and /etc/openstack/, or the file in OS_CLIENT_CONFIG_FILE), or "
            "pass the cloud as a dict." % (" for cloud '%s'" % cloud_name if cloud_name else "", exc)
        )
    except Exception as exc:  # keystoneauth MissingRequiredOptions, bad auth_type, ...
        raise ConnectionConfigError(
            "Cannot configure the OpenStack connection%s: %s: %s. Check the auth settings (auth_url, username, "
            "password, project) of the cloud."
            % (" for cloud '%s'" % cloud_name if cloud_name else "", type(exc).__name__, exc)
        )


# secrets_in() lives in secrets.py (no openstacksdk import): every pool module hides a cloud's secrets.
