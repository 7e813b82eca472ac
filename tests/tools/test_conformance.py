"""The conformance suite in the bundle (tools/bundle/bundler/conformance.py): its pure parts."""

import argparse
import io
import json
import os
import tarfile

import pytest

from bundler import cli, conformance, dockerarchive, gomod, manifest, source
from test_cli import FakeBackend, patch_kscore, patch_runtime, fake_monitoring, fake_operator_image

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
# `e2e.test --list-images` of the e2e.test the builder made for Kubernetes v1.37.1, as it printed it.
LIST_V1_37_1 = os.path.join(DATA, "e2e-list-images-v1.37.1.txt")
RELEASE_REFS = {"registry.k8s.io/pause:3.10.2", "registry.k8s.io/etcd:3.7.0-0",
                "registry.k8s.io/kube-apiserver:v1.37.1"}


def listed():
    with open(LIST_V1_37_1, encoding="utf-8") as handle:
        return conformance.parse_list_images(handle.read())


def test_every_image_the_suite_lists_is_built_taken_from_the_release_or_left_out_with_a_reason():
    plan = conformance.plan_images(listed(), RELEASE_REFS)
    covered = ({ref for _name, _tag, ref in plan["build"]} | set(plan["release"])
               | {ref for ref, _reason in plan["left_out"]})
    assert covered == set(listed())
    assert sorted(plan["release"]) == ["registry.k8s.io/etcd:3.7.0-0", "registry.k8s.io/pause:3.10.2"]
    assert all(reason for _ref, reason in plan["left_out"])


def test_the_older_releases_suite_is_covered_too():
    """v1.36.5's e2e.test names other tags (nginx 1.15-4 and 1.27-0, glibc-dns-testing 2.0.0, etcd 3.6.8-0)."""
    with open(os.path.join(DATA, "e2e-list-images-v1.36.5.txt"), encoding="utf-8") as handle:
        refs = conformance.parse_list_images(handle.read())
    plan = conformance.plan_images(refs, {"registry.k8s.io/pause:3.10.2", "registry.k8s.io/etcd:3.6.8-0"})
    assert len(plan["build"]) == 11 and len(plan["build"]) + len(plan["release"]) + len(plan["left_out"]) == len(refs)
    assert ("nginx", "1.15-4", "registry.k8s.io/e2e-test-images/nginx:1.15-4") in plan["build"]


def test_the_images_of_the_conformance_specs_are_built_with_the_references_the_suite_uses():
    built = {ref for _name, _tag, ref in conformance.plan_images(listed(), RELEASE_REFS)["build"]}
    assert built == {
        "registry.k8s.io/e2e-test-images/agnhost:2.66.1",
        "registry.k8s.io/e2e-test-images/agnhost:2.55",
        "registry.k8s.io/e2e-test-images/busybox:1.37.0-2",
        "registry.k8s.io/e2e-test-images/glibc-dns-testing:2.1.1",
        "registry.k8s.io/e2e-test-images/kitten:1.8",
        "registry.k8s.io/e2e-test-images/nautilus:1.8",
        "registry.k8s.io/e2e-test-images/nginx:1.27.0-2",
        "registry.k8s.io/e2e-test-images/nginx:1.28.0-2",
        "registry.k8s.io/e2e-test-images/nonewprivs:1.4",
        "registry.k8s.io/e2e-test-images/nonroot:1.5",
        "registry.k8s.io/e2e-test-images/sample-apiserver:1.29.2",
    }


def test_an_image_the_step_does_not_know_stops_the_build_naming_it():
    refs = listed() + ["registry.k8s.io/e2e-test-images/new-thing:1.0", "quay.io/other/image:2"]
    with pytest.raises(conformance.ConformanceError) as raised:
        conformance.plan_images(refs, RELEASE_REFS)
    message = str(raised.value)
    assert "registry.k8s.io/e2e-test-images/new-thing:1.0" in message
    assert "quay.io/other/image:2" in message
    assert "NOT_CONFORMANCE" in message


def test_a_pause_or_etcd_the_release_does_not_have_stops_the_build():
    refs = [ref for ref in listed() if not ref.startswith("registry.k8s.io/etcd:")]
    refs.append("registry.k8s.io/etcd:3.6.8-0")
    with pytest.raises(conformance.ConformanceError) as raised:
        conformance.plan_images(refs, RELEASE_REFS)
    assert "registry.k8s.io/etcd:3.6.8-0 (the release's images have registry.k8s.io/etcd:3.7.0-0)" in str(raised.value)


