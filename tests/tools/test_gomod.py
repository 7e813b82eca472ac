import io
import subprocess
import threading

import pytest

from bundler import gomod, runtime, source

KUBERNETES_GOMOD = """// This is a generated file. Do not edit directly.

module k8s.io/kubernetes

go 1.26.0

godebug default=go1.26

require (
    github.com/blang/semver/v4 v4.0.0
    k8s.io/api v0.0.0
    k8s.io/client-go v0.0.0 // indirect
)

replace (
    k8s.io/api => ./staging/src/k8s.io/api
    k8s.io/client-go => ./staging/src/k8s.io/client-go
    k8s.io/cri-streaming => ./staging/src/k8s.io/cri-streaming
)
"""


def test_parse_gomod():
    parsed = gomod.parse_gomod(KUBERNETES_GOMOD + "replace example.org/a v1.0.0 => example.org/b v1.1.0\n"
                               "exclude example.org/c v0.1.0\n")
    assert parsed["module"] == "k8s.io/kubernetes"
    assert parsed["go"] == "1.26.0"
    assert ("k8s.io/api", None, "./staging/src/k8s.io/api", None) in parsed["replace"]
    assert ("example.org/a", "v1.0.0", "example.org/b", "v1.1.0") in parsed["replace"]
    assert parsed["exclude"] == [("example.org/c", "v0.1.0")]


def test_kubernetes_tools_module_replaces_every_staging_module_with_v0():
    component = source.kubernetes_component("v1.37.1", "2026-09-23T17:06:22Z")
    text = gomod.tools_gomod(component, {"k8s.io/kubernetes": KUBERNETES_GOMOD})
    assert "\tk8s.io/kubernetes v1.37.1\n" in text
    for module in ("k8s.io/api", "k8s.io/client-go", "k8s.io/cri-streaming"):
        assert "\t%s => %s v0.37.1\n" % (module, module) in text
    assert "./staging" not in text
    assert "\ngo 1.26.0\n" in text


def test_fetch_path_becomes_a_replacement():
    component = source.crictl_component("v1.37.0")
    text = gomod.tools_gomod(component, {"sigs.k8s.io/cri-tools":
                                         "module sigs.k8s.io/cri-tools\n\ngo 1.26.6\n"})
    assert "\tsigs.k8s.io/cri-tools v1.37.0\n" in text
    assert "sigs.k8s.io/cri-tools => github.com/kubernetes-sigs/cri-tools v1.37.0" in text


def test_local_replacement_without_a_version_rule_is_an_error():
    component = gomod.GoComponent("x", "v1.0.0", [("example.org/x", "v1.0.0")],
                                  {"x": "example.org/x"})
    with pytest.raises(gomod.GoError, match="local path"):
        gomod.tools_gomod(component, {"example.org/x": "module example.org/x\n"
                                                       "replace example.org/y => ../y\n"})


def test_etcds_forbidden_dependency_guard_is_not_a_replacement():
    """etcd 3.6's go.mod: replace go.etcd.io/etcd => ./FORBIDDEN_DEPENDENCY (a module it must never use)."""
    component = source.etcd_component("v3.6.8")
    server = ("module go.etcd.io/etcd/server/v3\n\ngo 1.24.0\n"
              "replace (\n\tgo.etcd.io/etcd/api/v3 => ../api\n)\n"
              "replace go.etcd.io/etcd => ./FORBIDDEN_DEPENDENCY\n"
              "replace go.etcd.io/tests/v3 => ./FORBIDDEN_DEPENDENCY\n")
    other = "module go.etcd.io/etcd/x/v3\n\ngo 1.24.0\n"
    text = gomod.tools_gomod(component, {"go.etcd.io/etcd/server/v3": server, "go.etcd.io/etcd/etcdctl/v3": other,
                                         "go.etcd.io/etcd/etcdutl/v3": other})
    assert "go.etcd.io/etcd/api/v3 => go.etcd.io/etcd/api/v3 v3.6.8" in text
    assert "FORBIDDEN" not in text and "go.etcd.io/etcd =>" not in text and "tests/v3" not in text


def test_kubernetes_version_ldflags_cover_both_packages():
    flags = gomod.kubernetes_version_ldflags("v1.37.1", "2026-09-23T17:06:22Z")
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        assert "-X %s.gitVersion=v1.37.1" % package in flags
        assert "-X %s.gitMajor=1" % package in flags
        assert "-X %s.gitMinor=37" % package in flags
        assert "-X %s.gitTreeState=clean" % package in flags
        assert "-X %s.buildDate=2026-09-23T17:06:22Z" % package in flags
        assert "-X %s.gitCommit=" % package in flags


def test_ldflags_values_must_not_need_quoting():
    with pytest.raises(gomod.GoError):
        gomod.x_flags("p", [("k", "two words")])


