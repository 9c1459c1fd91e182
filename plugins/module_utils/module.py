# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Ansible glue: the one step base every gpupool module and action plugin subclasses.

Modelled on openstack.cloud's ``OpenStackModule`` and kubernetes.core's ``AnsibleK8SModule``: a step is a
class with class attributes (``argument_spec`` composed from the shared pieces in argument_specs.py,
``module_kwargs``, ``required_libraries``) and one ``run()`` that returns the result's keys. Everything
else happens here, once:

* libraries are checked before ``run()`` and a missing one fails with ``missing_required_lib``;
* our errors become a failed result in one place (`GpupoolModule.execute`): `Problems` with their
  (path, message) list, any other `GpupoolError` with its sentence and details, plus what was already
  done (objects written before the failure), so a failed task still says what changed;
* check mode is decided once: Kubernetes writes go to the server as dry runs (the engine sends
  ``dryRun=All``), and `may_wait` is false so waits and drains are skipped;
* ``--diff``, ``changed`` and warnings are collected from the results;
* what a step waits for is said through `self.progress` (plan/progress.py): a line when it changes and a
  heartbeat at least every 5 s.

A step runs in one of two places, and the step does not know which (the *host* is the Ansible side):

* in the controller, as an action plugin (plugins/plugin_utils/step_action.py builds a controller host):
  every step that talks to the Kubernetes or Magnum API. No module round trip, and progress lines reach
  the terminal, ansible-runner's event stream and AWX while the task runs;
* as a module (`ModuleHost`: AnsibleModule, exit_json/fail_json), for what runs on GPU nodes (NVML, IMEX).

Subclasses: `PoolModule` (cluster + pools, validated by the model before anything else),
`KubernetesModule` (one converge runner over the server-side-apply engine), `MagnumModule`
(OpenStack connection + Magnum client), `MagnumPoolModule` (a Magnum module over the inventory's
cluster + pools, or standalone over flat options) and `NvmlModule` (an NVML session on a GPU node).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from ansible.module_utils.basic import AnsibleModule, missing_required_lib, remove_values

from ansible_collections.gpupool.core.plugins.module_utils.argument_specs import AUTH, LEASE, OPENSTACK, POOLS, compose
from ansible_collections.gpupool.core.plugins.module_utils.k8s.apply_engine import ApplyEngine, ConvergeError
from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import connect as k8s_connect
from ansible_collections.gpupool.core.plugins.module_utils.k8s.lease import RunLease
from ansible_collections.gpupool.core.plugins.module_utils.k8s.lease_keeper import LeaseKeeper, keeper_client
from ansible_collections.gpupool.core.plugins.module_utils.k8s.run_view import RunView
from ansible_collections.gpupool.core.plugins.module_utils.k8s.support import check_cluster
from ansible_collections.gpupool.core.plugins.module_utils.mig.mig_parted import YAML_IMPORT_ERROR
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import (
    Cancelled,
    GpupoolError,
    MissingLibrary,
    Problems,
    fit_lines,
)
from ansible_collections.gpupool.core.plugins.module_utils.model.load import select_pools
from ansible_collections.gpupool.core.plugins.module_utils.model.strict import PYDANTIC_IMPORT_ERROR
from ansible_collections.gpupool.core.plugins.module_utils.openstack.secrets import secrets_in
from ansible_collections.gpupool.core.plugins.module_utils.plan.progress import Progress
from ansible_collections.gpupool.core.plugins.module_utils.plan.waiting import Probe, Waiter, WaitResult
from ansible_collections.gpupool.core.plugins.module_utils.run_cluster import run_cluster


def _openstack():
    """openstack/connection.py, imported only by modules that talk to OpenStack: importing openstacksdk costs most
    of a second of CPU, which every Kubernetes module run would otherwise pay for nothing."""
    from ansible_collections.gpupool.core.plugins.module_utils.openstack import connection

    return connection


