import argparse
import io
import os
import subprocess
import sys

from bundler import cli, manifest, steps
from bundler.result import BackendResult

BUILD_PY = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "tools", "bundle", "build.py")


class FakeBackend:
    name = "source"
    kubernetes_version = "v1.37.1"

    def __init__(self, tmp_path, out):
        self.tmp_path = tmp_path
        self.steps = steps.Steps(str(tmp_path / "cache"), out)
        self.builds = 0
        self.version_input = "v1.37.1"

    def inputs(self):
        return {"kubernetes": self.version_input}

    def build(self):
        self.builds += 1
        self.steps = steps.Steps(str(self.tmp_path / "cache"), io.StringIO())
        src = self.tmp_path / "src"
        src.mkdir(exist_ok=True)
        (src / "kubeadm").write_bytes(b"kubeadm")
        (src / "pause.tar").write_bytes(b"pause image")
        self.steps.run("one", "k1", lambda tmp: None)
        result = BackendResult(self.kubernetes_version, "source")
        result.add_binary("bin/kubeadm", str(src / "kubeadm"), "kubernetes")
        result.add_image("images/pause.tar", str(src / "pause.tar"), "pause",
                         "registry.k8s.io/pause:3.10.2", "pause")
        result.components = {"kubernetes": {"version": "v1.37.1", "source": "test"}}
        return result


def fake_operator_image(tmp_path):
    """pyimage.build's stand-in: the operator image's archive, ref and component, with no Debian or wheels."""
    def build(step_runner, cache_dir, **kwargs):
        archive = tmp_path / "src" / "operator.tar"
        archive.parent.mkdir(exist_ok=True)
        archive.write_bytes(b"operator image")
        return str(archive), "localhost/slipway/operator:0.1.0", {"version": "0.1.0", "source": "test"}
    return build


def fake_monitoring(tmp_path, calls=None):
    """monitoring.build's stand-in: one monitoring image and its component, counting its calls."""
    def build(backend):
        if calls is not None:
            calls.append(backend.kubernetes_version)
        archive = tmp_path / "src" / "prometheus.tar"
        archive.parent.mkdir(exist_ok=True)
        archive.write_bytes(b"prometheus image")
        return ([("images/prometheus.tar", str(archive), "prometheus", "docker.io/prom/prometheus:v2.39.1",
                  "kubesphere_prometheus")],
                {"kubesphere_prometheus": {"version": "v2.39.1", "kubesphere_pin": "v2.39.1", "source": "test"}})
    return build


def fake_kscore(tmp_path, calls=None):
    """kscore.build's stand-in: KubeSphere's ks-apiserver image and its component, counting its calls."""
    def build(backend, sources=None):
        if calls is not None:
            calls.append((backend.kubernetes_version, sources))
        archive = tmp_path / "src" / "ks-apiserver.tar"
        archive.parent.mkdir(exist_ok=True)
        archive.write_bytes(b"ks-apiserver image")
        return ([("images/ks-apiserver.tar", str(archive), "ks-apiserver", "docker.io/kubesphere/ks-apiserver:v3.4.1",
                  "kubesphere_ks_apiserver")],
                {"kubesphere_ks_apiserver": {"version": "v3.4.1", "source": "test"}})
    return build


def patch_kscore(monkeypatch, tmp_path, calls=None):
    """KubeSphere's sources: two small archives instead of shared/reference/kubesphere."""
    sources = tmp_path / "kubesphere-sources"
    sources.mkdir(exist_ok=True)
    for name in (cli.versions.KUBESPHERE_CORE["kubesphere_archive"], cli.versions.KUBESPHERE_CORE["console_archive"]):
        (sources / name).write_bytes(name.encode())
    monkeypatch.setenv(cli.kscore.SOURCES_ENV, str(sources))
    monkeypatch.setattr(cli.kscore, "build", fake_kscore(tmp_path, calls))
    return str(sources)


