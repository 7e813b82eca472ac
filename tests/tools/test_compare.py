"""Tests of bench.compare (tools/bench/compare, make compare): the table from the runs' own recaps and times, failed steps, the
ratios, the files_repo repacking, kubespray's inventory and extra vars. No lab, no network."""
from __future__ import annotations

import contextlib
import datetime
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

import lab
from bench.compare import bundle, kubespray, prepare, report, run, steps

ROOT = Path(__file__).resolve().parents[2]

RECAP_OUTPUT = """
TASK [something] ****************************************************************
ok: [cp1]

PLAY RECAP *********************************************************************
cp1                        : ok={cp1_ok}   changed={changed}    unreachable=0    failed=0    skipped=35   rescued=0    ignored=0
w1                         : ok=36   changed=0    unreachable=0    failed=0    skipped=24   rescued=0    ignored=0
"""

FAILED_OUTPUT = """
TASK [kubernetes/preinstall : Stop if kernel version is too low] ***************
fatal: [cp1]: FAILED! => {"msg": "the kernel is too old"}

PLAY RECAP *********************************************************************
cp1                        : ok=12   changed=0    unreachable=0    failed=1    skipped=3    rescued=0    ignored=0
"""


def recap(output: str) -> dict[str, dict[str, int]]:
    """bench.cluster's parser, as run.py uses it."""
    return run.bench.cluster.recap(output)


def fake_clock(*times: float):
    values = iter(times)
    return lambda: next(values)


def command(name: str) -> steps.Command:
    return steps.Command(["ansible-playbook", "-i", "hosts.yml", name], Path("."), {})


# ---------------------------------------------------------------------------- steps and the table


def test_a_step_takes_its_time_and_counts_from_its_own_run(tmp_path):
    output = RECAP_OUTPUT.format(cp1_ok=74, changed=3)
    result = steps.run_step("slipway", "create", [command("site.yml")], tmp_path / "create.log", recap,
                            clock=fake_clock(100.0, 352.5), execute=lambda c: (0, output))
    assert result.ok and result.seconds == pytest.approx(252.5)
    assert result.recap["cp1"]["ok"] == 74 and result.changed == 3
    assert result.per_host() == {"cp1": 109, "w1": 60}
    assert "PLAY RECAP" in (tmp_path / "create.log").read_text(encoding="utf-8")


def test_a_step_of_two_runs_sums_their_recaps_and_times_both(tmp_path):
    outputs = iter([(0, RECAP_OUTPUT.format(cp1_ok=10, changed=0)), (0, RECAP_OUTPUT.format(cp1_ok=20, changed=4))])
    result = steps.run_step("kubespray", "scale", [command("playbooks/facts.yml"), command("scale.yml")],
                            tmp_path / "scale.log", recap, clock=fake_clock(0.0, 90.0), execute=lambda c: next(outputs))
    assert result.seconds == 90.0
    assert result.recap["cp1"]["ok"] == 30 and result.recap["w1"]["ok"] == 72 and result.changed == 4


def test_a_failed_run_is_a_failed_step_with_the_end_of_its_output_and_no_time(tmp_path):
    result = steps.run_step("kubespray", "create", [command("cluster.yml")], tmp_path / "create.log", recap,
                            clock=fake_clock(0.0, 50.0), execute=lambda c: (2, FAILED_OUTPUT))
    assert not result.ok and result.seconds is None
    assert result.error.startswith(f"cluster.yml exited 2 (log {tmp_path / 'create.log'}):")
    assert 'fatal: [cp1]: FAILED! => {"msg": "the kernel is too old"}' in result.error
    assert "50" not in report.table([result])


def test_a_run_without_a_recap_fails_the_step(tmp_path):
    result = steps.run_step("slipway", "rerun", [command("site.yml")], tmp_path / "rerun.log", recap,
                            clock=fake_clock(0.0, 5.0), execute=lambda c: (0, "ERROR! the playbook could not be found"))
    assert not result.ok
    assert "no PLAY RECAP" in result.error and "could not be found" in result.error


def test_the_second_command_is_not_run_after_the_first_failed(tmp_path):
    ran = []

    def execute(c):
        ran.append(c.argv[-1])
        return 4, FAILED_OUTPUT

    steps.run_step("kubespray", "scale", [command("playbooks/facts.yml"), command("scale.yml")], tmp_path / "s.log",
                   recap, execute=execute)
    assert ran == ["playbooks/facts.yml"]


def test_the_table_sets_both_installers_side_by_side_with_the_ratio():
    ours = report.StepResult("slipway", "create", 200.0, recap(RECAP_OUTPUT.format(cp1_ok=74, changed=30)))
    theirs = report.StepResult("kubespray", "create", 500.0, recap(RECAP_OUTPUT.format(cp1_ok=400, changed=90)))
    rerun = report.StepResult("slipway", "rerun", 40.0, recap(RECAP_OUTPUT.format(cp1_ok=74, changed=0)))
    lines = report.table([ours, theirs, rerun]).splitlines()
    assert lines[2] == "| create (5 nodes) | 200 s | 500 s | 2.50 | 60–109 (30 changed) | 60–435 (90 changed) |"
    assert lines[3] == "| no-op rerun | 40 s | not run | – | 60–109 (0 changed) | – |"


