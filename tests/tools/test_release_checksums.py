"""tools/release_checksums.py: the pinned table is written from upstream's published checksum files and kubespray's
checksums data, never from a downloaded file; sources that disagree stop it; what no source had is listed."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest
import release_checksums as tool
import yaml

A, B, C = "a" * 64, "b" * 64, "c" * 64


def test_published_checksum_files_of_each_format_are_read():
    assert tool.parse_sums(f"{A}\n", "kubeadm") == A  # dl.k8s.io's kubeadm.sha256: the sum alone
    sums = f"{B}  etcd-v3.6.8-linux-amd64.tar.gz\n{C}  etcd-v3.6.8-linux-arm64.tar.gz\n"
    assert tool.parse_sums(sums, "etcd-v3.6.8-linux-arm64.tar.gz") == C  # etcd's SHA256SUMS
    assert tool.parse_sums(f"{A} *runc.amd64\n{B} *runc.arm64\n", "runc.arm64") == B  # runc.sha256sum, binary mode
    assert tool.parse_sums(f"{C}  bin/containerd-2.3.7-linux-amd64.tar.gz\n", "containerd-2.3.7-linux-amd64.tar.gz") == C
    assert tool.parse_sums(f"{A}  other.tar.gz\n", "kubeadm") is None


def _published(root: Path, release="1.36.3") -> None:
    """A directory of published checksum files (files_repo layout) for every file of the release, amd64 = A, arm64 = B."""
    for file, version, arch in tool.wanted([release]):
        url, sums_url = tool.artifacts.release_file_urls(file, version, arch)
        path = root / sums_url.split("://", 1)[1]
        path.parent.mkdir(parents=True, exist_ok=True)
        name = url.rsplit("/", 1)[1]
        line = f"{A if arch == 'amd64' else B}  {name}\n"
        if sums_url.endswith(".sha256"):
            path.write_text(line.split()[0] + "\n")
        else:  # one file for both architectures
            path.write_text((path.read_text() if path.exists() else "") + line)


def test_a_release_from_published_files_is_complete_and_named_by_its_source(tmp_path):
    _published(tmp_path / "sums")
    table_path = tmp_path / "_release_checksums.py"
    assert tool.main(["--published", str(tmp_path / "sums"), "--release", "1.36.3", "--table", str(table_path)]) == 0
    table, sources = tool.read_table(table_path)
    assert table["kubelet"]["v1.36.3"] == {"amd64": A, "arm64": B}
    assert table["runc"]["v1.5.3"] == {"amd64": A, "arm64": B}
    assert table["etcd"]["v3.6.8"] == {"amd64": A, "arm64": B}
    assert sources["kubelet v1.36.3"] == "published checksums (dl.k8s.io)"
    assert sources["containerd v2.3.7"] == "published checksums (github.com)"
    # The written module is the table the collection imports.
    namespace: dict = {}
    exec(compile(table_path.read_text(), str(table_path), "exec"), namespace)  # noqa: S102 (our own output)
    assert namespace["CHECKSUMS"] == table


def _kubespray_tarball(path: Path, data: dict) -> Path:
    body = yaml.safe_dump(data).encode()
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("kubespray/" + tool.KUBESPRAY_FILE)
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))
    return path


def test_kubesprays_checksums_data_is_read_from_its_tarball_and_what_it_lacks_is_listed(tmp_path, capsys):
    tarball = _kubespray_tarball(tmp_path / "kubespray-0123abc.tar.gz", {
        "kubeadm_checksums": {"amd64": {"1.36.3": f"sha256:{A}"}, "arm64": {"1.36.3": f"sha256:{B}"}},
        "runc_checksums": {"amd64": {"1.4.3": f"sha256:{C}"}},
    })
    table_path = tmp_path / "_release_checksums.py"
    assert tool.main(["--kubespray", str(tarball), "--release", "1.36.3", "--table", str(table_path)]) == 1
    table, sources = tool.read_table(table_path)
    assert table == {"kubeadm": {"v1.36.3": {"amd64": A, "arm64": B}}}
    assert sources == {"kubeadm v1.36.3": f"kubespray kubespray-0123abc.tar.gz {tool.KUBESPRAY_FILE}"}
    err = capsys.readouterr().err
    assert "no published sha256 found for runc v1.5.3 amd64" in err and "kubelet v1.36.3 arm64" in err


def test_two_sources_that_disagree_stop_the_tool_and_leave_the_table(tmp_path, capsys):
    _published(tmp_path / "sums")
    tarball = _kubespray_tarball(tmp_path / "ks.tar.gz", {"kubeadm_checksums": {"amd64": {"1.36.3": f"sha256:{C}"}}})
    table_path = tmp_path / "_release_checksums.py"
    assert tool.main(["--kubespray", str(tarball), "--release", "1.36.3", "--table", str(table_path)]) == 1
    before = table_path.read_text()
    assert tool.main(["--published", str(tmp_path / "sums"), "--release", "1.36.3", "--table", str(table_path)]) == 2
    assert table_path.read_text() == before
    assert f"kubeadm v1.36.3 amd64: published checksums (dl.k8s.io) says {A}" in capsys.readouterr().err


def test_the_collections_table_is_what_the_tool_writes_from_it():
    """Nothing edited by hand: rendering the committed table gives the committed file."""
    table, sources = tool.read_table()
    assert tool.render(table, sources) == tool.TABLE.read_text()


@pytest.mark.parametrize("bad", ["sha256:xyz", "md5:" + A, None])
def test_kubespray_values_that_are_no_sha256_are_not_taken(bad):
    table, dummy = tool.from_kubespray({"kubeadm_checksums": {"amd64": {"1.36.3": bad}}}, "ks", [("kubeadm", "v1.36.3", "amd64")])
    assert table == {}


def test_inventory_prints_the_entry_to_paste_for_what_the_table_lacks_and_writes_no_table(tmp_path, capsys):
    _published(tmp_path / "sums")
    table_path = tmp_path / "_release_checksums.py"
    table_path.write_text(tool.render({"kubeadm": {"v1.36.3": {"amd64": A, "arm64": B}}}, {"kubeadm v1.36.3": "test"}))
    written = table_path.read_text()
    assert tool.main(["--published", str(tmp_path / "sums"), "--inventory", "--release", "1.36.3",
                      "--table", str(table_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# upstream's published sha256 of the release files of Kubernetes 1.36.3 the collection pins")
    entry = yaml.safe_load(out)["slipway_artifacts_release_checksums"]
    # Every file of the release but the one the table pins, for both architectures, in the table's own shape.
    assert sorted(entry) == ["cni_plugins", "containerd", "crictl", "etcd", "kubectl", "kubelet", "runc"]
    assert entry["kubelet"] == {"v1.36.3": {"amd64": A, "arm64": B}}
    assert table_path.read_text() == written
    # What it prints is what the model takes, with no problem.
    table = tool.read_table(table_path)[0]
    assert tool.artifacts.inventory_checksums(entry, table) == (entry, [])


def test_inventory_stops_on_a_published_sum_the_table_contradicts(tmp_path, capsys):
    _published(tmp_path / "sums")
    table_path = tmp_path / "_release_checksums.py"
    table_path.write_text(tool.render({"kubeadm": {"v1.36.3": {"amd64": C}}}, {"kubeadm v1.36.3": "test"}))
    assert tool.main(["--published", str(tmp_path / "sums"), "--inventory", "--release", "1.36.3",
                      "--table", str(table_path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"kubeadm v1.36.3 amd64: published checksums (dl.k8s.io) says {A}, test says {C}; nothing was printed" in captured.err