def _library(name: str) -> Tuple[str, Any]:
    """(requirement text, import error or None) of an optional library, for missing_required_lib()."""
    if name == "pydantic":
        return "pydantic>=2.6", PYDANTIC_IMPORT_ERROR
    if name == "yaml":
        return "PyYAML", YAML_IMPORT_ERROR
    if name == "openstacksdk":
        connection = _openstack()
        return "openstacksdk>=%s" % connection.MINIMUM_SDK_VERSION, connection.OPENSTACKSDK_IMPORT_ERROR
    raise KeyError(name)


class ModuleHost:
    """The Ansible side of a step that runs as a module: AnsibleModule parses the options, and the result
    leaves through exit_json/fail_json. A module cannot print while it runs, so progress lines only reach
    the result (``progress``) of the steps that return them."""

    name = ""  # the inventory host is not known inside a module

    def __init__(self, argument_spec: Dict[str, dict], module_kwargs: Dict[str, Any]) -> None:
        self.ansible = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True, **module_kwargs)
        self.params = self.ansible.params
        self.check_mode = self.ansible.check_mode
        self.diff_mode = bool(self.ansible._diff)

    def hide(self, secret: str) -> None:
        self.ansible.no_log_values.add(secret)

    def show(self, line: str) -> None:
        """Modules cannot stream output (Ansible reads their stdout once, at the end)."""

    def log(self, message: str) -> None:
        self.ansible.log(message)

    def finish(self, result: Dict[str, Any]) -> None:
        for message in result.pop("warnings", []):
            self.ansible.warn(message)
        if result.get("failed"):
            result.pop("failed")
            self.ansible.fail_json(**result)
        self.ansible.exit_json(**result)


