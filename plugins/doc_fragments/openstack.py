# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Connection options shared by the collection's OpenStack modules (plugins/module_utils/openstack_client.py)."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  cloud:
    description:
      - Name of a cloud in C(clouds.yaml), or a dict with the whole cloud configuration (the content of one
        C(clouds.yaml) entry, for example C(auth), C(region_name), C(cacert)).
      - C(clouds.yaml) is searched in the current directory, C(~/.config/openstack/) and C(/etc/openstack/), or
        read from the file named by the E(OS_CLIENT_CONFIG_FILE) environment variable.
      - When not set, the E(OS_*) environment variables (E(OS_CLOUD), E(OS_AUTH_URL), ...) are used.
      - With a dict, leave out O(auth), O(auth_type), O(region_name), O(validate_certs), O(ca_cert),
        O(client_cert), O(client_key) and O(api_timeout); put them into the dict instead.
    type: raw
  auth:
    description:
      - Authentication settings (for example C(auth_url), C(username), C(password), C(project_name),
        C(user_domain_name), C(project_domain_name), or C(application_credential_id) and
        C(application_credential_secret)), merged over those of the named cloud.
    type: dict
  auth_type:
    description:
      - Keystone authentication plugin, for example C(password), C(v3applicationcredential) or C(token).
      - Defaults to the cloud's setting, or C(password).
    type: str
  region_name:
    description:
      - Region whose service catalog endpoints are used.
    type: str
  validate_certs:
    description:
      - Whether TLS certificates of the API endpoints are verified. Defaults to the cloud's setting
        (C(verify) in C(clouds.yaml)), which defaults to true.
    type: bool
    aliases: [verify]
  ca_cert:
    description:
      - Path to a CA bundle used to verify the API endpoints.
    type: str
    aliases: [cacert]
  client_cert:
    description:
      - Path to a client certificate for TLS client authentication.
    type: str
    aliases: [cert]
  client_key:
    description:
      - Path to the key of O(client_cert).
    type: str
    aliases: [key]
  api_timeout:
    description:
      - Timeout in seconds for each API request (not for waiting on an operation).
    type: int
  interface:
    description:
      - Which endpoint of the service catalog to use.
    type: str
    default: public
    choices: [admin, internal, public]
    aliases: [endpoint_type]
requirements:
  - python >= 3.9
  - openstacksdk >= 4.0.0
notes:
  - The options follow the C(openstack.cloud) collection, so C(module_defaults) with
    C(group/gpupool.core.openstack) can set them once for every OpenStack module of this collection.
"""