def test_a_conformance_image_the_suite_no_longer_lists_is_reported():
    refs = [ref for ref in listed() if "/glibc-dns-testing:" not in ref]
    with pytest.raises(conformance.ConformanceError, match="no longer names glibc-dns-testing"):
        conformance.plan_images(refs, RELEASE_REFS)


def test_list_images_output_that_is_not_references_is_refused():
    assert conformance.parse_list_images("a/b:1\n\na/b:1\nc/d:2\n") == ["a/b:1", "c/d:2"]
    with pytest.raises(conformance.ConformanceError, match="'panic: oops'"):
        conformance.parse_list_images("a/b:1\npanic: oops\n")


GOMOD = """module k8s.io/kubernetes

go 1.26.0

require (
\tgithub.com/onsi/ginkgo/v2 v2.32.0 // indirect
\tgithub.com/onsi/gomega v1.40.0
)

require k8s.io/sample-apiserver v0.0.0
"""


def test_ginkgo_is_the_version_kubernetes_requires():
    assert conformance.gomod_required(GOMOD, "github.com/onsi/ginkgo/v2") == "v2.32.0"
    assert conformance.gomod_required(GOMOD, "k8s.io/sample-apiserver") == "v0.0.0"
    assert conformance.gomod_required(GOMOD, "github.com/onsi/ginkgo") is None
    assert conformance.check_ginkgo(GOMOD, "v2.32.0") == "v2.32.0"
    with pytest.raises(conformance.ConformanceError, match="selects github.com/onsi/ginkgo/v2 v2.33.0"):
        conformance.check_ginkgo(GOMOD, "v2.33.0")


UPSTREAM = GOMOD + "\nreplace k8s.io/api => ./staging/src/k8s.io/api\n" \
    "replace k8s.io/sample-apiserver => ./staging/src/k8s.io/sample-apiserver\n"


def test_e2e_test_is_built_in_a_module_whose_go_mod_is_kubernetes_own():
    suite, extras = conformance.tools_components("v1.37.1", "2026-11-20T10:00:00Z", UPSTREAM)
    suite_mod, extras_mod = conformance.tools_gomods(suite, extras, UPSTREAM)
    kubernetes_mod = gomod.tools_gomod(source.kubernetes_component("v1.37.1", "2026-11-20T10:00:00Z"),
                                       {"k8s.io/kubernetes": UPSTREAM})
    # the bundle's Kubernetes build's go.mod but for its first line (the comment) and the module's name
    assert suite_mod.splitlines()[2:] == kubernetes_mod.splitlines()[2:]
    assert "k8s.io/sample-apiserver => k8s.io/sample-apiserver v0.37.1" in suite_mod
    # ginkgo and sample-apiserver: required in the other module, at kubernetes' versions
    assert "\tgithub.com/onsi/ginkgo/v2 v2.32.0\n" in extras_mod and "\tk8s.io/sample-apiserver v0.0.0\n" in extras_mod
    assert "ginkgo" not in suite_mod


def test_the_go_commands_build_each_program_in_its_module():
    suite, extras = conformance.tools_components("v1.37.1", "2026-11-20T10:00:00Z", UPSTREAM)
    commands = {what: (module, argv) for module, argv, what in conformance.build_commands("go", suite, extras, "/out")}
    module, e2e = commands["e2e.test"]
    assert module == "conformance"
    assert e2e[:4] == ["go", "test", "-c", "-vet=off"] and e2e[-1] == "k8s.io/kubernetes/test/e2e"
    assert e2e[e2e.index("-o") + 1] == "/out/e2e.test"
    assert "-X k8s.io/component-base/version.gitVersion=v1.37.1" in e2e[e2e.index("-ldflags") + 1]
    module, plain = commands["agnhost, nnp"]
    assert module == "conformance" and plain[-2:] == ["k8s.io/kubernetes/test/images/agnhost",
                                                      "k8s.io/kubernetes/test/images/nonewprivs"]
    assert plain[plain.index("-ldflags") + 1] == "-s -w"
    module, ginkgo = commands["ginkgo"]
    assert module == "conformance-tools" and ginkgo[-1] == "github.com/onsi/ginkgo/v2/ginkgo"
    module, stamped = commands["sample-apiserver"]
    assert module == "conformance-tools" and stamped[-1] == "k8s.io/sample-apiserver"
    assert "-X k8s.io/component-base/version.gitVersion=v1.37.1" in stamped[stamped.index("-ldflags") + 1]