class GpupoolModule:
    """Base of every gpupool step: subclass, set the class attributes, write `run()`."""

    argument_spec: Dict[str, dict] = {}  # the module's own options (may re-declare a shared option's default)
    shared: Tuple[dict, ...] = ()  # shared pieces from argument_specs.py, as the module's doc fragments list them
    module_kwargs: Dict[str, Any] = {}
    required_libraries: Tuple[str, ...] = ()
    lease_keeper: Optional[LeaseKeeper] = None  # renews O(run_lease) while the step runs (keep_run_lease)

    def __init__(self, host: Any = None) -> None:
        """host: the Ansible side (a controller host from an action plugin); None runs the step as a module."""
        if host is None:
            host = ModuleHost(self.full_argument_spec(), self.module_kwargs)
        self.host = host
        self.ansible = getattr(host, "ansible", None)  # AnsibleModule, for the steps that run as modules
        self.params = host.params
        self.check_mode = host.check_mode
        self.diff_mode = bool(host.diff_mode)
        self.warnings: List[str] = []
        self.progress = Progress(host.show, prefix=host.name)
        # Any step given the inventory (validate too) hides its Magnum cloud's secrets before anything is
        # printed, even when the inventory is refused.
        if "cluster" in self.params:
            self.hide_secrets(inventory_cloud(self.params.get("cluster")))

    @classmethod
    def full_argument_spec(cls) -> Dict[str, dict]:
        return compose(*cls.shared, **cls.argument_spec)

    # ---- what subclasses write --------------------------------------------------------------------
    def run(self) -> Dict[str, Any]:
        raise NotImplementedError

    def prepare(self) -> None:
        """Work that must succeed before `run()` (validation); subclasses extend it."""

    def partial_result(self) -> Dict[str, Any]:
        """What was already done, reported with a failure (and merged into a success)."""
        return {"changed": False}

    # ---- helpers ----------------------------------------------------------------------------------
    @property
    def run_holder(self) -> Optional[str]:
        """This run's identity: the holder of its run lease (O(run_lease)), or None for a step run alone. Every cordon
        the step makes records it (model/names.py CORDON_RUN_ANNOTATION)."""
        lease = self.params.get("run_lease")
        return lease.get("holder") if isinstance(lease, dict) else None

    @property
    def may_wait(self) -> bool:
        """Waits and drains are skipped in check mode: nothing was written that could be waited for."""
        return not self.check_mode

    def hide_secrets(self, cloud: Any) -> None:
        """Passwords and credential secrets inside a cloud dict never reach the output (masked wherever they
        appear: the invocation at -vvv, returned data, messages)."""
        for secret in secrets_in(cloud):
            self.host.hide(secret)

    def keep_run_lease(self, client: Any) -> None:
        """With O(run_lease): before anything else, make sure this run still holds its lease (a second run, or one
        that took over an expired lease, stops here before writing; so does this run once its lease was taken,
        deleted or released since its last step), renewing it when it is getting old; then keep it renewed in the
        background while the step runs (k8s/lease_keeper.py). Once it is lost, or a whole duration has passed since
        its last renewal by the monotonic clock (a paused process), `client`'s next write, and the next look of any
        wait, stops the step with a sentence."""
        lease = self.params.get("run_lease")
        if not lease:
            return
        args = (lease["namespace"], lease["name"], lease["holder"], lease["duration"])
        held = RunLease(client, *args, check_mode=self.check_mode)
        self.lease_result = held.hold()  # never takes it again: a lease this run lost stops the step here
        if self.check_mode:  # nothing is written, nothing to guard
            return
        # The fence before every write counts the lease's life from its last renewal by this process's monotonic
        # clock: from the renewTime read just now, or from before the write that renewed it (k8s/lease_keeper.py).
        self.lease_keeper = LeaseKeeper(RunLease(keeper_client(client), *args), renewed_at=held.renewed_at).start()
        client.write_guard = self.lease_keeper.check

    def hand_back_run_lease(self, client: Any) -> bool:
        """A run stopped mid-step hands its lease back (the next run need not wait for it to expire); the
        playbook's own release task never runs then. Best effort: without it the lease expires. A lease another
        run took over meanwhile is left alone (RunLease.release)."""
        lease = self.params.get("run_lease")
        if not lease or client is None or self.check_mode:
            return False
        args = (lease["namespace"], lease["name"], lease["holder"], lease["duration"])
        try:
            return RunLease(client, *args).release().get("action") == "released"
        except (GpupoolError, OSError):
            return False

    def lease_check(self, what: str = "") -> None:
        """Stop here (LeaseLost) if this run lost its run lease while the step ran."""
        if self.lease_keeper is not None:
            self.lease_keeper.check(what)

    def wait_for(self, subject: str, probe: Probe, timeout: float, sleep: float, **options: Any) -> WaitResult:
        """The one Waiter, saying what it waits for: a line per change of the probe's status under `subject`,
        a heartbeat every 5 s, and a last line when it is over (nothing at all if it was over at once). Each look
        first checks that the run still holds its lease: a run that lost it stops waiting and writes no more."""

        def look() -> Tuple[bool, str]:
            self.lease_check("waiting for %s" % subject)
            return probe()

        result = Waiter(timeout, sleep, progress=lambda status: self.progress.update(subject, status), **options).until(
            look
        )
        if result.done:
            self.progress.done(subject, result.status)
        return result

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def log(self, message: str) -> None:
        """Detail for -vvv (retries, raw statuses): not a progress line."""
        self.host.log(message)

    def require_at_least(self, **minimums: int) -> None:
        """Numeric options with a lower bound (an argument spec cannot say it), checked before any request."""
        problems = [
            (name, "must be at least %d, got %s" % (low, self.params[name]))
            for name, low in minimums.items()
            if self.params.get(name) is not None and self.params[name] < low
        ]
        if problems:
            raise Problems(problems, subject="in the module options")

    def check_libraries(self) -> None:
        for name in self.required_libraries:
            requirement, error = _library(name)
            if error is not None:
                raise MissingLibrary(requirement, traceback=str(error))

    # ---- the one place results and errors leave the step --------------------------------------------
    def execute(self) -> Dict[str, Any]:
        """Run the step; its result, or a failed result that says why and what was already done."""
        try:
            self.check_libraries()
            self.prepare()
            out = self.run() or {}
        except Problems as exc:
            return self.failure(exc.render(), problems=exc.as_list(), **exc.details)
        except MissingLibrary as exc:
            return self.failure(missing_required_lib(exc.library, reason=exc.reason), exception=exc.traceback)
        except GpupoolError as exc:
            return self.failure(exc.describe(), **exc.details)
        except Cancelled as exc:
            return self.failure(
                "the run was stopped (%s) while this step ran; what it had done is kept and shown here (a node it "
                "had cordoned stays cordoned, marked as gpupool's), and the next run continues from there"
                % exc.signal_name,
                cancelled=True,
            )
        finally:
            # the lease is renewed only while the step runs; the next step checks it again at its start
            if self.lease_keeper is not None:
                self.lease_keeper.stop()
        result = self.partial_result()
        result.update(out)
        return self._with_warnings(result)

    def __call__(self) -> None:
        """Run as a module: exit_json or fail_json."""
        self.host.finish(self.execute())

    def failure(self, msg: str, **extra: Any) -> Dict[str, Any]:
        result = self.partial_result()
        result.update(extra)
        # No line of an error over 200 characters (errors.fit_lines); secrets are masked first, so that a wrap never
        # splits one into pieces the masking would no longer find.
        secrets = getattr(self.host, "no_log_values", None) or getattr(self.ansible, "no_log_values", None)
        result.update(failed=True, msg=fit_lines(remove_values(msg, secrets) if secrets else msg))
        return self._with_warnings(result)

    def _with_warnings(self, result: Dict[str, Any]) -> Dict[str, Any]:
        if self.warnings:
            result["warnings"] = list(self.warnings)
        return result


