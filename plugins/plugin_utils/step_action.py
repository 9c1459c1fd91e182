# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a gpupool step in the controller: the action plugin base of every step that talks to an API.

Why an action plugin and not a module (docs/architecture.md, "Where a step runs"): a module is a new Python
process per task (AnsiballZ, then pydantic and the kubernetes client imported again: 1-1.5 s of CPU each),
and it cannot print while it runs, so a long step could only show Ansible's ``ASYNC POLL`` lines. An action
plugin runs inside the controller's worker process for the task:

* no module round trip: the worker is forked from ansible-playbook, which already imported this file (the
  strategy loads each task's action class before it forks, see `preload`), so pydantic, the model and the
  kubernetes client are imported once per playbook run, not once per task;
* progress lines go through Ansible's Display: the worker hands them to the controller while the task runs,
  so they show live in a terminal, in ansible-runner's event stream and in AWX job output;
* the module file of the same name keeps DOCUMENTATION/EXAMPLES/RETURN (a doc stub, as ansible-core's own
  ``debug`` or ``set_fact``), so ``ansible-doc`` and ``ansible-test`` see the step as a module.

The step itself is the same class as before (`module_utils.module.GpupoolModule` and its subclasses); only the
Ansible side differs (`ControllerHost` here, `module_utils.module.ModuleHost` in a module). Options are checked
with ansible-core's own `ArgumentSpecValidator` against the step's argument spec, the one the module docs
document, so a task is refused here exactly as the module would refuse it.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.parameters import remove_values
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Cancelled

display = Display()


def preload() -> None:
    """Import what every API step needs, here in the controller process (see the module docstring): the
    strategy loads the task's action class before it forks the worker, so the import is paid once per run.
    A library that is missing is reported by the step itself (missing_required_lib), not here."""
    for name in ("kubernetes.client", "kubernetes.config", "pydantic", "yaml"):
        try:
            __import__(name)
        except ImportError:
            pass


preload()


def plain(value: Any) -> Any:
    """Task arguments as plain dicts, lists and scalars: ansible-core 2.19 hands templated values over as
    tagged subclasses of str, dict and list, which the model, JSON and YAML should not have to know."""
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    for base in (str, int, float):
        if isinstance(value, base):
            return base(value)
    return value


class ControllerHost:
    """The Ansible side of a step that runs in the controller (see `module_utils.module.ModuleHost`)."""

    def __init__(
        self,
        params: Dict[str, Any],
        check_mode: bool,
        diff_mode: bool,
        name: str,
        no_log_values: Set[str],
        file_problems: Sequence[Tuple[str, str]] = (),
    ) -> None:
        self.params = params
        # what the controller found wrong in the inventory's own files (StepAction.file_problems)
        self.file_problems = list(file_problems)
        self.check_mode = check_mode
        self.diff_mode = diff_mode
        self.name = name
        self.no_log_values = set(no_log_values)

    def hide(self, secret: str) -> None:
        if secret:
            self.no_log_values.add(secret)

    def show(self, line: str) -> None:
        """A progress line, now (the worker process proxies it to the controller's display)."""
        display.display(remove_values(line, self.no_log_values))

    def log(self, message: str) -> None:
        display.vvv(remove_values(message, self.no_log_values), host=self.name or None)


def run_step(
    step: type,
    args: Dict[str, Any],
    check_mode: bool = False,
    diff_mode: bool = False,
    name: str = "",
    file_problems: Sequence[Tuple[str, str]] = (),
) -> Dict[str, Any]:
    """Check the options against the step's argument spec, run the step, hide its secrets: the result.
    file_problems: (path, message) the controller found in the inventory's files, for the step to report."""
    validator = ArgumentSpecValidator(step.full_argument_spec(), **step.module_kwargs)
    validation = validator.validate(plain(args))
    no_log_values = set(validation._no_log_values)
    if validation.error_messages:
        errors = validation.errors
        msg = "; ".join(errors.messages)
        if any(type(e).__name__ == "UnsupportedError" for e in errors):
            msg = "Unsupported parameters for (%s) module: %s" % (step.__name__, msg)
        return remove_values({"failed": True, "msg": msg}, no_log_values)
    host = ControllerHost(validation.validated_parameters, check_mode, diff_mode, name, no_log_values, file_problems)
    result = step(host).execute()
    # as a module's result has it (shown at -vvv): the options after defaults, secrets masked below
    result["invocation"] = {"module_args": validation.validated_parameters}
    return hide(result, host.no_log_values)


def hide(result: Dict[str, Any], secrets: Set[str]) -> Dict[str, Any]:
    """The result with every secret masked, as a module's is. remove_values walks every value, which costs most of
    a second on a 2,000-node report; a result in which no secret occurs at all is returned as it is."""
    secrets = {s for s in secrets if s}
    if not secrets:
        return result
    text = json.dumps(result, default=_as_text, ensure_ascii=False)
    # JSON escapes a string character by character, so a secret inside any string of the result is inside the text
    # in its escaped form (a quote, a backslash, a control character); numbers are written as str() writes them
    if any(json.dumps(s, ensure_ascii=False)[1:-1] in text for s in secrets):
        return remove_values(result, secrets)
    return result


def _as_text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


@contextmanager
def cancellable(getppid: Callable[[], int] = os.getppid, interval: float = 1.0) -> Iterator[None]:
    """While a step runs, SIGTERM (an AWX cancel, a `kill`) and SIGINT stop the step, not the process; so does the
    death of the controller.

    Ansible's worker would exit at once (os._exit) on the signal the controller forwards; a step caught in a drain
    or a MIG wave would leave no word and keep its run lease until it expires. Instead the signal raises
    `Cancelled` where the step is: it stops there, and the step base reports what was done and releases the run
    lease. A second signal during that clean-up is ignored.

    A controller killed with SIGKILL forwards nothing, and the worker (a session of its own) would go on alone -
    a rollout nobody watches, racing the next run once the lease expires. A watcher thread notices that the
    worker's parent is gone (within `interval` seconds) and stops the step the same way."""
    why = {"signal": None}

    def stop(signum: int, _frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise Cancelled(why["signal"] or signal.Signals(signum).name)

    parent, done = getppid(), threading.Event()

    def watch() -> None:
        while not done.wait(interval):
            if getppid() != parent:
                why["signal"] = "the controller, ansible-playbook, is gone"
                os.kill(os.getpid(), signal.SIGTERM)  # handled by `stop`, in the step's thread
                return

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    watcher = threading.Thread(target=watch, name="gpupool-controller-watch", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class StepAction(ActionBase):
    """Subclass with ``step = <a GpupoolModule subclass>``; that is the whole action plugin."""

    step: Optional[type] = None
    TRANSFERS_FILES = False
    _requires_connection = False  # API calls go from the controller itself, never through the host's connection
    _supports_check_mode = True
    _supports_async = False  # progress is shown live; async would hide it behind ASYNC POLL lines

    def run(self, tmp: Optional[str] = None, task_vars: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        super().run(tmp, task_vars)
        task_vars = task_vars or {}
        with cancellable():
            return run_step(
                self.step,
                self.step_args(task_vars),
                check_mode=bool(self._task.check_mode),
                diff_mode=bool(self._task.diff),
                name=str(task_vars.get("inventory_hostname") or ""),
                file_problems=self.file_problems(task_vars),
            )

    def step_args(self, task_vars: Dict[str, Any]) -> Dict[str, Any]:
        """The step's options: the task's arguments (validate adds the cluster it reads from the host's variables)."""
        return self._task.args

    def file_problems(self, task_vars: Dict[str, Any]) -> List[Tuple[str, str]]:
        """(path, message) of what only the controller can see in the inventory's own files, handed to the step as
        ``host.file_problems`` (validate: a key written twice, which the loaded data no longer shows); none here."""
        return []
