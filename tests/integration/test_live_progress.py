"""What a step waits for reaches AWX while it waits (issue #18): site.yml run through ansible-runner, the way AWX
runs a job, with a MIG wave that takes seconds; the runner's event stream carries the wave's progress lines, and
they arrive before the MIG step's own result event - live, not collected at the end.

ansible-runner turns everything the controller's display prints into events (AWX stores and streams them as the
job's output); a line printed by a step in a worker process is handed to the controller at once.
"""

from __future__ import annotations

import os
import sys
import time
import uuid

import pytest
import yaml

from tests.integration.playbook import ROOT, VENV_BIN

pytestmark = pytest.mark.sandbox


def test_runner_events_carry_the_mig_waves_progress_before_the_step_ends(sandbox, tmp_path):
    import ansible_runner

    name = "live-%s" % uuid.uuid4().hex[:5]
    pool = "%s-a100" % name
    cluster = {
        "name": name,
        "kubeconfig": str(sandbox.kubeconfig),
        "magnum": {"cloud": sandbox.cloud, "cluster": sandbox.cluster_name},
        "mig_manager": {"config_map": sandbox.mig_config_map, "namespace": sandbox.mig_namespace},
        "dra_driver": {"enabled": False},
        "pools": [
            {
                "name": pool,
                "nodegroup": {"flavor": "g4.p2.40g", "node_count": 1},
                "gpu": {"model": "A100-40GB", "per_node": 2},
                "mig": {"mode": "static", "layout": {"3g.20gb": 2}},
            }
        ],
    }
    host = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "gpupool_cluster": cluster}
    pdd = tmp_path / "private_data_dir"
    (pdd / "inventory").mkdir(parents=True)
    (pdd / "inventory" / "hosts.yml").write_text(
        yaml.safe_dump({"all": {"children": {"gpupool_clusters": {"hosts": {name: host}}}}})
    )
    received = []  # (monotonic time, event) as the handler gets them

    def handler(event):
        received.append((time.monotonic(), event))
        return True

    sandbox.mig.delay = 4.0  # the wave waits seconds for the MIG manager: several progress lines
    saved = dict(os.environ)
    os.environ.update(
        ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".build", "collections"),
        ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
        PATH=VENV_BIN + os.pathsep + os.environ.get("PATH", ""),
    )
    try:
        run = ansible_runner.run(
            private_data_dir=str(pdd),
            playbook=os.path.join(ROOT, "playbooks", "site.yml"),
            event_handler=handler,
            quiet=True,
        )
    finally:
        os.environ.clear()
        os.environ.update(saved)
        sandbox.mig.delay = 0.3
        proxy = __import__("openstack").connect(load_yaml_config=False, load_envvars=False, **sandbox.cloud)
        proxy.container_infrastructure_management.request(
            "/clusters/%s/nodegroups/%s" % (sandbox.cluster()["uuid"], pool),
            "DELETE",
            raise_exc=False,
            headers={"OpenStack-API-Version": "container-infra 1.14"},
        )
    assert run.status == "successful", run.stdout.read()[-4000:]
    wave = "%s: MIG wave 1/1 of %s: " % (name, pool)
    progress = [(t, e) for t, e in received if wave in (e.get("stdout") or "")]
    assert len(progress) >= 2, [e.get("stdout") for _, e in received][-40:]
    (step_done,) = [
        (t, e)
        for t, e in received
        if e.get("event") == "runner_on_ok" and "static MIG layouts" in (e.get("event_data") or {}).get("task", "")
    ]
    first_line, end = progress[0], step_done
    assert first_line[1]["counter"] < end[1]["counter"]
    # handed over while the step still waited: seconds before its result, not in one burst at the end
    assert end[0] - first_line[0] >= 2.0, (first_line[1]["stdout"], end[0] - first_line[0])
    states = " ".join(e["stdout"] for _, e in progress)
    assert "success" in states and ("pending" in states or "waiting for the MIG manager" in states), states
