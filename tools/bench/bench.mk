# The measurement targets (the benchmarks of tools/bench, figures for docs/performance.md), included by the Makefile,
# whose variables they use: PY, CACHE, BUNDLE_DIR, LAB_NODES, LAB_BASE_VARS, LAB_VARS, LAB_INVENTORY. Each runs one
# module of the package `bench` with the virtualenv's python (`make venv` makes it importable).

.PHONY: bench bench-scale bench-upgrade bench-operator bench-fleet bench-preflight compare

help::
	@echo
	@echo "Measurements (tools/bench/bench.mk, docs/performance.md):"
	@echo "make bench      site.yml on a fresh lab cluster, then a rerun: wall times and task results per host"
	@echo "make bench-scale  the same cluster grown by one worker with scale.yml (BENCH_ADD)"
	@echo "make bench-upgrade  the same cluster made at the older release, then upgrade.yml under a client"
	@echo "make bench-fleet  on the make lab cluster: a SlipwayCluster against site.yml directly, two clusters at once against one after the other"
	@echo "make bench-operator  slipway-operator on a single-node cluster: kubectl patch -> status enabled, a no-op reconcile"
	@echo "make bench-preflight  preflight's first stage for 10, 100 and 1,000 generated hosts, no host contacted"
	@echo "make compare    slipway and kubespray side by side: the same 5-node cluster, six steps each, one table"

BENCH_CLUSTER ?= bench

# A fresh lab cluster of LAB_NODES named BENCH_CLUSTER, site.yml twice, figures for docs/performance.md.
# The cluster is removed afterwards unless BENCH_KEEP=1.
bench: deps venv collection bundle
	$(PY) -m bench.cluster --cluster $(BENCH_CLUSTER) $(addprefix --node ,$(LAB_NODES)) $(addprefix --vars ,$(LAB_BASE_VARS) $(LAB_VARS)) \
	  $(if $(BENCH_KEEP),--keep)

# Grow a fresh lab cluster of LAB_NODES by BENCH_ADD with scale.yml: the wall time of adding a worker
# and the task results on the hosts that were there before (docs/performance.md). For the cluster
# twice the size: make bench-scale LAB_NODES="$(BENCH_BIG_NODES)".
BENCH_ADD       ?= w9:kube_node
BENCH_BIG_NODES ?= $(LAB_NODES) w3:kube_node w4:kube_node w5:kube_node w6:kube_node w7:kube_node
bench-scale: deps venv collection bundle
	$(PY) -m bench.cluster --cluster $(BENCH_CLUSTER) $(addprefix --node ,$(LAB_NODES)) $(addprefix --add ,$(BENCH_ADD)) \
	  $(addprefix --vars ,$(LAB_BASE_VARS) $(LAB_VARS)) --log-dir $(CACHE)/bench-scale $(if $(BENCH_KEEP),--keep)

# Upgrade a fresh lab cluster of LAB_NODES from the bundle's older release to its current one with
# upgrade.yml while a client requests a web Deployment every 0.2 s: the wall time, the failed requests,
# and a rerun that changes nothing (docs/performance.md).
bench-upgrade: deps venv collection bundle
	$(PY) -m bench.cluster --cluster $(BENCH_CLUSTER) $(addprefix --node ,$(LAB_NODES)) --upgrade \
	  $(addprefix --vars ,$(LAB_BASE_VARS) $(LAB_VARS)) --log-dir $(CACHE)/bench-upgrade $(if $(BENCH_KEEP),--keep)

# slipway-operator on a fresh single-node lab cluster (site.yml with the components and the operator): the
# time from kubectl patch to status enabled for alerting, back to disabled, and a reconcile with nothing to
# do (docs/performance.md). The cluster is removed afterwards unless BENCH_KEEP=1.
bench-operator: deps venv collection bundle
	$(PY) -m bench.operator --cluster $(BENCH_CLUSTER)-operator --bundle $(BUNDLE_DIR) $(if $(BENCH_KEEP),--keep)

# The fleet on the lab cluster of make lab (run that first): make lab-fleet with BENCH_FLEET_NODES as the spare nodes,
# then bench.fleet: a SlipwayCluster to Running against site.yml run directly on the same kind of node, and two
# SlipwayClusters one after the other against at once (docs/performance.md), BENCH_FLEET_ROUNDS rounds (2 or more).
# The spare nodes stay (make lab removes them).
BENCH_FLEET_NODES ?= t1:fleet_hosts t2:fleet_hosts
BENCH_FLEET_ROUNDS ?= 2
bench-fleet: venv collection
	$(MAKE) --no-print-directory lab-fleet LAB_FLEET_NODES="$(BENCH_FLEET_NODES)"
	$(PY) -m bench.fleet --inventory $(LAB_INVENTORY) --bundle $(BUNDLE_DIR) --rounds $(BENCH_FLEET_ROUNDS) \
	  --log-dir $(CACHE)/bench-fleet

# Preflight's first stage at fleet size: the model and site.yml's list of problems for 10, 100 and
# 1,000 generated hosts, no host contacted (docs/performance.md).
bench-preflight: venv collection
	$(PY) -m bench.preflight

# slipway and kubespray side by side (bench.compare, docs/performance.md): for each in turn a fresh lab cluster of
# LAB_NODES (cmp-slipway, then cmp-kubespray) from the bundle, then create, a no-op rerun, one worker added and
# removed, an upgrade from the bundle's older release under a client loop, and reset, each timed; one table, and the
# same in Markdown under .cache/compare/. kubespray is KUBESPRAY_ARCHIVE (a git archive of it; by default the one in
# shared/reference/kubespray/ beside the checkout) run as it is, with only the settings `python -m bench.compare
# settings` lists; its files server and registry run on the lab network while it runs.
# Run it on a quiet machine: one installer after the other, the ratios mean something only if nothing else runs.
KUBESPRAY_ARCHIVE ?=
compare: deps venv collection bundle
	$(PY) -m bench.compare $(if $(KUBESPRAY_ARCHIVE),--kubespray $(KUBESPRAY_ARCHIVE)) --work $(CACHE)/compare run \
	  --bundle $(BUNDLE_DIR) $(addprefix --node ,$(LAB_NODES)) $(addprefix --vars ,$(LAB_VARS))