def test_a_requirement_the_go_command_adds_to_the_suites_module_stops_the_build():
    conformance.check_build_list("module x\n", "module x\n")
    with pytest.raises(conformance.ConformanceError, match="no longer the Kubernetes build's"):
        conformance.check_build_list("module x\n", "module x\nrequire k8s.io/sample-apiserver v0.0.0 // indirect\n")


def test_a_kubernetes_go_mod_without_ginkgo_is_named():
    with pytest.raises(conformance.ConformanceError, match="does not require github.com/onsi/ginkgo/v2"):
        conformance.tools_components("v1.37.1", "2026-11-20T10:00:00Z", "module k8s.io/kubernetes\n")


# --- the images' layouts -----------------------------------------------------------------------

def fake_tree(tmp_path):
    """The programs, test/images of the module and an unpacked Debian root (non-ELF stand-ins)."""
    programs = {}
    for name in conformance.PROGRAMS:
        path = tmp_path / "programs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(name.encode())
        programs[name] = str(path)
    module = tmp_path / "kubernetes"
    for rel in ("agnhost/porter/localhost.crt", "agnhost/porter/localhost.key", "kitten/html/kitten.jpg",
                "kitten/html/data.json", "nautilus/html/nautilus.jpg", "nautilus/html/data.json"):
        path = module / "test" / "images" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(rel.encode())
    root = tmp_path / "root"
    for rel in ("usr/bin/dig", "usr/bin/getent", "usr/bin/curl", "bin/nc.openbsd", "bin/dash", "usr/sbin/nginx",
                "etc/nginx/mime.types"):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(rel.encode())
    busybox = tmp_path / "busybox"
    busybox.write_bytes(b"busybox")
    return (programs, str(module), str(busybox), ["/bin/sh", "/bin/seq", "/bin/cat", "/bin/nc", "/sbin/sysctl"],
            str(root))


def image(tmp_path, name):
    programs, module, busybox, applets, root = fake_tree(tmp_path)
    layer, config = conformance.image_layout(name, programs, module, busybox, applets, root)
    out = str(tmp_path / (name + ".tar"))
    dockerarchive.write_image(out, layer, "registry.k8s.io/e2e-test-images/%s:1" % name, **config)
    with tarfile.open(out) as tar:
        index = json.load(tar.extractfile("manifest.json"))
        image_config = json.load(tar.extractfile(index[0]["Config"]))["config"]
        with tarfile.open(fileobj=io.BytesIO(tar.extractfile(index[0]["Layers"][0]).read())) as inner:
            members = {member.name: member for member in inner.getmembers()}
            files = {member.name: inner.extractfile(member).read() for member in inner.getmembers()
                     if member.isfile()}
    return image_config, members, files


def test_agnhost_runs_as_upstreams_with_what_the_dns_probes_run(tmp_path):
    config, members, files = image(tmp_path, "agnhost")
    assert config["Entrypoint"] == ["/agnhost"] and config["Cmd"] == ["pause"]
    assert files["agnhost"] == b"agnhost"
    assert members["agnhost-2"].issym() and members["agnhost-2"].linkname == "agnhost"
    assert {"localhost.crt", "localhost.key", "usr/bin/dig", "usr/bin/getent", "bin/sh", "bin/seq"} <= set(members)
    assert members["uploads"].isdir()
    # The specs' HTTP and TCP/UDP checks from inside a pod: curl, and OpenBSD's netcat as nc, not busybox's applet.
    assert {"usr/bin/curl", "bin/nc.openbsd"} <= set(members)
    for nc in ("bin/nc", "usr/bin/nc"):
        assert members[nc].issym() and members[nc].linkname == "/bin/nc.openbsd"
    # A shell that finds them on PATH: busybox's static sh would run its own nc applet instead.
    assert members["bin/sh"].issym() and members["bin/sh"].linkname == "dash" and "bin/dash" in members
    assert b"user-defined-in-image:x:1000:1000:" in files["etc/passwd"]
    assert b"group-defined-in-image:x:50000:user-defined-in-image\n" in files["etc/group"]


