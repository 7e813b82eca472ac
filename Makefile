# slipway.cluster developer entry points. `make lab` brings up the local lab and deploys the
# cluster on it; `make test` runs everything CI runs. Both install what they need first.
SHELL := /bin/bash
.DEFAULT_GOAL := help

ROOT        := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
VENV        := $(ROOT)/.venv
PY          := $(VENV)/bin/python
BIN         := $(VENV)/bin
CACHE       := $(ROOT)/.cache
COLLECTIONS := $(CACHE)/collections
RESULTS     := $(CACHE)/test-results
SUITE       := $(ROOT)/tests/suite.sh
export CONTAINERS_CONF := $(ROOT)/lab/containers.conf
export ANSIBLE_CONFIG  := $(ROOT)/ansible.cfg
export PATH := $(BIN):$(PATH)

BUNDLE_DIR  ?= $(ROOT)/bundle
LAB_CLUSTER ?= lab
# The HA cluster of `make lab`: 3 control planes (stacked etcd) and 2 workers.
LAB_NODES   ?= cp1:kube_control_plane,etcd cp2:kube_control_plane,etcd cp3:kube_control_plane,etcd w1:kube_node w2:kube_node
# Lab runs stay offline: binaries and images from the bundle, CoreDNS forwards nothing out of the lab.
# What every lab cluster gets (the bundle, CoreDNS answering inside only); LAB_VARS adds to it and wins for the
# same keys, e.g. make lab LAB_VARS="slipway_kubesphere_enabled=true slipway_kubernetes_version=1.36.5".
LAB_BASE_VARS := slipway_artifacts_source=bundle slipway_artifacts_bundle_dir=$(BUNDLE_DIR) 'control_plane_coredns_upstreams=[]'
LAB_VARS    ?=
LAB_INVENTORY ?= $(ROOT)/inventories/lab/hosts.yml
# Every Molecule scenario, in the order the lanes take them: make test runs them in TEST_LANES parallel lanes.
# `lifecycle` grows its cluster at the bundle's older release to the cluster `ha` builds (3 control planes, 2
# workers), upgrades it and goes on with it, so `ha` runs only by hand (make molecule SCENARIO=ha). Lane 2 takes
# `lifecycle` (about 3,000 s here) while lane 1 runs the static checks and the integration tests (about 2,400 s);
# lane 1 then takes `fleet` (1,250 s) and lane 2 `vip` (1,800 s), so that `kubesphere` and the small scenarios
# fill the end of both lanes (docs/performance.md, "make test": 160 s sooner than `vip` before `fleet`).
# `preinstall` runs from the oldest ansible-core requires_ansible admits and `vip`'s playbooks from the newest, on
# Debian 13's Python (tests/ansible-core.sh molecule): every other scenario runs from .venv's 2.19.
SCENARIOS   ?= lifecycle fleet vip@2.21.5 kubesphere loadbalancer loadbalancer_local preinstall@2.16.19 containerd
TEST_LANES  ?= 2
SCENARIO    ?= preinstall

.PHONY: help deps venv collection bundle lab-bundle bundle-verify lab lab-fleet conformance lab-down lab-status audit lint typecheck sanity units ansible-core integration molecule test clean

# The measurement targets add their lines to help (help:: there too).
help::
	@echo "make lab        bring up the podman lab and run site.yml on it"
	@echo "make lab-fleet  the fleet on the lab cluster: a spare lab node, the fleet controller, a SlipwayCluster to apply"
	@echo "make test       everything CI runs: lint, sanity, units, integration, every Molecule scenario"
	@echo "make conformance  the upstream Kubernetes conformance suite on the lab cluster (CONFORMANCE_SLICE=name: a slice)"
	@echo "make audit      kube-bench itself (cis-1.12, built from its Go module) on the lab cluster's nodes"
	@echo "make ansible-core  sanity and units on each ansible-core release 2.16 to 2.21 (2.20, 2.21 on Debian 13's Python)"
	@echo "make lint | typecheck | sanity | units | integration | molecule SCENARIO=name | lab-down | lab-status"

