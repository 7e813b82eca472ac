"""The `source` backend: every binary and image built here, from Go modules and Debian packages.

Nothing is downloaded but Go modules (through the Go module proxy) and Debian packages (through
apt). See docs/bundle.md for what is built from which module and version.
"""

import concurrent.futures
import json
import os
import shutil
import subprocess
import threading

from . import debs, dockerarchive, gomod, images, kubeadm, steps, versions
from .result import BackendResult

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS_BUNDLE = os.path.dirname(HERE)
PAUSE_C = os.path.join(TOOLS_BUNDLE, "pause", "pause.c")

KUBERNETES_PROGRAMS = ("kubeadm", "kubelet", "kubectl", "kube-apiserver",
                       "kube-controller-manager", "kube-scheduler", "kube-proxy")
CNI_PLUGIN_GROUPS = ("main", "ipam", "meta")
CNI_PLUGIN_SKIP = ("windows",)
STRIP = ["-s", "-w"]
# Go builds at a time. Two on two cores: go build keeps both cores busy while it compiles, but
# not while it fetches modules or links a program (one core), and a second build fills those gaps.
GO_JOBS = 2


def _write_if_changed(path, text):
    old = None
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            old = handle.read()
    if old != text:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)


def _code(*names):
    return steps.files_digest([os.path.join(HERE, name) for name in names])


# ---------------------------------------------------------------------------------------------
# the Go components

def kubernetes_component(version, build_date):
    staging = versions.staging_version(version)

    def local_version(module):
        if not module.startswith("k8s.io/"):
            raise gomod.GoError("k8s.io/kubernetes replaces %s with a local path" % module)
        return staging

    return gomod.GoComponent(
        "kubernetes", version, [("k8s.io/kubernetes", version)],
        {name: "k8s.io/kubernetes/cmd/" + name for name in KUBERNETES_PROGRAMS},
        ldflags=STRIP + gomod.kubernetes_version_ldflags(version, build_date),
        local_version=local_version,
        source="Go module k8s.io/kubernetes %s with the k8s.io staging modules at %s"
               % (version, staging))


def etcd_component(version):
    modules = ("go.etcd.io/etcd/server/v3", "go.etcd.io/etcd/etcdctl/v3",
               "go.etcd.io/etcd/etcdutl/v3")

    def local_version(module):
        if not module.startswith("go.etcd.io/etcd/"):
            raise gomod.GoError("etcd replaces %s with a local path" % module)
        return version

    return gomod.GoComponent(
        "etcd", version, [(module, version) for module in modules],
        {"etcd": modules[0], "etcdctl": modules[1], "etcdutl": modules[2]},
        ldflags=STRIP + gomod.x_flags("go.etcd.io/etcd/api/v3/version", [("GitSHA", "")]),
        local_version=local_version,
        source="Go modules go.etcd.io/etcd/{server,etcdctl,etcdutl}/v3 %s" % version)


