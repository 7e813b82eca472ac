"""monitoring's recording rules (templates/monitoring/recording-rules.yml.j2) against what ks-apiserver reads.

KubeSphere 3.4.1's console asks ks-apiserver for its figures, and ks-apiserver's PromQL reads recorded series that
ks-installer's Prometheus records: a name missing here is a console panel without data. The names ks-apiserver reads
are the fixture kubesphere-v3.4.1-recorded-series.txt (from promql.go at v3.4.1).
"""

from __future__ import annotations

import os
import re
import warnings

import yaml

from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible_collections.slipway.cluster.tests.unit.roles.templating import Templar, trust_as_template

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", "..", ".."))
ROLE = os.path.join(ROOT, "roles", "kubesphere")
SERIES_FILE = os.path.join(HERE, "..", "..", "fixtures", "kubesphere-v3.4.1-recorded-series.txt")

# Read by ks-apiserver and not recorded, with the reason (docs/kubesphere.md, "What the console's monitoring reads").
NOT_RECORDED = {
    "scheduler:": "kubeadm serves the scheduler's metrics on each control plane's loopback only (CIS 1.4.2)",
    "etcd:": "kubeadm serves etcd's metrics on each control plane's loopback only; etcd monitoring is refused",
}

# A recorded name in an expression: letters, digits and underscores with at least one colon, not a label value.
RECORDED_NAME = re.compile(r'(?<![\w:"$])([a-zA-Z_:][a-zA-Z0-9_]*:[a-zA-Z0-9_:]*)(?=\s*[{(\[)\s,/*+-]|$)')


def wanted_series() -> list[str]:
    with open(SERIES_FILE, encoding="utf-8") as handle:
        return [line.strip() for line in handle if line.strip() and not line.startswith("#")]


def render_rules() -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        init_plugin_loader()
    variables = {"ansible_search_path": [ROLE]}
    templar = Templar(loader=DataLoader(), variables=variables)
    text = templar.template(trust_as_template(
        "{{ lookup('ansible.builtin.template', 'monitoring/recording-rules.yml.j2') }}"))
    return yaml.safe_load(str(text))


RULES = [rule for group in render_rules()["spec"]["groups"] for rule in group["rules"]]
RECORDED = {rule["record"] for rule in RULES}


def test_every_series_ks_apiserver_reads_is_recorded_but_the_scheduler_and_etcd():
    missing = [name for name in wanted_series()
               if name not in RECORDED and not name.startswith(tuple(NOT_RECORDED))]
    assert not missing


def test_what_is_left_out_is_still_read_by_ks_apiserver_and_not_recorded():
    wanted = wanted_series()
    for prefix in NOT_RECORDED:
        assert [name for name in wanted if name.startswith(prefix)], prefix
        assert not [name for name in RECORDED if name.startswith(prefix)], prefix


def test_the_fixture_is_read_as_written():
    wanted = wanted_series()
    assert wanted == sorted(set(wanted))
    assert "node:node_num_cpu:sum" in wanted and "namespace:workload_cpu_usage:sum" in wanted
    assert all(RECORDED_NAME.fullmatch(name) for name in wanted)


def test_a_rule_reads_only_recorded_names_that_a_rule_records():
    read = {match.group(1) for rule in RULES for match in RECORDED_NAME.finditer(rule["expr"])}
    assert read, "no recorded name found in any expression"
    assert read - RECORDED == set()


def test_each_rule_records_a_name_once_but_per_quantile():
    seen = {}
    for rule in RULES:
        key = (rule["record"], rule.get("labels", {}).get("quantile"))
        assert key not in seen, key
        seen[key] = rule
    quantiles = sorted(rule["labels"]["quantile"] for rule in RULES
                       if rule["record"] == "node_quantile:kubelet_pleg_relist_duration_seconds:histogram_quantile")
    assert quantiles == ["0.5", "0.9", "0.99"]


def test_each_workload_series_is_named_as_ks_apiserver_selects_it():
    # ks-apiserver selects a workload as workload=~"Deployment:(name)" (makeWorkloadMetricExpr).
    owner = next(rule for rule in RULES if rule["record"] == "namespace_workload_pod:kube_pod_owner:relabel")
    assert '"workload", "Deployment:$1", "deployment"' in owner["expr"]
    assert '"workload", ":", "owner_kind", "owner_name"' in owner["expr"]
    for rule in RULES:
        if rule["record"].startswith("namespace:workload_"):
            assert rule["expr"].startswith("sum by (namespace, owner_kind, workload) ("), rule["record"]
            assert "namespace_workload_pod:kube_pod_owner:relabel" in rule["expr"], rule["record"]


def test_each_project_series_carries_its_workspace():
    # ks-apiserver selects a workspace's projects as workspace="name" (makeNamespaceMetricExpr).
    projects = ["namespace:container_cpu_usage_seconds_total:sum_rate", "namespace:container_memory_usage_bytes:sum",
                "namespace:container_memory_usage_bytes_wo_cache:sum", "namespace:pod_abnormal:count"]
    in_workspace = '* on (namespace) group_left (workspace) kube_namespace_labels{job="kube-state-metrics"}'
    for rule in RULES:
        if rule["record"] in projects:
            assert rule["expr"].rstrip().endswith(in_workspace), rule["record"]
    assert sorted(projects) == sorted(rule["record"] for rule in RULES if rule["record"] in projects)
