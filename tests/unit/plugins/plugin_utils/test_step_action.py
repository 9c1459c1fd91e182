# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Running a step in the controller: options checked as a module would, secrets hidden, a cancel stops the step."""

from __future__ import annotations

import json
import os
import signal

import pytest
from ansible.module_utils.common.parameters import remove_values

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Cancelled, GpupoolError
from ansible_collections.gpupool.core.plugins.module_utils.module import GpupoolModule
from ansible_collections.gpupool.core.plugins.plugin_utils import step_action
from ansible_collections.gpupool.core.plugins.plugin_utils.step_action import (
    StepAction,
    cancellable,
    hide,
    plain,
    run_step,
)


class Echo(GpupoolModule):
    """A step that returns its options and says something while it 'waits'."""

    argument_spec = dict(
        name=dict(type="str", required=True),
        token=dict(type="str", no_log=True),
        count=dict(type="int", default=2),
    )

    def run(self):
        self.progress.update("echo", "waiting for %s" % self.params["name"])
        self.warn("token is %s" % self.params["token"])
        return {"seen": dict(self.params), "lines": list(self.progress.lines)}


class Stopped(GpupoolModule):
    def run(self):
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("not reached: the signal stops the step")


def test_options_are_checked_defaulted_and_secrets_masked_everywhere():
    result = run_step(Echo, {"name": "n0", "token": "s3cret"}, name="cern-gpu")
    assert result["seen"]["count"] == 2 and result["seen"]["name"] == "n0"
    assert "s3cret" not in repr(result)
    assert result["invocation"]["module_args"]["token"] == "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"
    assert result["lines"] == ["cern-gpu: echo: waiting for n0 [0s]"]


class CloudEcho(GpupoolModule):
    """A step given the inventory whose Magnum cloud has secrets that are not strings: it returns the cloud, warns
    with it, logs it (-vvv) and fails with it in its message."""

    argument_spec = dict(cluster=dict(type="raw", required=True))

    def run(self):
        cloud = self.params["cluster"]["magnum"]["cloud"]
        self.warn("cloud is %r" % cloud)
        self.host.log("connecting with %s" % cloud)
        raise GpupoolError("refused: auth %s / passcode %s" % (cloud["auth"]["password"], cloud["auth"]["passcode"]))


def test_secrets_that_are_numbers_or_nested_are_masked_in_results_invocation_errors_and_log(monkeypatch):
    logged = []
    monkeypatch.setattr(step_action.display, "vvv", lambda message, host=None: logged.append(message))
    cloud = {
        "auth_type": "v3multifactor",
        "auth": {"username": "demo", "password": 123456789, "passcode": 314159, "token": {"id": 2.71828}},
        "region_name": "RegionOne",
    }
    result = run_step(CloudEcho, {"cluster": {"name": "c1", "magnum": {"cloud": cloud, "cluster": "k8s"}}})
    assert result["failed"] and result["msg"].startswith("refused: auth ******** / passcode ********")
    text = repr(result) + json.dumps(result) + repr(logged)
    assert logged and "connecting with" in logged[0]
    for secret in (123456789, 314159, 2.71828):
        assert str(secret) not in text and json.dumps(secret) not in text, secret
    assert "demo" in text and "RegionOne" in text  # what is no secret stays readable
    masked = result["invocation"]["module_args"]["cluster"]["magnum"]["cloud"]["auth"]
    assert masked["password"] == masked["passcode"] == "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"


def test_an_unknown_or_missing_option_is_refused_as_a_module_refuses_it():
    result = run_step(Echo, {"name": "n0", "colour": "red"})
    assert result["failed"] and "Unsupported parameters for (Echo) module: colour" in result["msg"]
    assert run_step(Echo, {})["failed"]


def test_plain_turns_subclasses_into_builtins():
    class Tagged(str):
        pass

    out = plain({Tagged("k"): [Tagged("v"), 1, True, None, {"x": 2.5}]})
    assert out == {"k": ["v", 1, True, None, {"x": 2.5}]}
    assert not isinstance(next(iter(out)), Tagged) and not isinstance(out["k"][0], Tagged)


