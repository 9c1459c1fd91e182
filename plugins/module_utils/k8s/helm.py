# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Thin I/O around the ``helm`` binary (Helm 3.13+), for gpupool.core.dra_driver.

Each method runs one helm command with ``--kubeconfig``/``--kube-context`` and JSON output where helm
has it, and turns a failure into `HelmError` whose message is a sentence a person can act on (the
chart's own ``fail`` text, a missing cert-manager, a timeout, a pending release, a refused registry
login) - never a Go stack or a credential. Values go to helm as a private temporary file, never on
the command line.

Credentials never go on helm's command line (where `ps` shows them to every user of the host): an OCI
registry login runs ``helm registry login --password-stdin`` against a private registry config, and an
HTTP chart repository with a username is added with ``helm repo add --password-stdin`` to a private
repositories.yaml (and its own index cache); later commands name the chart as ``<alias>/<chart>`` and
get ``--repository-config``/``--repository-cache``. Both live in a 0700 temporary directory, files 0600,
removed by `close()`. Every message helm prints is scrubbed of the password before it is shown.

A helm child is stopped gently: when the step is cancelled (SIGTERM, Ctrl-C) while helm runs, helm gets
SIGTERM and up to `STOP_GRACE` seconds to record the release as failed (an upgrade killed outright
stays pending-upgrade), then SIGKILL.

What helm's output means, in a sentence, is k8s/helm_messages.py's; the chart's CRDs are applied by k8s/crds.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from ansible_collections.gpupool.core.plugins.module_utils.k8s import private_dir
from ansible_collections.gpupool.core.plugins.module_utils.k8s.helm_messages import readable
from ansible_collections.gpupool.core.plugins.module_utils.mig.mig_parted import yaml
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError, MissingLibrary

REDACTED = "********"
DEFAULT_TIMEOUT = 600.0  # seconds a helm command may run on top of its own --timeout
STOP_GRACE = 20.0  # seconds helm gets after SIGTERM to record a cancelled operation before SIGKILL
PENDING = ("pending-install", "pending-upgrade", "pending-rollback")


class HelmError(GpupoolError):
    """A helm command that failed, with a readable message (credentials removed)."""

    def __init__(self, action: str, message: str, returncode: Optional[int] = None, output: str = "", hint: str = ""):
        self.action = action
        self.returncode = returncode
        self.output = output
        self.hint = hint
        text = "helm %s failed: %s" % (action, message) + ("; " + hint if hint else "")
        super().__init__(text, helm_output=output[-4000:] if output else "")
        self.message = message  # the sentence alone; describe() gives the whole text

    def describe(self) -> str:
        return str(self)


class HelmNotFound(HelmError):
    pass


@dataclass(frozen=True)
class ChartRef:
    """Where the chart comes from: an OCI reference, a repository URL + name, or a local path/archive."""

    chart: str
    version: str
    repo: Optional[str] = None
    username: Optional[str] = None
    password: Optional[str] = None
    ca_file: Optional[str] = None
    insecure_skip_tls_verify: bool = False
    plain_http: bool = False

    @property
    def is_oci(self) -> bool:
        return self.chart.startswith("oci://")

    @property
    def is_local(self) -> bool:
        return not self.is_oci and not self.repo and (os.path.isdir(self.chart) or os.path.isfile(self.chart))

    @property
    def registry_host(self) -> Optional[str]:
        start = len("oci://")
        return self.chart[start:].split("/", 1)[0] if self.is_oci else None

    @property
    def needs_login(self) -> bool:
        """An HTTP repository with credentials: `Helm` adds it to a private repositories.yaml first."""
        return bool(self.repo and self.username)

    def args(self, alias: Optional[str] = None) -> List[str]:
        """The chart and its source flags, as `helm upgrade/show/pull` take them. A local chart gets
        no --version (helm reads the version from Chart.yaml; the caller compares it). alias: the name of
        the repository entry `Helm.repo_login` wrote (its credentials are there, never in these flags)."""
        if alias:
            return ["%s/%s" % (alias, self.chart), "--version", self.version]
        out = [self.chart]
        if not self.is_local:
            out += ["--version", self.version]
        if self.repo:
            out += ["--repo", self.repo]
        if self.ca_file:
            out += ["--ca-file", self.ca_file]
        if self.insecure_skip_tls_verify:
            out += ["--insecure-skip-tls-verify"]
        if self.plain_http and self.is_oci:
            out += ["--plain-http"]
        return out

    def describe(self) -> str:
        where = " from %s" % self.repo if self.repo else ""
        return "%s %s%s" % (self.chart, self.version, where)