def fake_runtime(tmp_path, calls=None):
    """runtime.build's stand-in: containerd's programs and runc, counting its calls."""
    def build(backend, parts=None):
        assert parts == FAKE_RUNTIME_PARTS and backend.alongside == FAKE_RUNTIME_PARTS
        if calls is not None:
            calls.append(backend.kubernetes_version)
        src = tmp_path / "src"
        src.mkdir(exist_ok=True)
        files = []
        # Programs that print their version as the real ones do (build.py verify runs them).
        for name, component, printed in (
                ("containerd", "containerd", "containerd github.com/containerd/containerd/v2 v2.3.7"),
                ("containerd-shim-runc-v2", "containerd", "containerd-shim-runc-v2:\n  Version:  v2.3.7"),
                ("ctr", "containerd", "ctr github.com/containerd/containerd/v2 v2.3.7"),
                ("runc", "runc", "runc version 1.5.2\nspec: 1.3.0")):
            (src / name).write_text("#!/bin/sh\nprintf '%s\\n'\n" % printed.replace("\n", "\\n"))
            (src / name).chmod(0o755)
            files.append(("bin/" + name, str(src / name), component))
        return files, {"containerd": {"version": "v2.3.7", "source": "test"},
                       "runc": {"version": "v1.5.2", "source": "test"}}
    return build


# What runtime.components returns, as cli.py hands it to the first release's backend and then to runtime.build.
FAKE_RUNTIME_PARTS = {"containerd": "containerd component", "runc": "runc component"}


def patch_runtime(monkeypatch, tmp_path, calls=None):
    monkeypatch.setattr(cli.runtime, "build", fake_runtime(tmp_path, calls))
    monkeypatch.setattr(cli.runtime, "components", lambda backend: dict(FAKE_RUNTIME_PARTS))
    monkeypatch.setattr(cli.runtime, "installed_version", lambda package: "2.5.4-1+deb12u1")


