"""The end-of-run summary: what each step changed, from results shaped as the modules document them, and the table."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.plan.report import run_summary as plan_run_summary

NODEGROUPS = {
    "changed": True,
    "pools": {
        "gpu-t4": {
            "name": "gpu-t4",
            "changed": True,
            "actions": [
                {
                    "action": "resize",
                    "summary": "resize nodegroup 'gpu-t4' of cluster 'k8s' from 2 to 3 node(s) (bounds [1, 4])",
                }
            ],
        },
        "gpu-h100": {"name": "gpu-h100", "changed": False, "actions": []},
        "gpu-l4": {"name": "gpu-l4", "failed": True, "msg": "Magnum refused the flavor\nmore"},
    },
}
MIG = {
    "changed": True,
    "config_map": {"name": "gpupool-mig-parted-config", "namespace": "gpu-operator", "action": "updated"},
    "waves": [
        {
            "pool": "gpu-a100",
            "index": 0,
            "nodes": ["a100-0"],
            "actions": {"a100-0": "reconfigure"},
            "evict": [{"namespace": "ml", "name": "train-0"}],
            "evicted": ["ml/train-0"],
            "result": "success",
        },
        {
            "pool": "gpu-a100",
            "index": 1,
            "nodes": ["a100-1"],
            "actions": {"a100-1": "configure"},
            "evict": [],
            "result": "success",
        },
    ],
}
CLASSES = {
    "changed": True,
    "objects": [
        {"kind": "DeviceClass", "name": "gpu-t4", "action": "updated", "changed": True},
        {"kind": "DeviceClass", "name": "gpu-h100", "action": "unchanged", "changed": False},
        {"kind": "DeviceClass", "name": "gpu-old", "action": "deleted", "changed": True},
    ],
}
TEMPLATES = {
    "changed": True,
    "objects": [
        {"kind": "ResourceClaimTemplate", "name": "one-t4", "namespace": "ml", "action": "created", "changed": True}
    ],
}
EXTRA = {"pool": "gpu-t4", "node": None, "kind": "extra_nodes", "message": "pool gpu-t4 has ..."}
REPORT = {
    "pools": {
        "gpu-t4": {
            "ready_nodes": 3,
            "nodes": [{}, {}, {}],
            "expected_nodes": 3,
            "gpus": {"total": 3, "allocated": 1, "free": 2},
            "mig_devices": {},
            "mismatches": [EXTRA],
            "capacity": {"allocatable": {"gpu": 2}, "templates": [], "left_out": []},
        }
    },
    "mismatches": [EXTRA],
}


def test_every_change_is_one_line_under_its_step_then_the_table():
    steps = {
        "validate": {"changed": False},
        "nodegroups": NODEGROUPS,
        "node_pools": {"skipped": True},
        "mig_layouts": MIG,
        "device_classes": CLASSES,
        "resource_claim_templates": TEMPLATES,
        "compute_domains": {"changed": False, "objects": []},
    }
    out = plan_run_summary.run_summary("cern-gpu", steps, REPORT)
    assert out["lines"][:10] == [
        "cern-gpu: 7 changed, 1 failed",
        "  nodegroups: resize nodegroup 'gpu-t4' of cluster 'k8s' from 2 to 3 node(s) (bounds [1, 4])",
        "  nodegroups: FAILED: nodegroup of gpu-l4: Magnum refused the flavor",
        "  mig_layouts: MIG ConfigMap gpu-operator/gpupool-mig-parted-config updated",
        "  mig_layouts: MIG gpu-a100 wave 1/2: a100-0 (reconfigure); evicted ml/train-0 - success",
        "  mig_layouts: MIG gpu-a100 wave 2/2: a100-1 (configure) - success",
        "  device_classes: DeviceClass gpu-t4 updated",
        "  device_classes: DeviceClass gpu-old deleted",
        "  resource_claim_templates: ResourceClaimTemplate ml/one-t4 created",
        "  pool    nodes Ready    whole GPUs free/total  MIG devices free/total  allocatable now",
    ]
    assert out["lines"][10] == "  gpu-t4  3/3 (wants 3)  2/3                    -                       2 whole GPU(s)"
    assert out["lines"][11:] == [
        "  1 mismatch(es) between the inventory and the cluster:",
        "    - [extra_nodes] pool gpu-t4 has ...",
    ]
    assert out["data"]["changes"]["device_classes"] == ["DeviceClass gpu-t4 updated", "DeviceClass gpu-old deleted"]
    assert out["data"]["capacity"]["gpu-t4"] == {
        "nodes_ready": 3,
        "nodes": 3,
        "gpus": {"total": 3, "allocated": 1, "free": 2},
        "mig_devices": {},
        "allocatable": {"gpu": 2},
        "mismatches": 1,
    }


def test_check_mode_planned_waves_failed_steps_and_a_quiet_run():
    planned = dict(MIG, waves=[dict(MIG["waves"][0], result="planned")])
    planned["waves"][0].pop("evicted")
    out = plan_run_summary.run_summary(
        "c",
        {
            "mig_layouts": planned,
            "compute_domains": {"failed": True, "msg": "ComputeDomain ml/x (pool p): spec cannot be changed\nhint"},
        },
        check_mode=True,
    )
    assert out["lines"] == [
        "c: FAILED at compute_domains (2 would change up to there)",
        "  checked: mig_layouts",
        "  mig_layouts: MIG ConfigMap gpu-operator/gpupool-mig-parted-config updated",
        "  mig_layouts: MIG gpu-a100 wave 1/1: a100-0 (reconfigure); evict ml/train-0 - planned",
        "  compute_domains: FAILED: ComputeDomain ml/x (pool p): spec cannot be changed",
    ]
    assert plan_run_summary.run_summary("c", {"a": {"changed": False}, "b": None})["lines"] == ["c: nothing changed"]
    # a change the extractors do not know still shows
    assert plan_run_summary.step_changes("helm", {"changed": True}) == ["helm changed"]
    # the DRA driver's release says what happened in helm's words, where, and why; a loop's items one by one
    desired = {"release": "dra", "namespace": "nvidia-dra", "version": "0.5.1"}
    assert plan_run_summary.step_changes(
        "dra_driver", {"changed": True, "desired": desired, "reasons": ["not installed"]}
    ) == ["installed the DRA driver 0.5.1 as release dra in namespace nvidia-dra"]
    assert plan_run_summary.step_changes(
        "dra_driver", {"changed": True, "desired": desired, "reasons": ["not installed"]}, check_mode=True
    ) == ["would install the DRA driver 0.5.1 as release dra in namespace nvidia-dra"]
    upgrade = {"changed": True, "desired": desired, "reasons": ["version 0.4.1 -> 0.5.1", "2 value(s) differ: a, b"]}
    assert plan_run_summary.step_changes("dra_driver", upgrade) == [
        "upgraded the DRA driver release dra in namespace nvidia-dra to 0.5.1 because version 0.4.1 -> 0.5.1; "
        "2 value(s) differ: a, b"
    ]
    assert plan_run_summary.step_changes(
        "dra_driver", {"changed": True, "release": {"name": "dra", "namespace": "x"}, "reasons": ["state=absent"]}
    ) == ["uninstalled the DRA driver release dra in namespace x"]
    assert plan_run_summary.step_changes("x", {"changed": True, "results": [CLASSES, {"skipped": True}]}) == [
        "DeviceClass gpu-t4 updated",
        "DeviceClass gpu-old deleted",
    ]


def test_many_mismatches_of_one_kind_are_three_lines_and_a_count():
    mismatches = [{"kind": "not_published", "message": "node n%d publishes no devices" % i} for i in range(2000)]
    mismatches.append({"kind": "taint_missing", "message": "node x lacks the GPU taint"})
    summary = plan_run_summary.run_summary("c", {}, {"pools": {}, "mismatches": mismatches})
    assert summary["lines"][-5:] == [
        "    - [not_published] node n0 publishes no devices",
        "    - [not_published] node n1 publishes no devices",
        "    - [not_published] node n2 publishes no devices",
        "    - [taint_missing] node x lacks the GPU taint",
        "    - [not_published] and 1997 more like these (all in the report)",
    ]


def test_lifted_cordons_are_said_under_node_pools():
    lifted = {
        "name": "a-0",
        "cordoned_by": "mig-layout",
        "reason": "mig-layout:a100:gpupool-a100",
        "run": "run-1",
        "why": "pool a100 is no longer a static MIG pool that selects the node",
    }
    out = plan_run_summary.run_summary(
        "c1", {"node_pools": {"changed": True, "objects": [], "cordons_lifted": [lifted]}}
    )
    assert out["lines"] == [
        "c1: 1 changed",
        "  node_pools: lifted the cordon mig-layout left on node a-0 (mig-layout:a100:gpupool-a100): pool a100 is no "
        "longer a static MIG pool that selects the node",
    ]
    assert out["data"]["changes"]["node_pools"] == [out["lines"][1].split(": ", 1)[1]]
    quiet = plan_run_summary.run_summary("c1", {"node_pools": {"changed": False, "objects": [], "cordons_lifted": []}})
    assert quiet["lines"] == ["c1: nothing changed"]


def test_a_cordon_left_to_a_person_is_said_under_node_pools():
    left = {
        "name": "a-0",
        "cordoned_by": "mig-layout",
        "reason": "mig-layout:a100:gpupool-a100",
        "run": "run-1",
        "why": "cordoned by kubectl-cordon after gpupool's cordon",
        "manager": "kubectl-cordon",
    }
    out = plan_run_summary.run_summary("c1", {"node_pools": {"changed": True, "objects": [], "cordons_left": [left]}})
    assert out["lines"] == [
        "c1: 1 changed",
        "  node_pools: left the cordon kubectl-cordon set on node a-0 after gpupool's cordon (gpupool's record removed)",
    ]


SITE = [
    "validate",
    "run_lease",
    "nodegroups",
    "node_pools",
    "dra_driver",
    "mig_layouts",
    "device_classes",
    "resource_claim_templates",
    "compute_domains",
    "pool_report",
]
NOT_SERVED = {
    "failed": True,
    "changed": False,
    "objects": [],
    "msg": "the API server does not serve ComputeDomain (resource.nvidia.com, versions v1beta2, v1beta1)\nhint",
}


def test_a_failed_dry_run_says_it_failed_where_and_what_it_checked_and_did_not():
    """The first dry run on an empty cluster stopped at ComputeDomains: never "nothing would change"."""
    steps = dict.fromkeys(SITE)
    steps.update(
        validate={"changed": False},
        run_lease={"changed": False, "action": "taken"},
        nodegroups={"skipped": True, "changed": False},
        node_pools={"changed": False, "objects": []},
        dra_driver={
            "changed": True,
            "desired": {"release": "dra", "namespace": "d", "version": "0.5.1"},
            "reasons": ["not installed"],
        },
        mig_layouts={"changed": False, "waves": []},
        device_classes={"changed": False, "objects": []},
        resource_claim_templates={"skipped": True, "changed": False},
        compute_domains=NOT_SERVED,
    )
    out = plan_run_summary.run_summary("cern-gpu", steps, None, check_mode=True, plan=SITE)
    assert out["lines"] == [
        "cern-gpu: FAILED at compute_domains (1 would change up to there)",
        "  checked: validate, run_lease, node_pools, dra_driver, mig_layouts, device_classes (skipped: nodegroups, "
        "resource_claim_templates)",
        "  not reached: pool_report",
        "  dra_driver: would install the DRA driver 0.5.1 as release dra in namespace d",
        "  compute_domains: FAILED: the API server does not serve ComputeDomain (resource.nvidia.com, versions "
        "v1beta2, v1beta1)",
    ]
    assert out["data"]["outcome"] == {
        "failed": True,
        "failed_step": "compute_domains",
        "last_step": "compute_domains",
        "done": ["validate", "run_lease", "node_pools", "dra_driver", "mig_layouts", "device_classes"],
        "skipped": ["nodegroups", "resource_claim_templates"],
        "not_reached": ["pool_report"],
    }
    # nothing changed before a failed validation: still a failure, and the steps it never reached, real run
    failed = plan_run_summary.run_summary("c", dict(dict.fromkeys(SITE), validate={"failed": True}), plan=SITE)
    assert failed["lines"][:3] == [
        "c: FAILED at validate (nothing changed up to there)",
        "  done: no step",
        "  not reached: " + ", ".join(SITE[1:]),
    ]


def test_a_run_stopped_by_a_task_without_a_result_says_after_which_step():
    steps = {"validate": {"changed": False}, "run_lease": {"changed": False}, "nodegroups": {"changed": False}}
    out = plan_run_summary.run_summary("c", steps, check_mode=True, plan=SITE)
    assert out["lines"] == [
        "c: FAILED after nodegroups (nothing would change up to there)",
        "  checked: validate, run_lease, nodegroups",
        "  not reached: " + ", ".join(SITE[3:]),
    ]
    assert (
        plan_run_summary.run_summary("c", {}, plan=SITE)["lines"][0] == "c: FAILED before validate (nothing "
        "changed up to there)"
    )
    # every step of the plan with a result: a run that finished, whatever steps another playbook has
    done = {name: {"changed": False} for name in SITE}
    assert plan_run_summary.run_summary("c", done, plan=SITE)["lines"] == ["c: nothing changed"]
    assert plan_run_summary.run_summary("c", done, plan=SITE)["data"]["outcome"]["failed"] is False
    # a step of the plan another playbook left out between two that ran is neither done nor missed
    out = plan_run_summary.run_summary("c", dict(done, dra_driver=None, pool_report={"failed": True}), plan=SITE)
    assert out["data"]["outcome"]["done"] == [n for n in SITE if n not in ("dra_driver", "pool_report")]
    assert out["data"]["outcome"]["not_reached"] == []
    # without a plan: only a step that failed makes a failed run; steps without a result are not judged
    assert plan_run_summary.run_summary("c", {"a": {"changed": False}, "b": None})["lines"] == ["c: nothing changed"]
    assert plan_run_summary.run_summary("c", {"a": {"changed": False}, "b": {"failed": True, "msg": "x"}})["lines"] == [
        "c: FAILED at b (nothing changed up to there)",
        "  done: a",
        "  b: FAILED: x",
    ]


def test_an_object_whose_crd_the_driver_would_bring_says_so():
    pending = {
        "kind": "ComputeDomain",
        "name": "gb200-domain",
        "namespace": "ml-training",
        "action": "created",
        "changed": True,
        "pending": "once the DRA driver's CRDs are installed",
    }
    out = plan_run_summary.run_summary("c", {"compute_domains": {"changed": True, "objects": [pending]}}, None, True)
    assert out["lines"] == [
        "c: 1 would change",
        "  compute_domains: ComputeDomain ml-training/gb200-domain created once the DRA driver's CRDs are installed",
    ]


def test_the_driver_chart_s_crds_and_a_dry_run_s_mismatches_are_said_as_what_they_are():
    install = {
        "changed": True,
        "desired": {"release": "dra", "namespace": "d", "version": "0.5.1"},
        "reasons": ["not installed"],
        "crds": [{"name": "computedomains.resource.nvidia.com", "changed": True}, {"name": "x.y", "changed": False}],
    }
    report = {"pools": {}, "mismatches": [{"kind": "missing_nodes", "message": "pool p has 0 of the 2 nodes"}]}
    out = plan_run_summary.run_summary("c", {"dra_driver": install}, report, check_mode=True)
    assert out["lines"] == [
        "c: 2 would change",
        "  dra_driver: would install the DRA driver 0.5.1 as release dra in namespace d",
        "  dra_driver: would apply the chart's CRDs computedomains.resource.nvidia.com",
        "  pool  nodes Ready  whole GPUs free/total  MIG devices free/total  allocatable now",
        "  1 mismatch(es) between the inventory and the cluster as it is, before the changes above:",
        "    - [missing_nodes] pool p has 0 of the 2 nodes",
    ]
    assert plan_run_summary.step_changes("dra_driver", install)[1] == (
        "applied the chart's CRDs computedomains.resource.nvidia.com"
    )