def test_a_sigterm_stops_the_step_where_it_is_and_the_step_says_so():
    before = signal.getsignal(signal.SIGTERM)
    with cancellable():
        result = run_step(Stopped, {})
    assert result["failed"] and result["cancelled"] is True
    assert "the run was stopped (SIGTERM)" in result["msg"]
    assert signal.getsignal(signal.SIGTERM) is before  # the worker's own handler is back


def test_outside_a_step_the_signal_handlers_are_ansibles():
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(Cancelled):
        with cancellable():
            os.kill(os.getpid(), signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is before


def test_a_step_whose_controller_died_stops_as_if_cancelled():
    """SIGKILL of ansible-playbook forwards nothing: the worker notices its parent is gone and stops the step."""
    parents = iter([100, 100, 1])  # the worker's parent pid: the controller, then init once it was killed

    class Waits(GpupoolModule):
        def run(self):
            import time

            for _tick in range(200):  # would wait 10 s; the watcher stops it within two of its 20 ms rounds
                time.sleep(0.05)
            raise AssertionError("not reached")

    with cancellable(getppid=lambda: next(parents, 1), interval=0.02):
        result = run_step(Waits, {})
    assert result["cancelled"] is True and "ansible-playbook, is gone" in result["msg"]


def test_hide_masks_a_secret_wherever_it_is_and_leaves_a_clean_result_as_it_is():
    clean = {"nodes": [{"name": "n%d" % i} for i in range(10)]}
    assert hide(clean, {"s3cret"}) is clean and hide(clean, set()) is clean
    dirty = {"msg": "token s3cret refused", "auth": {"password": "s3cret"}}
    assert hide(dirty, {"s3cret"}) == {
        "msg": "token ******** refused",
        "auth": {"password": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"},
    }


def test_hide_finds_a_secret_that_json_escapes():
    for secret in ('pa"ss', "back\\slash", "p\u00e4ss", "tab\tbed"):
        dirty = {"msg": "token %s refused" % secret, "auth": {"password": secret}}
        assert hide(dirty, {secret}) == {
            "msg": "token ******** refused",
            "auth": {"password": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"},
        }, secret
    # whatever remove_values masks (numbers by their text, bytes), hide masks too
    result = {"port": 6443, "ratio": 1.5, "raw": "s3cret".encode(), "ok": True}
    for secret in ("6443", "1.5", "s3cret"):
        assert hide(result, {secret}) == remove_values(result, {secret}) != result, secret


def test_validate_says_the_files_problems_with_the_models_through_the_step_base():
    from ansible_collections.gpupool.core.plugins.action import validate

    twice = [("gpupool_cluster.pools[0].gpu", "key 'model' is written twice in host_vars/c1.yml (lines 5 and 7)")]
    good = {"name": "c1", "pools": [{"name": "t4", "node_selector": {"a": "b"}, "gpu": {"model": "T4"}}]}
    bad = {"name": "c1", "pools": [{"name": "t4", "node_selector": {"a": "b"}, "gpu": {"model": "T5"}}]}
    assert not run_step(validate.ValidateModule, {"cluster": good}).get("failed")
    alone = run_step(validate.ValidateModule, {"cluster": good}, file_problems=twice)
    assert alone["failed"] and alone["problems"] == [{"path": p, "message": m} for p, m in twice]
    both = run_step(validate.ValidateModule, {"cluster": bad}, file_problems=twice)
    assert [p["path"] for p in both["problems"]] == [
        "gpupool_cluster.pools[0].gpu",
        "gpupool_cluster.pools[0] (t4).gpu.model",
    ]
    assert both["msg"].startswith("2 problem(s) in the GPU-pool inventory; nothing was changed:")
    assert validate.ActionModule.run is StepAction.run  # no step of its own shape
