"""Tests of bench.cluster (tools/bench/cluster.py): reading PLAY RECAP and the table it prints."""

from bench import cluster

OUTPUT = """
TASK [slipway.cluster.summary : Summary] ***************************************
ok: [cp1] =>
    msg: done

PLAY RECAP *********************************************************************
cp1                        : ok=74   changed=0    unreachable=0    failed=0    skipped=35   rescued=0    ignored=0
w1                         : ok=36   changed=2    unreachable=0    failed=0    skipped=24   rescued=0    ignored=0


TASKS RECAP ********************************************************************
Sunday 22 November 2026  03:04:36 +0000 (0:00:00.138)       0:02:01.543 *******
"""


def test_recap_reads_every_host():
    assert cluster.recap(OUTPUT) == {
        "cp1": {"ok": 74, "changed": 0, "unreachable": 0, "failed": 0, "skipped": 35, "rescued": 0, "ignored": 0},
        "w1": {"ok": 36, "changed": 2, "unreachable": 0, "failed": 0, "skipped": 24, "rescued": 0, "ignored": 0},
    }


def test_recap_without_a_recap_is_empty():
    assert cluster.recap("ERROR! the playbook could not be found") == {}


def test_table_counts_task_results_per_host():
    counts = cluster.recap(OUTPUT)
    lines = cluster.table([("first run", 200.4, counts), ("rerun", 81.0, counts)]).splitlines()
    assert lines[2] == "| first run | 200 s | cp1 | 74 | 0 | 35 | 0 | 109 |"
    assert lines[3] == "|  |  | w1 | 36 | 2 | 24 | 0 | 60 |"
    assert lines[4].startswith("| rerun | 81 s | cp1 |")


def test_upgrade_versions_are_the_older_release_and_the_current_one():
    manifest = {"kubernetes_version": "v1.37.1", "releases": [{"kubernetes_version": "v1.36.5"}]}
    assert cluster.upgrade_versions(manifest) == ("1.36.5", "1.37.1")


def test_upgrade_needs_an_older_release_in_the_bundle():
    try:
        cluster.upgrade_versions({"kubernetes_version": "v1.37.1"})
    except SystemExit as exc:
        assert "one Kubernetes release" in str(exc)
    else:
        raise AssertionError("a bundle of one release was accepted")


def test_web_manifest_is_the_scenarios_workload_in_the_namespace_given():
    import yaml

    documents = list(yaml.safe_load_all(cluster.web_manifest("bench", "registry.example/busybox:1")))
    assert [d["kind"] for d in documents] == ["Namespace", "Deployment", "PodDisruptionBudget", "Service"]
    assert {d["metadata"].get("namespace", d["metadata"]["name"]) for d in documents} == {"bench"}
    assert documents[1]["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example/busybox:1"
    assert documents[2]["spec"]["minAvailable"] == 1
    assert documents[1]["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "Never"
    pulled = list(yaml.safe_load_all(cluster.web_manifest("bench", "registry.example/busybox:1", "IfNotPresent")))
    assert pulled[1]["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"
