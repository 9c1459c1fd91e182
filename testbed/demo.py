"""`make demo`: converge the example GPU pools on the sandbox cloud, twice, and show the report.

Steps (each prints what it does):
1. sandbox up: real kube-apiserver + etcd, Magnum emulator, node / DRA driver / MIG manager
   simulators (docs/testbed.md), inventories/sandbox/ written from inventories/example/;
2. what the platform team set up before (testbed/simulated_driver.py): the tenants' namespace for
   the example's ComputeDomain;
3. ansible-playbook playbooks/site.yml -i inventories/sandbox: nodegroups on Magnum, node labels
   and taints, the DRA driver through the dra_driver role (the sandbox inventory points its chart at
   the SIMULATION chart in testbed/charts/, not NVIDIA's, and at the test bed's helm), rolling MIG
   layouts, DeviceClasses, ComputeDomains, pool report;
4. the same playbook again: must report changed=0 (idempotence);
5. a tenant's pod in ml-training with the a100-3g ResourceClaimTemplate (testbed/demo_tenant.py): the real
   resourceclaim controller makes its claim, the real kube-scheduler allocates a 3g.20gb on the A100 pool node
   and binds the pod; the demo prints the claim, node, device and profile, or, if the pod stays Pending, the
   scheduler's reason (and exits non-zero);
6. sandbox down, always.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import yaml

from testbed import demo_tenant, simulated_driver

ROOT = Path(__file__).resolve().parent.parent
# Tests point these elsewhere so a developer's own sandbox is left alone.
INVENTORY = Path(os.environ.get("GPUPOOL_SANDBOX_INVENTORY") or ROOT / "inventories" / "sandbox")
VENV_BIN = Path(sys.executable).parent


def say(msg):
    print("[demo] %s" % msg, flush=True)


def run(cmd, env=None, check=True, capture=False):
    say("$ " + " ".join(str(c) for c in cmd))
    proc = subprocess.run(
        [str(c) for c in cmd],
        cwd=ROOT,
        env=env,
        text=True,
        stdout=subprocess.PIPE if capture else None,
        stderr=subprocess.STDOUT if capture else None,
    )
    if check and proc.returncode != 0:
        if capture:
            print(proc.stdout)
        raise SystemExit("[demo] failed: %s (exit %d)" % (cmd[0], proc.returncode))
    return proc


def environment():
    env = dict(os.environ)
    env.update(
        {
            "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".build" / "collections"),
            "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
            "ANSIBLE_NOCOLOR": "1",
            "PATH": str(VENV_BIN) + os.pathsep + env.get("PATH", ""),
        }
    )
    return env


def site(env, label):
    """Run site.yml with its output shown as it comes (the steps' progress lines live), and keep it for the recap."""
    t0 = time.monotonic()
    cmd = [VENV_BIN / "ansible-playbook", "-i", INVENTORY, ROOT / "playbooks" / "site.yml"]
    say("$ " + " ".join(str(c) for c in cmd))
    lines = []
    with subprocess.Popen(
        [str(c) for c in cmd], cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    ) as proc:
        for line in proc.stdout:
            print(line, end="", flush=True)
            lines.append(line)
    output = "".join(lines)
    recap = dict(re.findall(r"^(\S+)\s+:\s+ok=\d+\s+changed=(\d+)", output, re.M))
    say("%s: exit %d, changed=%s, %.0fs" % (label, proc.returncode, recap.get("cern-gpu"), time.monotonic() - t0))
    return proc.returncode, int(recap.get("cern-gpu", -1))


def main():
    env = environment()
    run([sys.executable, "-m", "testbed.sandbox", "up", "--inventory", INVENTORY], env=env)
    try:
        kubeconfig = yaml.safe_load((INVENTORY / "host_vars" / "cern-gpu" / "gpupool.yml").read_text())[
            "gpupool_cluster"
        ]["kubeconfig"]
        env["KUBECONFIG"] = kubeconfig
        say("what the platform team set up before gpupool runs: the tenants' namespace")
        try:
            simulated_driver.install(kubeconfig, log=say)
        except subprocess.CalledProcessError as exc:
            raise SystemExit("[demo] failed: %s (exit %d)" % (exc.cmd[0], exc.returncode))
        rc1, changed1 = site(env, "first run")
        if rc1 != 0:
            raise SystemExit("[demo] the first converge failed (see above)")
        rc2, changed2 = site(env, "second run")
        if rc2 != 0 or changed2 != 0:
            raise SystemExit("[demo] the second converge was not a no-op: exit %d, changed=%d" % (rc2, changed2))
        try:
            demo_tenant.run(kubeconfig, say=say)
        except demo_tenant.StillPending as exc:
            # The scheduler's message can be long: no line of the error longer than 200 characters.
            raise SystemExit(textwrap.fill("[demo] the tenant's pod did not get its GPU: %s" % exc, 200))
        say("done: first run changed=%d, second run changed=0 (idempotent), the tenant's pod has its GPU" % changed1)
    finally:
        run([sys.executable, "-m", "testbed.sandbox", "down"], env=env, check=False)


if __name__ == "__main__":
    main()
