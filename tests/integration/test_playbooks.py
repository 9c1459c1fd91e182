"""The playbooks a person runs, on the sandbox: site.yml (--check --diff, then for real), report.yml, mig.yml's
plan and teardown.yml, each through ansible-playbook as a user runs it, with the output a person reads.

One cluster with unique pool names on the shared sandbox (a T4 pool with time-slicing, a static-MIG A100 pool,
a tenant with two templates); teardown.yml removes it at the end, and the fixture removes whatever is left.
The runs are slow (each starts every module), so each one is checked for several things.
"""

from __future__ import annotations

import json
import re
import uuid
import xml.etree.ElementTree as ET

import pytest
import yaml

from tests.integration.playbook import ROOT, run_playbook

pytestmark = pytest.mark.sandbox
ADMIN = "gpupool-admin"


def playbook(name):
    return "%s/playbooks/%s.yml" % (ROOT, name)


@pytest.fixture(scope="module")
def bed(sandbox, tmp_path_factory):
    from testbed import binaries
    from testbed.sandbox import SIMULATION_CHART

    suffix = uuid.uuid4().hex[:5]
    names = {
        "cluster": "ux-%s" % suffix,
        "t4": "ux-t4-%s" % suffix,
        "a100": "ux-a100-%s" % suffix,
        "ns": "ux-team-%s" % suffix,
    }
    # the DRA driver role installs the SIMULATION chart, as on the sandbox's own inventory
    chart_version = yaml.safe_load((SIMULATION_CHART / "Chart.yaml").read_text())["version"]
    cluster = {
        "name": names["cluster"],
        "kubeconfig": str(sandbox.kubeconfig),
        "magnum": {"cloud": sandbox.cloud, "cluster": sandbox.cluster_name},
        "dra_driver": {"chart": str(SIMULATION_CHART), "version": chart_version},
        "pools": [
            {
                "name": names["t4"],
                "nodegroup": {"flavor": "g2.5xlarge", "node_count": 1},
                "gpu": {"model": "T4"},
                "sharing": {"time_slicing": {"interval": "Medium"}},
                # kept by 1.37; before 1.34 a schema answer, on 1.34 a dropped field: a warning either way
                "device_classes": {"extended_resource_names": True},
            },
            {
                "name": names["a100"],
                "nodegroup": {"flavor": "g4.p2.40g", "node_count": 1},
                "gpu": {"model": "A100-40GB", "per_node": 2},
                "mig": {"mode": "static", "layout": {"3g.20gb": 1, "2g.10gb": 2}},
            },
        ],
        "tenants": [
            {
                "namespace": names["ns"],
                "templates": [
                    {"name": "one-t4", "pool": names["t4"]},
                    {"name": "a100-slice", "pool": names["a100"], "mig_profile": "3g.20gb"},
                ],
            }
        ],
    }
    tmp = tmp_path_factory.mktemp("ux-playbooks")
    inventory = tmp / "hosts.yml"
    inventory.write_text(
        yaml.safe_dump(
            {
                "all": {
                    "children": {
                        "gpupool_clusters": {
                            "hosts": {
                                names["cluster"]: {
                                    "ansible_connection": "local",
                                    "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                                    "dra_driver_helm_binary": str(binaries.find("helm").path),
                                    "gpupool_cluster": cluster,
                                }
                            }
                        }
                    }
                }
            }
        )
    )
    sandbox.cp.kubectl("create", "namespace", names["ns"])
    yield dict(names, inventory=str(inventory), tmp=tmp, sandbox=sandbox, chart_version=chart_version)
    # whatever a failed test left behind (teardown.yml deleted it otherwise): Magnum through openstacksdk
    import openstack

    magnum = openstack.connect(load_yaml_config=False, load_envvars=False, **sandbox.cloud)
    cluster_id = sandbox.cluster()["uuid"]
    for pool in ("t4", "a100"):
        magnum.container_infrastructure_management.request(
            "/clusters/%s/nodegroups/%s" % (cluster_id, names[pool]),
            "DELETE",
            raise_exc=False,
            headers={"OpenStack-API-Version": "container-infra 1.14"},
        )
    sandbox.cp.kubectl("delete", "namespace", names["ns"], "--wait=false", check=False)
    sandbox.cp.helm("uninstall", "dra-driver-nvidia-gpu", "--namespace", "dra-driver-nvidia-gpu", "--wait", check=False)


def run(bed, name, *args, check=False, diff=False):
    mark = bed["sandbox"].cp.audit.mark()
    res = run_playbook(playbook(name), bed["inventory"], bed["tmp"], check=check, diff=diff, args=list(args))
    assert res.rc == 0, res.stdout[-6000:] + res.stderr[-3000:]
    return res, bed["sandbox"].cp.audit.since(mark)


