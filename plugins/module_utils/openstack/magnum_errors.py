# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The errors of the Magnum client (openstack/magnum.py), each a sentence a person can act on: what an error
response, a transport failure or a cluster that is not there means, and what to do about it."""

from __future__ import annotations

import json
from typing import Any, Dict, Optional, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.api_rules import Version, format_version

try:
    from keystoneauth1 import exceptions as ks_exc
except ImportError:  # pragma: no cover - openstack_client reports the missing SDK
    ks_exc = None


class MagnumError(GpupoolError):
    """A Magnum call failed; str() is a sentence for a person."""

    def __init__(
        self,
        message: str,
        status: Optional[int] = None,
        detail: Optional[str] = None,
        method: Optional[str] = None,
        url: Optional[str] = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.status, self.detail, self.method, self.url, self.body = status, detail, method, url, body
        self.details = {"magnum": self.to_dict()} if status is not None else {}

    def to_dict(self) -> Dict[str, Any]:
        return {"status": self.status, "detail": self.detail, "method": self.method, "url": self.url}


class MagnumNotFound(MagnumError):
    pass


class MagnumConflict(MagnumError):
    pass


class OperationFailed(MagnumError):
    """The nodegroup ended in a *_FAILED status."""


class WaitTimeout(MagnumError):
    """The nodegroup did not reach the expected state in time."""


def cluster_not_found(ident: str, exc: MagnumError) -> MagnumNotFound:
    """The 404 of a cluster read, as a sentence that says how to find the right name."""
    return MagnumNotFound(
        "Cluster '%s' not found in this project (%s). Check the cluster name or uuid with "
        "`openstack coe cluster list`." % (ident, exc.detail),
        status=404,
        detail=exc.detail,
    )


def error_detail(resp: Any) -> str:
    """The human text of an error response: Magnum's {"errors": [{title, detail}]}, Keystone's
    {"error": {message}}, or the raw text."""
    try:
        body = resp.json()
    except ValueError:
        return (resp.text or "").strip()[:500] or resp.reason or ""
    if isinstance(body, dict):
        errors = body.get("errors")
        if isinstance(errors, list) and errors:
            texts = []
            for err in errors:
                if isinstance(err, dict):
                    texts.append(str(err.get("detail") or err.get("title") or err))
            return "; ".join(texts)
        err = body.get("error")
        if isinstance(err, dict):
            return str(err.get("message") or err.get("title") or err)
        for key in ("faultstring", "message", "detail"):
            if body.get(key):
                return str(body[key])
    return json.dumps(body)[:500]


def transport_failure(exc: Exception, method: str, path: str) -> Optional[MagnumError]:
    """None when the exception is worth a retry, otherwise the MagnumError to raise.

    Failed connects and timeouts are retried for writes too: every write this client sends is
    idempotent (absolute counts and values; a repeated create is recognised by its 409)."""
    if ks_exc is not None:
        if isinstance(exc, ks_exc.EndpointNotFound):
            return MagnumError(
                "The cloud's service catalog has no Magnum (container-infra) endpoint for this "
                "region/interface: %s. Check region_name and interface, or ask the operators "
                "whether Magnum is deployed." % exc,
                method=method,
                url=path,
            )
        if isinstance(exc, ks_exc.Unauthorized):
            return MagnumError(
                "Authentication failed (%s). Check the credentials of the cloud in clouds.yaml "
                "or the auth option." % exc,
                status=401,
                method=method,
                url=path,
            )
        if isinstance(exc, ks_exc.SSLError):
            return MagnumError(
                "TLS verification failed for %s: %s. Give the CA bundle with ca_cert (or cacert "
                "in clouds.yaml); validate_certs=false only for tests." % (path, exc),
                method=method,
                url=path,
            )
        if isinstance(exc, (ks_exc.ConnectFailure, ks_exc.ConnectTimeout, ks_exc.UnknownConnectionError)):
            return None
        if isinstance(exc, ks_exc.ClientException):
            return MagnumError("%s %s failed: %s" % (method, path, exc), method=method, url=path)
    return MagnumError("%s %s failed: %s: %s" % (method, path, type(exc).__name__, exc), method=method, url=path)


def http_error(
    method: str, path: str, resp: Any, attempt: int, version: Optional[Version], server_range: Tuple[Any, Any]
) -> MagnumError:
    """The MagnumError of an error response; a 406 names the version sent and the server's range (min, max)."""
    detail = error_detail(resp)
    status = resp.status_code
    cls = {404: MagnumNotFound, 409: MagnumConflict}.get(status, MagnumError)
    text = "Magnum answered %s %s with HTTP %d: %s" % (method, path, status, detail)
    if status == 406:
        text += " (microversion %s was sent; the server supports %s to %s)" % (
            format_version(version) if version else "none",
            server_range[0],
            server_range[1],
        )
    if attempt > 1:
        text += " (after %d attempts)" % attempt
    return cls(text, status=status, detail=detail, method=method, url=path)