def test_the_range_of_task_results_is_over_the_nodes_not_the_controller():
    counts = recap(RECAP_OUTPUT.format(cp1_ok=74, changed=3))
    counts["localhost"] = {"ok": 2, "changed": 0, "skipped": 1, "failed": 0}
    line = report.table([report.StepResult("slipway", "rerun", 31.0, counts)]).splitlines()[2]
    assert line == "| no-op rerun | 31 s | not run | – | 60–109 (3 changed) | – |"
    assert "| slipway | rerun | localhost | 2 | 0 | 1 | 0 | 3 |" in report.host_table([report.StepResult(
        "slipway", "rerun", 31.0, counts)])


def test_a_failed_step_shows_as_failed_never_as_a_figure():
    ours = report.StepResult("slipway", "upgrade", 300.0, recap(RECAP_OUTPUT.format(cp1_ok=50, changed=9)),
                             failed_requests=0, requests=1500)
    theirs = report.failure("kubespray", "upgrade", FAILED_OUTPUT, "upgrade-cluster.yml exited 2:")
    line = report.table([ours, theirs]).splitlines()[2]
    assert line == ("| upgrade one minor | 300 s | **failed** | – | 60–85 (9 changed); 0 of 1500 requests failed | – |")
    listed = report.failures([ours, theirs])
    assert "kubespray, upgrade one minor: failed" in listed and "the kernel is too old" in listed


@pytest.mark.parametrize(("kubespray_s", "slipway_s", "expected"), [
    (300.0, 200.0, "1.50"), (100.0, 200.0, "0.50"), (None, 200.0, "–"), (300.0, None, "–"),
])
def test_the_ratio_is_kubespray_over_slipway_and_only_for_two_figures(kubespray_s, slipway_s, expected):
    theirs = report.StepResult("kubespray", "create", kubespray_s, error="" if kubespray_s else "failed")
    ours = report.StepResult("slipway", "create", slipway_s, error="" if slipway_s else "failed")
    assert report.ratio(theirs, ours) == expected


def test_the_document_is_dated_with_the_machine_both_commits_and_the_load():
    results = [report.StepResult("slipway", "create", 200.0, recap(RECAP_OUTPUT.format(cp1_ok=74, changed=1)))]
    text = report.document(results, when=datetime.datetime(2026, 11, 27, 18, 0), machine=report.Machine(2, 23.4),
                           slipway_commit="1d15971", kubespray_commit="46dbdd399",
                           load={"slipway": (0.5, 7.25)}, versions=("1.36.5", "1.37.1"))
    assert text.startswith("### 2026-11-27 18:00 UTC, `make compare`")
    assert "2 cores, 23 GiB; slipway 1d15971, kubespray 46dbdd399" in text
    assert "slipway 0.5 at the start, 7.2 at the end" in text
    assert "| slipway | create | cp1 | 74 | 1 | 35 | 0 | 109 |" in text


def _python_command(output: str, code: int = 0) -> steps.Command:
    script = f"import sys; print({output!r}); sys.exit({code})"
    return steps.Command([sys.executable, "-c", script, "site.yml"], Path("."), dict(os.environ))


def test_measure_runs_real_commands_and_marks_the_steps_after_a_failed_create_not_run(tmp_path):
    run_steps = {step: [_python_command(FAILED_OUTPUT, 2 if step == "create" else 0)] for step in report.STEPS}
    results = run.measure("kubespray", run_steps, {}, tmp_path, lambda: contextlib.nullcontext([]))
    assert [r.step for r in results] == list(report.STEPS)
    assert results[0].error.startswith("site.yml exited 2")
    assert all(not r.ran and r.error == "not run: the create step failed" for r in results[1:])
    assert report.table(results).splitlines()[-1] == "| reset | not run | not run | – | – | – |"


def test_measure_counts_the_failed_requests_of_the_upgrade(tmp_path):
    run_steps = {step: [_python_command(RECAP_OUTPUT.format(cp1_ok=5, changed=0))] for step in report.STEPS}

    @contextlib.contextmanager
    def client():
        counts: list[dict] = []
        yield counts
        counts.append({"requests": 900, "failures": 3, "first_failures": []})

    results = run.measure("slipway", run_steps, {}, tmp_path, client)
    upgrade = next(r for r in results if r.step == "upgrade")
    assert upgrade.ok and (upgrade.failed_requests, upgrade.requests) == (3, 900)
    assert all(r.ok for r in results)