@pytest.mark.parametrize("name", ["kitten", "nautilus"])
def test_kitten_and_nautilus_are_agnhost_serving_their_picture(tmp_path, name):
    config, members, files = image(tmp_path, name)
    assert config["Entrypoint"] == ["/agnhost"] and config["Cmd"] == ["test-webserver"]
    assert files["%s.jpg" % name] == ("%s/html/%s.jpg" % (name, name)).encode()
    assert files["data.json"] == ("%s/html/data.json" % name).encode()
    assert "agnhost" in members


def test_nonewprivs_is_set_user_id_root(tmp_path):
    config, members, _files = image(tmp_path, "nonewprivs")
    assert config["Cmd"] == ["nnp"]
    nnp = members["usr/local/bin/nnp"]
    assert nnp.mode == 0o4755 and nnp.uid == 0


def test_busybox_has_every_applet_in_bin_as_docker_s_busybox_image(tmp_path):
    """The Sysctls spec runs /bin/sysctl in it; busybox installs sysctl in /sbin."""
    config, members, _files = image(tmp_path, "busybox")
    assert config["Cmd"] == ["sh"]
    for applet in ("bin/sysctl", "sbin/sysctl", "bin/sh", "bin/nc"):
        assert members[applet].issym() and members[applet].linkname == "/bin/busybox"


def test_nonroot_runs_as_user_1234(tmp_path):
    config, members, _files = image(tmp_path, "nonroot")
    assert config["User"] == "1234" and "bin/sh" in members


def test_nginx_serves_port_80_and_logs_to_the_containers_output(tmp_path):
    config, members, files = image(tmp_path, "nginx")
    assert config["Cmd"] == ["nginx", "-g", "daemon off;"]
    conf = files["etc/nginx/nginx.conf"].decode()
    assert "listen 80;" in conf and "user nginx;" in conf and "root /usr/share/nginx/html;" in conf
    assert b"nginx:x:101:101:" in files["etc/passwd"]
    assert members["var/log/nginx/error.log"].linkname == "/dev/stderr"
    assert members["var/log/nginx/access.log"].linkname == "/dev/stdout"
    assert {"usr/sbin/nginx", "etc/nginx/mime.types", "usr/share/nginx/html/index.html", "var/lib/nginx"} <= set(members)


def test_sample_apiserver_and_glibc_dns_testing(tmp_path):
    config, members, _files = image(tmp_path, "sample-apiserver")
    assert config["Entrypoint"] == ["/sample-apiserver"] and "sample-apiserver" in members
    config, members, _files = image(tmp_path / "glibc", "glibc-dns-testing")
    assert {"usr/bin/dig", "usr/bin/getent", "bin/sh"} <= set(members)


def test_every_built_image_has_a_layout(tmp_path):
    programs, module, busybox, applets, root = fake_tree(tmp_path)
    for name in conformance.BUILT:
        layer, _config = conformance.image_layout(name, programs, module, busybox, applets, root)
        assert layer.has("/etc/passwd")
    with pytest.raises(conformance.ConformanceError, match="no layout for the suite image perl"):
        conformance.image_layout("perl", programs, module, busybox, applets, root)


# --- the bundle: --with conformance ---------------------------------------------------------------

def fake_conformance(tmp_path, calls):
    def build(backend, result):
        calls.append(backend.kubernetes_version)
        src = tmp_path / "suite"
        src.mkdir(exist_ok=True)
        for name in ("e2e.test", "ginkgo", "agnhost.tar"):
            (src / name).write_bytes(name.encode())
        result.conformance_binaries.append(("conformance/bin/e2e.test", str(src / "e2e.test"), "conformance"))
        result.conformance_binaries.append(("conformance/bin/ginkgo", str(src / "ginkgo"), "conformance"))
        result.conformance_images.append(("conformance/images/agnhost-2.66.1.tar", str(src / "agnhost.tar"),
                                          "agnhost-2.66.1", "registry.k8s.io/e2e-test-images/agnhost:2.66.1",
                                          "conformance"))
        result.components["conformance"] = {"version": backend.kubernetes_version, "source": "test"}
    return build


def build_args(tmp_path, with_parts):
    return argparse.Namespace(out=str(tmp_path / "bundle"), cache_dir=str(tmp_path / "cache"), backend="source",
                              kubernetes_version=["v1.37.1"], without=[], with_parts=with_parts)


