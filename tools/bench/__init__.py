"""The benchmarks: what docs/performance.md's figures come from, one module each, run with the controller virtualenv's
python (`make venv` makes `bench` importable) or through the make targets of tools/bench/bench.mk.

    python -m bench.cluster      make bench, bench-scale, bench-upgrade: site.yml, scale.yml, upgrade.yml on a lab cluster
    python -m bench.operator     make bench-operator: slipway-operator from kubectl patch to status
    python -m bench.fleet        make bench-fleet: a SlipwayCluster against site.yml run directly, two at once
    python -m bench.preflight    make bench-preflight: preflight's first stage for 10 to 1,000 generated hosts
    python -m bench.compare      make compare: slipway and kubespray side by side
"""