def test_measure_reports_a_failed_preparation_as_the_steps_failure(tmp_path):
    run_steps = {step: [_python_command(RECAP_OUTPUT.format(cp1_ok=5, changed=0))] for step in report.STEPS}

    def broken():
        raise RuntimeError("lab.py up --cluster cmp-kubespray failed: no free lab subnet")

    results = run.measure("kubespray", run_steps, {"scale": broken}, tmp_path, lambda: contextlib.nullcontext([]))
    scale = next(r for r in results if r.step == "scale")
    assert not scale.ok and "no free lab subnet" in scale.error
    remove = next(r for r in results if r.step == "remove")
    assert not remove.ran and remove.error == "not run: the scale step failed"
    assert next(r for r in results if r.step == "upgrade").ok


# ---------------------------------------------------------------------------- the bundle in files_repo layout


def _fake_bundle(root: Path, containerd: bool = True) -> dict:
    names = ["kubeadm", "kubelet", "kubectl", "crictl", "etcd", "etcdctl", "etcdutl", "cni/bridge", "cni/loopback"]
    if containerd:
        names += ["containerd", "containerd-shim-runc-v2", "ctr", "runc"]
    binaries = []
    for name in names:
        for top in (root, root / "releases" / "v1.36.5"):
            path = top / "bin" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(f"#!{name}\n".encode())
        binaries.append({"path": f"bin/{name}", "component": name, "sha256": "", "size": 0})
    components = {"kubernetes": {"version": "v1.37.1"}, "etcd": {"version": "v3.6.8", "image_tag": "3.6.8-0"},
                  "cni_plugins": {"version": "v1.9.1"}, "crictl": {"version": "v1.37.0"},
                  "metrics_server": {"version": "v0.9.0"}}
    if containerd:
        components |= {"containerd": {"version": "v2.3.7"}, "runc": {"version": "v1.5.2"}}
    images = [{"name": n, "ref": r, "path": f"images/{n}.tar"} for n, r in (
        ("pause", "registry.k8s.io/pause:3.10.2"), ("coredns", "registry.k8s.io/coredns/coredns:v1.14.2"),
        ("etcd", "registry.k8s.io/etcd:3.6.8-0"), ("flannel", "ghcr.io/flannel-io/flannel:v0.28.10"),
        ("flannel-cni-plugin", "ghcr.io/flannel-io/flannel-cni-plugin:v0.9.1-cni-plugins"),
        ("busybox", "docker.io/library/busybox:1.35.0"))]
    return {"kubernetes_version": "v1.37.1", "components": components, "binaries": binaries, "images": images,
            "releases": [{"kubernetes_version": "v1.36.5", "components": components, "images": images,
                          "binaries": [dict(b, path=f"releases/v1.36.5/{b['path']}") for b in binaries]}]}


def _members(path: Path) -> dict[str, bytes | None]:
    with tarfile.open(path) as tar:
        return {m.name: (tar.extractfile(m).read() if m.isfile() else None) for m in tar.getmembers()}


def test_releases_are_read_top_first_and_the_upgrade_goes_from_the_older(tmp_path):
    manifest = _fake_bundle(tmp_path)
    found = bundle.releases(manifest)
    assert list(found) == ["1.37.1", "1.36.5"]
    older, current = bundle.upgrade_pair(manifest)
    assert (older.kubernetes, current.kubernetes) == ("1.36.5", "1.37.1")
    assert older.binaries["cni/bridge"] == "releases/v1.36.5/bin/cni/bridge"
    assert current.versions["etcd"] == "3.6.8" and current.image_tags["etcd"] == "3.6.8-0"


def test_a_bundle_of_one_release_cannot_be_upgraded(tmp_path):
    manifest = _fake_bundle(tmp_path)
    del manifest["releases"]
    with pytest.raises(bundle.BundleError, match="one Kubernetes release"):
        bundle.upgrade_pair(manifest)


def test_a_bundle_without_containerd_is_refused_with_the_reason(tmp_path):
    release = bundle.releases(_fake_bundle(tmp_path, containerd=False))["1.37.1"]
    with pytest.raises(bundle.BundleError, match="has no containerd, runc: kubespray installs the container runtime"):
        bundle.files_repo(tmp_path, release, tmp_path / "files")


