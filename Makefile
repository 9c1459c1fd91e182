# gpupool.core — the two set-up commands are `make demo` and `make test`.
# Both create .venv and install everything they need on a fresh machine.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PY ?= python3
VENV := $(CURDIR)/.venv
BUILD := $(CURDIR)/.build
COLLECTIONS := $(BUILD)/collections
COLL := $(COLLECTIONS)/ansible_collections/gpupool/core
export ANSIBLE_COLLECTIONS_PATH := $(COLLECTIONS)
export PYTHONPATH := $(COLLECTIONS):$(CURDIR)
export PATH := $(VENV)/bin:$(PATH)
export GPUPOOL_CACHE ?= $(HOME)/.cache/gpupool
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
PYTEST_ARGS ?=


.PHONY: style format bench help venv collection binaries fakenvml test test-release test-compat unit integration sanity sanity-oldest units lint galaxy-import molecule ee-context demo sandbox-up sandbox-down clean docs gpu-check

help:
	@echo "make demo   - bring up the sandbox GPU cloud and converge inventories/example against it"
	@echo "make test   - every test: unit, integration on a real kube-apiserver, ansible-test, ansible-lint"
	@echo "make test-compat - the version-sensitive tests on every Kubernetes release of the matrix (1.32 ... 1.37)"
	@echo "make galaxy-import - Galaxy's importer (galaxy-importer) on the built tarball: passes with no warning"

venv: $(VENV)/.stamp
$(VENV)/.stamp: requirements.txt requirements-test.txt
	@echo "[make] creating $(VENV) and installing Python dependencies"
	$(PY) -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check --upgrade pip
	$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements.txt -r requirements-test.txt
	touch $@

# ansible and ansible-test find the collection as ansible_collections/gpupool/core.
collection:
	@mkdir -p $(dir $(COLL))
	@ln -sfn $(CURDIR) $(COLL)

# etcd, the control plane (kube-apiserver, kube-scheduler, kube-controller-manager), kubectl, helm: env vars, PATH,
# cache, download, else built from the Go module proxy.
# K8S_RELEASES="1.32 1.33" (or all) adds the control plane of these releases of the matrix (testbed/k8s_releases.py).
K8S_RELEASES ?=
binaries: venv
	$(VENV)/bin/python -m testbed.binaries ensure $(if $(strip $(K8S_RELEASES)),--k8s "$(K8S_RELEASES)")

fakenvml:
	$(MAKE) -s -C testbed/fakenvml

unit: venv collection
	$(VENV)/bin/python -m pytest tests/unit $(PYTEST_ARGS)

integration: venv collection binaries fakenvml
	$(VENV)/bin/python -m pytest tests/integration $(PYTEST_ARGS)

# Every test on the base release (1.37), then the version-sensitive set on the oldest supported release (1.32).
# The oldest release's control plane is found or built meanwhile at the lowest CPU priority (nice 19), so a cold
# build (~15 CPU minutes) takes the time the tests leave idle; test-release waits for it (the cache's lock).
test: venv collection binaries fakenvml
	$(MAKE) -s style
	@mkdir -p $(BUILD); echo "[make] control plane of the oldest release: found or built in the background, log $(BUILD)/binaries-oldest.log"
	@setsid nice -n 19 $(VENV)/bin/python -m testbed.binaries ensure --k8s oldest > $(BUILD)/binaries-oldest.log 2>&1 & bg=$$!; \
	rc=0; $(VENV)/bin/python -m pytest tests $(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc -ne 0 ]; then kill -- -$$bg 2>/dev/null || true; exit $$rc; fi; \
	wait $$bg || { tail -20 $(BUILD)/binaries-oldest.log; exit 1; }
	$(MAKE) -s test-release K8S_RELEASE=oldest
	$(MAKE) -s sanity sanity-oldest units lint galaxy-import molecule

# The version-sensitive tests (-m dra_api: resource.k8s.io, ComputeDomains, a site.yml converge and no-op) on one
# release of the matrix: K8S_RELEASE=1.32|1.33|1.34|1.35|1.36|1.37|oldest. Its control plane is found or built first
# (a cold build takes minutes on 2 cores: docs/testbed.md).
K8S_RELEASE ?= oldest
test-release: venv collection fakenvml
	$(VENV)/bin/python -m testbed.binaries ensure --k8s $(K8S_RELEASE)
	GPUPOOL_K8S_VERSION=$(K8S_RELEASE) $(VENV)/bin/python -m pytest -m dra_api tests/integration $(PYTEST_ARGS)

