# Unit tests of the repair decisions: snapshot names and pruning, what a restore refuses, certificate
# expiry, and which control plane brings a cluster back.
from __future__ import annotations

import pytest

from ansible_collections.slipway.cluster.plugins.module_utils._model import build_model
from ansible_collections.slipway.cluster.plugins.module_utils._certificates import cert_report, renew_due
from ansible_collections.slipway.cluster.plugins.module_utils._recovery import recover_plan
from ansible_collections.slipway.cluster.plugins.module_utils._snapshots import (
    initial_cluster,
    restore_problems,
    restored_already,
    snapshot_name,
    snapshots_to_prune,
)

HOSTVARS = {name: {"ansible_host": f"10.0.0.{i}"} for i, name in enumerate(["cp1", "cp2", "cp3", "w1", "e1", "e2", "e3"], 11)}
SHA = "a" * 64
CA = "c" * 64
RECORD = {"cluster": "lab", "etcd_mode": "stacked", "ca_sha256": CA, "sha256": SHA, "taken": "20261125T101500Z", "member": "cp1"}
FOUND = {"exists": True, "sha256": SHA}


def model(etcd=None, **settings):
    groups = {"kube_control_plane": ["cp1", "cp2", "cp3"], "kube_node": ["w1"], "etcd": list(etcd or ["cp1", "cp2", "cp3"])}
    if etcd:
        settings.setdefault("slipway_etcd_mode", "external")
    return build_model(groups, HOSTVARS, settings)


def test_snapshot_name():
    assert snapshot_name("lab", "20261125T101500Z") == "etcd-lab-20261125T101500Z.db"


@pytest.mark.parametrize("stamp", ["2026-11-25", "20261125T1015Z", "", "20261125T101500Z/../x"])
def test_snapshot_name_refuses_another_time_format(stamp):
    with pytest.raises(ValueError):
        snapshot_name("lab", stamp)


def test_the_oldest_snapshots_of_the_cluster_beyond_keep_are_pruned():
    names = [f"/b/etcd-lab-2026112{day}T000000Z.db" for day in (5, 1, 3, 2, 4)]
    names += ["/b/etcd-lab2-20260101T000000Z.db", "/b/etcd-lab-20260101T000000Z.db.json", "/b/notes.txt"]
    assert snapshots_to_prune(names, "lab", 3) == ["/b/etcd-lab-20261121T000000Z.db", "/b/etcd-lab-20261122T000000Z.db"]


@pytest.mark.parametrize("keep, pruned", [(5, 0), (10, 0), (1, 4), (0, 4), (-3, 4)])
def test_keep_counts_and_the_newest_always_stays(keep, pruned):
    names = [f"etcd-lab-2026112{day}T000000Z.db" for day in range(1, 6)]
    result = snapshots_to_prune(names, "lab", keep)
    assert len(result) == pruned
    assert "etcd-lab-20261125T000000Z.db" not in result


def test_a_cluster_name_with_regex_characters_matches_only_itself():
    assert snapshots_to_prune(["etcd-a.b-20261121T000000Z.db", "etcd-aXb-20261120T000000Z.db"], "a.b", 1) == []


def test_initial_cluster():
    urls = {"cp1": "https://10.0.0.11:2380", "cp2": "https://10.0.0.12:2380"}
    assert initial_cluster(["cp1", "cp2"], urls) == "cp1=https://10.0.0.11:2380,cp2=https://10.0.0.12:2380"
    with pytest.raises(ValueError, match="cp3"):
        initial_cluster(["cp1", "cp3"], urls)


def test_a_snapshot_of_this_cluster_may_be_restored():
    assert restore_problems("s.db", FOUND, RECORD, "lab", "stacked", {"cp1": CA, "cp2": CA}) == []


def test_a_missing_snapshot_is_refused():
    problems = restore_problems("s.db", {"exists": False}, None, "lab", "stacked", {})
    assert problems == [problems[0]] and "s.db does not exist" in problems[0]


def test_a_snapshot_without_its_record_is_refused():
    assert "s.db.json, the snapshot's record" in restore_problems("s.db", FOUND, None, "lab", "stacked", {})[0]


def test_a_damaged_snapshot_is_refused():
    problems = restore_problems("s.db", {"exists": True, "sha256": "b" * 64}, RECORD, "lab", "stacked", {})
    assert problems == [f"s.db is damaged: its sha256 is {'b' * 64}, but it was {SHA} when it was taken (s.db.json); restore another snapshot"]


def test_a_snapshot_of_another_cluster_is_refused_by_name_mode_and_ca():
    record = {**RECORD, "cluster": "prod", "etcd_mode": "external"}
    problems = restore_problems("s.db", FOUND, record, "lab", "stacked", {"cp1": CA, "cp2": "d" * 64, "cp3": None})
    assert len(problems) == 4
    assert "snapshot of cluster 'prod', not of 'lab'" in problems[0]
    assert "taken from external etcd" in problems[1]
    assert problems[2].startswith("no cluster CA (/etc/kubernetes/pki/ca.crt) on cp3")
    assert "is from another cluster" in problems[3] and "CA of cp2 is another" in problems[3]


def test_a_record_without_sha256_or_ca_is_refused():
    problems = restore_problems("s.db", FOUND, {"cluster": "lab"}, "lab", "stacked", {"cp1": CA})
    assert [p.split(":", maxsplit=1)[0] for p in problems] == ["s.db.json records no sha256", "s.db.json records no cluster CA"]