def inventory_cloud(cluster: Any) -> Any:
    """The cloud of the inventory's Magnum section (`cluster.magnum.cloud`), read before validation so that its
    secrets are hidden even when the inventory is refused."""
    if isinstance(cluster, dict) and isinstance(cluster.get("magnum"), dict):
        return cluster["magnum"].get("cloud")
    return None


class PoolModule(GpupoolModule):
    """A module over the validated inventory: `self.cluster` and `self.selected` (the pools in scope)."""

    required_libraries = ("pydantic",)

    @classmethod
    def full_argument_spec(cls) -> Dict[str, dict]:
        return compose(POOLS, *cls.shared, **cls.argument_spec)

    def prepare(self) -> None:
        super().prepare()
        # The model refuses a bad inventory before any connection is made; once per run (run_cluster.py).
        self.cluster = run_cluster(self.params["cluster"], self.run_holder)
        self.selected = select_pools(self.cluster, self.params["pools"])

    @property
    def pool_names(self) -> Optional[List[str]]:
        return self.params["pools"] or None


class KubernetesModule(PoolModule):
    """A pool module that talks to the Kubernetes API server through the server-side-apply engine."""

    @classmethod
    def full_argument_spec(cls) -> Dict[str, dict]:
        return compose(POOLS, AUTH, LEASE, *cls.shared, **cls.argument_spec)

    def __init__(self, host: Any = None) -> None:
        super().__init__(host)
        self.results: list = []
        self._engine: Optional[ApplyEngine] = None

    @property
    def engine(self) -> ApplyEngine:
        """Connected on first use, so inventory problems fail before any request."""
        if self._engine is None:
            client = k8s_connect(self.params, self.cluster)
            check_cluster(client)  # a cluster outside the supported range: one sentence, before any write
            self._engine = ApplyEngine(
                client, check_mode=self.check_mode, force_conflicts=bool(self.params.get("force_conflicts"))
            )
            self.hold_run_lease(client)
        return self._engine

    def hold_run_lease(self, client) -> None:
        """With O(run_lease): the run's lists and its lease (GpupoolModule.keep_run_lease)."""
        lease = self.params.get("run_lease")
        if not lease:
            return
        # the run is named by its lease: the steps of one run share their lists (k8s/run_view.py)
        client.view = RunView(client.host, lease["holder"])
        self.keep_run_lease(client)

    @property
    def client(self):
        return self.engine.client

    def converge(self, kind, desired: Sequence, prune=None, **options: Any) -> list:
        """Converge desired objects of one kind; the results join the module's result."""
        try:
            results = self.engine.converge(kind, desired, prune=prune, **options)
        except ConvergeError as exc:
            self.results.extend(r for r in exc.results if r not in self.results)
            raise
        self.results.extend(results)
        return results

    def execute(self) -> Dict[str, Any]:
        result = super().execute()
        if self._engine is not None:
            if self.progress.waited:
                # The step waited for the world to move (a wave, a drain, a rollout): later steps read it again.
                self._engine.client.view.forget()
            else:
                self._engine.client.view.flush()  # what it listed and wrote, for the next step of the run
        if result.get("cancelled"):
            result["run_lease_released"] = self.release_run_lease()
        return result

    def release_run_lease(self) -> bool:
        if self._engine is None:
            return False
        released = self.hand_back_run_lease(self.client)
        if released:
            self._engine.client.view.forget()
        return released

    def object_results(self) -> List[dict]:
        return [r.as_dict() for r in self.results]

    def partial_result(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"changed": any(r.changed for r in self.results), "objects": self.object_results()}
        if self.diff_mode:
            out["diff"] = [r.diff() for r in self.results if r.changed]
        if self._engine is not None:
            for message in self._engine.warnings:
                self.warn(message)
        return out