# The version-sensitive tests on every release of the matrix, one after the other; every release runs, the
# failed ones are named at the end.
test-compat: venv collection binaries fakenvml
	@failed=""; for release in $$($(VENV)/bin/python -m testbed.k8s_releases matrix); do 		echo "[make] version-sensitive tests on Kubernetes $$release"; 		$(MAKE) -s test-release K8S_RELEASE=$$release || failed="$$failed $$release"; 	done; 	if [ -n "$$failed" ]; then echo "[make] test-compat failed on:$$failed"; exit 1; fi; 	echo "[make] test-compat passed on $$($(VENV)/bin/python -m testbed.k8s_releases matrix)"

sanity units: venv
	$(VENV)/bin/python tools/run_ansible_test.py $@

# ansible-test sanity on the oldest ansible-core of the supported range (meta/runtime.yml requires_ansible; `sanity`
# runs .venv's, the newest): with the cached user venv of the install test (tests/support/user_install.py), which
# holds that ansible-core and the collection's requirements only.
sanity-oldest: venv
	oldest=$$($(VENV)/bin/python -m tests.support.user_install venv oldest); \
	env -u PYTHONPATH $$oldest/bin/python tools/run_ansible_test.py sanity

# ruff: formatting and lint rules of pyproject.toml, checked (make format applies them).
style: venv
	$(VENV)/bin/ruff format --check --quiet plugins tests testbed tools bench conftest.py
	$(VENV)/bin/ruff check --quiet plugins tests testbed tools bench conftest.py

format: venv
	$(VENV)/bin/ruff check --fix --unsafe-fixes --quiet plugins tests testbed tools bench conftest.py
	$(VENV)/bin/ruff format --quiet plugins tests testbed tools bench conftest.py

# The whole repository with the production profile (Automation Hub's): galaxy.yml, meta/, roles, playbooks,
# extensions, the plugins' EXAMPLES; .ansible-lint's exclude_paths leave out the test bed and tests.
# A private HOME: a copy of gpupool.core another run installed under ~/.ansible/collections must not shadow
# this checkout for ansible-lint (its syntax check would resolve modules from the stale copy).
lint: venv collection
	@mkdir -p $(BUILD)/lint-home
	HOME=$(BUILD)/lint-home $(VENV)/bin/ansible-lint --offline -q --profile production
	@# extensions/awx/templates (the AWX project and AWX-as-code playbook a user copies): ansible-lint, and so Galaxy's
	@# importer, takes whatever is under a templates/ folder for text; linted here from a copy, as the playbooks they are.
	rm -rf $(BUILD)/awx-lint && mkdir -p $(BUILD)/awx-lint && cp -r extensions/awx/templates/. $(BUILD)/awx-lint/
	cd $(BUILD)/awx-lint && HOME=$(BUILD)/lint-home $(VENV)/bin/ansible-lint --offline -q -c $(CURDIR)/.ansible-lint --project-dir . .

# Galaxy's own importer (galaxy-importer, the check Galaxy and Automation Hub run on an upload) on the tarball
# `ansible-galaxy collection build` makes; fails on a failed import and on any warning it prints (ansible-lint's
# findings are warnings). Its own venv and pinned packages (requirements-importer.txt): it runs its own ansible-doc
# and ansible-lint, found first on PATH. tools/galaxy-importer.cfg turns off what needs a container engine
# (ansible-test in an image). A private HOME and no ANSIBLE_CONFIG/PYTHONPATH: it sees the tarball, as Galaxy does.
IMPORTER_VENV := $(BUILD)/importer-venv
$(IMPORTER_VENV)/.stamp: requirements-importer.txt
	@echo "[make] creating $(IMPORTER_VENV) for galaxy-importer"
	rm -rf $(IMPORTER_VENV)
	$(PY) -m venv $(IMPORTER_VENV)
	$(IMPORTER_VENV)/bin/pip install -q --disable-pip-version-check -r requirements-importer.txt
	touch $@

