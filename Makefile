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
BENCH_CLUSTER ?= bench
LAB_INVENTORY ?= $(ROOT)/inventories/lab/hosts.yml
# Every Molecule scenario, in the order the lanes take them: make test runs them in TEST_LANES parallel lanes.
# `lifecycle` grows its cluster at the bundle's older release to the cluster `ha` builds (3 control planes, 2
# workers), upgrades it and goes on with it, so `ha` runs only by hand (make molecule SCENARIO=ha). Lane 2 takes
# `lifecycle` (about 3,000 s here) while lane 1 runs the static checks and the integration tests (about 2,400 s);
# lane 1 then takes `fleet` (1,250 s) and lane 2 `vip` (1,800 s), so that `kubesphere` and the small scenarios
# fill the end of both lanes (docs/performance.md, "make test": 160 s sooner than `vip` before `fleet`).
SCENARIOS   ?= lifecycle fleet vip kubesphere loadbalancer loadbalancer_local preinstall containerd
TEST_LANES  ?= 2
SCENARIO    ?= preinstall

.PHONY: help deps venv collection bundle lab-bundle bundle-verify lab lab-fleet lab-down lab-status bench bench-scale bench-upgrade bench-operator bench-fleet bench-preflight compare audit lint typecheck sanity units integration molecule test clean

help:
	@echo "make lab        bring up the podman lab and run site.yml on it"
	@echo "make lab-fleet  the fleet on the lab cluster: a spare lab node, the fleet controller, a SlipwayCluster to apply"
	@echo "make test       everything CI runs: lint, sanity, units, integration, every Molecule scenario"
	@echo "make bench      site.yml on a fresh lab cluster, then a rerun: wall times and task results per host"
	@echo "make bench-scale  the same cluster grown by one worker with scale.yml (BENCH_ADD)"
	@echo "make bench-upgrade  the same cluster made at the older release, then upgrade.yml under a client"
	@echo "make bench-fleet  on the make lab cluster: a SlipwayCluster against site.yml directly, two clusters at once against one after the other"
	@echo "make bench-operator  slipway-operator on a single-node cluster: kubectl patch -> status enabled, a no-op reconcile"
	@echo "make compare    slipway and kubespray side by side: the same 5-node cluster, six steps each, one table"
	@echo "make audit      kube-bench itself (cis-1.12, built from its Go module) on the lab cluster's nodes"
	@echo "make lint | typecheck | sanity | units | integration | molecule SCENARIO=name | lab-down | lab-status"

# System packages (Debian 12). Installed only when something is missing.
deps:
	@$(ROOT)/tests/deps.sh

# Debian's python3 where there is one: built with profile-guided optimisation, it runs Ansible's controller side in
# about a fifth less CPU than an interpreter built from source without it (pyenv's default; docs/performance.md).
VENV_PYTHON ?= $(firstword $(wildcard /usr/bin/python3) python3)

$(VENV)/.stamp: requirements.txt | deps
	$(VENV_PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt
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
	  echo; echo "KubeSphere console: http://$$($(BUNDLE_DIR)/bin/kubectl get nodes -o jsonpath='{.items[0].status.addresses[?(@.type=="InternalIP")].address}'):30880 (user admin; its password below)"; \
	  echo "  KUBECONFIG=$(patsubst $(ROOT)/%,%,$(dir $(LAB_INVENTORY)))artifacts/admin.conf $(patsubst $(ROOT)/%,%,$(BUNDLE_DIR))/bin/kubectl -n kubesphere-system get secret kubesphere-admin -o jsonpath='{.data.password}' | base64 -d",)

# A fresh lab cluster of LAB_NODES named BENCH_CLUSTER, site.yml twice, figures for docs/performance.md.
# The cluster is removed afterwards unless BENCH_KEEP=1.
bench: deps venv collection bundle
	$(PY) tools/bench.py --cluster $(BENCH_CLUSTER) $(addprefix --node ,$(LAB_NODES)) $(addprefix --vars ,$(LAB_BASE_VARS) $(LAB_VARS)) \
	  $(if $(BENCH_KEEP),--keep)