# System packages (Debian 12). Installed only when something is missing.
deps:
	@$(ROOT)/tests/deps.sh

# Debian's python3 where there is one: built with profile-guided optimisation, it runs Ansible's controller side in
# about a fifth less CPU than an interpreter built from source without it (pyenv's default; docs/performance.md).
VENV_PYTHON ?= $(firstword $(wildcard /usr/bin/python3) python3)

# pyproject.toml: the tools, the operator and the lab importable by name in the virtualenv (an editable install).
$(VENV)/.stamp: requirements.txt pyproject.toml | deps
	$(VENV_PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt
	$(BIN)/pip install --quiet --no-deps --editable $(ROOT)
	touch $@

venv: $(VENV)/.stamp

# The checkout is the collection: expose it as ansible_collections/slipway/cluster.
collection:
	@mkdir -p $(COLLECTIONS)/ansible_collections/slipway
	@ln -sfn $(ROOT) $(COLLECTIONS)/ansible_collections/slipway/cluster

# Everything a cluster needs, built from source through the Go module proxy (docs/bundle.md).
# A second run with nothing changed takes seconds.
bundle: deps venv
	$(PY) tools/bundle/build.py --out $(BUNDLE_DIR)

# What `make lab` builds: only what its cluster runs. The Kubernetes release LAB_VARS sets (else the default one, not
# the older release the upgrade test needs), and KubeSphere's monitoring images and the operator image only when
# LAB_VARS turns them on (docs/bundle.md). make test, make molecule and make bundle build everything.
LAB_K8S_VERSION  = $(patsubst slipway_kubernetes_version=%,%,$(filter slipway_kubernetes_version=%,$(LAB_VARS)))
LAB_ON           = $(filter $(1)=true $(1)=True $(1)=yes,$(LAB_VARS))
LAB_BUNDLE_ARGS  = --kubernetes-version $(or $(LAB_K8S_VERSION),default) \
  $(if $(call LAB_ON,slipway_kubesphere_enabled)$(call LAB_ON,slipway_operator_enabled),,--without kubesphere) \
  $(if $(call LAB_ON,slipway_operator_enabled),,--without operator)

lab-bundle: deps venv
	$(PY) tools/bundle/build.py --out $(BUNDLE_DIR) $(LAB_BUNDLE_ARGS)

# The lab's nodes: every node sees the bundle read-only at LAB_BUNDLE_MOUNT (the fleet's controller and Jobs read it
# there through a hostPath: make lab-fleet). The same arguments for make lab and make lab-fleet, so that one keeps
# the other's nodes and inventory.
LAB_BUNDLE_MOUNT := /srv/slipway-bundle
LAB_UP = $(PY) lab/lab.py up --cluster $(LAB_CLUSTER) --inventory $(LAB_INVENTORY) \
  --volume $(abspath $(BUNDLE_DIR)):$(LAB_BUNDLE_MOUNT):ro $(addprefix --vars ,$(LAB_BASE_VARS) $(LAB_VARS))

bundle-verify: venv
	$(PY) tools/bundle/build.py verify $(BUNDLE_DIR)

# The node image (debootstrap: mostly waiting on the Debian mirror) is built while the bundle compiles.
lab: deps venv collection
	@mkdir -p $(CACHE)
	@$(PY) lab/lab.py image > $(CACHE)/lab-image.log 2>&1 & image=$$!; \
	  $(MAKE) --no-print-directory lab-bundle; rc=$$?; \
	  wait $$image; image_rc=$$?; cat $(CACHE)/lab-image.log; [ $$image_rc -eq 0 ] || exit $$image_rc; exit $$rc
	$(LAB_UP) $(addprefix --node ,$(LAB_NODES))
	$(BIN)/ansible-playbook -i $(LAB_INVENTORY) site.yml
	@$(PY) lab/lab.py status --cluster $(LAB_CLUSTER)
	@echo
	@echo "kubectl from the bundle, with the admin kubeconfig site.yml put next to the inventory:"
	@echo "  KUBECONFIG=$(patsubst $(ROOT)/%,%,$(dir $(LAB_INVENTORY)))artifacts/admin.conf $(patsubst $(ROOT)/%,%,$(BUNDLE_DIR))/bin/kubectl get nodes"
	@KUBECONFIG=$(dir $(LAB_INVENTORY))artifacts/admin.conf $(BUNDLE_DIR)/bin/kubectl get nodes
	@$(if $(call LAB_ON,slipway_kubesphere_enabled),KUBECONFIG=$(dir $(LAB_INVENTORY))artifacts/admin.conf; export KUBECONFIG; \
	  echo; echo "KubeSphere console: https://$$($(BUNDLE_DIR)/bin/kubectl get nodes -o jsonpath='{.items[0].status.addresses[?(@.type=="InternalIP")].address}'):30880 (user admin; its password below)"; \
	  echo "  KUBECONFIG=$(patsubst $(ROOT)/%,%,$(dir $(LAB_INVENTORY)))artifacts/admin.conf $(patsubst $(ROOT)/%,%,$(BUNDLE_DIR))/bin/kubectl -n kubesphere-system get secret kubesphere-admin -o jsonpath='{.data.password}' | base64 -d",)

# kube-bench itself on the lab cluster (make lab): built once from its Go module (tools/kube_bench.py), run on the
# first control plane, the first worker and the first etcd member; prints what is not PASS (docs/security.md)
# and exits 1 on a scored FAIL.
audit: venv collection
	$(PY) tools/kube_bench.py run -i $(LAB_INVENTORY)

# The fleet (docs/fleet.md) on the cluster of make lab: the bundle's operator image added to the bundle, the spare
# lab nodes LAB_FLEET_NODES started beside the cluster's (bare: sshd and Python, for SlipwayClusters to build
# clusters on), playbooks/fleet.yml run on the lab cluster, which becomes the management cluster, then
# lab/lab_fleet.py: the namespace fleet, the lab's SSH key as the Secret fleet-ssh, and docs/fleet.md's prod.yml
# for the first spare node next to the inventory (artifacts/fleet/prod.yml), ready for kubectl apply.
LAB_FLEET_NODES ?= t1:fleet_hosts
LAB_FLEET_BUNDLE_ARGS = --kubernetes-version $(or $(LAB_K8S_VERSION),default) \
  $(if $(call LAB_ON,slipway_kubesphere_enabled)$(call LAB_ON,slipway_operator_enabled),,--without kubesphere)
lab-fleet: deps venv collection
	$(PY) tools/bundle/build.py --out $(BUNDLE_DIR) $(LAB_FLEET_BUNDLE_ARGS)
	$(LAB_UP) $(addprefix --node ,$(LAB_NODES) $(LAB_FLEET_NODES))
	$(BIN)/ansible-playbook -i $(LAB_INVENTORY) playbooks/fleet.yml -e fleet_bundle_host_path=$(LAB_BUNDLE_MOUNT)
	$(PY) lab/lab_fleet.py --inventory $(LAB_INVENTORY) --bundle $(BUNDLE_DIR)

# The upstream Kubernetes conformance suite (docs/conformance.md) on the cluster of make lab (run that first, with the
# same LAB_VARS): the suite added to the lab's bundle (build.py --with conformance: e2e.test, ginkgo and the images
# of the [Conformance] specs, built from source), its images imported on the lab's nodes (nothing is pulled), then
# tools/conformance.py run: the [Conformance] specs but [Serial] in CONFORMANCE_NODES ginkgo processes, then the
# [Serial] ones alone; e2e.log, junit_01.xml and summary.txt in .cache/conformance/<release>.
# CONFORMANCE_SLICE=name runs one named slice instead (tools/conformance.py slices lists them).
CONFORMANCE_NODES ?= 4
CONFORMANCE_SLICE ?=
conformance: deps venv collection
	$(PY) tools/bundle/build.py --out $(BUNDLE_DIR) $(LAB_BUNDLE_ARGS) --with conformance
	$(PY) tools/conformance.py run --bundle $(BUNDLE_DIR) -i $(LAB_INVENTORY) \
	  --kubeconfig $(dir $(LAB_INVENTORY))artifacts/admin.conf --nodes $(CONFORMANCE_NODES) \
	  $(if $(CONFORMANCE_SLICE),--slice $(CONFORMANCE_SLICE))

lab-down:
	$(PY) lab/lab.py down --cluster $(LAB_CLUSTER)

lab-status:
	$(PY) lab/lab.py status --cluster $(LAB_CLUSTER)

# The measurements: make bench, bench-scale, bench-upgrade, bench-operator, bench-fleet, bench-preflight, compare.
include $(ROOT)/tools/bench/bench.mk

lint: venv collection
	@$(SUITE) ansible-lint -- $(BIN)/ansible-lint

# mypy (.config/mypy.ini) on the collection's plugins, named as Ansible imports them (through the collection link),
# the operator and fleet controller, and the tools, named as they import each other.
TYPECHECK_PATH    := $(COLLECTIONS):$(ROOT)/operator:$(ROOT)/tools:$(ROOT)/tools/bundle:$(ROOT)/lab
TYPECHECK_TARGETS := -p ansible_collections.slipway.cluster.plugins -p slipway_operator -p slipway_fleet -p bundler \
  -p bench -m doc_commands -m kube_bench -m conformance -m build -m lab -m lab_fleet
typecheck: venv collection
	@cd $(ROOT) && $(SUITE) typecheck -- env MYPYPATH=$(TYPECHECK_PATH) $(BIN)/mypy --config-file .config/mypy.ini $(TYPECHECK_TARGETS)

sanity: venv
	@$(SUITE) sanity -- $(ROOT)/tests/ansible-test.sh sanity

units: venv
	@$(SUITE) units -- $(ROOT)/tests/ansible-test.sh units

# The same sanity and units on every other ansible-core release meta/runtime.yml admits (make sanity and make units
# run 2.19, the pinned one): 2.16 to 2.18 on this machine's Python, 2.20 and 2.21 on Debian 13's Python 3.13
# (tests/ansible-core.sh). make test runs the units of the oldest and the newest and the sanity of the newest
# (tests/run-all.sh sets ANSIBLE_CORE_RELEASES and ANSIBLE_CORE_SANITY); make ansible-core runs both on each.
ANSIBLE_CORE_RELEASES ?= 2.16.19 2.17.14 2.18.19 2.20.10 2.21.5
ANSIBLE_CORE_SANITY   ?= $(ANSIBLE_CORE_RELEASES)
ansible-core: deps venv
	@rc=0; for version in $(ANSIBLE_CORE_RELEASES); do \
	  $(SUITE) units-$$version -- $(ROOT)/tests/ansible-core.sh units $$version || rc=1; \
	  if [[ " $(ANSIBLE_CORE_SANITY) " == *" $$version "* ]]; then \
	    $(SUITE) sanity-$$version -- $(ROOT)/tests/ansible-core.sh sanity $$version || rc=1; fi; \
	done; exit $$rc

# Controller-side end-to-end checks: real ansible-playbook, ansible-galaxy build/install, ansible-doc.
integration: venv collection bundle
	@$(SUITE) integration -- $(PY) -m pytest -q -p no:cacheprovider --durations=10 tests/integration

# SCENARIO=name@VERSION runs the scenario from that ansible-core release (tests/ansible-core.sh molecule).
SCENARIO_NAME = $(firstword $(subst @, ,$(SCENARIO)))
SCENARIO_CORE = $(word 2,$(subst @, ,$(SCENARIO)))
molecule: deps venv collection bundle
	@$(SUITE) molecule-$(SCENARIO) -- $(if $(SCENARIO_CORE),$(ROOT)/tests/ansible-core.sh molecule $(SCENARIO_CORE),$(BIN)/molecule test) -s $(SCENARIO_NAME)

# Every suite, the bundle built in the background meanwhile (tests/run-all.sh), then one line
# "N passed, N failed" over all of them.
test: deps venv collection
	@SCENARIOS="$(SCENARIOS)" TEST_LANES=$(TEST_LANES) $(ROOT)/tests/run-all.sh

clean:
	rm -rf $(CACHE)/ansible-test $(RESULTS)