def summary(res):
    """The summary task's text block (callback_result_format = yaml prints it as a block scalar)."""
    match = re.search(
        r"TASK \[gpupool\.core\.run_summary : Summarize the run\][^\n]*\nok: \[[^\]]+\] =>\s*\n"
        r"\s+msg: \|-?\n((?:\s{8}.*\n)+)",
        res.stdout,
    )
    assert match, res.stdout[-4000:]
    return [line[8:] for line in match.group(1).splitlines()]


@pytest.mark.dra_api
def test_site_check_diff_then_converge_reads_as_one_line_per_step(bed):
    res, window = run(bed, "site", check=True, diff=True)
    assert window.writes(user=ADMIN) == []  # check mode: dry runs only
    lines = summary(res)
    assert re.match(r"%s: \d+ would change$" % bed["cluster"], lines[0]), lines
    assert "  resource_claim_templates: ResourceClaimTemplate %s/one-t4 created" % bed["ns"] in lines
    # DeviceClass diffs name the kind in the header, not as a changed field
    assert "DeviceClass %s (pool %s)" % (bed["t4"], bed["t4"]) in res.stdout
    assert '"apiVersion"' not in res.stdout.split("TASK [gpupool.core.device_classes")[1].split("TASK [")[0]

    res, _window = run(bed, "site")
    for noise in ("Validating arguments against arg spec", "included:", "ASYNC POLL", "Could not match supplied host"):
        assert noise not in res.stdout + res.stderr
    # what the steps waited for, live, as lines of their own under the step (not Ansible's async poll)
    wave = "%s: MIG wave 1/1 of %s: " % (bed["cluster"], bed["a100"])
    assert re.search(
        r"^%s.* (waiting for the MIG manager|pending|success) \[\d+s\]$" % re.escape(wave), res.stdout, re.M
    )
    tasks = re.findall(r"^TASK \[(.*?)\]", res.stdout, re.M)
    steps = tasks[tasks.index("Validate the inventory before anything is touched") :]
    assert steps == [
        "Validate the inventory before anything is touched",
        "gpupool.core.run_lease : Take the cluster's run lease",
        "gpupool.core.nodegroups : Converge the Magnum nodegroups of the pools",
        "gpupool.core.node_pools : Label and taint the nodes of each pool",
        "gpupool.core.dra_driver : NVIDIA DRA driver release",
        "gpupool.core.mig_layouts : Roll out the static MIG layouts, wave by wave",
        "gpupool.core.device_classes : Publish the DeviceClasses of the pools",
        "gpupool.core.resource_claim_templates : Converge the tenants' ResourceClaimTemplates",
        "gpupool.core.compute_domains : Converge the ComputeDomains of the multi-node NVLink pools",
        "gpupool.core.pool_report : Read what each pool offers now",
        "gpupool.core.run_summary : Summarize the run",
        "gpupool.core.run_summary : Hand the summary to AWX",
        "gpupool.core.run_lease : Release the run lease",
    ]
    lines = summary(res)
    assert re.match(r"%s: \d+ changed$" % bed["cluster"], lines[0]), lines
    assert "  dra_driver: installed the DRA driver %s as release dra-driver-nvidia-gpu in namespace " % bed[
        "chart_version"
    ] in "\n".join(lines), lines
    assert any(
        re.match(r"  mig_layouts: MIG %s wave 1/1: .* \(configure\) - success$" % bed["a100"], line) for line in lines
    ), lines
    table = [line for line in lines if line.startswith("  %s " % bed["a100"])]
    assert table and "2g.10gb 4/4, 3g.20gb 2/2" in table[0] and "2g.10gb x4, 3g.20gb x2" in table[0], lines
    templates = json.loads(
        bed["sandbox"].cp.kubectl("get", "resourceclaimtemplates", "-n", bed["ns"], "-o", "json").stdout
    )["items"]
    assert sorted(t["metadata"]["name"] for t in templates) == ["a100-slice", "one-t4"]
    # DeviceClass extendedResourceName: kept where the release has it; else one warning, the class without it
    release = bed["sandbox"].cp.release
    t4_class = json.loads(bed["sandbox"].cp.kubectl("get", "deviceclass", bed["t4"], "-o", "json").stdout)
    assert t4_class["spec"].get("extendedResourceName") == (
        "gpupool.io/%s" % bed["t4"] if release.extended_resource_name else None
    )
    warned = "the cluster does not keep DeviceClass extendedResourceName" in res.stdout + res.stderr
    assert warned is not release.extended_resource_name, res.stdout[-4000:]
    assert "overloaded or failing" not in res.stdout + res.stderr