# Grow a fresh lab cluster of LAB_NODES by BENCH_ADD with scale.yml: the wall time of adding a worker
# and the task results on the hosts that were there before (docs/performance.md). For the cluster
# twice the size: make bench-scale LAB_NODES="$(BENCH_BIG_NODES)".
BENCH_ADD       ?= w9:kube_node
BENCH_BIG_NODES ?= $(LAB_NODES) w3:kube_node w4:kube_node w5:kube_node w6:kube_node w7:kube_node
bench-scale: deps venv collection bundle
	$(PY) tools/bench.py --cluster $(BENCH_CLUSTER) $(addprefix --node ,$(LAB_NODES)) $(addprefix --add ,$(BENCH_ADD)) \
	  $(addprefix --vars ,$(LAB_BASE_VARS) $(LAB_VARS)) --log-dir $(CACHE)/bench-scale $(if $(BENCH_KEEP),--keep)

# Upgrade a fresh lab cluster of LAB_NODES from the bundle's older release to its current one with
# upgrade.yml while a client requests a web Deployment every 0.2 s: the wall time, the failed requests,
# and a rerun that changes nothing (docs/performance.md).
bench-upgrade: deps venv collection bundle
	$(PY) tools/bench.py --cluster $(BENCH_CLUSTER) $(addprefix --node ,$(LAB_NODES)) --upgrade \
	  $(addprefix --vars ,$(LAB_BASE_VARS) $(LAB_VARS)) --log-dir $(CACHE)/bench-upgrade $(if $(BENCH_KEEP),--keep)

# slipway-operator on a fresh single-node lab cluster (site.yml with the components and the operator): the
# time from kubectl patch to status enabled for alerting, back to disabled, and a reconcile with nothing to
# do (docs/performance.md). The cluster is removed afterwards unless BENCH_KEEP=1.
bench-operator: deps venv collection bundle
	$(PY) tools/bench_operator.py --cluster $(BENCH_CLUSTER)-operator --bundle $(BUNDLE_DIR) $(if $(BENCH_KEEP),--keep)

# The fleet on the lab cluster of make lab (run that first): make lab-fleet with BENCH_FLEET_NODES as the spare nodes,
# then tools/bench_fleet.py: a SlipwayCluster to Running against site.yml run directly on the same kind of node, and
# two SlipwayClusters one after the other against at once (docs/performance.md), BENCH_FLEET_ROUNDS rounds (2 or more). The spare nodes stay (make lab removes
# them).
BENCH_FLEET_NODES ?= t1:fleet_hosts t2:fleet_hosts
BENCH_FLEET_ROUNDS ?= 2
bench-fleet: venv collection
	$(MAKE) --no-print-directory lab-fleet LAB_FLEET_NODES="$(BENCH_FLEET_NODES)"
	$(PY) tools/bench_fleet.py --inventory $(LAB_INVENTORY) --bundle $(BUNDLE_DIR) --rounds $(BENCH_FLEET_ROUNDS) \
	  --log-dir $(CACHE)/bench-fleet

# Preflight's first stage at fleet size: the model and site.yml's list of problems for 10, 100 and
# 1,000 generated hosts, no host contacted (docs/performance.md).
bench-preflight: venv collection
	$(PY) tools/bench_preflight.py

# slipway and kubespray side by side (tools/compare, docs/performance.md): for each in turn a fresh lab cluster of
# LAB_NODES (cmp-slipway, then cmp-kubespray) from the bundle, then create, a no-op rerun, one worker added and
# removed, an upgrade from the bundle's older release under a client loop, and reset, each timed; one table, and the
# same in Markdown under .cache/compare/. kubespray is KUBESPRAY_ARCHIVE (a git archive of it) run as it is, with
# only the settings `tools/compare` lists; its files server and registry run on the lab network while it runs.
# Run it on a quiet machine: one installer after the other, the ratios mean something only if nothing else runs.
KUBESPRAY_ARCHIVE ?= /work/shared/reference/kubespray/kubespray-46dbdd399.tar.gz
compare: deps venv collection bundle
	cd tools && $(PY) -m compare --kubespray $(KUBESPRAY_ARCHIVE) --work $(CACHE)/compare run --bundle $(BUNDLE_DIR) \
	  $(addprefix --node ,$(LAB_NODES)) $(addprefix --vars ,$(LAB_VARS))

