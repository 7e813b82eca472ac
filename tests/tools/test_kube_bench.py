"""Tests of tools/kube_bench.py: reading kube-bench's JSON reports, and the build's cache and pin (no network)."""

import tarfile
from pathlib import Path

import pytest

import kube_bench


def _result(number, status, scored=True, desc="a test"):
    return {"test_number": number, "test_desc": desc, "status": status, "scored": scored}


# The shape `kube-bench run --json` writes: Controls, one per target, with sections of results.
MASTER = {"Controls": [
    {"id": "1", "version": "cis-1.12", "node_type": "master", "tests": [
        {"section": "1.1", "results": [_result("1.1.1", "PASS"), _result("1.1.12", "FAIL", desc="etcd data owner")]},
        {"section": "1.2", "results": [_result("1.2.10", "PASS"), _result("1.2.2", "WARN", scored=False)]},
    ]},
    {"id": "2", "version": "cis-1.12", "node_type": "etcd", "tests": [
        {"section": "2", "results": [_result("2.1", "PASS"), _result("2.7", "INFO", scored=False)]},
    ]},
], "Totals": {}}
NODE = {"Controls": [
    {"id": "4", "version": "cis-1.12", "node_type": "node", "tests": [
        {"section": "4.1", "results": [_result("4.1.1", "FAIL", scored=False, desc="manual item")]},
    ]},
]}


def test_results_flattens_every_target_and_section():
    rows = kube_bench.results(MASTER)
    assert [(row["id"], row["target"], row["status"]) for row in rows] == [
        ("1.1.1", "master", "PASS"), ("1.1.12", "master", "FAIL"), ("1.2.10", "master", "PASS"),
        ("1.2.2", "master", "WARN"), ("2.1", "etcd", "PASS"), ("2.7", "etcd", "INFO")]


def test_summary_counts_per_host_and_target_and_lists_what_is_not_pass_in_id_order():
    table = kube_bench.summary({"w1": NODE, "cp1": MASTER})[0]
    lines = table.splitlines()
    assert "| cp1 | etcd | 1 | 0 | 0 | 1 |" in lines
    assert "| cp1 | master | 2 | 1 | 1 | 0 |" in lines
    assert "| w1 | node | 0 | 1 | 0 | 0 |" in lines
    listed = [line for line in lines if line.startswith("| 1.") or line.startswith("| 2.") or line.startswith("| 4.")]
    # 1.1.12 before 1.2.2: ids compare as numbers, not as text.
    assert [line.split(" | ")[0] for line in listed] == ["| 1.1.12", "| 1.2.2", "| 2.7", "| 4.1.1"]


def test_only_scored_fails_fail_the_audit():
    failed = kube_bench.summary({"cp1": MASTER, "w1": NODE})[1]
    assert [(host, row["id"]) for host, row in failed] == [("cp1", "1.1.12")]
    assert not kube_bench.summary({"w1": NODE})[1]


def test_a_built_version_is_not_built_again(tmp_path):
    archive = tmp_path / f"kube-bench-{kube_bench.KUBE_BENCH_VERSION}.tar.gz"
    archive.write_bytes(b"")

    class NoGo:  # pylint: disable=too-few-public-methods
        def download(self, *args):
            raise AssertionError("downloaded although built")

    assert kube_bench.build(tmp_path, go=NoGo()) == archive


def test_the_build_is_a_tools_module_and_the_archive_holds_what_a_host_needs(tmp_path):
    module_dir = tmp_path / "module"
    (module_dir / "cfg" / kube_bench.BENCHMARK).mkdir(parents=True)
    (module_dir / "cfg" / kube_bench.BENCHMARK / "master.yaml").write_text("---\n")
    (module_dir / "cfg" / "config.yaml").write_text("---\n")
    (module_dir / "cfg" / "cis-1.5").mkdir()  # another benchmark: not shipped
    (module_dir / "go.mod").write_text(f"module {kube_bench.MODULE}\n\ngo 1.26.3\n")
    built = {}

    class Go:
        def download(self, module, version, workdir):
            return {"Sum": kube_bench.KUBE_BENCH_SUM, "Dir": str(module_dir), "GoMod": str(module_dir / "go.mod")}

        def build(self, workdir, packages, outdir, ldflags):
            built.update(gomod=Path(workdir, "go.mod").read_text(), packages=packages, ldflags=ldflags)
            Path(outdir).mkdir()
            Path(outdir, "kube-bench").write_text("binary")

    archive = kube_bench.build(tmp_path / "cache", go=Go())
    assert f"require (\n\t{kube_bench.MODULE} {kube_bench.KUBE_BENCH_VERSION}\n)" in built["gomod"]
    assert built["packages"] == [kube_bench.MODULE]
    assert f"-X {kube_bench.MODULE}/cmd.KubeBenchVersion={kube_bench.KUBE_BENCH_VERSION}" in " ".join(built["ldflags"])
    with tarfile.open(archive) as tar:
        assert sorted(tar.getnames()) == sorted(["kube-bench", "cfg/config.yaml", f"cfg/{kube_bench.BENCHMARK}",
                                                 f"cfg/{kube_bench.BENCHMARK}/master.yaml"])


def test_a_module_whose_hash_is_not_the_pinned_one_is_refused(tmp_path):
    class Go:  # pylint: disable=too-few-public-methods
        def download(self, module, version, workdir):
            assert (module, version) == (kube_bench.MODULE, kube_bench.KUBE_BENCH_VERSION)
            return {"Sum": "h1:something-else=", "Dir": str(tmp_path)}

        def build(self, *args):
            raise AssertionError("built a module with another hash")

    with pytest.raises(kube_bench.AuditError, match="pinned"):
        kube_bench.build(tmp_path / "cache", go=Go())
    assert not list(tmp_path.glob("cache/*"))