def test_the_files_are_repacked_in_the_upstream_layouts(tmp_path):
    release = bundle.releases(_fake_bundle(tmp_path))["1.37.1"]
    nerdctl = tmp_path / "nerdctl"
    nerdctl.write_bytes(b"#!nerdctl\n")
    served = bundle.files_repo(tmp_path, release, tmp_path / "files", ("2.2.2", nerdctl))
    files = tmp_path / "files"
    assert served["kubeadm"].path == "dl.k8s.io/release/v1.37.1/bin/linux/amd64/kubeadm"
    assert (files / served["kubelet"].path).read_bytes() == b"#!kubelet\n"
    assert _members(files / served["etcd"].path) == {
        "etcd-v3.6.8-linux-amd64": None, "etcd-v3.6.8-linux-amd64/etcd": b"#!etcd\n",
        "etcd-v3.6.8-linux-amd64/etcdctl": b"#!etcdctl\n", "etcd-v3.6.8-linux-amd64/etcdutl": b"#!etcdutl\n"}
    assert served["cni"].path.endswith("v1.9.1/cni-plugins-linux-amd64-v1.9.1.tgz")
    assert _members(files / served["cni"].path) == {".": None, "./bridge": b"#!cni/bridge\n",
                                                    "./loopback": b"#!cni/loopback\n"}
    assert _members(files / served["crictl"].path) == {"crictl": b"#!crictl\n"}
    assert served["containerd"].path == ("github.com/containerd/containerd/releases/download/v2.3.7/"
                                         "containerd-2.3.7-linux-amd64.tar.gz")
    assert _members(files / served["containerd"].path) == {
        "bin": None, "bin/containerd": b"#!containerd\n", "bin/containerd-shim-runc-v2": b"#!containerd-shim-runc-v2\n",
        "bin/ctr": b"#!ctr\n"}
    assert served["runc"].path == "github.com/opencontainers/runc/releases/download/v1.5.2/runc.amd64"
    assert _members(files / served["nerdctl"].path) == {"nerdctl": b"#!nerdctl\n"}
    for item in served.values():
        assert item.checksum == "sha256:" + hashlib.sha256((files / item.path).read_bytes()).hexdigest()


def test_repacking_again_gives_the_same_checksums(tmp_path):
    release = bundle.releases(_fake_bundle(tmp_path))["1.36.5"]
    first = bundle.files_repo(tmp_path, release, tmp_path / "files")
    os.utime(tmp_path / release.binaries["etcd"], (1, 1))
    assert bundle.files_repo(tmp_path, release, tmp_path / "files") == first
    with gzip.open(tmp_path / "files" / first["crictl"].path) as stream:
        assert stream.read(1)  # a real gzip stream


# ---------------------------------------------------------------------------- kubespray's inventory and extra vars


LAB_INVENTORY = {"all": {
    "vars": {"slipway_lab_cluster": "cmp-kubespray", "control_plane_kubelet_configuration": {"failCgroupV1": False}},
    "hosts": {name: {"ansible_host": ip, "ip": ip, "ansible_user": "root"}
              for name, ip in (("cp1", "10.88.101.11"), ("w1", "10.88.101.12"), ("w3", "10.88.101.13"))},
    "children": {"kube_control_plane": {"hosts": {"cp1": {}}}, "kube_node": {"hosts": {"w1": {}, "w3": {}}},
                 "etcd": {"hosts": {"cp1": {}}}, "k8s_cluster": {"children": {"kube_control_plane": {}, "kube_node": {}}}},
}}


def test_the_inventory_has_the_lab_hosts_and_groups_and_none_of_slipways_variables():
    document = kubespray.inventory(LAB_INVENTORY, leave_out={"w3"})
    assert "vars" not in document["all"]
    assert set(document["all"]["hosts"]) == {"cp1", "w1"}
    assert document["all"]["hosts"]["cp1"] == {"ansible_host": "10.88.101.11", "ip": "10.88.101.11",
                                               "ansible_user": "root"}
    assert document["all"]["children"]["kube_node"] == {"hosts": {"w1": None}}
    assert document["all"]["children"]["k8s_cluster"] == {"children": {"kube_control_plane": None, "kube_node": None}}
    assert set(kubespray.inventory(LAB_INVENTORY, leave_out=set())["all"]["children"]["kube_node"]["hosts"]) == {"w1", "w3"}


def _settings(tmp_path: Path, version: str = "1.36.5") -> tuple[list[kubespray.Setting], dict]:
    release = bundle.releases(_fake_bundle(tmp_path))[version]
    release.images["metrics-server"] = "registry.k8s.io/metrics-server/metrics-server:v0.9.0"
    nerdctl = tmp_path / "nerdctl"
    nerdctl.write_bytes(b"#!nerdctl\n")
    served = bundle.files_repo(tmp_path, release, tmp_path / "files", ("2.2.2", nerdctl))
    return kubespray.settings(release, served, "http://10.88.0.1:8780", "10.88.0.1:5000"), served


def test_the_extra_vars_take_the_bundles_versions_and_the_served_checksums(tmp_path):
    found, served = _settings(tmp_path)
    extra = kubespray.extra_vars(found)
    assert extra["kube_version"] == "1.36.5"
    assert extra["kubeadm_checksums"] == {"amd64": {"1.36.5": served["kubeadm"].checksum}}
    assert extra["containerd_version"] == "2.3.7" and extra["containerd_archive_checksum"] == served["containerd"].checksum
    assert extra["nerdctl_archive_checksum"] == served["nerdctl"].checksum and extra["nerdctl_version"] == "2.2.2"
    assert extra["etcd_image_repo"] == "10.88.0.1:5000/etcd" and extra["etcd_image_tag"] == "3.6.8-0"
    assert extra["flannel_image_repo"] == "10.88.0.1:5000/flannel-io/flannel"
    assert extra["flannel_cni_version"] == "0.9.1-cni-plugins" and extra["coredns_version"] == "1.14.2"
    assert extra["dl_k8s_io_url"] == "http://10.88.0.1:8780/dl.k8s.io"
    assert extra["containerd_registries_mirrors"][0]["mirrors"][0] == {
        "host": "http://10.88.0.1:5000", "capabilities": ["pull", "resolve"], "skip_verify": True}
    # containerd samples containers' CPU use as slipway's does (the containerd role's default).
    assert extra["containerd_extra_runtime_args"] == {"restrict_oom_score_adj": True, "stats_collect_period": "10s"}
    assert extra["modinfo_br_netfilter"] == {"rc": 1}