Runner = Callable[..., "subprocess.CompletedProcess[str]"]


def run_gently(
    argv: Sequence[str], input: Optional[str], env: Mapping[str, str], timeout: float
) -> "subprocess.CompletedProcess[str]":
    """subprocess.run, but a helm interrupted by an exception here (the step's Cancelled on SIGTERM, a timeout)
    gets SIGTERM and `STOP_GRACE` seconds before SIGKILL: helm then cancels its operation and records the
    release as failed, which the next `helm upgrade` takes over, where SIGKILL would leave it pending."""
    with subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(env),
    ) as proc:
        try:
            stdout, stderr = proc.communicate(input, timeout=timeout)
        except BaseException:
            stop_gently(proc)
            raise
        return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def stop_gently(proc: "subprocess.Popen[str]", grace: float = STOP_GRACE) -> None:
    if proc.poll() is not None:
        return
    try:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=grace)
    except BaseException:  # a second interruption, or helm ignored SIGTERM: stop it for good
        proc.kill()
        proc.wait()


# helm commands that change the cluster (the first word of run()'s action)
WRITES = frozenset(("upgrade", "install", "rollback", "uninstall"))


class Helm:
    """One helm binary talking to one cluster. Use as a context manager (temporary files)."""

    def __init__(
        self,
        binary: str = "helm",
        kubeconfig: Optional[str] = None,
        context: Optional[str] = None,
        env: Optional[Dict[str, str]] = None,
        runner: Optional[Runner] = None,
        secrets: Sequence[str] = (),
        command_timeout: float = DEFAULT_TIMEOUT,
    ):
        self.binary = binary
        self.kubeconfig = kubeconfig
        self.context = context
        self.env = dict(os.environ, **(env or {}))
        self._run_process = runner or run_gently
        self._repo_aliases: Dict[str, str] = {}
        self._secrets = [s for s in secrets if s]
        self.command_timeout = command_timeout
        # kubeconfig, repositories.yaml, registry config: credentials, in a private folder removed on every exit
        self._tmp = private_dir.create("helm")
        self.commands: List[List[str]] = []  # what ran, secrets redacted (for results and tests)
        # Called before every helm command that writes to the cluster (not its dry runs): the step's K8sClient's
        # write_guard, so a run that lost its run lease starts no helm upgrade, rollback or uninstall.
        self.write_guard: Optional[Callable[[str], None]] = None

    # ---- plumbing ------------------------------------------------------------------------------------
    def close(self) -> None:
        private_dir.remove(self._tmp)

    def __enter__(self) -> "Helm":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def add_secret(self, secret: Optional[str]) -> None:
        if secret:
            self._secrets.append(secret)

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return text

    def write_kubeconfig(
        self,
        server: str,
        token: Optional[str] = None,
        ca_file: Optional[str] = None,
        client_cert: Optional[str] = None,
        client_key: Optional[str] = None,
        insecure: bool = False,
    ) -> str:
        """A private kubeconfig (mode 0600, removed by close()) for a connection given as host/api_key:
        helm then reads the token from a file, never from its command line."""
        self.add_secret(token)
        user: Dict[str, Any] = {}
        if token:
            user["token"] = token
        if client_cert:
            user["client-certificate"] = client_cert
        if client_key:
            user["client-key"] = client_key
        cluster: Dict[str, Any] = {"server": server}
        if ca_file:
            cluster["certificate-authority"] = ca_file
        if insecure:
            cluster["insecure-skip-tls-verify"] = True
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "gpupool",
            "clusters": [{"name": "gpupool", "cluster": cluster}],
            "users": [{"name": "gpupool", "user": user}],
            "contexts": [{"name": "gpupool", "context": {"cluster": "gpupool", "user": "gpupool"}}],
        }
        path = os.path.join(self._tmp, "kubeconfig")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(config, fh)
        self.kubeconfig, self.context = path, None
        return path

    def _cluster_args(self) -> List[str]:
        out = []
        if self.kubeconfig:
            out += ["--kubeconfig", self.kubeconfig]
        if self.context:
            out += ["--kube-context", self.context]
        return out

    def run(
        self,
        action: str,
        args: Sequence[str],
        stdin: Optional[str] = None,
        cluster: bool = True,
        timeout: Optional[float] = None,
    ) -> "subprocess.CompletedProcess[str]":
        """Run `helm <args>`; HelmError (readable, redacted) when it exits non-zero."""
        if self.write_guard is not None and action.split(" ")[0] in WRITES and "--dry-run=server" not in action:
            self.write_guard("helm %s" % action)
        argv = [self.binary] + list(args) + (self._cluster_args() if cluster else [])
        if self._registry_config_used():
            argv += ["--registry-config", self._registry_config]
        if self._repository_config_used():
            argv += ["--repository-config", self._repository_config, "--repository-cache", self._repository_cache]
        self.commands.append([self.redact(a) for a in argv])
        limit = timeout or self.command_timeout
        try:
            proc = self._run_process(argv, input=stdin, env=self.env, timeout=limit)
        except FileNotFoundError:
            raise HelmNotFound(
                action,
                "the helm binary %r was not found" % self.binary,
                hint="install helm 3.13 or later on the host that runs the module, or set helm_binary to its path",
            )
        except subprocess.TimeoutExpired:
            raise HelmError(
                action,
                "helm did not finish within %.0f s" % limit,
                hint="the API server or the chart registry may be unreachable",
            )
        if proc.returncode != 0:
            output = self.redact((proc.stderr or "") + (proc.stdout or ""))
            message, hint = readable(output)
            raise HelmError(action, message, proc.returncode, output, hint)
        return proc

    @property
    def _repository_config(self) -> str:
        return os.path.join(self._tmp, "repositories.yaml")

    @property
    def _repository_cache(self) -> str:
        return os.path.join(self._tmp, "repository-cache")

    def _repository_config_used(self) -> bool:
        return os.path.exists(self._repository_config)

    @property
    def _registry_config(self) -> str:
        return os.path.join(self._tmp, "registry.json")

    def _registry_config_used(self) -> bool:
        return os.path.exists(self._registry_config)

    def _values_file(self, values: Dict[str, Any]) -> str:
        fd, path = tempfile.mkstemp(prefix="values-", suffix=".json", dir=self._tmp)
        with os.fdopen(fd, "w") as fh:
            json.dump(values, fh, sort_keys=True)
        return path

    # ---- reads ---------------------------------------------------------------------------------------
    def version(self) -> str:
        return self.run("version", ["version", "--short"], cluster=False).stdout.strip()

    def status(self, release: str, namespace: str) -> Optional[Dict[str, Any]]:
        """The release's metadata (`helm get metadata -o json`: chart, version, appVersion, status,
        revision, deployedAt), or None when there is no such release."""
        try:
            proc = self.run("get metadata", ["get", "metadata", release, "--namespace", namespace, "--output", "json"])
        except HelmError as exc:
            if "release: not found" in exc.output:
                return None
            raise
        return json.loads(proc.stdout)

    def get_values(self, release: str, namespace: str, all_values: bool = False) -> Dict[str, Any]:
        """The user-supplied values of the deployed revision (what we passed last time); with all_values
        (--all) merged over the chart's defaults, as the chart renders them."""
        args = ["get", "values", release, "--namespace", namespace, "--output", "json"]
        proc = self.run("get values", args + (["--all"] if all_values else []))
        return json.loads(proc.stdout or "null") or {}

    @staticmethod
    def _yaml():
        if yaml is None:  # PyYAML comes with ansible-core; say so plainly if it is missing
            raise MissingLibrary("PyYAML", reason="to read helm's YAML output")
        return yaml

    def show_chart(self, chart: ChartRef) -> Dict[str, Any]:
        """The chart's Chart.yaml (resolves the reference: proves it exists in that version)."""
        proc = self.run("show chart", ["show", "chart"] + self.chart_args(chart), cluster=False)
        return self._yaml().safe_load(proc.stdout) or {}

    def show_crds(self, chart: ChartRef) -> List[Dict[str, Any]]:
        """The chart's crds/ files. helm prints them back to back: each file must start its own YAML
        document with `---` (controller-gen's files do); one that does not merges with the previous."""
        proc = self.run("show crds", ["show", "crds"] + self.chart_args(chart), cluster=False)
        return [doc for doc in self._yaml().safe_load_all(proc.stdout) if isinstance(doc, dict) and doc.get("kind")]

    def history(self, release: str, namespace: str, limit: int = 20) -> List[Dict[str, Any]]:
        """The release's last revisions (`helm history -o json`: revision, updated, status, chart, app_version,
        description), oldest first; [] when there is no such release."""
        try:
            proc = self.run(
                "history", ["history", release, "--namespace", namespace, "--max", str(limit), "--output", "json"]
            )
        except HelmError as exc:
            if "release: not found" in exc.output:
                return []
            raise
        return json.loads(proc.stdout or "[]") or []

    def chart_args(self, chart: ChartRef) -> List[str]:
        """`chart.args()`, after adding a repository with credentials to the private repositories.yaml."""
        return chart.args(self.repo_login(chart) if chart.needs_login else None)

    # ---- writes --------------------------------------------------------------------------------------
    def repo_login(self, chart: ChartRef) -> str:
        """Add the chart's HTTP repository with its credentials (``helm repo add --password-stdin``) to this
        object's private repositories.yaml; returns the entry's name. Once per repository and user."""
        key = "%s\0%s" % (chart.repo, chart.username)
        if key in self._repo_aliases:
            return self._repo_aliases[key]
        self.add_secret(chart.password)
        alias = "gpupool-" + hashlib.sha256(key.encode()).hexdigest()[:12]
        if not self._repository_config_used():
            fd = os.open(self._repository_config, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write('apiVersion: ""\nrepositories: []\n')
            os.makedirs(self._repository_cache, mode=0o700, exist_ok=True)
        args = ["repo", "add", alias, chart.repo or "", "--username", chart.username or "", "--password-stdin"]
        args += ["--force-update"]
        if chart.ca_file:
            args += ["--ca-file", chart.ca_file]
        if chart.insecure_skip_tls_verify:
            args.append("--insecure-skip-tls-verify")
        self.run("repo add", args, stdin=chart.password or "", cluster=False)
        self._repo_aliases[key] = alias
        return alias

    def registry_login(self, host: str, username: str, password: str, insecure: bool = False) -> None:
        """Log in to an OCI registry with --password-stdin into a private registry config."""
        self.add_secret(password)
        if not self._registry_config_used():
            with open(self._registry_config, "w") as fh:
                fh.write("{}")
            os.chmod(self._registry_config, 0o600)
        args = ["registry", "login", host, "--username", username, "--password-stdin"]
        if insecure:
            args.append("--insecure")
        self.run("registry login", args, stdin=password, cluster=False)

    def upgrade(
        self,
        release: str,
        namespace: str,
        chart: ChartRef,
        values: Dict[str, Any],
        *,
        dry_run: bool = False,
        wait: bool = True,
        timeout: float = 300.0,
        create_namespace: bool = True,
        labels: Optional[Mapping[str, str]] = None,
    ) -> Dict[str, Any]:
        """`helm upgrade --install` with exactly `values` (--reset-values: nothing carried over from
        the previous revision, so `get values` equals what we passed). dry_run: --dry-run=server
        (renders against the live cluster, writes nothing). Returns helm's JSON release."""
        args = (
            ["upgrade", release]
            + self.chart_args(chart)
            + [
                "--install",
                "--namespace",
                namespace,
                "--values",
                self._values_file(values),
                "--reset-values",
                "--output",
                "json",
            ]
        )
        if create_namespace:
            args.append("--create-namespace")
        if labels:  # stored with the revision (its Secret's labels) from the moment it is pending
            args += ["--labels", ",".join("%s=%s" % kv for kv in sorted(labels.items()))]
        if dry_run:
            args.append("--dry-run=server")
        elif wait:
            args += ["--wait", "--timeout", "%ds" % int(timeout)]
        proc = self.run(
            "upgrade --install" + (" --dry-run=server" if dry_run else ""), args, timeout=timeout + self.command_timeout
        )
        return json.loads(proc.stdout or "{}")

    def rollback(self, release: str, namespace: str, revision: int, timeout: float = 300.0) -> None:
        """`helm rollback` to `revision` (a new revision with that one's chart and values), without waiting for
        the rollout (the release step waits for it its own way)."""
        args = ["rollback", release, str(revision), "--namespace", namespace, "--timeout", "%ds" % int(timeout)]
        self.run("rollback", args, timeout=timeout + self.command_timeout)

    def uninstall(self, release: str, namespace: str, wait: bool = True, timeout: float = 300.0) -> bool:
        """Uninstall; False when there was no release. CRDs stay (helm never deletes crds/)."""
        args = ["uninstall", release, "--namespace", namespace]
        if wait:
            args += ["--wait", "--timeout", "%ds" % int(timeout)]
        try:
            self.run("uninstall", args, timeout=timeout + self.command_timeout)
        except HelmError as exc:
            if "not found" in exc.output:
                return False
            raise
        return True
