import subprocess

import pytest

from bundler import debs, runtime, versions


def test_containerd_builds_as_its_static_release():
    containerd, shim = runtime.containerd_components()
    module = "github.com/containerd/containerd/v2"
    assert containerd.requires == [(module, versions.CONTAINERD["version"])] == shim.requires
    assert containerd.programs == {"containerd": module + "/cmd/containerd", "ctr": module + "/cmd/ctr"}
    assert shim.programs == {"containerd-shim-runc-v2": module + "/cmd/containerd-shim-runc-v2"}
    assert containerd.tags == ["urfave_cli_no_docs", "osusergo", "netgo", "static_build"]
    assert shim.tags == containerd.tags + ["no_grpc"]
    # no cgo: the Go command's default of the builder (CGO_ENABLED=0) stays
    assert "CGO_ENABLED" not in containerd.env and "CGO_ENABLED" not in shim.env
    assert "-X github.com/containerd/containerd/v2/version.Version=v2.3.7" in " ".join(containerd.ldflags)
    assert "-X github.com/containerd/containerd/v2/version.Package=github.com/containerd/containerd/v2" in " ".join(
        shim.ldflags)


def test_runc_has_seccomp_and_links_libseccomp_statically():
    runc = runtime.runc_component("2.5.4-1+deb12u1")
    assert runc.programs == {"runc": "github.com/opencontainers/runc"}
    assert "seccomp" in runc.tags and "libpathrs" not in runc.tags
    assert runc.env["CGO_ENABLED"] == "1"
    assert "-extldflags=-static" in runc.ldflags
    assert "libseccomp-dev 2.5.4-1+deb12u1" in runc.source
    # another libseccomp is another build (the step's key is the component's spec)
    assert runc.spec() != runtime.runc_component("2.5.5-1").spec()


def test_installed_version():
    def run(cmd, **kwargs):
        assert cmd[:2] == ["dpkg-query", "-W"]
        return subprocess.CompletedProcess(cmd, 0, stdout="install ok installed 2.5.4-1+deb12u1", stderr="")
    assert runtime.installed_version("libseccomp-dev", run=run) == "2.5.4-1+deb12u1"


@pytest.mark.parametrize("code, stdout", [(1, ""), (0, "deinstall ok config-files 2.5.4-1")])
def test_missing_libseccomp_names_the_fix(code, stdout):
    def run(cmd, **kwargs):
        return subprocess.CompletedProcess(cmd, code, stdout=stdout, stderr="no packages found")
    with pytest.raises(debs.DebError, match="apt-get install -y libseccomp-dev"):
        runtime.installed_version("libseccomp-dev", run=run)


@pytest.mark.parametrize("output, version, expected", [
    ("containerd github.com/containerd/containerd/v2 v2.3.7 \n", "v2.3.7", True),
    ("containerd-shim-runc-v2:\n  Version:  v2.3.7\n", "v2.3.7", True),
    ("runc version 1.5.2\nspec: 1.3.0\n", "v1.5.2", True),
    ("runc version 1.5.20\n", "v1.5.2", False),
    ("containerd github.com/containerd/containerd 1.6.20\n", "v2.3.7", False),
])
def test_reports_version(output, version, expected):
    assert runtime.reports_version(output, version) is expected


def test_version_problems_runs_each_runtime_program(tmp_path):
    calls = []

    def run(cmd, **kwargs):
        calls.append(cmd)
        printed = {"containerd": "containerd github.com/containerd/containerd/v2 v2.3.7",
                   "runc": "runc version 1.4.0"}[cmd[0].rsplit("/", 1)[-1]]
        return subprocess.CompletedProcess(cmd, 0, stdout=printed, stderr="")

    release = {"arch": "amd64",
               "components": {"containerd": {"version": "v2.3.7"}, "runc": {"version": "v1.5.2"}},
               "binaries": [{"path": "bin/containerd", "component": "containerd"},
                            {"path": "bin/runc", "component": "runc"},
                            {"path": "bin/kubeadm", "component": "kubernetes"}]}
    problems = runtime.version_problems(str(tmp_path), [release], run=run, machine="x86_64")
    assert problems == ["VERSION bin/runc: manifest.yml says runc v1.5.2, `runc --version` prints "
                        "'runc version 1.4.0' (exit 0)"]
    assert [cmd[1:] for cmd in calls] == [["--version"], ["--version"]]
    # a bundle for another architecture is not run here
    calls.clear()
    assert runtime.version_problems(str(tmp_path), [release], run=run, machine="aarch64") == []
    assert not calls