def run_build(tmp_path, backend, monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(cli, "make_backend", lambda *args, **kwargs: backend)
    monkeypatch.setattr(cli.pyimage, "build", fake_operator_image(tmp_path))
    monkeypatch.setattr(cli.monitoring, "build", fake_monitoring(tmp_path))
    patch_kscore(monkeypatch, tmp_path)
    patch_runtime(monkeypatch, tmp_path)
    args = argparse.Namespace(out=str(tmp_path / "bundle"), cache_dir=str(tmp_path / "cache"),
                              backend="source", kubernetes_version="v1.37.1")
    assert cli.build(args, out=out) == 0
    return out.getvalue()


def test_second_build_is_a_no_op(tmp_path, monkeypatch):
    backend = FakeBackend(tmp_path, io.StringIO())
    first = run_build(tmp_path, backend, monkeypatch)
    assert "build time: " in first and "all 1 steps ran" in first
    assert "registry.k8s.io/pause:3.10.2" in first
    second = run_build(tmp_path, backend, monkeypatch)
    assert backend.builds == 1
    assert "is up to date" in second
    assert "took" in second and "all 1 steps ran" in second
    assert "the last build that ran every step took" in second
    assert manifest.verify(str(tmp_path / "bundle")) == []


def test_changed_input_or_damaged_bundle_rebuilds(tmp_path, monkeypatch):
    backend = FakeBackend(tmp_path, io.StringIO())
    run_build(tmp_path, backend, monkeypatch)
    backend.version_input = "v1.37.2"
    run_build(tmp_path, backend, monkeypatch)
    assert backend.builds == 2
    os.remove(str(tmp_path / "bundle" / "bin" / "kubeadm"))
    output = run_build(tmp_path, backend, monkeypatch)
    assert backend.builds == 3
    assert "0 of 1 steps ran, 1 reused" in output


def test_assemble_refuses_a_directory_that_is_not_a_bundle(tmp_path):
    (tmp_path / "bin").mkdir()
    result = BackendResult("v1.37.1", "source")
    try:
        cli.assemble(str(tmp_path), result)
    except SystemExit as exc:
        assert "not a bundle" in str(exc)
    else:
        raise AssertionError("assemble replaced a foreign bin/")


def test_verify_command(tmp_path, monkeypatch):
    backend = FakeBackend(tmp_path, io.StringIO())
    run_build(tmp_path, backend, monkeypatch)
    bundle = str(tmp_path / "bundle")
    ok = subprocess.run([sys.executable, BUILD_PY, "verify", bundle], capture_output=True, check=False,
                        text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "5 binaries and 4 images match" in ok.stdout
    # the runtime's programs must print the version the manifest gives them
    runc = os.path.join(bundle, "bin", "runc")
    with open(runc, encoding="utf-8") as handle:
        original = handle.read()
    os.remove(runc)  # a hard link into the step cache: write a new file, then fix the manifest's sha256
    with open(runc, "w", encoding="utf-8") as handle:
        handle.write(original.replace("1.5.2", "1.4.0"))
    os.chmod(runc, 0o755)
    data = manifest.load(bundle)
    entry = next(binary for binary in data["binaries"] if binary["path"] == "bin/runc")
    entry.update(manifest.file_entry(bundle, "bin/runc", component="runc"))
    manifest.write(bundle, data)
    bad = subprocess.run([sys.executable, BUILD_PY, "verify", bundle], capture_output=True, check=False,
                         text=True)
    assert bad.returncode == 1
    assert "VERSION bin/runc: manifest.yml says runc v1.5.2, `runc --version` prints 'runc version 1.4.0'" in bad.stdout
    os.remove(runc)
    with open(runc, "w", encoding="utf-8") as handle:
        handle.write(original)
    os.chmod(runc, 0o755)
    entry.update(manifest.file_entry(bundle, "bin/runc", component="runc"))
    manifest.write(bundle, data)
    with open(os.path.join(bundle, "images", "pause.tar"), "ab") as handle:
        handle.write(b"!")
    bad = subprocess.run([sys.executable, BUILD_PY, "verify", bundle], capture_output=True, check=False,
                         text=True)
    assert bad.returncode == 1
    assert "images/pause.tar" in bad.stdout
    os.remove(os.path.join(bundle, "bin", "kubeadm"))
    bad = subprocess.run([sys.executable, BUILD_PY, "verify", bundle], capture_output=True, check=False,
                         text=True)
    assert "MISSING bin/kubeadm" in bad.stdout


def test_two_releases(tmp_path, monkeypatch):
    """The first release at the top of the bundle, the second under releases/, one manifest."""
    class Older(FakeBackend):
        kubernetes_version = "v1.36.5"

    made = {"v1.37.1": FakeBackend(tmp_path, io.StringIO()), "v1.36.5": Older(tmp_path, io.StringIO())}
    monkeypatch.setattr(cli, "make_backend", lambda backend, version, *args, **kwargs: made[version])
    monkeypatch.setattr(cli.pyimage, "build", fake_operator_image(tmp_path))
    monitoring_calls = []
    monkeypatch.setattr(cli.monitoring, "build", fake_monitoring(tmp_path, monitoring_calls))
    kscore_calls = []
    sources = patch_kscore(monkeypatch, tmp_path, kscore_calls)
    runtime_calls = []
    patch_runtime(monkeypatch, tmp_path, runtime_calls)
    args = argparse.Namespace(out=str(tmp_path / "bundle"), cache_dir=str(tmp_path / "cache"),
                              backend="source", kubernetes_version=["v1.37.1", "v1.36.5"])
    out = io.StringIO()
    assert cli.build(args, out=out) == 0
    bundle = str(tmp_path / "bundle")
    data = manifest.load(bundle)
    assert data["kubernetes_version"] == "v1.37.1"
    assert [entry["path"] for entry in data["releases"][0]["binaries"]] == [
        "releases/v1.36.5/bin/" + name for name in ("containerd", "containerd-shim-runc-v2", "ctr", "kubeadm", "runc")]
    # containerd and runc: built once (beside the first release's Go builds), in both releases, with their components
    assert runtime_calls == ["v1.37.1"]
    assert made["v1.37.1"].alongside == FAKE_RUNTIME_PARTS and not hasattr(made["v1.36.5"], "alongside")
    for release in (data, data["releases"][0]):
        assert {entry["path"].rsplit("/", 1)[-1]: entry["component"] for entry in release["binaries"]
                if entry["component"] in ("containerd", "runc")} == {
            "containerd": "containerd", "containerd-shim-runc-v2": "containerd", "ctr": "containerd", "runc": "runc"}
        assert (release["components"]["containerd"]["version"], release["components"]["runc"]["version"]) == (
            "v2.3.7", "v1.5.2")
    # KubeSphere's monitoring images and its core: built once, in both releases with their component
    assert monitoring_calls == ["v1.37.1"]
    assert kscore_calls == [("v1.37.1", sources)]
    for release in (data, data["releases"][0]):
        assert any(image["name"] == "ks-apiserver" and image["component"] == "kubesphere_ks_apiserver"
                   for image in release["images"])
        assert release["components"]["kubesphere_ks_apiserver"]["version"] == "v3.4.1"
    for release, prefix in ((data, ""), (data["releases"][0], "releases/v1.36.5/")):
        entry = next(image for image in release["images"] if image["name"] == "prometheus")
        assert entry["path"] == prefix + "images/prometheus.tar"
        assert entry["component"] == "kubesphere_prometheus" and entry["ref"] == "docker.io/prom/prometheus:v2.39.1"
        assert release["components"]["kubesphere_prometheus"]["version"] == "v2.39.1"
    assert manifest.verify(bundle) == []
    assert "release v1.36.5:" in out.getvalue()
    again = io.StringIO()
    assert cli.build(args, out=again) == 0
    assert "is up to date" in again.getvalue() and "v1.37.1, v1.36.5" in again.getvalue()
    # one release again: releases/ goes
    args.kubernetes_version = ["v1.37.1"]
    assert cli.build(args, out=io.StringIO()) == 0
    assert not os.path.exists(os.path.join(bundle, "releases"))
    assert "releases" not in manifest.load(bundle)


def test_default_releases_are_the_current_and_the_previous_minor():
    assert cli.versions.BUNDLE_KUBERNETES_VERSIONS[0] == cli.versions.DEFAULT_KUBERNETES_VERSION
    minors = [cli.versions.parse_kubernetes_version(v)[1] for v in cli.versions.BUNDLE_KUBERNETES_VERSIONS]
    assert minors == [minors[0], minors[0] - 1]


def test_bad_version_is_refused(capsys):
    assert cli.main(["--kubernetes-version", "latest"]) == 2
    assert "not a release version" in capsys.readouterr().err


def test_build_errors_are_reported_without_traceback(tmp_path, monkeypatch, capsys):
    class Failing(FakeBackend):
        def build(self):
            raise cli.gomod.GoError("go build failed in /x (exit 1): go build ...")

    monkeypatch.setattr(cli, "make_backend",
                        lambda *args, **kwargs: Failing(tmp_path, io.StringIO()))
    patch_runtime(monkeypatch, tmp_path)
    code = cli.main(["--out", str(tmp_path / "bundle"), "--cache-dir", str(tmp_path / "cache")])
    assert code == 1
    err = capsys.readouterr().err
    assert "GoError: go build failed in /x" in err
    assert "build.log" in err


def test_without_leaves_out_the_optional_images(tmp_path, monkeypatch):
    """make lab's bundle: no KubeSphere monitoring image and no operator image are built or listed."""
    backend = FakeBackend(tmp_path, io.StringIO())
    monkeypatch.setattr(cli, "make_backend", lambda *args, **kwargs: backend)

    def refuse(*args, **kwargs):
        raise AssertionError("built although left out")

    monkeypatch.setattr(cli.pyimage, "build", refuse)
    monkeypatch.setattr(cli.monitoring, "build", refuse)
    monkeypatch.setattr(cli.kscore, "build", refuse)
    monkeypatch.setattr(cli.kscore, "sources_dir", refuse)
    patch_runtime(monkeypatch, tmp_path)
    args = argparse.Namespace(out=str(tmp_path / "bundle"), cache_dir=str(tmp_path / "cache"), backend="source",
                              kubernetes_version=["v1.37.1"], without=["kubesphere", "operator"])
    assert cli.build(args, out=io.StringIO()) == 0
    data = manifest.load(str(tmp_path / "bundle"))
    assert [entry["name"] for entry in data["images"]] == ["pause"]
    assert "runc" in data["components"] and "kubesphere_prometheus" not in data["components"]
    # the full bundle again: its own stamp, the optional images back
    monkeypatch.setattr(cli.pyimage, "build", fake_operator_image(tmp_path))
    monkeypatch.setattr(cli.monitoring, "build", fake_monitoring(tmp_path))
    monkeypatch.undo()
    monkeypatch.setattr(cli, "make_backend", lambda *args, **kwargs: backend)
    monkeypatch.setattr(cli.pyimage, "build", fake_operator_image(tmp_path))
    monkeypatch.setattr(cli.monitoring, "build", fake_monitoring(tmp_path))
    patch_kscore(monkeypatch, tmp_path)
    patch_runtime(monkeypatch, tmp_path)
    args.without = []
    out = io.StringIO()
    assert cli.build(args, out=out) == 0
    assert "up to date" not in out.getvalue()
    assert sorted(entry["name"] for entry in manifest.load(str(tmp_path / "bundle"))["images"]) == [
        "ks-apiserver", "pause", "prometheus", "slipway-operator"]


def test_default_names_the_default_release(tmp_path, monkeypatch):
    seen = {}

    def build(args, out=None):
        seen["versions"] = args.kubernetes_version
        return 0

    monkeypatch.setattr(cli, "build", build)
    assert cli.main(["--kubernetes-version", "default", "--without", "kubesphere"]) == 0
    assert seen["versions"] == [cli.versions.DEFAULT_KUBERNETES_VERSION]