# CoreDNS as upstream builds it, but with only these plugins (upstream's plugin.cfg names):
# everything except the cloud and external backends that pull in large SDKs (azure, clouddns,
# route53: the Azure, Google Cloud and AWS SDKs; trace: the Datadog and Zipkin tracers; etcd,
# nomad, geoip). kubeadm's Corefile uses errors, health, ready, kubernetes, prometheus, forward,
# cache, loop, reload and loadbalance. The directive order stays upstream's (zdirectives.go); a
# Corefile naming a left-out plugin fails at start with "no action found for directive".
# Each entry: (plugin name, Go package).
COREDNS_PLUGIN_BASE = "github.com/coredns/coredns/plugin/"
COREDNS_PLUGINS = (
    ("root", "root"), ("metadata", "metadata"), ("cancel", "cancel"), ("tls", "tls"),
    ("proxyproto", "proxyproto"), ("quic", "quic"), ("grpc_server", "grpc_server"),
    ("https", "https"), ("https3", "https3"), ("timeouts", "timeouts"),
    ("multisocket", "multisocket"), ("reload", "reload"), ("nsid", "nsid"),
    ("bufsize", "bufsize"), ("bind", "bind"), ("debug", "debug"), ("ready", "ready"),
    ("health", "health"), ("pprof", "pprof"), ("prometheus", "metrics"), ("errors", "errors"),
    ("log", "log"), ("dnstap", "dnstap"), ("local", "local"), ("dns64", "dns64"),
    ("any", "any"), ("chaos", "chaos"), ("loadbalance", "loadbalance"), ("tsig", "tsig"),
    ("cache", "cache"), ("rewrite", "rewrite"), ("acl", "acl"), ("header", "header"),
    ("dnssec", "dnssec"), ("autopath", "autopath"), ("minimal", "minimal"),
    ("template", "template"), ("transfer", "transfer"), ("hosts", "hosts"),
    ("k8s_external", "k8s_external"), ("kubernetes", "kubernetes"), ("file", "file"),
    ("auto", "auto"), ("secondary", "secondary"), ("loop", "loop"), ("forward", "forward"),
    ("grpc", "grpc"), ("erratic", "erratic"), ("whoami", "whoami"),
    ("on", "github.com/coredns/caddy/onevent"), ("sign", "sign"), ("view", "view"),
)
COREDNS_LEFT_OUT = ("trace", "route53", "azure", "clouddns", "etcd", "nomad", "geoip")


def coredns_plugin_packages():
    return sorted(package if "/" in package else COREDNS_PLUGIN_BASE + package
                  for _name, package in COREDNS_PLUGINS)


def coredns_main_go(version):
    """CoreDNS's own main (coredns.go) with our plugin list instead of core/plugin's."""
    lines = ["// Generated by tools/bundle (slipway.cluster bundle builder): CoreDNS %s with the "
             "plugins of COREDNS_PLUGINS in tools/bundle/bundler/source.py." % version,
             "package main", "", "import ("]
    lines += ['\t_ "%s"' % package for package in coredns_plugin_packages()]
    lines += ["", '\t"github.com/coredns/coredns/coremain"', ")", "", "func main() {",
              "\tcoremain.Run()", "}"]
    return "\n".join(lines) + "\n"


def coredns_component(version):
    component = gomod.GoComponent(
        "coredns", version, [("github.com/coredns/coredns", version)], {},
        ldflags=STRIP + gomod.x_flags("github.com/coredns/coredns/coremain", [("GitCommit", "")]),
        tags=["grpcnotrace"],
        main_go=coredns_main_go(version),
        source="Go module github.com/coredns/coredns %s, with the plugins %s (left out: %s)"
               % (version, ", ".join(sorted(name for name, _package in COREDNS_PLUGINS)),
                  ", ".join(sorted(COREDNS_LEFT_OUT))))
    component.programs = {"coredns": component.module_path()}
    return component


# flannel's go.mod wants tencentcloud-sdk-go common v1.3.190 and vpc v1.3.188 (for its
# tencentvpc backend, linked into flanneld whatever backend is configured); the Go module proxy
# does not serve those versions. These served versions compile with flannel's code.
FLANNEL_PINS = {
    "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common": "v1.3.206",
    "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/vpc": "v1.0.500",
}


def flannel_component(version):
    return gomod.GoComponent(
        "flannel", version, [("github.com/flannel-io/flannel", version)],
        {"flanneld": "github.com/flannel-io/flannel",
         "install-conf": "github.com/flannel-io/flannel/cmd/install_conf"},
        # The udp backend is C (cgo), as in flannel's own static build: link it statically and
        # keep name and user lookups in Go so that the static binary needs no glibc NSS.
        ldflags=STRIP + ["-linkmode=external", "-extldflags=-static"]
        + gomod.x_flags("github.com/flannel-io/flannel/pkg/version", [("Version", version)]),
        tags=["netgo", "osusergo"],
        env={"CGO_ENABLED": "1"},
        pins=FLANNEL_PINS,
        source="Go module github.com/flannel-io/flannel %s (tencentcloud-sdk-go common %s, vpc "
               "%s: the versions flannel wants are not on the module proxy)"
               % (version, FLANNEL_PINS["github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/"
                                        "common"],
                  FLANNEL_PINS["github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/vpc"]))


