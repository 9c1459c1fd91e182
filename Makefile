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

.PHONY: bench help venv collection binaries fakenvml test unit integration sanity units lint molecule ee-context demo sandbox-up sandbox-down clean docs

help:
	@echo "make demo   - bring up the sandbox GPU cloud and converge inventories/example against it"
	@echo "make test   - every test: unit, integration on a real kube-apiserver, ansible-test, ansible-lint"

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

# kube-apiserver, etcd, kubectl, helm: env vars, PATH, cache, download, else built from the Go module proxy.
binaries: venv
	$(VENV)/bin/python -m testbed.binaries ensure

fakenvml:
	$(MAKE) -s -C testbed/fakenvml

unit: venv collection
	$(VENV)/bin/python -m pytest tests/unit $(PYTEST_ARGS)

integration: venv collection binaries fakenvml
	$(VENV)/bin/python -m pytest tests/integration $(PYTEST_ARGS)

test: venv collection binaries fakenvml
	$(VENV)/bin/python -m pytest tests $(PYTEST_ARGS)
	$(MAKE) -s sanity units lint molecule

sanity units: venv
	$(VENV)/bin/python tools/run_ansible_test.py $@

lint: venv collection
	$(VENV)/bin/ansible-lint --offline -q roles playbooks extensions/molecule awx

# Both molecule scenarios (extensions/molecule) on one sandbox: default (converge, idempotence, verify) and
# pool-change (an inventory edit, converged and verified). Delegated driver: no container engine needed.
molecule: venv collection binaries
	cd $(CURDIR) && $(VENV)/bin/molecule test --all

# The execution environment's build context (execution-environment.yml, ansible-builder v3) in .build/ee/context;
# build the image with a container engine: podman build -t gpupool-ee:0.1.0 .build/ee/context
ee-context: venv
	rm -rf $(BUILD)/ee && mkdir -p $(BUILD)/ee
	$(VENV)/bin/ansible-galaxy collection build --output-path $(BUILD)/ee .
	cp $(BUILD)/ee/gpupool-core-*.tar.gz $(BUILD)/ee/gpupool-core.tar.gz
	$(VENV)/bin/ansible-builder create -f execution-environment.yml -c $(BUILD)/ee/context --output-filename Containerfile

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

# Speed and memory targets live here, never in tests.
bench: venv collection
	$(VENV)/bin/python bench/bench_planner.py

clean:
	rm -rf $(BUILD) $(VENV)