def test_every_setting_has_a_reason_in_the_table(tmp_path):
    found = _settings(tmp_path)[0]
    lines = kubespray.settings_table(found).splitlines()
    assert lines[:2] == ["| setting | value | why |", "| --- | --- | --- |"]
    assert len(lines) == len(found) + 2
    for setting, line in zip(found, lines[2:], strict=True):
        assert line.startswith(f"| `{setting.name}` |") and setting.reason and line.endswith(f"| {setting.reason} |")
    assert "| `kubeadm_ignore_preflight_errors` | `[SystemVerification]` |" in "\n".join(lines)


def test_a_setting_given_twice_is_refused(tmp_path):
    with pytest.raises(ValueError, match="settings given twice: kube_version"):
        kubespray.extra_vars([kubespray.Setting("kube_version", "1", "a"), kubespray.Setting("kube_version", "2", "b")])


def test_the_written_files_are_yaml_that_reads_back(tmp_path):
    found = _settings(tmp_path)[0]
    path = kubespray.write_yaml(tmp_path / "extra.yml", kubespray.extra_vars(found))
    assert yaml.safe_load(path.read_text(encoding="utf-8")) == kubespray.extra_vars(found)


@pytest.mark.parametrize(("ref", "mirrored"), [
    ("registry.k8s.io/kube-proxy:v1.36.5", "10.88.0.1:5000/kube-proxy:v1.36.5"),
    ("registry.k8s.io/coredns/coredns:v1.14.2", "10.88.0.1:5000/coredns/coredns:v1.14.2"),
    ("docker.io/library/busybox:1.35.0", "10.88.0.1:5000/library/busybox:1.35.0"),
])
def test_an_image_keeps_its_path_and_tag_in_the_registry(ref, mirrored):
    assert kubespray.mirror_ref("10.88.0.1:5000", ref) == mirrored


def test_kubespray_runs_its_own_playbooks_with_become_and_the_extra_vars(tmp_path):
    scale = steps.kubespray_commands("scale", playbook="ap", inventory=tmp_path / "h.yml", source=tmp_path, env={},
                                     added="w3", extra=tmp_path / "x.yml")
    base = ["ap", "-i", str(tmp_path / "h.yml"), "--become", "--become-user=root", "-e", f"@{tmp_path / 'x.yml'}"]
    assert [c.argv for c in scale] == [[*base, "playbooks/facts.yml"], [*base, "scale.yml", "--limit=w3"]]
    remove = steps.kubespray_commands("remove", playbook="ap", inventory=tmp_path / "h.yml", source=tmp_path, env={},
                                      added="w3", extra=tmp_path / "x.yml")
    assert remove[0].argv[-5:] == ["remove-node.yml", "-e", "node=w3", "-e", "skip_confirmation=yes"]


# ---------------------------------------------------------------------------- cached build steps


def test_nerdctls_nested_test_module_gets_a_go_mod(tmp_path):
    (tmp_path / "go.mod").write_text("module github.com/containerd/nerdctl/v2\n\nreplace "
                                     "github.com/containerd/nerdctl/mod/tigron v0.0.0 => ./mod/tigron\n")
    prepare._nested_modules(tmp_path)  # pylint: disable=protected-access
    assert (tmp_path / "mod" / "tigron" / "go.mod").read_text() == "module github.com/containerd/nerdctl/mod/tigron\n"


def test_the_haproxy_image_is_a_docker_archive_of_one_layer(tmp_path):
    layer = tmp_path / "layer.tar"
    with tarfile.open(layer, "w") as tar:
        data = b"#!haproxy\n"
        info = tarfile.TarInfo("usr/sbin/haproxy")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    out = tmp_path / "haproxy.tar"
    prepare.write_docker_archive(layer, "docker.io/library/haproxy:debian", ["/usr/sbin/haproxy"], out)
    members = _members(out)
    manifest = json.loads(members["manifest.json"])
    assert manifest[0]["RepoTags"] == ["docker.io/library/haproxy:debian"]
    config = json.loads(members[manifest[0]["Config"]])
    digest = hashlib.sha256(members[manifest[0]["Layers"][0]]).hexdigest()
    assert config["rootfs"]["diff_ids"] == [f"sha256:{digest}"]
    assert config["config"]["Entrypoint"] == ["/usr/sbin/haproxy"]


