"""Host IMEX plan (pure): files, settings, systemd actions per mode, fabric health."""

from __future__ import annotations

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.plan.driver import imex

STOPPED_MASKED = {"installed": True, "masked": True, "enabled": False, "active": False}
RUNNING = {"installed": True, "masked": False, "enabled": True, "active": True}
PACKAGE_CONFIG = (
    "# NVIDIA IMEX configuration file.\nLOG_LEVEL=4\nSERVER_PORT=50000\nIMEX_CMD_ENABLED=0\n"
    "IMEX_NODE_CONFIG_FILE=/etc/nvidia-imex/nodes_config.cfg\n"
)


def test_pool_modes():
    assert imex.mode_for_pool("compute_domain") == imex.DRIVER_MANAGED
    assert imex.mode_for_pool("host_imex") == imex.HOST_MANAGED
    assert imex.mode_for_pool("none") is None


def test_nodes_config_keeps_order_and_drops_duplicates():
    assert imex.nodes_config(["10.0.0.2", "10.0.0.1", "10.0.0.2"]) == "10.0.0.2\n10.0.0.1\n"


def test_member_problems():
    assert imex.member_problems(["10.0.0.1", "fd00::2"], local="fd00::2") == []
    probs = imex.member_problems(["10.0.0.1", "node-b", "10.0.0.1"], local="10.0.0.9")
    assert any("'node-b' is not an IP address" in p for p in probs)
    assert any("10.0.0.1 is listed twice" in p for p in probs)
    assert any("this node's address 10.0.0.9 is not a member" in p for p in probs)
    assert "none given" in imex.member_problems([])[0]
    many = ["10.0.1.%d" % i for i in range(19)]
    assert any("at most 18 nodes" in p for p in imex.member_problems(many))


def test_edit_config_replaces_in_place_and_appends():
    settings = imex.required_settings()
    text = imex.edit_config(PACKAGE_CONFIG, settings)
    assert text.startswith("# NVIDIA IMEX configuration file.\nLOG_LEVEL=4\nSERVER_PORT=50000\nIMEX_CMD_ENABLED=1\n")
    assert imex.read_settings(text) == {
        "LOG_LEVEL": "4",
        "SERVER_PORT": "50000",
        "IMEX_CMD_ENABLED": "1",
        "IMEX_NODE_CONFIG_FILE": "/etc/nvidia-imex/nodes_config.cfg",
        "IMEX_CMD_UNIX_DOMAIN_PATH": "/etc/nvidia-imex/imex_ctrl.sock",
    }
    assert "# set by gpupool.core.imex\nIMEX_CMD_UNIX_DOMAIN_PATH=" in text
    assert imex.edit_config(text, settings) == text  # idempotent
    assert imex.edit_config(None, {"A": "1"}) == "# set by gpupool.core.imex\nA=1\n"
    assert imex.edit_config("A=0\n# A=5\nA=2\n", {"A": "1"}) == "A=1\n# A=5\n"


def test_extra_settings_and_key_check():
    settings = imex.required_settings("/x/", "/x/s.sock", {"IMEX_ENABLE_AUTH_ENCRYPTION": True, "SERVER_PORT": 50001})
    assert settings["IMEX_NODE_CONFIG_FILE"] == "/x/nodes_config.cfg"
    assert settings["IMEX_ENABLE_AUTH_ENCRYPTION"] == "1" and settings["SERVER_PORT"] == "50001"
    assert imex.settings_problems({"server_port": 1, "OK_KEY": 2}) == [
        "'server_port' is not an IMEX config key (UPPER_CASE letters, digits, _)"
    ]


@pytest.mark.parametrize(
    "unit,changed,actions",
    [
        (RUNNING, False, ["stop", "disable", "mask"]),
        (STOPPED_MASKED, False, []),
        ({"installed": False, "masked": False, "enabled": False, "active": False}, False, []),
        ({"installed": True, "masked": False, "enabled": False, "active": False}, False, ["mask"]),
    ],
)
def test_driver_managed_stops_disables_masks(unit, changed, actions):
    assert imex.service_actions(imex.DRIVER_MANAGED, unit, changed) == actions


@pytest.mark.parametrize(
    "unit,changed,actions",
    [
        (STOPPED_MASKED, True, ["unmask", "enable", "start"]),
        (RUNNING, False, []),
        (RUNNING, True, ["restart"]),
        ({"installed": True, "masked": False, "enabled": False, "active": True}, False, ["enable"]),
    ],
)
def test_host_managed_runs_and_restarts_only_on_change(unit, changed, actions):
    assert imex.service_actions(imex.HOST_MANAGED, unit, changed) == actions


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError):
        imex.service_actions("both", RUNNING, False)


def test_unit_state_from_systemctl_show():
    assert imex.unit_state({"LoadState": "loaded", "ActiveState": "active", "UnitFileState": "enabled"}) == RUNNING
    assert (
        imex.unit_state({"LoadState": "masked", "ActiveState": "inactive", "UnitFileState": "masked"}) == STOPPED_MASKED
    )
    assert (
        imex.unit_state({"LoadState": "not-found", "ActiveState": "inactive", "UnitFileState": ""})["installed"]
        is False
    )


def fabric(state="completed", clique="c0ffee.1", status="NVML_SUCCESS", supported=True):
    return {"supported": supported, "state": state, "status": status, "clique": clique}


def test_fabric_health():
    assert imex.fabric_health([fabric(), fabric()]) == {"healthy": True, "clique": "c0ffee.1", "problems": []}
    health = imex.fabric_health([fabric(), fabric(state="in_progress", clique=None)])
    assert not health["healthy"] and health["clique"] is None
    assert health["problems"] == [
        "GPU 1 NVLink fabric registration is in progress, not completed (Fabric Manager "
        "/ NVLink switch not done; IMEX cannot use it yet)"
    ]
    assert "different cliques" in imex.fabric_health([fabric(), fabric(clique="c0ffee.2")])["problems"][0]
    assert "has no NVLink fabric" in imex.fabric_health([fabric(supported=False)])["problems"][0]
    assert "failed: NVML_ERROR_UNKNOWN" in imex.fabric_health([fabric(status="NVML_ERROR_UNKNOWN")])["problems"][0]
    assert imex.fabric_health([])["problems"] == ["no GPU found through NVML"]
