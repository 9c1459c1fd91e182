# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Argument-spec pieces shared by the modules, 1:1 with the doc fragments in plugins/doc_fragments/.
"""
from __future__ import annotations




# Connection options shared by every Kubernetes module (documented in the
# gpupool.core.k8s_auth doc fragment). Environment fallbacks follow kubernetes.core.
AUTH_ARG_SPEC = dict(
    kubeconfig=dict(type="path"),
    context=dict(type="str"),
    host=dict(type="str"),
    api_key=dict(type="str", no_log=True),
    validate_certs=dict(type="bool", aliases=["verify_ssl"]),
    ca_cert=dict(type="path", aliases=["ssl_ca_cert"]),
    client_cert=dict(type="path", aliases=["cert_file"]),
    client_key=dict(type="path", aliases=["key_file"], no_log=False),
    request_timeout=dict(type="float", default=30.0),
    request_retries=dict(type="int", default=5),
)
