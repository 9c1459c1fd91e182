"""Root pytest wiring (root conftest: pytest_plugins is only allowed here): each test bed lives in its own fixture module."""

pytest_plugins = [
    "tests.fixtures.controlplane",
    "tests.fixtures.helm_charts",
    "tests.fixtures.magnum",
    "tests.fixtures.nvml",
    "tests.fixtures.sandbox",
]