galaxy-import: venv $(IMPORTER_VENV)/.stamp
	rm -rf $(BUILD)/galaxy && mkdir -p $(BUILD)/galaxy/home
	$(VENV)/bin/ansible-galaxy collection build --output-path $(BUILD)/galaxy $(CURDIR)
	@cd $(BUILD)/galaxy && rc=0; \
	env -u PYTHONPATH -u ANSIBLE_CONFIG -u ANSIBLE_COLLECTIONS_PATH HOME=$(BUILD)/galaxy/home \
		PATH=$(IMPORTER_VENV)/bin:$$PATH GALAXY_IMPORTER_CONFIG=$(CURDIR)/tools/galaxy-importer.cfg \
		$(IMPORTER_VENV)/bin/python -m galaxy_importer.main gpupool-core-*.tar.gz > import.log 2>&1 || rc=$$?; \
	if [ $$rc -ne 0 ] || grep -qE '^(WARNING|ERROR|CRITICAL)' import.log \
		|| ! grep -q '^Importer processing completed successfully' import.log; then \
		grep -v '^Loading ' import.log | tail -60; \
		echo "[make] galaxy-import: the import failed or warned (exit $$rc; above; log $(BUILD)/galaxy/import.log)"; exit 1; \
	fi; \
	grep -v '^Loading ' import.log; echo "[make] galaxy-import: passed with no warning (log $(BUILD)/galaxy/import.log)"

# Both molecule scenarios (extensions/molecule) on one sandbox: default (converge, idempotence, verify) and
# pool-change (an inventory edit, converged and verified). Delegated driver: no container engine needed.
molecule: venv collection binaries
	cd $(CURDIR) && $(VENV)/bin/molecule test --all

# The execution environment's build context, made as a user makes it: the shipped definition
# (extensions/ee/execution-environment.yml, ansible-builder v3) of this checkout's tarball installed into
# .build/ee/collections, then `ansible-builder create` -> .build/ee/context. Build the image where a container
# engine is: podman build -t gpupool-ee:1.0.0 .build/ee/context (docs/awx.md). make test checks the same context
# (tests/integration/test_execution_environment.py).
ee-context: venv
	rm -rf $(BUILD)/ee && mkdir -p $(BUILD)/ee
	$(VENV)/bin/ansible-galaxy collection build --output-path $(BUILD)/ee .
	env -u ANSIBLE_COLLECTIONS_PATH $(VENV)/bin/ansible-galaxy collection install --offline --force -p $(BUILD)/ee/collections $(BUILD)/ee/gpupool-core-*.tar.gz
	$(VENV)/bin/ansible-builder create -c $(BUILD)/ee/context \
		-f $(BUILD)/ee/collections/ansible_collections/gpupool/core/extensions/ee/execution-environment.yml

# The main job: sandbox GPU cloud up, validate + converge the example pools twice
# (the second run must change nothing), show the pool report, sandbox down.
demo: venv collection binaries
	$(VENV)/bin/ansible-playbook -i inventories/example playbooks/validate.yml
	$(VENV)/bin/python -m testbed.demo

sandbox-up: venv collection binaries
	$(VENV)/bin/python -m testbed.sandbox up

sandbox-down: venv
	$(VENV)/bin/python -m testbed.sandbox down

docs: venv collection
	$(VENV)/bin/python tools/gen_docs.py

# The MIG catalog against this machine's GPUs, read-only through NVML (docs/gpu-check.md): a table, exit 1 on
# a mismatch; one line and exit 0 where there is no NVIDIA driver or GPU. GPU_CHECK_ARGS=--nvml-library PATH.
GPU_CHECK_ARGS ?=
gpu-check: venv collection
	@$(VENV)/bin/python tools/gpu_check.py $(GPU_CHECK_ARGS)

# Speed and memory targets live here, never in tests. BENCH_SIZE=small (default, minutes) or full
# (up to 10 clusters / 50 pools / 2,000 nodes, about an hour on 2 cores); docs/performance.md.
# The bench's own packages (kubernetes.core for the comparison, matplotlib) go to a venv layered
# over .venv, so `make test` never sees them.
BENCH_VENV := $(BUILD)/bench-venv
export BENCH_SIZE ?= small

$(BENCH_VENV)/.stamp: $(VENV)/.stamp requirements-bench.txt
	@echo "[make] creating $(BENCH_VENV) (over .venv) for the bench's packages"
	$(VENV)/bin/python -m venv $(BENCH_VENV)
	$(VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' \
		> "$$($(BENCH_VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/gpupool-venv.pth"
	$(BENCH_VENV)/bin/pip install -q --disable-pip-version-check -r requirements-bench.txt
	touch $@

bench: venv collection binaries $(BENCH_VENV)/.stamp
	@rc=0; $(VENV)/bin/python bench/bench_planner.py || rc=1; \
	$(VENV)/bin/python bench/bench_advice.py all || rc=1; \
	$(BENCH_VENV)/bin/python bench/bench_converge.py || rc=1; \
	if [ $$rc -ne 0 ]; then echo "[make] bench: a target was missed (MISSED above); every bench ran"; fi; exit $$rc

clean:
	rm -rf $(BUILD) $(VENV)