def flannel_cni_component():
    info = versions.SOURCE_FLANNEL_CNI_PLUGIN
    return gomod.GoComponent(
        "flannel-cni-plugin", info["version"], [(info["module"], info["version"])],
        {"flannel": info["package"]},
        ldflags=STRIP + gomod.x_flags(info["module"] + "/pkg/utils/buildversion",
                                      [("BuildVersion", info["version"])]),
        source="Go module %s %s, package plugins/meta/flannel (github.com/flannel-io/cni-plugin "
               "is not served by the Go module proxy)" % (info["module"], info["version"]))


def cni_plugins_component(version, plugin_packages):
    module = "github.com/containernetworking/plugins"
    return gomod.GoComponent(
        "cni-plugins", version, [(module, version)], plugin_packages,
        ldflags=STRIP + gomod.x_flags(module + "/pkg/utils/buildversion",
                                      [("BuildVersion", version)]),
        source="Go module %s %s" % (module, version))


def cni_plugin_packages(module_dir):
    """{plugin: package} of every Linux plugin in a containernetworking/plugins release."""
    module = "github.com/containernetworking/plugins"
    packages = {}
    for group in CNI_PLUGIN_GROUPS:
        base = os.path.join(module_dir, "plugins", group)
        for name in sorted(os.listdir(base)):
            if name in CNI_PLUGIN_SKIP or not os.path.isdir(os.path.join(base, name)):
                continue
            packages[name] = "%s/plugins/%s/%s" % (module, group, name)
    return packages


def crictl_component(version):
    return gomod.GoComponent(
        "crictl", version, [("sigs.k8s.io/cri-tools", version)],
        {"crictl": "sigs.k8s.io/cri-tools/cmd/crictl"},
        ldflags=STRIP + gomod.x_flags("sigs.k8s.io/cri-tools/pkg/version",
                                      [("Version", version)]),
        fetch={"sigs.k8s.io/cri-tools": "github.com/kubernetes-sigs/cri-tools"},
        source="Go module sigs.k8s.io/cri-tools %s (served as github.com/kubernetes-sigs/"
               "cri-tools)" % version)


def metrics_server_component(version, build_date):
    return gomod.GoComponent(
        "metrics-server", version, [("sigs.k8s.io/metrics-server", version)],
        {"metrics-server": "sigs.k8s.io/metrics-server/cmd/metrics-server"},
        ldflags=["-w"] + gomod.x_flags("k8s.io/client-go/pkg/version",
                                       [("gitVersion", version), ("gitCommit", ""),
                                        ("buildDate", build_date)]),
        source="Go module sigs.k8s.io/metrics-server %s" % version)


# ---------------------------------------------------------------------------------------------

