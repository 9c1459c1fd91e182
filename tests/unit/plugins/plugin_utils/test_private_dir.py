"""Credential files live in a private per-process folder that goes on every exit path the process survives, and a
later run removes what a killed one left (k8s/private_dir.py)."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.k8s import private_dir
from ansible_collections.gpupool.core.plugins.module_utils.k8s.helm import Helm
from ansible_collections.gpupool.core.plugins.module_utils.module import GpupoolModule
from ansible_collections.gpupool.core.plugins.plugin_utils.step_action import cancellable, run_step

TOKEN = "token-5e1d-must-not-stay"


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def child(tmp_path, body):
    """Run `body` in a fresh Python that makes a helm private folder under tmp_path and writes a token into it."""
    code = textwrap.dedent(
        """
        import os, signal, sys
        from ansible_collections.gpupool.core.plugins.module_utils.k8s import private_dir
        from ansible_collections.gpupool.core.plugins.module_utils.k8s.helm import Helm
        private_dir.tempfile.tempdir = %r
        helm = Helm("helm")
        helm.write_kubeconfig("https://k8s.example:6443", %r)
        print(helm._tmp, flush=True)
        """
        % (str(tmp_path), TOKEN)
    ) + textwrap.dedent(body)
    # the child finds the collection where this process does (ansible-test units sets sys.path, not PYTHONPATH)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False, env=env
    )


def leftovers(tmp_path):
    home = private_dir.base(str(tmp_path))
    return sorted(os.listdir(home)) if os.path.isdir(home) else []


def test_a_private_folder_is_0700_inside_a_0700_folder_of_this_user_and_goes_when_removed(tmp_path):
    path = private_dir.create("helm", str(tmp_path))
    assert os.path.dirname(path) == private_dir.base(str(tmp_path))
    assert mode(path) == 0o700 and mode(os.path.dirname(path)) == 0o700
    private_dir.remove(path)
    assert not os.path.exists(path)


def test_a_folder_others_may_write_is_refused(tmp_path):
    home = private_dir.base(str(tmp_path))
    os.makedirs(home)
    os.chmod(home, 0o777)
    with pytest.raises(private_dir.PrivateDirError, match="not a private folder"):
        private_dir.create("helm", str(tmp_path))


def test_a_killed_runs_credentials_are_removed_by_the_next_run(tmp_path):
    killed = child(tmp_path, "os.kill(os.getpid(), signal.SIGKILL)\n")
    assert killed.returncode == -signal.SIGKILL
    (left,) = leftovers(tmp_path)
    kubeconfig = os.path.join(private_dir.base(str(tmp_path)), left, "kubeconfig")
    assert TOKEN in open(kubeconfig).read()  # what a killed run leaves: a token at rest
    mine = private_dir.create("helm", str(tmp_path))  # the next run: its own folder sweeps the dead one's
    assert leftovers(tmp_path) == [os.path.basename(mine)]
    assert private_dir.sweep(str(tmp_path)) == []  # a live maker's folder is kept
    private_dir.remove(mine)


def test_a_reused_pid_is_not_taken_for_the_maker(tmp_path):
    home = private_dir.base(str(tmp_path))
    os.makedirs(home, mode=0o700)
    me = os.getpid()
    stale = os.path.join(home, "helm.%d.1.abc" % me)  # this pid, but a process started at another time
    os.mkdir(stale, 0o700)
    if private_dir.started(me) == "?":
        pytest.skip("no /proc: the start time cannot be told")
    assert private_dir.sweep(str(tmp_path)) == [stale]


@pytest.mark.parametrize(
    "how, body",
    [
        ("normal exit", "sys.exit(0)\n"),
        ("an exception", "raise RuntimeError('boom')\n"),
    ],
)
def test_the_folder_goes_when_the_process_ends(tmp_path, how, body):
    done = child(tmp_path, body)
    assert done.stdout.strip(), done.stderr
    assert leftovers(tmp_path) == [], how


class HelmStep(GpupoolModule):
    """A step that writes helm's kubeconfig (a token) and is stopped by SIGTERM while it holds it."""

    argument_spec = dict(root=dict(type="str", required=True))

    def run(self):
        with Helm("helm") as helm:
            helm.write_kubeconfig("https://k8s.example:6443", TOKEN)
            self.warn("folder %s" % helm._tmp)
            os.kill(os.getpid(), signal.SIGTERM)
            raise AssertionError("not reached: the signal stops the step")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_sigterm_or_sigint_in_a_step_removes_its_credentials(tmp_path, monkeypatch, signum):
    monkeypatch.setattr(private_dir.tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(os, "kill", lambda pid, _sig, real=os.kill: real(pid, signum))
    with cancellable():
        result = run_step(HelmStep, {"root": str(tmp_path)})
    assert result.get("cancelled") is True, result
    assert leftovers(tmp_path) == []
