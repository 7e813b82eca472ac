"""KubeSphere's monitoring images (tools/bundle/bundler/monitoring.py): versions, builds, layouts."""

import io
import json
import os
import re
import subprocess
import tarfile

import pytest
import yaml

from bundler import dockerarchive, gomod, monitoring, steps, versions

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATES = {key: "2022-10-07T13:22:52Z" for key in versions.KUBESPHERE_MONITORING}

OPERATOR_GOMOD = """module github.com/prometheus-operator/prometheus-operator

go 1.17

require (
\tgithub.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring v0.55.0
\tgithub.com/prometheus-operator/prometheus-operator/pkg/client v0.55.0
)

replace (
\tgithub.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring => ./pkg/apis/monitoring
\tgithub.com/prometheus-operator/prometheus-operator/pkg/client => ./pkg/client
\tgithub.com/prometheus/alertmanager => github.com/prometheus/alertmanager v0.23.0
\tk8s.io/client-go => k8s.io/client-go v0.23.0
)
"""


def kubesphere_images():
    with open(os.path.join(ROOT, "roles", "kubesphere", "defaults", "main.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)["kubesphere_images"]


def test_every_image_is_one_of_kubesphere_images_at_its_pin_or_a_recorded_substitution():
    defaults = kubesphere_images()
    for name, (component, repository) in versions.KUBESPHERE_MONITORING_IMAGES.items():
        wanted = defaults[name.replace("-", "_")]
        wanted_repository, wanted_tag = wanted.rsplit(":", 1)
        assert repository == "docker.io/" + wanted_repository
        entry = versions.KUBESPHERE_MONITORING[component]
        assert entry["kubesphere"] == wanted_tag
        assert (entry["tag"] == wanted_tag) != bool(entry.get("substitution")), name
    refs = versions.kubesphere_monitoring_refs()
    assert refs["prometheus-operator"] == "docker.io/kubesphere/prometheus-operator:v0.55.0"
    assert refs["prometheus-config-reloader"] == "docker.io/kubesphere/prometheus-config-reloader:v0.55.0"
    assert refs["prometheus"] == "docker.io/prom/prometheus:v2.39.1"
    assert refs["thanos"] == "docker.io/thanosio/thanos:v0.31.0"


def test_the_prometheus_module_numbers_its_release_v0():
    entry = versions.KUBESPHERE_MONITORING["prometheus"]
    assert (entry["module"], entry["version"], entry["tag"]) == ("github.com/prometheus/prometheus", "v0.39.1",
                                                                 "v2.39.1")


def test_components_build_upstreams_programs_with_their_version_stamp():
    components = monitoring.go_components(DATES)
    assert set(components) == set(versions.KUBESPHERE_MONITORING)
    operator = components["prometheus_operator"]
    assert operator.programs == {
        "operator": "github.com/prometheus-operator/prometheus-operator/cmd/operator",
        "prometheus-config-reloader": "github.com/prometheus-operator/prometheus-operator/cmd/"
                                      "prometheus-config-reloader"}
    # The operator names its default reloader image "...:v" + version.Version.
    assert "-X github.com/prometheus/common/version.Version=0.55.0" in operator.ldflags
    prometheus = components["prometheus"]
    assert prometheus.requires == [("github.com/prometheus/prometheus", "v0.39.1")]
    assert "-X github.com/prometheus/common/version.Version=2.39.1" in prometheus.ldflags
    assert "-X github.com/prometheus/common/version.BuildDate=2022-10-07T13:22:52Z" in prometheus.ldflags
    assert prometheus.tags == ["netgo"]
    assert "-X github.com/prometheus/common/version.Version=v2.6.0" in components["kube_state_metrics"].ldflags
    assert components["node_exporter"].tags == ["netgo", "osusergo", "static_build"]
    assert not [flag for flag in components["kube_rbac_proxy"].ldflags if flag.startswith("-X")]
    for component in components.values():
        assert component.ldflags[:2] == ["-s", "-w"]
        # each program keeps the name `go build -o DIR/` gives it (k8s.io/kube-state-metrics/v2: kube-state-metrics)
        for name, package in component.programs.items():
            assert gomod.default_exec_name(package) == name


def test_the_substitution_and_its_reason_are_in_the_manifest_source():
    entries = monitoring.components_entries(monitoring.go_components(DATES))
    assert set(entries) == {"kubesphere_" + key for key in versions.KUBESPHERE_MONITORING}
    operator = entries["kubesphere_prometheus_operator"]
    assert operator["version"] == "v0.55.0" and operator["kubesphere_pin"] == "v0.55.1"
    assert "KubeSphere 3.4.1 pins v0.55.1" in operator["source"] and "not available" in operator["source"]
    assert entries["kubesphere_prometheus"] == {
        "version": "v2.39.1", "kubesphere_pin": "v2.39.1",
        "source": "Go module github.com/prometheus/prometheus v0.39.1"}


def test_the_operators_own_modules_become_released_versions():
    component = monitoring.go_components(DATES)["prometheus_operator"]
    text = gomod.tools_gomod(component, {component.requires[0][0]: OPERATOR_GOMOD})
    for part in ("pkg/apis/monitoring", "pkg/client"):
        module = "github.com/prometheus-operator/prometheus-operator/" + part
        assert "\t%s => %s v0.55.0\n" % (module, module) in text
    assert "\tk8s.io/client-go => k8s.io/client-go v0.23.0\n" in text
    assert "./pkg" not in text
    # thanos v0.25.0 is not in the checksum database: the served v0.25.1, named with its reason
    assert "\tgithub.com/thanos-io/thanos => github.com/thanos-io/thanos v0.25.1\n" in text
    assert "github.com/thanos-io/thanos pinned to v0.25.1 (thanos v0.25.0" in component.source
    assert "checksum database" in component.source


@pytest.mark.parametrize("key,module,version", [
    ("thanos", "go4.org/unsafe/assume-no-moving-gc", "v0.0.0-20231121144256-b99613f794b6"),
    ("alertmanager", "github.com/modern-go/reflect2", "v1.0.2"),
    ("node_exporter", "github.com/modern-go/reflect2", "v1.0.2"),
    ("kube_rbac_proxy", "github.com/modern-go/reflect2", "v1.0.2"),
])
def test_dependencies_that_fail_on_new_go_are_pinned_with_their_reason(key, module, version):
    component = monitoring.go_components(DATES)[key]
    upstream = "module %s\n\ngo 1.16\n\nrequire %s v0.0.1\n" % (component.requires[0][0], module)
    text = gomod.tools_gomod(component, {component.requires[0][0]: upstream})
    assert "\t%s => %s %s\n" % (module, module, version) in text
    assert "%s pinned to %s (" % (module, version) in component.source


def test_the_other_components_build_their_go_mod_as_it_stands():
    components = monitoring.go_components(DATES)
    assert components["prometheus"].pins == {} and components["kube_state_metrics"].pins == {}


def fake_module(tmp_path):
    """A module tree with Prometheus's and Alertmanager's data files, and built programs."""
    prometheus = tmp_path / "prometheus"
    for path in ("documentation/examples/prometheus.yml", "LICENSE", "NOTICE", "consoles/index.html.example",
                 "consoles/node.html", "console_libraries/prom.lib"):
        (prometheus / path).parent.mkdir(parents=True, exist_ok=True)
        (prometheus / path).write_text(path + "\n")
    alertmanager = tmp_path / "alertmanager"
    (alertmanager / "examples/ha").mkdir(parents=True, exist_ok=True)
    (alertmanager / "examples/ha/alertmanager.yml").write_text("route: {}\n")
    programs = {}
    for name in ("operator", "prometheus-config-reloader", "prometheus", "alertmanager", "node_exporter",
                 "kube-state-metrics", "kube-rbac-proxy", "thanos"):
        programs[name] = str(tmp_path / "bin" / name)
        os.makedirs(os.path.dirname(programs[name]), exist_ok=True)
        with open(programs[name], "wb") as handle:
            handle.write(b"\x7fELF " + name.encode())
    return programs, {"prometheus": str(prometheus), "alertmanager": str(alertmanager)}


def specs_by_name(tmp_path):
    programs, dirs = fake_module(tmp_path)
    return {spec.name: spec for spec in monitoring.image_specs(versions.kubesphere_monitoring_refs(), programs, dirs)}


@pytest.mark.parametrize("name,entrypoint,user,program", [
    ("prometheus-operator", ["/bin/operator"], "65534:65534", "/bin/operator"),
    ("prometheus-config-reloader", ["/bin/prometheus-config-reloader"], "65534:65534",
     "/bin/prometheus-config-reloader"),
    ("prometheus", ["/bin/prometheus"], "65534:65534", "/bin/prometheus"),
    ("alertmanager", ["/bin/alertmanager"], "65534:65534", "/bin/alertmanager"),
    ("node-exporter", ["/bin/node_exporter"], "65534:65534", "/bin/node_exporter"),
    ("kube-state-metrics", ["/kube-state-metrics", "--port=8080", "--telemetry-port=8081"], "65534:65534",
     "/kube-state-metrics"),
    ("kube-rbac-proxy", ["/usr/local/bin/kube-rbac-proxy"], "65532:65532", "/usr/local/bin/kube-rbac-proxy"),
    ("thanos", ["/bin/thanos"], None, "/bin/thanos"),
])
def test_each_image_runs_as_upstreams(tmp_path, name, entrypoint, user, program):
    spec = specs_by_name(tmp_path)[name]
    assert spec.config["entrypoint"] == entrypoint
    assert spec.config.get("user") == user
    assert program in spec.files
    assert spec.component.startswith(versions.KUBESPHERE_COMPONENT_PREFIX)
    # distroless upstream images have no shell; quay.io/prometheus/busybox ones do
    assert spec.busybox == (name not in ("kube-state-metrics", "kube-rbac-proxy"))
    assert spec.ref == versions.kubesphere_monitoring_refs()[name]


def layer_members(spec, tmp_path, busybox_applets=()):
    busybox = tmp_path / "busybox"
    busybox.write_bytes(b"\x7fELF busybox")
    out = str(tmp_path / (spec.name + ".tar"))
    layer = spec.layer(busybox_path=str(busybox), applets=busybox_applets)
    dockerarchive.write_image(out, layer, spec.ref, **spec.config)
    with tarfile.open(out) as tar:
        manifest = json.load(tar.extractfile("manifest.json"))
        config = json.load(tar.extractfile(manifest[0]["Config"]))
        with tarfile.open(fileobj=io.BytesIO(tar.extractfile(manifest[0]["Layers"][0]).read())) as inner:
            members = {member.name: member for member in inner.getmembers()}
    return manifest, config, members


def test_the_prometheus_image_has_what_the_operators_arguments_name(tmp_path):
    spec = specs_by_name(tmp_path)["prometheus"]
    manifest, config, members = layer_members(spec, tmp_path, ["/bin/sh"])
    assert manifest[0]["RepoTags"] == ["docker.io/prom/prometheus:v2.39.1"]
    assert config["config"]["Entrypoint"] == ["/bin/prometheus"]
    assert config["config"]["Cmd"] == ["--config.file=/etc/prometheus/prometheus.yml",
                                       "--storage.tsdb.path=/prometheus",
                                       "--web.console.libraries=/usr/share/prometheus/console_libraries",
                                       "--web.console.templates=/usr/share/prometheus/consoles"]
    assert config["config"]["User"] == "65534:65534" and config["config"]["WorkingDir"] == "/prometheus"
    # prometheus-operator passes --web.console.templates=/etc/prometheus/consoles and
    # --web.console.libraries=/etc/prometheus/console_libraries
    assert members["etc/prometheus/consoles"].linkname == "/usr/share/prometheus/consoles"
    assert members["etc/prometheus/console_libraries"].linkname == "/usr/share/prometheus/console_libraries"
    assert members["usr/share/prometheus/consoles/node.html"].mode == 0o644
    assert members["usr/share/prometheus/console_libraries/prom.lib"].isfile()
    assert members["etc/prometheus/prometheus.yml"].mode == 0o644
    assert members["bin/prometheus"].mode == 0o755
    for directory in ("prometheus", "etc/prometheus"):
        assert (members[directory].uid, members[directory].gid) == (65534, 65534)
    assert members["usr/share/prometheus"].uid == 0
    assert members["bin/sh"].linkname == "/bin/busybox"


def test_the_alertmanager_image_keeps_its_data_in_a_directory_nobody_writes(tmp_path):
    spec = specs_by_name(tmp_path)["alertmanager"]
    _manifest, config, members = layer_members(spec, tmp_path)
    assert config["config"]["Cmd"] == ["--config.file=/etc/alertmanager/alertmanager.yml",
                                       "--storage.path=/alertmanager"]
    assert config["config"]["WorkingDir"] == "/alertmanager"
    assert members["alertmanager"].isdir() and members["alertmanager"].uid == 65534
    assert members["etc/alertmanager/alertmanager.yml"].isfile()


def test_the_distroless_images_have_no_shell(tmp_path):
    for name in ("kube-state-metrics", "kube-rbac-proxy"):
        _manifest, _config, members = layer_members(specs_by_name(tmp_path)[name], tmp_path, ["/bin/sh"])
        assert "bin/sh" not in members and "bin/busybox" not in members


class FakeGo:
    def version(self):
        return "go1.26.8"


class FakeBackend:
    """The source backend's steps as monitoring.build uses them, with the Go builds faked."""

    def __init__(self, tmp_path):
        self.tmp_path = tmp_path
        self.go = FakeGo()
        self.steps = steps.Steps(str(tmp_path / "cache"), io.StringIO())
        self.built = []
        self.programs, self.dirs = fake_module(tmp_path)
        self.busybox = tmp_path / "root" / "bin" / "busybox"
        self.busybox.parent.mkdir(parents=True)
        self.busybox.write_bytes(b"\x7fELF busybox")

    def run(self, cmd, **kwargs):
        if cmd[0] == "apt-cache":
            return subprocess.CompletedProcess(cmd, 0, stdout="busybox-static:\n  Candidate: 1:1.35.0-4+b3\n",
                                               stderr="")
        if cmd[1:] == ["--list-full"]:
            return subprocess.CompletedProcess(cmd, 0, stdout="bin/sh\nbin/ls\n", stderr="")
        raise AssertionError(cmd)

    def _deb_packages(self):
        return ["busybox-static"]

    def _debian_root(self, deb_versions):
        return str(self.tmp_path / "root"), "debian-key"

    def _module_info(self, module, version):
        info = self.tmp_path / "info" / (module.replace("/", "_") + ".info")
        info.parent.mkdir(exist_ok=True)
        info.write_text(json.dumps({"Version": version, "Time": "2022-10-07T13:22:52Z"}))
        key = next(key for key, entry in versions.KUBESPHERE_MONITORING.items() if entry["module"] == module)
        return {"Info": str(info), "Dir": self.dirs.get(key, str(self.tmp_path))}

    def _go_step(self, component):
        self.built.append(component.name)

        def produce(tmp):
            for name in component.programs:
                with open(self.programs[name], "rb") as src, open(os.path.join(tmp, name), "wb") as dest:
                    dest.write(src.read())

        key = steps.digest(component.spec())
        return self.steps.run("go-%s-%s" % (component.name, component.version), key, produce), key

    def _image(self, spec, input_keys, busybox, applets, netfilter_root):
        assert netfilter_root is None and not spec.netfilter
        key = steps.digest({"spec": spec.key(), "inputs": input_keys})

        def produce(tmp):
            dockerarchive.write_image(os.path.join(tmp, "image.tar"),
                                      spec.layer(busybox_path=busybox, applets=applets), spec.ref, **spec.config)

        return os.path.join(self.steps.run("image-" + spec.name, key, produce), "image.tar")


def test_build_makes_every_image_once_per_component(tmp_path):
    backend = FakeBackend(tmp_path)
    added, components = monitoring.build(backend)
    assert sorted(backend.built) == sorted(key.replace("_", "-") for key in versions.KUBESPHERE_MONITORING)
    # the two long builds first, side by side
    assert set(backend.built[:2]) == {"thanos", "prometheus"}
    by_name = {name: (path, archive, ref, component) for path, archive, name, ref, component in added}
    assert set(by_name) == set(versions.KUBESPHERE_MONITORING_IMAGES)
    path, archive, ref, component = by_name["prometheus-config-reloader"]
    assert path == "images/prometheus-config-reloader.tar"
    assert ref == "docker.io/kubesphere/prometheus-config-reloader:v0.55.0"
    assert component == "kubesphere_prometheus_operator" and component in components
    _manifest, config, names = dockerarchive.read_image(archive)
    assert "bin/prometheus-config-reloader" in names and "bin/ls" in names
    assert config["config"]["Entrypoint"] == ["/bin/prometheus-config-reloader"]
    # again: every step is reused
    backend.steps = steps.Steps(str(tmp_path / "cache"), io.StringIO())
    monitoring.build(backend)
    assert backend.steps.ran == [] and len(backend.steps.reused) == 7 + 8


def test_the_module_docs_name_every_image():
    text = monitoring.__doc__
    for name in versions.KUBESPHERE_MONITORING_IMAGES:
        assert re.search(r"^  %s\b" % re.escape(name.replace("prometheus-config-reloader", "config reloader")),
                         text, re.M), name