@pytest.mark.parametrize("package, name", [
    ("k8s.io/kubernetes/cmd/kubeadm", "kubeadm"),
    ("go.etcd.io/etcd/server/v3", "server"),
    ("go.etcd.io/etcd/etcdctl/v3", "etcdctl"),
    ("github.com/coredns/coredns", "coredns"),
    ("github.com/flannel-io/flannel/cmd/install_conf", "install_conf"),
])
def test_default_exec_name(package, name):
    assert gomod.default_exec_name(package) == name


def test_jsonv2_is_turned_off_for_go_1_27():
    assert gomod.jsonv2_off("") == "nojsonv2"
    assert gomod.jsonv2_off("jsonv2,foo") == "foo,nojsonv2"
    go = gomod.Go(environ={"PATH": "/usr/bin"})
    go._version = "go1.27.0"
    assert go.env()["GOEXPERIMENT"] == "nojsonv2"
    go._version = "go1.26.8"
    assert "GOEXPERIMENT" not in go.env()
    env = go.env()
    assert env["GOTOOLCHAIN"] == "local" and env["CGO_ENABLED"] == "0"


def test_build_command(tmp_path):
    calls = []

    def run(cmd, **kwargs):
        calls.append((cmd, kwargs))
        if cmd[1] == "env":
            return subprocess.CompletedProcess(cmd, 0, stdout="go1.26.8\n")
        return subprocess.CompletedProcess(cmd, 0)

    go = gomod.Go(run=run, environ={})
    go.build(str(tmp_path), ["k8s.io/kubernetes/cmd/kubeadm"], "/out", ["-s", "-w"], ["t1"])
    cmd, kwargs = calls[-1]
    assert cmd == ["go", "build", "-trimpath", "-ldflags", "-s -w", "-tags", "t1", "-o", "/out/",
                   "k8s.io/kubernetes/cmd/kubeadm"]
    assert kwargs["env"]["CGO_ENABLED"] == "0"


def test_cni_plugin_packages(tmp_path):
    for group, names in (("main", ["bridge", "loopback", "windows"]), ("ipam", ["host-local"]),
                         ("meta", ["portmap"])):
        for name in names:
            (tmp_path / "plugins" / group / name).mkdir(parents=True)
    (tmp_path / "plugins" / "main" / "README.md").parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "plugins" / "main" / "README.md").write_text("x")
    packages = source.cni_plugin_packages(str(tmp_path))
    assert packages == {
        "bridge": "github.com/containernetworking/plugins/plugins/main/bridge",
        "loopback": "github.com/containernetworking/plugins/plugins/main/loopback",
        "host-local": "github.com/containernetworking/plugins/plugins/ipam/host-local",
        "portmap": "github.com/containernetworking/plugins/plugins/meta/portmap",
    }


def test_pins_override_upstream_requirements_and_replacements():
    component = source.flannel_component("v0.28.10")
    upstream = ("module github.com/flannel-io/flannel\n\ngo 1.26.0\n\nrequire (\n"
                "\tgithub.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/vpc v1.3.188\n)\n"
                "replace github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/vpc => "
                "example.org/fork v1.0.0\n")
    text = gomod.tools_gomod(component, {"github.com/flannel-io/flannel": upstream})
    for module, version in source.FLANNEL_PINS.items():
        assert "\t%s => %s %s\n" % (module, module, version) in text
    assert "example.org/fork" not in text


def test_coredns_main_imports_the_chosen_plugins_only():
    component = source.coredns_component("v1.14.6")
    assert component.programs == {"coredns": "slipway.invalid/bundle/coredns"}
    assert gomod.default_exec_name(component.programs["coredns"]) == "coredns"
    text = component.main_go
    assert text.startswith("// Generated by tools/bundle")
    assert "\npackage main\n" in text
    assert '\t"github.com/coredns/coredns/coremain"\n' in text
    assert "\tcoremain.Run()\n" in text
    # kubeadm's Corefile
    for plugin in ("errors", "health", "ready", "kubernetes", "metrics", "forward", "cache",
                   "loop", "reload", "loadbalance"):
        assert '\t_ "github.com/coredns/coredns/plugin/%s"\n' % plugin in text
    assert '\t_ "github.com/coredns/caddy/onevent"\n' in text
    for plugin in source.COREDNS_LEFT_OUT:
        assert "/plugin/%s\"" % plugin not in text
        assert plugin not in dict(source.COREDNS_PLUGINS)
    assert "left out: azure, clouddns, etcd, geoip, nomad, route53, trace" in component.source
    gomod_text = gomod.tools_gomod(component, {"github.com/coredns/coredns":
                                               "module github.com/coredns/coredns\n\ngo 1.25.0\n"})
    assert "\nmodule slipway.invalid/bundle/coredns\n" in gomod_text