def test_kubesprays_archive_is_unpacked_once_with_its_commit(tmp_path):
    tarball = tmp_path / "kubespray.tar.gz"
    with tarfile.open(tarball, "w:gz", format=tarfile.PAX_FORMAT,
                      pax_headers={"comment": "46dbdd3994b32640bcd806b0097f50e8fdf1d514"}) as tar:
        data = b"ansible==11.13.0\n"
        info = tarfile.TarInfo("kubespray/requirements.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    source, commit = run.unpack(tarball, tmp_path / "src")
    assert commit == "46dbdd399" and (source / "requirements.txt").read_bytes() == b"ansible==11.13.0\n"
    (source / "marker").write_text("kept")
    assert run.unpack(tarball, tmp_path / "src")[0] == source and (source / "marker").exists()


@pytest.mark.parametrize("name, kind, link", [
    ("kubespray/../../escaped.txt", tarfile.REGTYPE, ""),
    ("kubespray/roles/link", tarfile.SYMTYPE, "../../../outside"),
    ("kubespray/roles/hard", tarfile.LNKTYPE, "../outside"),
    ("kubespray/null", tarfile.CHRTYPE, ""),
])
def test_an_archive_member_outside_its_directory_is_refused_and_nothing_unpacked(tmp_path, name, kind, link):
    tarball = tmp_path / "kubespray.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        info = tarfile.TarInfo(name)
        info.type, info.linkname = kind, link
        tar.addfile(info, io.BytesIO(b""))
    with pytest.raises(tarfile.TarError):
        run.unpack(tarball, tmp_path / "src")
    assert not (tmp_path / "escaped.txt").exists() and not list((tmp_path / "src").rglob("*"))


def test_a_relative_link_inside_the_archive_is_unpacked(tmp_path):
    tarball = tmp_path / "kubespray.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        info = tarfile.TarInfo("kubespray/roles/link")
        info.type, info.linkname = tarfile.SYMTYPE, "../README.md"
        tar.addfile(info)
        readme = tarfile.TarInfo("kubespray/README.md")
        tar.addfile(readme, io.BytesIO(b""))
    source = run.unpack(tarball, tmp_path / "src")[0]
    assert os.readlink(source / "roles" / "link") == "../README.md"


def test_the_docs_table_names_the_same_settings_as_a_run_writes(tmp_path):
    found = _settings(tmp_path)[0]
    assert [s.name for s in kubespray.symbolic()] == [s.name for s in found]
    assert "GATEWAY:5000" in kubespray.settings_table(kubespray.symbolic())
    assert "| `` |" not in kubespray.settings_table(kubespray.symbolic()), "every setting shows its value"


def test_a_refused_extra_vars_file_fails_create_and_no_other_step_runs():
    failed = report.StepResult("kubespray", "create", error="kubespray's defaults and checks refuse extra-1.37.1.yml")
    results = run.not_run_after("kubespray", failed)
    assert [r.step for r in results] == ["create", "rerun", "scale", "remove", "upgrade", "reset"]
    assert results[0] is failed and all(not r.ran for r in results[1:])


def test_the_check_runs_on_localhost_only_and_without_ssh():
    from bench.compare import check

    document = check.inventory()
    assert list(document["all"]["hosts"]) == ["localhost"]
    assert document["all"]["hosts"]["localhost"]["ansible_connection"] == "local"
    assert all(group["hosts"] == {"localhost": None} for name, group in document["all"]["children"].items()
               if name != "k8s_cluster")


def test_kubesprays_fact_cache_starts_empty_in_each_run(tmp_path):
    stale = tmp_path / "facts" / "cp1"
    stale.parent.mkdir()
    stale.write_text('{"ansible_default_ipv4": {"address": "10.88.100.11"}}')
    assert run.fresh_fact_cache(tmp_path / "facts") == tmp_path / "facts"
    assert list((tmp_path / "facts").iterdir()) == []


def test_the_inventory_from_what_lab_py_writes_keeps_the_added_worker_out_until_it_is_added():
    specs = ["cp1:kube_control_plane,etcd", "w1:kube_node", f"{run.ADDED}:"]
    nodes = lab.parse_nodes(specs)
    for index, node in enumerate(nodes.values()):
        node.ip = f"10.88.100.{11 + index}"
    text = lab.render_inventory(lab.Cluster("cmp-kubespray", "10.88.100.0/24", nodes), Path("/k/id"), {})
    written = yaml.safe_load(text.split("---\n", 1)[1])
    document = kubespray.inventory(written, leave_out={run.ADDED})
    assert set(document["all"]["hosts"]) == {"cp1", "w1"}
    assert document["all"]["hosts"]["w1"]["ip"] == "10.88.100.12"
    assert document["all"]["hosts"]["w1"]["ansible_ssh_private_key_file"] == "/k/id"
    assert {g: set(c["hosts"]) for g, c in document["all"]["children"].items() if g != "k8s_cluster"} == {
        "kube_control_plane": {"cp1"}, "kube_node": {"w1"}, "etcd": {"cp1"}}
    # What the upgrade's client loop reads from it (bench.cluster serve_web): the first worker and its address.
    assert next(iter(document["all"]["children"]["kube_node"]["hosts"])) == "w1"


def test_docs_kubespray_holds_the_settings_table_as_the_code_prints_it():
    docs = (ROOT / "docs" / "kubespray.md").read_text(encoding="utf-8")
    assert kubespray.settings_table(kubespray.symbolic()) in docs


@pytest.fixture(name="replaced")
def fixture_replaced(tmp_path, monkeypatch):
    """The lab, the services, the builds and the playbooks replaced; what was called is recorded."""
    bundle_dir = tmp_path / "bundle"
    manifest = _fake_bundle(bundle_dir)
    (bundle_dir / "manifest.yml").write_text(yaml.safe_dump(manifest), encoding="utf-8")
    tarball = tmp_path / "kubespray.tar.gz"
    with tarfile.open(tarball, "w:gz", format=tarfile.PAX_FORMAT, pax_headers={"comment": "46dbdd3994b3"}) as tar:
        data = b"ansible==11.13.0\n"
        info = tarfile.TarInfo("kubespray/requirements.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    calls: list[str] = []

    def fake_lab(*argv):
        calls.append(" ".join(argv[:3]))
        if argv[0] == "up":
            inventory = Path(argv[argv.index("--inventory") + 1])
            nodes = lab.parse_nodes(a.split("=", 1)[1] for a in argv if a.startswith("--node="))
            for index, node in enumerate(nodes.values()):
                node.ip = f"10.88.100.{11 + index}"
            inventory.parent.mkdir(parents=True, exist_ok=True)
            inventory.write_text(lab.render_inventory(lab.Cluster(argv[2], "10.88.100.0/24", nodes), Path("/k"), {}))

    @contextlib.contextmanager
    def fake_service(*args):
        calls.append(f"start {args[-1].name}")
        yield "10.88.0.1:5000" if "registry" in args[-1].name else "http://10.88.0.1:8780"
        calls.append(f"stop {args[-1].name}")

    executed: list[tuple[str, ...]] = []

    inventories: dict[str, set[str]] = {}

    def fake_execute(command):
        executed.append(tuple(command.argv))
        playbook = next(a for a in command.argv[3:] if a.endswith(".yml") and not a.startswith("@"))
        hosts = yaml.safe_load(Path(command.argv[2]).read_text(encoding="utf-8"))["all"]
        inventories[f"{'kubespray' if '--become' in command.argv else 'slipway'} {playbook}"] = {
            f"{name}:{group}" for group, members in hosts["children"].items()
            for name in ((members or {}).get("hosts") or {})} | set(hosts["hosts"])
        failing = "upgrade-cluster.yml" in command.argv
        return (2, FAILED_OUTPUT) if failing else (0, RECAP_OUTPUT.format(cp1_ok=9, changed=0))

    monkeypatch.setattr(run, "lab", fake_lab)
    monkeypatch.setattr(run, "diagnose", lambda cluster, node, out: calls.append(f"diagnose {cluster} {node} {out.name}")
                        or out)
    monkeypatch.setattr(run.services, "file_server", fake_service)
    monkeypatch.setattr(run.services, "registry", fake_service)
    monkeypatch.setattr(run.services, "gateway", lambda: "10.88.0.1")
    monkeypatch.setattr(run, "fill_registry", lambda *args: calls.append("fill") or 12)
    monkeypatch.setattr(run.prepare, "host_packages", lambda log: [])
    monkeypatch.setattr(run.prepare, "kubespray_venv", lambda source, cache, log: tmp_path / "venv/bin/ansible-playbook")
    nerdctl = tmp_path / "nerdctl"
    nerdctl.write_bytes(b"#!nerdctl\n")
    monkeypatch.setattr(run.prepare, "nerdctl", lambda cache, log: nerdctl)
    monkeypatch.setattr(run.prepare, "haproxy_image", lambda cache, log: tmp_path / "haproxy.tar")
    monkeypatch.setattr(run.prepare, "cache_dir", lambda: tmp_path / "cache")
    monkeypatch.setattr(run.check, "downloads", lambda *args: calls.append(f"check {args[2].name}") or {})
    monkeypatch.setattr(steps, "_execute", fake_execute)

    class Client:
        def stop(self):
            return {"requests": 100, "failures": 0, "first_failures": []}

    monkeypatch.setattr(run.bench.cluster, "serve_web", lambda inventory, manifest, logs, pull_policy: calls.append(
        f"web {Path(inventory).parent.name} {next(i['ref'] for i in manifest['images'] if i['name'] == 'busybox')} "
        f"{pull_policy}") or Client())
    return {"calls": calls, "executed": executed, "bundle": bundle_dir, "tarball": tarball, "work": tmp_path / "work",
            "inventories": inventories}


def test_a_whole_comparison_with_the_lab_and_the_playbooks_replaced(replaced, tmp_path):
    """The glue of run.compare: both installers, their inventories, extra vars, services and steps, in order."""
    calls, executed, bundle_dir, tarball = (replaced[k] for k in ("calls", "executed", "bundle", "tarball"))
    opts = run.Options(bundle=bundle_dir, nodes=["cp1:kube_control_plane,etcd", "w1:kube_node"], lab_vars=[],
                       tarball=tarball, work=tmp_path / "work")
    results, section = run.compare(opts)

    assert [(r.installer, r.step, r.ok) for r in results] == [
        ("slipway", s, True) for s in report.STEPS] + [("kubespray", s, s != "upgrade") for s in report.STEPS]
    assert calls[:2] == ["down --cluster cmp-slipway", "up --cluster cmp-slipway"]
    # slipway's nodes have the bundle's busybox imported; kubespray's pull it from the registry
    assert "web slipway docker.io/library/busybox:1.35.0 Never" in calls
    assert "web kubespray 10.88.0.1:5000/library/busybox:1.35.0 IfNotPresent" in calls
    # kubespray's failed upgrade: what its first control plane says is kept before the nodes go
    assert "diagnose cmp-kubespray cp1 kubespray-upgrade-nodes.log" in calls
    assert calls.index("diagnose cmp-kubespray cp1 kubespray-upgrade-nodes.log") < len(calls) - 1  # before the last down
    # the added worker is in slipway's inventory (preflight refuses a host in no group) only from scale to remove
    inventories = replaced["inventories"]
    for playbook in ("site.yml", "playbooks/upgrade.yml", "playbooks/reset.yml"):
        assert "w3" not in inventories[f"slipway {playbook}"], playbook
    assert {"w3", "w3:kube_node"} <= inventories["slipway playbooks/scale.yml"]
    assert {"w3", "w3:kube_node"} <= inventories["slipway playbooks/remove_node.yml"]
    assert "w3" not in inventories["kubespray cluster.yml"] and "w3:kube_node" in inventories["kubespray scale.yml"]
    assert calls.index("check extra-1.36.5.yml") < calls.index("up --cluster cmp-kubespray")
    assert calls[-3:] == ["stop registry.log", "stop files.log", "down --cluster cmp-kubespray"]
    kubespray_runs = [argv for argv in executed if "--become" in argv]
    assert [next(a for a in argv[7:] if a.endswith(".yml")) for argv in kubespray_runs] == [
        "cluster.yml", "cluster.yml", "playbooks/facts.yml", "scale.yml", "remove-node.yml", "upgrade-cluster.yml",
        "reset.yml"]
    assert kubespray_runs[-2][6] == f"@{tmp_path / 'work' / 'kubespray' / 'extra-1.37.1.yml'}"
    assert kubespray_runs[0][6] == f"@{tmp_path / 'work' / 'kubespray' / 'extra-1.36.5.yml'}"
    written = yaml.safe_load((tmp_path / "work" / "kubespray" / "hosts.yml").read_text())
    assert set(written["all"]["hosts"]) == {"cp1", "w1"}  # the added worker out again for the upgrade
    extra = yaml.safe_load((tmp_path / "work" / "kubespray" / "extra-1.37.1.yml").read_text())
    assert extra["kube_version"] == "1.37.1" and extra["dl_k8s_io_url"] == "http://10.88.0.1:8780/dl.k8s.io"
    upgrade = next(line for line in section.splitlines() if line.startswith("| upgrade one minor |"))
    assert upgrade.split(" | ")[2:4] == ["**failed**", "–"] and "0 of 100 requests failed" in upgrade
    assert "kubespray, upgrade one minor: failed" in section and "the kernel is too old" in section
    assert "kubespray 46dbdd399" in section


def test_make_compare_prints_the_section_and_fails_when_a_step_failed(replaced, capsys):
    from bench.compare import __main__ as cli

    code = cli.main(["--kubespray", str(replaced["tarball"]), "--work", str(replaced["work"]), "run",
                     "--bundle", str(replaced["bundle"]), "--node", "cp1:kube_control_plane,etcd", "--node", "w1:kube_node"])
    out = capsys.readouterr().out
    assert code == 1
    assert "Load average (1 min): slipway " in out and "| step | slipway | kubespray |" in out
    assert "kubespray, upgrade one minor: failed" in out
    assert (replaced["work"] / "compare.md").read_text(encoding="utf-8") in out


def test_only_the_steps_asked_for_and_what_they_need_run(monkeypatch):
    ran: list[str] = []

    def fake_run_step(installer, step, commands, log, recap):  # pylint: disable=unused-argument
        ran.append(step)
        return report.StepResult(installer, step, 1.0, {"cp1": {"ok": 1}})

    monkeypatch.setattr(run.steps, "run_step", fake_run_step)
    results = run.measure("kubespray", {s: [] for s in report.STEPS}, {}, Path("/nonexistent"),
                          upgrade_client=None, only=("remove",))
    assert ran == ["create", "scale", "remove"]
    assert [(r.step, r.ran, r.error) for r in results if not r.ran] == [
        (step, False, "not run: not asked for (--step)") for step in ("rerun", "upgrade", "reset")]
