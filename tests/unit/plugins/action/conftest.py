"""The Kubernetes API simulator for the step tests: every request the step's real K8sClient sends to
apiserver_simulator.HOST is answered in memory (tests/unit/plugins/module_utils/k8s/apiserver_simulator.py)."""

from __future__ import annotations

import pytest

from tests.unit.plugins.module_utils.k8s.apiserver_simulator import ApiServerSimulator, transport


@pytest.fixture
def api(monkeypatch):
    server = ApiServerSimulator()
    transport(monkeypatch, server)
    return server