class MagnumModule(GpupoolModule):
    """A module that talks to OpenStack Magnum through the openstacksdk session."""

    required_libraries = ("openstacksdk",)

    @classmethod
    def full_argument_spec(cls) -> Dict[str, dict]:
        return compose(OPENSTACK, *cls.shared, **cls.argument_spec)

    def __init__(self, host: Any = None) -> None:
        super().__init__(host)
        self.hide_secrets(self.params.get("cloud"))
        self.hide_secrets(inventory_cloud(self.params.get("cluster")))

    def connect(self, cloud: Any = None):
        params = dict(self.params)
        if cloud is not None:
            self.hide_secrets(cloud)
            params["cloud"] = cloud
        return _openstack().connect_from_params(params)


class MagnumPoolModule(MagnumModule):
    """A Magnum module over the inventory, like a pool module, or standalone over flat options.

    ``cluster`` is either the inventory's cluster (a mapping, validated by the model before anything else,
    with ``pools`` selecting the pools in scope; the cloud comes from ``cluster.magnum.cloud``), or the name
    or uuid of one Magnum cluster (standalone: the module's flat options say what to do). `self.cluster`
    is the validated `Cluster` in the first case and None in the second.
    """

    # options that only make sense standalone: refused next to an inventory (the pool's data says it there)
    standalone_options: Tuple[str, ...] = ()

    @classmethod
    def full_argument_spec(cls) -> Dict[str, dict]:
        return compose(OPENSTACK, POOLS, *cls.shared, **cls.argument_spec)

    def prepare(self) -> None:
        super().prepare()
        self.cluster = None
        self.selected: list = []
        cluster = self.params["cluster"]
        if isinstance(cluster, dict):
            if PYDANTIC_IMPORT_ERROR is not None:
                requirement, error = _library("pydantic")
                raise MissingLibrary(requirement, reason="to read the cluster inventory", traceback=str(error))
            given = [name for name in self.standalone_options if self.params.get(name) is not None]
            if given:
                raise Problems(
                    [
                        (
                            name,
                            "is for standalone use (cluster given as a Magnum cluster name); with the "
                            "inventory as cluster, set it in the pool's nodegroup instead",
                        )
                        for name in given
                    ],
                    subject="in the module options",
                )
            self.cluster = run_cluster(cluster, self.run_holder)
            self.selected = select_pools(self.cluster, self.params["pools"])
        elif not isinstance(cluster, str) or not cluster:
            raise Problems(
                [
                    (
                        "cluster",
                        "must be the cluster inventory (a mapping, usually {{ gpupool_cluster }}) or "
                        "the name or uuid of a Magnum cluster, got %s" % type(cluster).__name__,
                    )
                ],
                subject="in the module options",
            )
        elif self.params["pools"]:
            raise Problems(
                [
                    (
                        "pools",
                        "selects pools of a cluster inventory; with cluster given as a Magnum "
                        "cluster name there are no pools to select",
                    )
                ],
                subject="in the module options",
            )


class NvmlModule(GpupoolModule):
    """A module that runs on a GPU node and reads or changes its GPUs through NVML."""