def patch_all(monkeypatch, tmp_path, calls):
    backend = FakeBackend(tmp_path, io.StringIO())
    monkeypatch.setattr(cli, "make_backend", lambda *args, **kwargs: backend)
    monkeypatch.setattr(cli.pyimage, "build", fake_operator_image(tmp_path))
    monkeypatch.setattr(cli.monitoring, "build", fake_monitoring(tmp_path))
    monkeypatch.setattr(cli.conformance, "build", fake_conformance(tmp_path, calls))
    patch_kscore(monkeypatch, tmp_path)
    patch_runtime(monkeypatch, tmp_path)


def test_with_conformance_puts_the_suite_apart_from_what_clusters_run(tmp_path, monkeypatch):
    calls = []
    patch_all(monkeypatch, tmp_path, calls)
    assert cli.build(build_args(tmp_path, ["conformance"]), out=io.StringIO()) == 0
    assert calls == ["v1.37.1"]
    bundle = str(tmp_path / "bundle")
    data = manifest.load(bundle)
    suite = data["conformance"]
    assert [entry["path"] for entry in suite["binaries"]] == ["conformance/bin/e2e.test", "conformance/bin/ginkgo"]
    assert suite["images"][0]["ref"] == "registry.k8s.io/e2e-test-images/agnhost:2.66.1"
    assert suite["images"][0]["sha256"] == manifest.sha256_file(os.path.join(bundle, "conformance/images/agnhost-2.66.1.tar"))
    # the cluster's own lists do not carry it: the cluster model hashes and imports only those
    assert not any("conformance" in entry["path"] for entry in data["binaries"] + data["images"])
    assert manifest.verify(bundle) == []
    said = io.StringIO()
    assert cli.verify(argparse.Namespace(dir=bundle), out=said) == 0
    assert "; the conformance suite: 2 binaries and 1 images" in said.getvalue()
    # the reader without PyYAML reads the section too
    with open(os.path.join(bundle, manifest.MANIFEST_NAME), encoding="utf-8") as handle:
        assert manifest.parse_subset(handle.read())["conformance"] == suite
    # a suite file changed or added is found
    with open(os.path.join(bundle, "conformance/bin/ginkgo"), "ab") as handle:
        handle.write(b"x")
    (tmp_path / "bundle" / "conformance" / "bin" / "extra").write_bytes(b"extra")
    problems = manifest.verify(bundle)
    assert any(problem.startswith("SIZE conformance/bin/ginkgo") for problem in problems)
    assert "UNLISTED conformance/bin/extra: in the bundle but not in manifest.yml" in problems


def test_without_with_conformance_the_suite_is_not_built(tmp_path, monkeypatch):
    calls = []
    patch_all(monkeypatch, tmp_path, calls)
    assert cli.build(build_args(tmp_path, []), out=io.StringIO()) == 0
    assert calls == []
    data = manifest.load(str(tmp_path / "bundle"))
    assert "conformance" not in data and not (tmp_path / "bundle" / "conformance").exists()


def test_a_suite_path_outside_its_directory_is_refused():
    data = {"format_version": 1, "kubernetes_version": "v1.37.1", "arch": "amd64", "backend": "source",
            "components": {}, "binaries": [], "images": [],
            "conformance": {"binaries": [{"path": "bin/e2e.test", "component": "conformance", "sha256": "0",
                                          "size": 1}], "images": []}}
    with pytest.raises(manifest.ManifestError, match=r"conformance.binaries\[0\]: path 'bin/e2e.test'"):
        manifest.validate(data)


def test_a_releases_suite_is_under_that_releases_directory():
    def release(path):
        return {"kubernetes_version": "v1.36.5", "components": {}, "binaries": [], "images": [],
                "conformance": {"binaries": [{"path": path, "component": "conformance", "sha256": "0", "size": 1}],
                                "images": []}}

    data = {"format_version": 1, "kubernetes_version": "v1.37.1", "arch": "amd64", "backend": "source",
            "components": {}, "binaries": [], "images": [],
            "releases": [release("releases/v1.36.5/conformance/bin/e2e.test")]}
    manifest.validate(data)
    data["releases"] = [release("conformance/bin/e2e.test")]
    with pytest.raises(manifest.ManifestError, match=r"releases\[0\].conformance.binaries\[0\]: path "
                                                     r"'conformance/bin/e2e.test' .* outside "
                                                     r"releases/v1.36.5/conformance/bin/"):
        manifest.validate(data)


def test_with_conformance_needs_the_source_backend(capsys):
    assert cli.main(["--backend", "download", "--with", "conformance"]) == 2
    assert "--with conformance builds the suite and its images from source" in capsys.readouterr().err