@pytest.mark.parametrize("records, done", [
    ({"cp1": {"sha256": SHA}, "cp2": {"sha256": SHA}}, True),
    ({"cp1": {"sha256": SHA}, "cp2": None}, False),
    ({"cp1": {"sha256": SHA}, "cp2": {"sha256": "b"}}, False),
    ({"cp1": {}}, False),
    ({}, False),
])
def test_restored_already(records, done):
    assert restored_already(SHA, records) is done


def test_cert_report_judges_and_sorts():
    certs = [
        {"host": "cp1", "name": "apiserver", "not_after": "20271125101500Z"},
        {"host": "cp2", "name": "kubelet client", "not_after": "2026-12-10T00:00:00Z"},
        {"host": "controller", "name": "admin kubeconfig", "not_after": "20261101000000Z"},
    ]
    report = cert_report(certs, "2026-11-25T10:15:00Z", 30)
    assert [(c["host"], c["state"]) for c in report["certificates"]] == [
        ("controller", "expired"), ("cp2", "warning"), ("cp1", "ok")]
    assert report["certificates"][1]["days_left"] == 14
    assert report["errors"] == ["controller: admin kubeconfig expired on 2026-11-01T00:00:00Z"]
    assert report["warnings"] == ["cp2: kubelet client expires on 2026-12-10T00:00:00Z, in 14 days (fewer than certs_warn_days, 30):"
                                  " renew with -e certs_action=renew"]
    assert report["lines"][0].startswith("HOST") and len(report["lines"]) == 4


def test_cert_report_at_the_boundaries():
    certs = [{"host": "a", "name": "x", "not_after": "2026-12-25T10:15:00Z"},
             {"host": "b", "name": "y", "not_after": "2026-11-25T10:15:00Z"}]
    states = {c["host"]: c["state"] for c in cert_report(certs, "2026-11-25T10:15:00Z", 30)["certificates"]}
    assert states == {"a": "ok", "b": "expired"}


def test_renew_due_lists_hosts_once_in_order():
    certs = [{"host": "cp2", "name": "a", "not_after": "20270101000000Z"},
             {"host": "cp1", "name": "a", "not_after": "20261201000000Z"},
             {"host": "cp2", "name": "b", "not_after": "20261201000000Z"},
             {"host": "cp3", "name": "a", "not_after": "20280101000000Z"}]
    assert renew_due(certs, "2027-06-01T00:00:00Z") == ["cp2", "cp1"]
    assert renew_due(certs, "2026-01-01T00:00:00Z") == []


def test_recover_from_the_surviving_member():
    plan = recover_plan(model(), ["cp2", "w1"], {"cp2": {"data": True, "ca": True}})
    assert plan == {"host": "cp2", "etcd_host": "cp2", "source": "member", "problems": []}


def test_recover_without_a_surviving_member_needs_a_snapshot():
    plan = recover_plan(model(), ["cp1"], {"cp1": {"data": False, "ca": True}})
    assert plan["problems"] == ["no surviving etcd member holds data (cp1): recover from a snapshot with -e etcd_snapshot=FILE"]
    plan = recover_plan(model(), ["cp1"], {"cp1": {"data": False, "ca": True}}, "s.db")
    assert plan == {"host": "cp1", "etcd_host": "cp1", "source": "snapshot", "problems": []}


def test_recover_needs_a_control_plane_with_the_cluster_ca():
    plan = recover_plan(model(), ["cp1", "cp2"], {"cp1": {"data": True, "ca": False}})
    assert plan["host"] == "" and "no control plane of the inventory (cp1, cp2, cp3)" in plan["problems"][0]


def test_recover_with_external_etcd_uses_a_member_with_data():
    plan = recover_plan(model(etcd=["e1", "e2", "e3"]), ["cp3", "e2", "e3"],
                        {"cp3": {"ca": True}, "e2": {"data": False}, "e3": {"data": True}})
    assert plan == {"host": "cp3", "etcd_host": "e3", "source": "member", "problems": []}


def test_cert_report_names_a_missing_certificate_as_a_warning_after_the_others():
    certs = [{"host": "w1", "name": "kubelet serving",
              "missing": ["/var/lib/kubelet/pki/kubelet-server-current.pem", "/var/lib/kubelet/pki/kubelet.crt"]},
             {"host": "cp1", "name": "apiserver", "not_after": "20271125101500Z"}]
    report = cert_report(certs, "2026-11-25T10:15:00Z", 30)
    assert [(c["host"], c["state"]) for c in report["certificates"]] == [("cp1", "ok"), ("w1", "missing")]
    assert report["lines"][-1].split() == ["w1", "kubelet", "serving", "-", "-", "missing"]
    assert report["warnings"] == ["w1: kubelet serving is missing: no file at /var/lib/kubelet/pki/kubelet-server-current.pem"
                                  " or /var/lib/kubelet/pki/kubelet.crt"]
    assert report["errors"] == []
    assert renew_due(report["certificates"], "2030-01-01T00:00:00Z") == ["cp1"]


def test_cert_report_warns_below_warn_days_and_errs_only_when_expired():
    certs = [{"host": "cp1", "name": "apiserver", "not_after": "20271125101500Z"}]
    report = cert_report(certs, "2026-11-25T10:15:00Z", 400)
    assert report["certificates"][0]["state"] == "warning"
    assert report["warnings"] == ["cp1: apiserver expires on 2027-11-25T10:15:00Z, in 365 days (fewer than certs_warn_days,"
                                  " 400): renew with -e certs_action=renew"]
    assert report["errors"] == []