def test_coredns_plugins_are_upstream_plugins():
    """Every plugin we keep or leave out is in upstream's plugin.cfg (v1.14.6), once."""
    upstream = ("root metadata geoip cancel tls proxyproto quic grpc_server https https3 timeouts "
                "multisocket reload nsid bufsize bind debug trace ready health pprof prometheus "
                "errors log dnstap local dns64 any chaos loadbalance tsig cache rewrite acl "
                "header dnssec autopath minimal template transfer hosts route53 azure clouddns "
                "k8s_external kubernetes file auto secondary etcd loop forward grpc erratic "
                "whoami on sign view nomad").split()
    kept = [name for name, _package in source.COREDNS_PLUGINS]
    assert sorted(kept + list(source.COREDNS_LEFT_OUT)) == sorted(upstream)


def test_go_steps_build_side_by_side_and_wait_for_kubernetes(tmp_path):
    backend = source.SourceBackend("v1.37.1", str(tmp_path), io.StringIO(), go=object())
    events = []
    lock = threading.Lock()
    done = {name: threading.Event() for name in ("etcd", "coredns")}

    def fake_step(component):
        with lock:
            events.append(("start", component.name))
        if component.name == "kubernetes":
            # finishes only once etcd and CoreDNS have been built beside it
            for event in done.values():
                assert event.wait(30)
        elif component.name in done:
            done[component.name].set()
        with lock:
            events.append(("end", component.name))
        return "/out/" + component.name, "key-" + component.name

    backend._go_step = fake_step
    names = ["kubernetes", "etcd", "coredns", "crictl", "metrics-server"]
    components = {name: gomod.GoComponent(name, "v1", [], {}) for name in names}
    built = backend._go_steps(components, after_kubernetes=("crictl", "metrics-server"))
    assert built == {name: ("/out/" + name, "key-" + name) for name in names}
    assert events[0] == ("start", "kubernetes")
    k8s_end = events.index(("end", "kubernetes"))
    for name in ("crictl", "metrics-server"):
        assert events.index(("start", name)) > k8s_end
    assert sum(1 for kind, _name in events if kind == "start") == len(names)


def test_alongside_components_share_the_release_slots_and_are_not_built_again(tmp_path, monkeypatch):
    """cli.py gives the runtime's components to the first release's backend: they build in its pool
    while Kubernetes compiles, and runtime.build then takes their output instead of building them."""
    backend = source.SourceBackend("v1.37.1", str(tmp_path), io.StringIO(), go=object())
    started = []

    def fake_step(component):
        started.append(component.name)
        return "/out/" + component.name, "key-" + component.name

    backend._go_step = fake_step
    monkeypatch.setattr(runtime, "installed_version", lambda package, run=None: "2.5.4-1+deb12u1")
    parts = runtime.components(backend)
    assert sorted(parts) == ["containerd", "containerd-shim", "runc"]
    backend.alongside = parts
    names = ["kubernetes", "etcd", "crictl"]
    components = {name: gomod.GoComponent(name, "v1", [], {}) for name in names}
    built = backend._go_steps(backend._with_alongside(components), after_kubernetes=("crictl",))
    assert sorted(built) == sorted(names + list(parts))
    # the release's build() keeps what it built for them
    backend.alongside_built = {name: built[name] for name in parts}
    started.clear()
    files, found = runtime.build(backend, parts)
    assert started == []
    assert sorted(path for path, _file, _component in files) == [
        "bin/containerd", "bin/containerd-shim-runc-v2", "bin/ctr", "bin/runc"]
    assert dict((path, file) for path, file, _component in files)["bin/runc"] == "/out/runc/runc"
    assert sorted(found) == ["containerd", "runc"]
    # without them (another backend, or none given), runtime.build builds each part itself
    other = source.SourceBackend("v1.36.5", str(tmp_path), io.StringIO(), go=object())
    other._go_step = fake_step
    runtime.build(other, parts)
    assert sorted(started) == ["containerd", "containerd-shim", "runc"]


def test_components_built_alongside_may_not_take_a_release_name(tmp_path):
    backend = source.SourceBackend("v1.37.1", str(tmp_path), io.StringIO(), go=object())
    own = {"kubernetes": "k8s", "etcd": "etcd"}
    assert backend._with_alongside(own) == own
    backend.alongside = {"runc": "runc"}
    assert backend._with_alongside(own) == {"kubernetes": "k8s", "etcd": "etcd", "runc": "runc"}
    backend.alongside = {"etcd": "another etcd"}
    with pytest.raises(ValueError, match="clash with its own: etcd"):
        backend._with_alongside(own)


def test_go_step_failure_stops_the_build(tmp_path):
    backend = source.SourceBackend("v1.37.1", str(tmp_path), io.StringIO(), go=object())

    def fake_step(component):
        if component.name == "kubernetes":
            raise gomod.GoError("go build failed")
        return "/out/" + component.name, "key"

    backend._go_step = fake_step
    components = {name: gomod.GoComponent(name, "v1", [], {}) for name in ("kubernetes", "crictl")}
    with pytest.raises(gomod.GoError):
        backend._go_steps(components, after_kubernetes=("crictl",))