# kube-bench itself on the lab cluster (make lab): built once from its Go module (tools/kube_bench.py), run on the
# first control plane, the first worker and the first etcd member; prints what is not PASS (docs/security.md)
# and exits 1 on a scored FAIL.
audit: venv collection
	$(PY) tools/kube_bench.py run -i $(LAB_INVENTORY)

# The fleet (docs/fleet.md) on the cluster of make lab: the bundle's operator image added to the bundle, the spare
# lab nodes LAB_FLEET_NODES started beside the cluster's (bare: sshd and Python, for SlipwayClusters to build
# clusters on), playbooks/fleet.yml run on the lab cluster, which becomes the management cluster, then
# tools/lab_fleet.py: the namespace fleet, the lab's SSH key as the Secret fleet-ssh, and docs/fleet.md's prod.yml
# for the first spare node next to the inventory (artifacts/fleet/prod.yml), ready for kubectl apply.
LAB_FLEET_NODES ?= t1:fleet_hosts
LAB_FLEET_BUNDLE_ARGS = --kubernetes-version $(or $(LAB_K8S_VERSION),default) \
  $(if $(call LAB_ON,slipway_kubesphere_enabled)$(call LAB_ON,slipway_operator_enabled),,--without kubesphere)
lab-fleet: deps venv collection
	$(PY) tools/bundle/build.py --out $(BUNDLE_DIR) $(LAB_FLEET_BUNDLE_ARGS)
	$(LAB_UP) $(addprefix --node ,$(LAB_NODES) $(LAB_FLEET_NODES))
	$(BIN)/ansible-playbook -i $(LAB_INVENTORY) playbooks/fleet.yml -e fleet_bundle_host_path=$(LAB_BUNDLE_MOUNT)
	$(PY) tools/lab_fleet.py --inventory $(LAB_INVENTORY) --bundle $(BUNDLE_DIR)

lab-down:
	$(PY) lab/lab.py down --cluster $(LAB_CLUSTER)

lab-status:
	$(PY) lab/lab.py status --cluster $(LAB_CLUSTER)

lint: venv collection
	@$(SUITE) ansible-lint -- $(BIN)/ansible-lint

# mypy (.config/mypy.ini) on the collection's plugins, named as Ansible imports them (through the collection link),
# the operator and fleet controller, and the tools, named as they import each other.
TYPECHECK_PATH    := $(COLLECTIONS):$(ROOT)/operator:$(ROOT)/tools:$(ROOT)/tools/bundle:$(ROOT)/lab
TYPECHECK_TARGETS := -p ansible_collections.slipway.cluster.plugins -p slipway_operator -p slipway_fleet -p bundler \
  -p compare -m bench -m bench_operator -m bench_preflight -m doc_commands -m lab_fleet -m bench_fleet -m kube_bench -m build -m lab
typecheck: venv collection
	@cd $(ROOT) && $(SUITE) typecheck -- env MYPYPATH=$(TYPECHECK_PATH) $(BIN)/mypy --config-file .config/mypy.ini $(TYPECHECK_TARGETS)

sanity: venv
	@$(SUITE) sanity -- $(ROOT)/tests/ansible-test.sh sanity

units: venv
	@$(SUITE) units -- $(ROOT)/tests/ansible-test.sh units

# Controller-side end-to-end checks: real ansible-playbook, ansible-galaxy build/install, ansible-doc.
integration: venv collection bundle
	@$(SUITE) integration -- $(PY) -m pytest -q -p no:cacheprovider --durations=10 tests/integration

molecule: deps venv collection bundle
	@$(SUITE) molecule-$(SCENARIO) -- $(BIN)/molecule test -s $(SCENARIO)

# Every suite, the bundle built in the background meanwhile (tests/run-all.sh), then one line
# "N passed, N failed" over all of them.
test: deps venv collection
	@SCENARIOS="$(SCENARIOS)" TEST_LANES=$(TEST_LANES) $(ROOT)/tests/run-all.sh

clean:
	rm -rf $(CACHE)/ansible-test $(RESULTS)