@pytest.mark.dra_api
def test_a_second_site_run_changes_nothing_reads_each_kind_once_and_prints_no_progress(bed):
    """The no-op: changed=0, zero writes, one line per step; the Nodes listed once for the whole run (node_pool
    lists them, mig_layout and pool_info read the run's view), no LIST paged, nothing waited for."""
    res, window = run(bed, "site")
    assert res.recap[bed["cluster"]]["changed"] == 0, res.stdout[-3000:]
    assert [e["objectRef"] for e in window.writes(user=ADMIN) if e["objectRef"]["resource"] != "leases"] == []
    node_lists = window.select(verbs={"list"}, user=ADMIN, resource="nodes")
    assert len(node_lists) == 1, [e["requestURI"] for e in node_lists]
    lists = window.select(verbs={"list"}, user=ADMIN)
    assert not any("continue=" in e["requestURI"] for e in lists)
    # every kind at most once; helm's own release records (Secrets) are read by each helm command it runs
    kinds = [(e["objectRef"].get("apiGroup", ""), e["objectRef"]["resource"]) for e in lists]
    ours = [kind for kind in kinds if kind != ("", "secrets")]
    assert len(ours) == len(set(ours)), sorted(kinds)
    assert not re.search(r"\[\d+s\]$", res.stdout, re.M), res.stdout  # no progress lines: nothing to wait for


def test_report_writes_markdown_and_one_picture_per_pool(bed):
    out = bed["tmp"] / "reports"
    res, window = run(bed, "report", "-e", "gpupool_report_dir=%s" % out)
    assert window.writes(user=ADMIN) == []
    folder = out / bed["cluster"]
    assert sorted(p.name for p in folder.iterdir()) == sorted(["report.md", bed["t4"] + ".svg", bed["a100"] + ".svg"])
    text = (folder / "report.md").read_text()
    assert text.startswith("# GPU pools of %s\n" % bed["cluster"])
    assert "| %s/a100-slice | %s-3g.20gb | 1 | 2 |  |" % (bed["ns"], bed["a100"]) in text
    assert "![GPUs and MIG slices of pool %s](%s.svg)" % (bed["a100"], bed["a100"]) in text
    svg = ET.fromstring((folder / (bed["a100"] + ".svg")).read_text())
    titles = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}title")]
    assert sum(1 for t in titles if "3g.20gb on memory slices 4-7, free" in t) == 2  # one per GPU


def test_mig_plan_shows_waves_and_writes_nothing(bed):
    # A layout without 3g.20gb would leave the tenant's a100-slice template without its class: refused up front.
    res = run_playbook(
        playbook("mig"),
        bed["inventory"],
        bed["tmp"],
        check=True,
        args=["-e", "gpupool_pools=%s" % bed["a100"], "-e", json.dumps({"gpupool_mig_layout": {"1g.5gb": 7}})],
    )
    assert res.rc != 0
    assert (
        "templates[1] (a100-slice).mig_profile: pool %s publishes no DeviceClass for MIG profile '3g.20gb'"
        % bed["a100"]
    ) in res.stdout

    res, window = run(
        bed,
        "mig",
        "-e",
        "gpupool_pools=%s" % bed["a100"],
        "-e",
        json.dumps({"gpupool_mig_layout": {"3g.20gb": 1, "1g.5gb": 4}}),
        check=True,
        diff=True,
    )
    assert window.writes(user=ADMIN) == []
    # mig-parted entries list the profiles by name
    assert (
        "MIG rollout of pool %s to gpupool-%s (all GPUs: 1g.5gb x4 + 3g.20gb x1), 1 wave(s) of at most 1 "
        "node(s):" % (bed["a100"], bed["a100"])
    ) in res.stdout, res.stdout[-5000:]
    assert "reconfigure; now gpupool-%s (all GPUs: 2g.10gb x2 + 3g.20gb x1)" % bed["a100"] in res.stdout
    assert "%s: " % bed["cluster"] in res.stdout and " would change" in res.stdout


def test_teardown_removes_the_pools_and_their_tenants_templates(bed):
    sandbox = bed["sandbox"]
    res, _window = run(bed, "teardown", "-e", "gpupool_teardown_all=true")
    lines = summary(res)
    assert "  resource_claim_templates: ResourceClaimTemplate %s/a100-slice deleted" % bed["ns"] in lines, lines
    assert "  device_classes: DeviceClass %s deleted" % bed["t4"] in lines, lines
    templates = json.loads(sandbox.cp.kubectl("get", "resourceclaimtemplates", "-n", bed["ns"], "-o", "json").stdout)[
        "items"
    ]
    assert templates == []
    classes = json.loads(sandbox.cp.kubectl("get", "deviceclasses", "-o", "json").stdout)["items"]
    assert not [c for c in classes if c["metadata"]["name"].startswith(bed["t4"])]
    # naming no pool is refused before anything is touched
    res = run_playbook(playbook("teardown"), bed["inventory"], bed["tmp"])
    assert res.rc != 0 and "Name the pools to tear down" in res.stdout
