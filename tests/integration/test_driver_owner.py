"""The DRA driver release has one owner: two inventories (gpupool_cluster.owner team-a and team-b) on one cluster,
through ansible-playbook, the real helm and the real kube-apiserver (its audit log counts the writes; `helm history`
counts the revisions). team-a installs; team-b, whose pools the release serves, runs in check mode and converges
and writes nothing; team-b, whose pools need a gate and a toleration team-a's release lacks, is refused naming
team-a and the difference; a release with no owner record is adopted once, by the first owner that runs.
"""

from __future__ import annotations

import copy
import json

import pytest

from tests.integration.test_dra_driver_module import GPU_TAINT, RELEASE, TEAM_TAINT, Bed, writes

OWNER = "gpupool.io/owner"
DEDICATED = {"key": "dedicated", "value": "b", "effect": "NoSchedule"}


class OwnersBed(Bed):
    """Bed's team-a inventory (owner team-a, a pool tainted example.com/team) and a team-b inventory with a pool
    of its own on one more node, without that taint: team-b's own values would drop team-a's toleration (what an
    upgrade by team-b did before the release had an owner), yet the release serves team-b's pool as it is."""

    def __init__(self, sandbox, repo, tmp_path_factory):
        super().__init__(sandbox, repo, tmp_path_factory)
        self.cluster["owner"] = "team-a"
        self.b_pool = "drv-b-%s" % self.tag
        self.b_node = "%s-0" % self.b_pool
        sandbox.nodes.register_node(
            self.b_node, "g4.p2.40g", labels={"gpupool.io/pool": self.b_pool}, taints=[GPU_TAINT]
        )
        self.team_b = {
            "name": "drv-b",
            "owner": "team-b",
            "kubeconfig": self.cluster["kubeconfig"],
            "dra_driver": copy.deepcopy(self.cluster["dra_driver"]),
            "pools": [
                {
                    "name": self.b_pool,
                    "node_selector": {"gpupool.io/pool": self.b_pool},
                    "gpu": {"model": "A100-40GB", "per_node": 2},
                }
            ],
        }

    def b_with_pool(self, **changes):
        cluster = copy.deepcopy(self.team_b)
        cluster["pools"][0].update(changes)
        return cluster

    def release_labels(self):
        """The Helm labels of the release's last revision (the Secret Helm keeps it in)."""
        out = self.cp.kubectl(
            "get", "secret", "-n", self.namespace, "-l", "owner=helm,name=%s" % RELEASE, "-o", "json"
        ).stdout
        secrets = json.loads(out)["items"]
        last = max(secrets, key=lambda s: int(s["metadata"]["labels"]["version"]))
        return last["metadata"]["labels"]

    def values(self):
        out = self.cp.helm("get", "values", RELEASE, "-n", self.namespace, "-o", "json").stdout
        return json.loads(out)

    def close(self):
        super().close()
        self.sandbox.nodes.remove_node(self.b_node)


@pytest.fixture(scope="module")
def bed(sandbox, dra_chart_repo, tmp_path_factory):
    b = OwnersBed(sandbox, dra_chart_repo, tmp_path_factory)
    yield b
    b.close()


@pytest.fixture(scope="module")
def installed(bed):
    """team-a's release, installed by team-a's run."""
    res, _ = bed.run()
    assert not res.get("failed"), res.get("msg")
    assert res["changed"] and res["owner"] == {
        "owner": "team-a",
        "mine": True,
        "adopted": False,
        "serves": True,
        "missing": [],
    }
    assert bed.release_labels()[OWNER] == "team-a"
    return res