class SourceBackend:
    name = "source"

    def __init__(self, kubernetes_version, cache_dir, out, run=subprocess.run, go=None):
        self.kubernetes_version = versions.normalize_kubernetes_version(kubernetes_version)
        self.companions = versions.companions(self.kubernetes_version)
        self.cache_dir = cache_dir
        self.run = run
        self.go = go or gomod.Go(run=run)
        self.steps = steps.Steps(cache_dir, out)
        self.log_path = os.path.join(cache_dir, "build.log")
        self._log_lock = threading.Lock()
        self.scratch = os.path.join(cache_dir, "scratch")
        os.makedirs(self.scratch, exist_ok=True)
        # Go components that do not depend on the release (the node's runtime), given by cli.py to
        # be built in the same two slots as this release's, while Kubernetes compiles; build()
        # leaves their (output dir, step key) in self.alongside_built.
        self.alongside: dict[str, gomod.GoComponent] = {}
        self.alongside_built: dict[str, tuple[str, str]] = {}

    # --- inputs known without building, for the bundle's own stamp --------------------------
    def inputs(self):
        return {
            "kubernetes": self.kubernetes_version,
            "companions": self.companions,
            "flannel_cni_source": versions.SOURCE_FLANNEL_CNI_PLUGIN,
            "go": self.go.version(),
            "gcc": self._gcc_version(),
            "debs": debs.candidate_versions(self._deb_packages(), run=self.run),
        }

    def _deb_packages(self):
        return list(versions.DEBIAN_NETFILTER_PACKAGES) + [versions.DEBIAN_BUSYBOX_PACKAGE]

    def _gcc_version(self):
        proc = self.run(["gcc", "-dumpfullversion"], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError("gcc is needed for the pause image: %s" % proc.stderr)
        return proc.stdout.strip()

    # --- steps -------------------------------------------------------------------------------
    def _go_step(self, component):
        key = steps.digest({"spec": component.spec(), "go": self.go.version(),
                            "code": _code("gomod.py", "source.py")})

        def produce(tmp):
            self.steps.say("%s %s: go build %s" % (component.name, component.version,
                                                   " ".join(sorted(component.programs))))
            workdir = os.path.join(self.cache_dir, "go", component.name)
            os.makedirs(workdir, exist_ok=True)
            upstream = {}
            for module, version in component.requires:
                info = self.go.download(component.fetch.get(module, module), version,
                                        self.scratch)
                with open(info["GoMod"], encoding="utf-8") as handle:
                    upstream[module] = handle.read()
            _write_if_changed(os.path.join(workdir, "go.mod"),
                              gomod.tools_gomod(component, upstream))
            main_go = os.path.join(workdir, "main.go")
            if component.main_go is not None:
                _write_if_changed(main_go, component.main_go)
            elif os.path.exists(main_go):
                os.remove(main_go)
            built = os.path.join(tmp, "build")
            # Each build writes its own log (builds run side by side); it is appended to
            # build.log in one piece when the build ends.
            log_path = os.path.join(tmp, "go-build.log")
            try:
                with open(log_path, "w", encoding="utf-8") as log:
                    self.go.build(workdir, sorted(component.programs.values()), built,
                                  component.ldflags, component.tags, log=log,
                                  env=component.env)
            finally:
                self._append_log(component.name, log_path)
            os.remove(log_path)
            for name, package in component.programs.items():
                os.replace(os.path.join(built, gomod.default_exec_name(package)),
                           os.path.join(tmp, name))
            os.rmdir(built)
            self.steps.say("%s %s: built" % (component.name, component.version))

        # Named with the version: a bundle of two Kubernetes releases keeps both builds' steps.
        return self.steps.run("go-%s-%s" % (component.name, component.version), key, produce), key

    def _append_log(self, name, part):
        with self._log_lock:
            with open(self.log_path, "a", encoding="utf-8") as log:
                log.write("\n---- go build of %s\n" % name)
                if os.path.exists(part):
                    with open(part, encoding="utf-8", errors="replace") as handle:
                        shutil.copyfileobj(handle, log)

    def _with_alongside(self, own):
        """The release's Go components and those given to build beside them, in one dict."""
        clash = sorted(set(own) & set(self.alongside))
        if clash:
            raise ValueError("components built alongside the release clash with its own: %s"
                             % ", ".join(clash))
        return dict(own, **self.alongside)

    def _go_steps(self, components, after_kubernetes):
        """Build the Go components, GO_JOBS at a time: {name: (output dir, step key)}.

        Kubernetes starts first; the components named in after_kubernetes wait for it (they
        share its k8s.io packages, which then come from the Go build cache instead of being
        compiled twice at once); the others build alongside it. A module download of one build
        overlaps the compiling of another, and one build's single-threaded link the other's
        compiles. Every build has its own output directory and log, so the order in which
        they finish changes nothing in the bundle.
        """
        order = ["kubernetes"] + [name for name in components
                                  if name != "kubernetes" and name not in after_kubernetes]
        order += [name for name in components if name in after_kubernetes]
        with concurrent.futures.ThreadPoolExecutor(max_workers=GO_JOBS) as pool:
            futures = {"kubernetes": pool.submit(self._go_step, components["kubernetes"])}

            def after(name):
                futures["kubernetes"].result()
                return self._go_step(components[name])

            for name in order[1:]:
                if name in after_kubernetes:
                    futures[name] = pool.submit(after, name)
                else:
                    futures[name] = pool.submit(self._go_step, components[name])
            try:
                return {name: futures[name].result() for name in order}
            except BaseException:
                # a failed build stops the builds that have not started yet
                for future in futures.values():
                    future.cancel()
                raise

    def _module_info(self, module, version):
        return self.go.download(module, version, self.scratch)

    def _kubeadm_refs(self, k8s_dir, k8s_key):
        key = steps.digest({"kubernetes": k8s_key, "code": _code("kubeadm.py")})

        def produce(tmp):
            refs = kubeadm.list_images(os.path.join(k8s_dir, "kubeadm"),
                                       self.kubernetes_version, run=self.run)
            info = self._module_info("k8s.io/kubernetes", self.kubernetes_version)
            expected = self._constants_tags(info)
            for name in ("etcd", "coredns", "pause"):
                if kubeadm.tag(refs[name]) != expected[name]:
                    raise kubeadm.KubeadmError(
                        "kubeadm lists %s but its constants.go says %s"
                        % (refs[name], expected[name]))
            with open(os.path.join(tmp, "refs.json"), "w", encoding="utf-8") as handle:
                json.dump(refs, handle, indent=1, sort_keys=True)

        out = self.steps.run("kubeadm-images-" + self.kubernetes_version, key, produce)
        with open(os.path.join(out, "refs.json"), encoding="utf-8") as handle:
            return json.load(handle), key

    def _constants_tags(self, kubernetes_info):
        constants = os.path.join(kubernetes_info["Dir"], "cmd/kubeadm/app/constants/constants.go")
        with open(constants, encoding="utf-8") as handle:
            minor = versions.parse_kubernetes_version(self.kubernetes_version)[1]
            return kubeadm.constants_tags(handle.read(), minor)

    def _pause(self, tag):
        key = steps.digest({"tag": tag, "gcc": self._gcc_version(),
                            "code": steps.files_digest([PAUSE_C])})

        def produce(tmp):
            self.steps.say("pause %s: gcc -Os -static" % tag)
            cmd = ["gcc", "-Os", "-static", "-s", "-Wall", "-Werror",
                   '-DPAUSE_VERSION="%s"' % tag, "-o", os.path.join(tmp, "pause"), PAUSE_C]
            proc = self.run(cmd, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise RuntimeError("%s failed:\n%s" % (" ".join(cmd), proc.stderr))

        return self.steps.run("pause-" + tag, key, produce), key

    def _debian_root(self, deb_versions, step="debian-root", what="Debian packages"):
        """The packages unpacked into one root, a step of its own name (one stamp per name: a second set of packages,
        the conformance images', takes another name so that neither replaces the other)."""
        key = steps.digest({"debs": deb_versions, "code": _code("debs.py")})

        def produce(tmp):
            self.steps.say("%s: apt-get download + dpkg-deb -x (%d packages)" % (what, len(deb_versions)))
            with open(self.log_path, "a", encoding="utf-8") as log:
                paths = debs.fetch(sorted(deb_versions), deb_versions,
                                   os.path.join(self.cache_dir, "debs"), run=self.run, log=log)
            debs.unpack(paths, os.path.join(tmp, "root"), run=self.run)

        return os.path.join(self.steps.run(step, key, produce), "root"), key

    def _image(self, spec, input_keys, busybox, applets, netfilter_root):
        key = steps.digest({"spec": spec.key(), "inputs": input_keys,
                            "code": [_code("dockerarchive.py", "images.py", "elf.py"),
                                     steps.files_digest([images.WRAPPER])]})

        def produce(tmp):
            self.steps.say("image %s" % spec.ref)
            layer = spec.layer(busybox_path=busybox, applets=applets,
                               netfilter_root=netfilter_root)
            dockerarchive.write_image(os.path.join(tmp, "image.tar"), layer, spec.ref,
                                      **spec.config)

        tag = spec.ref.rsplit(":", 1)[-1]
        return os.path.join(self.steps.run("image-%s-%s" % (spec.name, tag), key, produce),
                            "image.tar")

    # --- the whole build ---------------------------------------------------------------------
    def build(self, deb_versions=None):
        comp = self.companions
        k8s_version = self.kubernetes_version
        with open(self.log_path, "a", encoding="utf-8") as log:
            log.write("\n==== source build of Kubernetes %s\n" % k8s_version)
        k8s_info = self._module_info("k8s.io/kubernetes", k8s_version)
        k8s_date = gomod.module_time(k8s_info["Info"])
        # The etcd and CoreDNS versions as kubeadm's constants.go chooses them, so that their
        # builds can run alongside Kubernetes'; _kubeadm_refs then checks that the built
        # kubeadm lists exactly these.
        expected = self._constants_tags(k8s_info)
        etcd_version = kubeadm.etcd_module_version(expected["etcd"])
        coredns_version = kubeadm.coredns_module_version(expected["coredns"])
        cni_info = self._module_info("github.com/containernetworking/plugins",
                                     comp["cni_plugins"])
        cni = cni_plugins_component(comp["cni_plugins"], cni_plugin_packages(cni_info["Dir"]))
        ms_info = self._module_info("sigs.k8s.io/metrics-server", comp["metrics_server"])
        ms = metrics_server_component(comp["metrics_server"],
                                      gomod.module_time(ms_info["Info"]))
        own = {
            "kubernetes": kubernetes_component(k8s_version, k8s_date),
            "etcd": etcd_component(etcd_version),
            "coredns": coredns_component(coredns_version),
            "flannel": flannel_component(comp["flannel"]),
            "flannel-cni-plugin": flannel_cni_component(),
            "cni-plugins": cni,
            "crictl": crictl_component(comp["crictl"]),
            "metrics-server": ms,
        }
        built = self._go_steps(self._with_alongside(own),
                               after_kubernetes=("crictl", "metrics-server"))
        self.alongside_built = {name: built[name] for name in self.alongside}
        k8s_dir, k8s_key = built["kubernetes"]
        etcd_dir, etcd_key = built["etcd"]
        coredns_dir, coredns_key = built["coredns"]
        flannel_dir, flannel_key = built["flannel"]
        fcni_dir, fcni_key = built["flannel-cni-plugin"]
        cni_dir, cni_key = built["cni-plugins"]
        crictl_dir, crictl_key = built["crictl"]
        ms_dir, ms_key = built["metrics-server"]
        refs, refs_key = self._kubeadm_refs(k8s_dir, k8s_key)
        etcd_tag = kubeadm.tag(refs["etcd"])
        coredns_tag = kubeadm.tag(refs["coredns"])
        pause_tag = kubeadm.tag(refs["pause"])
        if (kubeadm.etcd_module_version(etcd_tag), kubeadm.coredns_module_version(coredns_tag)) \
                != (etcd_version, coredns_version):
            raise kubeadm.KubeadmError(
                "kubeadm lists etcd %s and CoreDNS %s; etcd %s and CoreDNS %s were built"
                % (etcd_tag, coredns_tag, etcd_version, coredns_version))
        pause_dir, pause_key = self._pause(pause_tag)
        if deb_versions is None:
            deb_versions = debs.candidate_versions(self._deb_packages(), run=self.run)
        deb_root, deb_key = self._debian_root(deb_versions)
        busybox = os.path.join(deb_root, "bin", "busybox")
        applets = images.busybox_applets(busybox, run=self.run)
        busybox_version = versions.debian_upstream_version(
            deb_versions[versions.DEBIAN_BUSYBOX_PACKAGE])

        artifacts, artifact_keys = {}, {}
        for directory, key, names in (
                (k8s_dir, k8s_key, KUBERNETES_PROGRAMS),
                (etcd_dir, etcd_key, ("etcd", "etcdctl", "etcdutl")),
                (coredns_dir, coredns_key, ("coredns",)),
                (flannel_dir, flannel_key, ("flanneld", "install-conf")),
                (fcni_dir, fcni_key, ("flannel",)),
                (crictl_dir, crictl_key, ("crictl",)),
                (ms_dir, ms_key, ("metrics-server",)),
                (pause_dir, pause_key, ("pause",))):
            for name in names:
                artifacts[name] = os.path.join(directory, name)
                artifact_keys[name] = key

        fcni_tag = versions.SOURCE_FLANNEL_CNI_PLUGIN["tag"]
        repos = versions.IMAGE_REPOSITORIES
        all_refs = dict(refs)
        all_refs.update({
            "flannel": "%s:%s" % (repos["flannel"], comp["flannel"]),
            "flannel-cni-plugin": "%s:%s" % (repos["flannel-cni-plugin"], fcni_tag),
            "metrics-server": "%s:%s" % (repos["metrics-server"], comp["metrics_server"]),
            "busybox": "%s:%s" % (repos["busybox"], busybox_version),
        })
        labels = {name: {"io.slipway.bundle.backend": "source"} for name in all_refs}
        specs = images.source_image_specs(all_refs, artifacts, labels)

        result = BackendResult(self.kubernetes_version, "source")
        for name in ("kubeadm", "kubelet", "kubectl"):
            result.add_binary("bin/" + name, artifacts[name], "kubernetes")
        result.add_binary("bin/crictl", artifacts["crictl"], "crictl")
        for name in ("etcd", "etcdctl", "etcdutl"):
            result.add_binary("bin/" + name, artifacts[name], "etcd")
        for name in sorted(cni.programs):
            result.add_binary("bin/cni/" + name, os.path.join(cni_dir, name), "cni_plugins")

        for spec in specs:
            input_keys = {path: artifact_keys[name] for name in artifacts
                          for path, src in spec.files.items() if src == artifacts[name]}
            if spec.busybox or spec.netfilter:
                input_keys["debian"] = deb_key
            archive = self._image(spec, input_keys, busybox, applets, deb_root)
            result.add_image(spec.filename(), archive, spec.name, spec.ref, spec.component)

        netfilter_versions = ", ".join(
            "%s %s" % (pkg, deb_versions[pkg])
            for pkg in ("iptables", "nftables", "conntrack"))
        result.components = {
            "kubernetes": {"version": k8s_version,
                           "source": kubernetes_component(k8s_version, k8s_date).source},
            "etcd": {"version": etcd_version, "image_tag": etcd_tag,
                     "source": etcd_component(etcd_version).source},
            "coredns": {"version": coredns_version, "image_tag": coredns_tag,
                        "source": coredns_component(coredns_version).source},
            "pause": {"version": pause_tag,
                      "source": "tools/bundle/pause/pause.c, gcc -Os -static"},
            "crictl": {"version": comp["crictl"], "source": crictl_component(comp["crictl"]).source},
            "cni_plugins": {"version": comp["cni_plugins"], "source": cni.source},
            "flannel": {"version": comp["flannel"],
                        "source": flannel_component(comp["flannel"]).source},
            "flannel_cni_plugin": {"version": fcni_tag, "source": flannel_cni_component().source},
            "metrics_server": {"version": comp["metrics_server"], "source": ms.source},
            "busybox": {"version": busybox_version,
                        "source": "Debian bookworm package %s %s"
                                  % (versions.DEBIAN_BUSYBOX_PACKAGE,
                                     deb_versions[versions.DEBIAN_BUSYBOX_PACKAGE])},
            "netfilter": {"version": deb_versions["iptables"],
                          "source": "Debian bookworm packages (%s) in the kube-proxy and flannel "
                                    "images" % netfilter_versions},
        }
        return result