def test_an_owner_whose_pools_the_release_serves_writes_nothing_in_check_mode_or_converge(bed, installed):
    before, values = bed.revision(), bed.values()
    tolerated = {t["key"] for t in values["kubeletPlugin"]["tolerations"]}
    for check in (True, False):
        res, window = bed.run(bed.team_b, check=check, diff=check)
        # team-b alone would install other values (no example.com/team toleration): an upgrade would drop it
        assert {t["key"] for t in res["values"]["kubeletPlugin"]["tolerations"]} < tolerated
        assert not res.get("failed"), res.get("msg")
        assert res["changed"] is False and res["reasons"] == [], res
        assert res["owner"]["owner"] == "team-a" and res["owner"]["mine"] is False and res["owner"]["serves"]
        assert not any(" upgrade " in c for c in res["commands"]), res["commands"]
        assert writes(window) == []
        assert bed.revision() == before and bed.values() == values
    # converged: the rollout was checked on team-b's own pool node (team-a's release tolerates its taints)
    assert res["rollout"]["done"] and res["rollout"]["nodes_without_plugin"] == []
    assert bed.release_labels()[OWNER] == "team-a"


def test_an_owner_whose_pools_need_more_is_refused_naming_the_owner_and_the_difference(bed, installed):
    before, values = bed.revision(), bed.values()
    needs_more = bed.b_with_pool(sharing={"mps": {}}, taints=[TEAM_TAINT, DEDICATED])
    for check in (True, False):
        res, window = bed.run(needs_more, check=check, diff=check)
        assert res.get("failed"), res
        msg = " ".join(res["msg"].split())  # long errors are wrapped at 200 characters
        assert "is owned by 'team-a'" in msg and "(owner 'team-b')" in msg, msg
        assert "gate MPSSupport on for pools[0] (%s).sharing.mps (the release has off)" % bed.b_pool in msg, msg
        assert "a kubelet-plugin toleration of taint dedicated=b:NoSchedule for pool %s" % bed.b_pool in msg, msg
        assert "ask the inventory of owner 'team-a'" in msg
        assert not any(" upgrade " in c for c in res.get("commands", [])), res.get("commands")
        assert writes(window) == []
        assert bed.revision() == before and bed.values() == values
    # team-a's own next run: its release is as it wants it
    again, window = bed.run()
    assert not again.get("failed") and again["changed"] is False and writes(window) == []


def test_state_absent_of_another_owner_leaves_the_release(bed, installed):
    before = bed.revision()
    res, window = bed.run(bed.team_b, state="absent", purge_crds=True)
    assert not res.get("failed"), res.get("msg")
    assert res["changed"] is False and res["owner"]["owner"] == "team-a"
    assert writes(window) == [] and bed.revision() == before
    assert any("owned by 'team-a'" in w for w in res.get("warnings", [])), res.get("warnings")


def test_a_release_without_an_owner_is_adopted_once_by_the_first_owner_that_runs(bed, installed):
    # the hand-over the refusal describes (or a release from a gpupool before owners): no owner label
    bed.cp.kubectl("label", "secret", "-n", bed.namespace, "-l", "owner=helm,name=%s" % RELEASE, "%s-" % OWNER)
    assert OWNER not in bed.release_labels()
    before = bed.revision()
    check, window = bed.run(bed.team_b, check=True)
    assert not check.get("failed"), check.get("msg")
    assert check["changed"] and any("no owner recorded" in r for r in check["reasons"]), check["reasons"]
    assert writes(window) == [] and bed.revision() == before
    adopted, _ = bed.run(bed.team_b)
    assert not adopted.get("failed"), adopted.get("msg")
    assert adopted["changed"] and adopted["owner"]["owner"] == "team-b" and adopted["owner"]["adopted"]
    assert bed.revision() == before + 1 and bed.release_labels()[OWNER] == "team-b"
    # adopted once: team-b's next run changes nothing; team-a's release is now team-b's, so team-a is compared
    again, window = bed.run(bed.team_b)
    assert again["changed"] is False and writes(window) == [] and bed.revision() == before + 1
    # team-b's values have no toleration of team-a's example.com/team taint: team-a is refused, naming team-b
    a_run, window = bed.run()
    msg = " ".join(a_run["msg"].split())
    assert a_run.get("failed") and "is owned by 'team-b'" in msg, msg
    assert "a kubelet-plugin toleration of taint example.com/team=ml:NoSchedule for pool %s" % bed.pool in msg, msg
    assert a_run["owner"]["owner"] == "team-b" and a_run["owner"]["mine"] is False
    assert writes(window) == [] and bed.revision() == before + 1
