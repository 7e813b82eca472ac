"""The Kubernetes conformance suite in the bundle (`build.py --with conformance`, source backend).

For each Kubernetes release of the bundle: e2e.test (`go test -c k8s.io/kubernetes/test/e2e`) and
ginkgo (github.com/onsi/ginkgo/v2/ginkgo at the version k8s.io/kubernetes requires), built in a tools
module with the same go.mod as the release's Kubernetes build (its staging replacements), and every
image that `e2e.test --list-images` names and the `[Conformance]` specs run, tagged with exactly the
reference the suite uses (registry.k8s.io/e2e-test-images/NAME:TAG), so that no KUBE_TEST_REPO_LIST
is needed. pause and etcd are the release's own images. The other images of `--list-images` are
named in NOT_CONFORMANCE with the reason no `[Conformance]` spec runs them; one that is in neither
list stops the build (plan_images), so a new release's new image cannot be missed.

The images, built as the bundle's other images are (one layer, static Go programs, busybox and
Debian bookworm's packages), laid out as test/images/ of the same module lays them out:
  agnhost           /agnhost of test/images/agnhost (this release's), /agnhost-2 linked to it,
                    porter's localhost.crt and .key, /uploads, the users user-defined-in-image (1000)
                    and group-defined-in-image (50000); busybox, and Debian's dig and getent for the
                    DNS specs' probes; entrypoint /agnhost, cmd pause
  kitten, nautilus  agnhost's image with the picture and data.json of test/images/kitten|nautilus
                    in /, cmd test-webserver
  busybox           busybox, cmd sh
  glibc-dns-testing busybox, dig and getent (glibc's resolver: the image's point), cmd sh
  nginx             Debian's nginx with a configuration like the upstream image's (port 80,
                    /usr/share/nginx/html, logs to stdout and stderr, workers as user nginx), busybox;
                    cmd nginx -g 'daemon off;'
  nonewprivs        /usr/local/bin/nnp of test/images/nonewprivs, set-user-ID root, busybox; cmd nnp
  nonroot           busybox, user 1234
  sample-apiserver  /sample-apiserver of k8s.io/sample-apiserver (the release's staging version),
                    busybox; entrypoint /sample-apiserver
"""

import inspect
import json
import os
import re

from . import debs, dockerarchive, elf, gomod, images, steps, versions

HERE = os.path.dirname(os.path.abspath(__file__))
PART = "conformance"
COMPONENT = "conformance"
# Where a release's suite goes, beside its bin/ and images/ (manifest.py).
DIR = "conformance"
E2E_PACKAGE = "k8s.io/kubernetes/test/e2e"
GINKGO_MODULE = "github.com/onsi/ginkgo/v2"
GINKGO_PACKAGE = GINKGO_MODULE + "/ginkgo"
E2E_REGISTRY = "registry.k8s.io/e2e-test-images"
STRIP = ["-s", "-w"]
# Programs of the tools module, by output name; e2e.test is `go test -c` of E2E_PACKAGE.
PROGRAMS = {
    "ginkgo": GINKGO_PACKAGE,
    "agnhost": "k8s.io/kubernetes/test/images/agnhost",
    "nnp": "k8s.io/kubernetes/test/images/nonewprivs",
    "sample-apiserver": "k8s.io/sample-apiserver",
}
# Built with the release's version stamp (kubernetes_version_ldflags), as Kubernetes' own build does.
STAMPED = ("sample-apiserver",)
# Built in the tools module whose go.mod is Kubernetes' own (packages of k8s.io/kubernetes); the others in
# a second one that requires their modules (tools_components).
SUITE_PROGRAMS = ("agnhost", "nnp")
SAMPLE_APISERVER_MODULE = "k8s.io/sample-apiserver"
LIST_IMAGES = "list-images.txt"

# The images of registry.k8s.io/e2e-test-images that the [Conformance] specs run (the first spec
# of each, to find it again): built here.
BUILT = {
    "agnhost": "most specs (pods, services, DNS, webhooks, probes, kubectl)",
    "busybox": "most node specs (downward API, init containers, lifecycle hooks, volumes)",
    "glibc-dns-testing": "DNS should provide DNS for the cluster (the glibc prober)",
    "kitten": "ImageVolume should succeed with pod and pull policy of Always",
    "nautilus": "Kubectl client Update Demo",
    "nginx": "ReplicationController, Pods, EndpointSlice, garbage collector; the newer tag: "
             "server-side apply's Deployments",
    "nonewprivs": "Security Context when creating containers with AllowPrivilegeEscalation",
    "nonroot": "Security Context When creating a container with runAsNonRoot",
    "sample-apiserver": "Aggregator should be able to support the 1.17 Sample API Server",
}
# Images of the release's own images/ that the suite runs (the Aggregator's etcd, pods' pause).
FROM_RELEASE = ("registry.k8s.io/pause", "registry.k8s.io/etcd")
# Images `e2e.test --list-images` names that no [Conformance] spec runs, by reference, repository
# or repository prefix (ending in '/'), and why.
NOT_CONFORMANCE = {
    # a reference (with its tag) of a built repository: the suite runs it only outside [Conformance]
    "registry.k8s.io/e2e-test-images/busybox:1.36.1-1": "the CSI mock driver's manifest "
                                                        "(testing-manifests/storage-csi/mock; not [Conformance])",
    "invalid.registry.k8s.io/invalid/alpine": "a reference that must fail to pull (the image pull "
                                              "error specs)",
    "gcr.io/k8s-authenticated-test/agnhost": "a private registry's image (specs that need its "
                                             "credentials; not [Conformance])",
    "registry.k8s.io/e2e-test-images/apparmor-loader": "AppArmor specs (not [Conformance])",
    "registry.k8s.io/e2e-test-images/ipc-utils": "node e2e IPC specs (not [Conformance])",
    "registry.k8s.io/e2e-test-images/node-perf/": "node performance specs (node e2e)",
    "registry.k8s.io/e2e-test-images/perl": "node e2e specs (not [Conformance])",
    "registry.k8s.io/e2e-test-images/regression-issue-74839": "a network regression spec (not "
                                                              "[Conformance])",
    "registry.k8s.io/e2e-test-images/resource-consumer": "autoscaling specs (not [Conformance])",
    "registry.k8s.io/e2e-test-images/volume/": "NFS and iSCSI volume servers of storage specs "
                                               "(not [Conformance])",
    "registry.k8s.io/e2e-test-images/sample-device-plugin": "device plugin specs (node e2e)",
    "registry.k8s.io/build-image/distroless-iptables": "kube-proxy specs that run iptables in a pod "
                                                       "(not [Conformance])",
    "registry.k8s.io/sig-storage/": "CSI drivers and sidecars of the storage specs (not "
                                    "[Conformance])",
    "registry.k8s.io/cloud-provider-gcp/": "GCE-only specs",
}

# Debian bookworm packages of the images that need more than busybox and a static Go program:
# nginx, dig and getent, curl and netcat (agnhost's), and the shared libraries they load (elf.closure
# takes only the files these programs need; a library missing from this list is reported by name).
DEBIAN_PACKAGES = [
    "nginx", "nginx-common", "libcrypt1", "libpcre2-8-0", "libssl3", "zlib1g",
    "bind9-dnsutils", "bind9-libs", "libuv1", "libfstrm0", "libgssapi-krb5-2", "libjemalloc2",
    "libjson-c5", "libkrb5-3", "liblmdb0", "libmaxminddb0", "libnghttp2-14", "libprotobuf-c1",
    "libxml2", "libedit2", "libidn2-0", "libunistring2", "libk5crypto3", "libkrb5support0",
    "libkeyutils1", "libcom-err2", "libicu72", "liblzma5", "libbsd0", "libmd0", "libtinfo6",
    "libcap2", "libgcc-s1", "libstdc++6", "libc-bin", "libc6",
    "curl", "libcurl4", "libbrotli1", "libldap-2.5-0", "libsasl2-2", "libpsl5", "librtmp1", "libssh2-1",
    "libzstd1", "libgnutls30", "libhogweed6", "libnettle8", "libgmp10", "libp11-kit0", "libtasn1-6", "libffi8",
    "netcat-openbsd", "dash",
]
DIG = ("/usr/bin/dig", "/usr/bin/getent")
# What the specs run inside agnhost besides agnhost itself (the upstream image has them from Alpine): curl for
# every HTTP check from a pod (the Networking and Services specs' dial), OpenBSD's netcat for the TCP and UDP checks
# (`nc -v -t -w 2`, `nc -u -w 1`: options busybox's nc lacks), installed as nc, and dash as /bin/sh: Debian's static
# busybox runs its own applet for a command of that name whatever PATH says (FEATURE_SH_STANDALONE), so under its sh
# `nc` would stay busybox's; dash looks commands up on PATH, as Alpine's sh does for programs it installed.
AGNHOST_TOOLS = ("/usr/bin/curl", "/bin/nc.openbsd", "/bin/dash")
NGINX = "/usr/sbin/nginx"
NGINX_CONF = b"""# slipway.cluster bundle: like the configuration of the upstream nginx image.
user nginx;
worker_processes auto;
error_log /dev/stderr notice;
pid /run/nginx.pid;
events {
    worker_connections 1024;
}
http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log /dev/stdout;
    sendfile on;
    keepalive_timeout 65;
    server {
        listen 80;
        server_name localhost;
        location / {
            root /usr/share/nginx/html;
            index index.html index.htm;
        }
        error_page 500 502 503 504 /50x.html;
        location = /50x.html {
            root /usr/share/nginx/html;
        }
    }
}
"""
NGINX_INDEX = (b"<!DOCTYPE html>\n<html>\n<head>\n<title>Welcome to nginx!</title>\n</head>\n<body>\n"
               b"<h1>Welcome to nginx!</h1>\n</body>\n</html>\n")
NGINX_50X = (b"<!DOCTYPE html>\n<html>\n<head>\n<title>Error</title>\n</head>\n<body>\n"
             b"<h1>An error occurred.</h1>\n</body>\n</html>\n")
NGINX_UID = 101
AGNHOST_USER = (1000, "user-defined-in-image")
AGNHOST_GROUP = (50000, "group-defined-in-image")
NONROOT_USER = "1234"


# NAME[:PORT]/PATH:TAG, as `e2e.test --list-images` prints them (no digests).
REFERENCE_RE = re.compile(r"^[a-z0-9][a-z0-9.-]*(:[0-9]+)?(/[a-z0-9._-]+)+:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")


class ConformanceError(Exception):
    """The conformance suite cannot be put into the bundle as it stands."""


# ---------------------------------------------------------------------------------------------
# which images: pure functions

def parse_list_images(text):
    """The sorted, distinct references `e2e.test --list-images` prints, one a line."""
    refs, bad = set(), []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if not REFERENCE_RE.match(line):
            bad.append(line)
            continue
        refs.add(line)
    if bad:
        raise ConformanceError("e2e.test --list-images printed lines that are not image references: %s"
                               % ", ".join(repr(line) for line in bad))
    return sorted(refs)


def _left_out(repository):
    for key, reason in NOT_CONFORMANCE.items():
        if repository == key or (key.endswith("/") and repository.startswith(key)):
            return reason
    return None


def plan_images(listed, release_refs):
    """Sort every reference of `e2e.test --list-images` into what the step builds, what the release
    already has, and what no [Conformance] spec runs.

    listed: the references; release_refs: the references of the release's own images.
    Returns {"build": [(name, tag, ref)], "release": [ref], "left_out": [(ref, reason)]}; raises
    ConformanceError naming every reference that is in none of them.
    """
    plan: dict[str, list] = {"build": [], "release": [], "left_out": []}
    unknown = []
    for ref in sorted(set(listed)):
        repository, tag = dockerarchive.split_ref(ref)
        if ref in NOT_CONFORMANCE:
            plan["left_out"].append((ref, NOT_CONFORMANCE[ref]))
        elif repository.startswith(E2E_REGISTRY + "/") and repository[len(E2E_REGISTRY) + 1:] in BUILT:
            plan["build"].append((repository[len(E2E_REGISTRY) + 1:], tag, ref))
        elif repository in FROM_RELEASE:
            if ref not in release_refs:
                unknown.append("%s (the release's images have %s)" % (ref, ", ".join(
                    sorted(each for each in release_refs
                           if dockerarchive.split_ref(each)[0] == repository)) or "none of it"))
            else:
                plan["release"].append(ref)
        elif _left_out(repository) is not None:
            plan["left_out"].append((ref, _left_out(repository)))
        else:
            unknown.append(ref)
    if unknown:
        raise ConformanceError(
            "e2e.test --list-images names images the conformance step neither builds nor knows to be "
            "unused by [Conformance] specs: %s; add each to BUILT (and image_layout) or, with the "
            "reason, to NOT_CONFORMANCE in tools/bundle/bundler/conformance.py" % "; ".join(unknown))
    missing = sorted(set(BUILT) - {name for name, _tag, _ref in plan["build"]})
    if missing:
        raise ConformanceError("e2e.test --list-images no longer names %s: a [Conformance] spec "
                               "runs it; check the suite's test/utils/image/manifest.go"
                               % ", ".join(missing))
    return plan


def image_name(name, tag):
    """The bundle's short name of a suite image: repository name and tag (two nginx tags)."""
    return "%s-%s" % (name, tag)


# ---------------------------------------------------------------------------------------------
# the images' layouts

def _passwd(extra_users=(), extra_groups=()):
    passwd = images.PASSWD + b"".join(
        b"%s:x:%d:%d:%s:/home/%s:/bin/sh\n" % (user.encode(), uid, gid, user.encode(), user.encode())
        for uid, gid, user in extra_users)
    group = images.GROUP + b"".join(b"%s:x:%d:%s\n" % (name.encode(), gid, members.encode())
                                    for gid, name, members in extra_groups)
    return passwd, group


def _base(busybox, applets, users=(), groups=()):
    layer = images.base_layer()
    if users or groups:
        passwd, group = _passwd(users, groups)
        layer.add_file("/etc/passwd", data=passwd, replace=True)
        layer.add_file("/etc/group", data=group, replace=True)
    return layer


def _finish(layer, busybox, applets):
    images.add_busybox(layer, busybox, applets)
    return layer


def _add_from_debian(layer, root, programs):
    for path in elf.closure(root, programs):
        layer.add_from_root(root, path)


def image_layout(name, programs, module_dir, busybox, applets, deb_root):
    """(layer, image config) of the suite image ``name`` (a key of BUILT).

    programs: {output name: built file} of the tools module; module_dir: k8s.io/kubernetes's
    source (test/images/); deb_root: DEBIAN_PACKAGES unpacked.
    """
    test_images = os.path.join(module_dir, "test", "images")
    if name in ("agnhost", "kitten", "nautilus"):
        user_id, user = AGNHOST_USER
        group_id, group = AGNHOST_GROUP
        layer = _base(busybox, applets, users=[(user_id, user_id, user)],
                      groups=[(user_id, user, ""), (group_id, group, user)])
        layer.add_file("/agnhost", source=programs["agnhost"], mode=0o755)
        layer.add_symlink("/agnhost-2", "agnhost")
        for cert in ("localhost.crt", "localhost.key"):
            layer.add_file("/" + cert, source=os.path.join(test_images, "agnhost", "porter", cert),
                           mode=0o644)
        layer.add_dir("/uploads", 0o755)
        _add_from_debian(layer, deb_root, DIG + AGNHOST_TOOLS)
        # Debian's alternative nc -> nc.openbsd, ahead of busybox's nc applet on either PATH entry.
        for nc in ("/bin/nc", "/usr/bin/nc"):
            layer.add_symlink(nc, "/bin/nc.openbsd")
        layer.add_symlink("/bin/sh", "dash")
        config = {"entrypoint": ["/agnhost"], "cmd": ["pause"]}
        if name != "agnhost":
            html = os.path.join(test_images, name, "html")
            layer.add_file("/%s.jpg" % name, source=os.path.join(html, "%s.jpg" % name), mode=0o644)
            layer.add_file("/data.json", source=os.path.join(html, "data.json"), mode=0o644)
            config["cmd"] = ["test-webserver"]
        return _finish(layer, busybox, applets), config
    if name == "busybox":
        # As Docker's busybox image, which the suite's is: every applet in /bin too (the Sysctls spec runs
        # /bin/sysctl, which busybox itself installs as /sbin/sysctl).
        layer = _finish(_base(busybox, applets), busybox, applets)
        for path in applets:
            in_bin = "/bin/" + os.path.basename(path)
            if not layer.has(in_bin):
                layer.add_symlink(in_bin, "/bin/busybox")
        return layer, {"cmd": ["sh"]}
    if name == "glibc-dns-testing":
        layer = _base(busybox, applets)
        _add_from_debian(layer, deb_root, DIG)
        return _finish(layer, busybox, applets), {"cmd": ["sh"]}
    if name == "nginx":
        layer = _base(busybox, applets, users=[(NGINX_UID, NGINX_UID, "nginx")],
                      groups=[(NGINX_UID, "nginx", "")])
        _add_from_debian(layer, deb_root, [NGINX])
        layer.add_file("/etc/nginx/nginx.conf", data=NGINX_CONF, mode=0o644)
        layer.add_from_root(deb_root, "/etc/nginx/mime.types")
        layer.add_file("/usr/share/nginx/html/index.html", data=NGINX_INDEX, mode=0o644)
        layer.add_file("/usr/share/nginx/html/50x.html", data=NGINX_50X, mode=0o644)
        # nginx opens its compiled-in error log before it reads its configuration.
        layer.add_symlink("/var/log/nginx/error.log", "/dev/stderr")
        layer.add_symlink("/var/log/nginx/access.log", "/dev/stdout")
        layer.add_dir("/var/lib/nginx", 0o755)
        layer.add_dir("/run", 0o755)
        return _finish(layer, busybox, applets), {"cmd": ["nginx", "-g", "daemon off;"]}
    if name == "nonewprivs":
        layer = _base(busybox, applets)
        layer.add_file("/usr/local/bin/nnp", source=programs["nnp"], mode=0o4755)
        return _finish(layer, busybox, applets), {"cmd": ["nnp"]}
    if name == "nonroot":
        return _finish(_base(busybox, applets), busybox, applets), {"cmd": ["sh"], "user": NONROOT_USER}
    if name == "sample-apiserver":
        layer = _base(busybox, applets)
        layer.add_file("/sample-apiserver", source=programs["sample-apiserver"], mode=0o755)
        return _finish(layer, busybox, applets), {"entrypoint": ["/sample-apiserver"]}
    raise ConformanceError("no layout for the suite image %s" % name)


# ---------------------------------------------------------------------------------------------
# the build

def _local_version(kubernetes_version):
    staging = versions.staging_version(kubernetes_version)

    def local_version(module):
        if not module.startswith("k8s.io/"):
            raise gomod.GoError("k8s.io/kubernetes replaces %s with a local path" % module)
        return staging

    return local_version


def tools_components(kubernetes_version, build_date, kubernetes_gomod):
    """The two tools modules of the step: (suite, extras).

    suite: the release's Kubernetes go.mod as it stands (the same requirement and staging
    replacements), for e2e.test, agnhost and nnp, all packages of k8s.io/kubernetes: its build list
    is the Kubernetes build's, so the Go build cache of that build serves it.
    extras: the same plus direct requirements of ginkgo and k8s.io/sample-apiserver at the versions
    k8s.io/kubernetes's go.mod requires. Requiring them directly changes the build list (the staging
    modules' own go.mod files are read, and select k8s.io/apimachinery v0.37.1 over the v0.0.0 of
    k8s.io/kubernetes's go.mod), which would make every package of e2e.test compile again.
    """
    staging = versions.staging_version(kubernetes_version)
    stamp = STRIP + gomod.kubernetes_version_ldflags(kubernetes_version, build_date)
    local_version = _local_version(kubernetes_version)
    suite = gomod.GoComponent(
        "conformance", kubernetes_version, [("k8s.io/kubernetes", kubernetes_version)],
        {name: PROGRAMS[name] for name in SUITE_PROGRAMS}, ldflags=stamp, local_version=local_version,
        source="Go module k8s.io/kubernetes %s (test/e2e as e2e.test, test/images/agnhost, "
               "test/images/nonewprivs) with the k8s.io staging modules at %s" % (kubernetes_version, staging))
    extra_requires = []
    for module in (GINKGO_MODULE, SAMPLE_APISERVER_MODULE):
        version = gomod_required(kubernetes_gomod, module)
        if version is None:
            raise ConformanceError("k8s.io/kubernetes %s's go.mod does not require %s"
                                   % (kubernetes_version, module))
        extra_requires.append((module, version))
    extras = gomod.GoComponent(
        "conformance-tools", kubernetes_version,
        [("k8s.io/kubernetes", kubernetes_version)] + extra_requires,
        {name: PROGRAMS[name] for name in PROGRAMS if name not in SUITE_PROGRAMS}, ldflags=stamp,
        local_version=local_version,
        source="%s %s and %s at %s, as k8s.io/kubernetes %s requires them"
               % (GINKGO_PACKAGE, extra_requires[0][1], SAMPLE_APISERVER_MODULE, staging, kubernetes_version))
    return suite, extras


def tools_gomods(suite, extras, kubernetes_gomod):
    """The go.mod texts of the two tools modules (only k8s.io/kubernetes's go.mod has directives)."""
    upstream = {"k8s.io/kubernetes": kubernetes_gomod, GINKGO_MODULE: "", SAMPLE_APISERVER_MODULE: ""}
    return gomod.tools_gomod(suite, upstream), gomod.tools_gomod(extras, upstream)


def test_compile_command(go, package, output, ldflags):
    """`go test -c`: the test binary of ``package`` (e2e.test) as one program."""
    # -vet=off: go test runs vet on the package before it compiles it; a build has no use for it.
    return [go, "test", "-c", "-vet=off", "-trimpath", "-ldflags", " ".join(ldflags), "-o", output, package]


def build_commands(go, suite, extras, outdir):
    """The go commands of the step, in order: [(tools module name, argv, what it builds)]."""
    out = outdir.rstrip("/") + "/"

    def build(component, names, ldflags):
        return [go, "build", "-trimpath", "-ldflags", " ".join(ldflags), "-o", out] + sorted(
            PROGRAMS[name] for name in names)

    plain = [name for name in PROGRAMS if name not in STAMPED]
    return [
        (suite.name, build(suite, [name for name in plain if name in SUITE_PROGRAMS], STRIP),
         "agnhost, nnp"),
        (suite.name, test_compile_command(go, E2E_PACKAGE, os.path.join(outdir, "e2e.test"), suite.ldflags),
         "e2e.test"),
        (extras.name, build(extras, [name for name in plain if name not in SUITE_PROGRAMS], STRIP), "ginkgo"),
        (extras.name, build(extras, list(STAMPED), extras.ldflags), "sample-apiserver"),
    ]


def check_build_list(written, after):
    """The suite's go.mod must be as written: a requirement the go command added would change the build
    list from the Kubernetes build's (and compile everything again)."""
    if written != after:
        raise ConformanceError("the go command changed the conformance tools module's go.mod, so its build "
                               "list is no longer the Kubernetes build's; build the package it added in the "
                               "conformance-tools module (SUITE_PROGRAMS in tools/bundle/bundler/conformance.py):\n%s"
                               % after)


def check_ginkgo(kubernetes_gomod, selected):
    """ginkgo must be the version k8s.io/kubernetes's go.mod requires (the suite's own library)."""
    wanted = gomod_required(kubernetes_gomod, GINKGO_MODULE)
    if wanted is None:
        raise ConformanceError("k8s.io/kubernetes's go.mod does not require %s" % GINKGO_MODULE)
    if selected != wanted:
        raise ConformanceError("the tools module selects %s %s, k8s.io/kubernetes requires %s"
                               % (GINKGO_MODULE, selected, wanted))
    return wanted


def gomod_required(text, module):
    """The version a go.mod's require directives give ``module``, or None."""
    block = False
    for raw in text.splitlines():
        line = raw.split("//", 1)[0].strip()
        if not line:
            continue
        if block:
            if line == ")":
                block = False
                continue
            parts = line.split()
        elif line == "require (":
            block = True
            continue
        elif line.startswith("require "):
            parts = line.split()[1:]
        else:
            continue
        if len(parts) >= 2 and parts[0] == module:
            return parts[1]
    return None


def _code():
    """What the images' steps depend on: this file and the layer and archive code."""
    return steps.files_digest([os.path.join(HERE, name) for name in
                               ("conformance.py", "dockerarchive.py", "images.py", "elf.py", "debs.py")])


def _go_code():
    """What the Go step depends on, narrower than _code(): a change to an image's layout does not
    rebuild e2e.test."""
    parts = (_local_version, tools_components, tools_gomods, test_compile_command, build_commands,
             check_build_list, check_ginkgo, gomod_required, parse_list_images, _go_step)
    return steps.digest([steps.files_digest([os.path.join(HERE, "gomod.py")])]
                        + [inspect.getsource(part) for part in parts]
                        + [PROGRAMS, list(STAMPED), list(SUITE_PROGRAMS), STRIP, REFERENCE_RE.pattern])


def _go_step(backend, suite, extras, kubernetes_gomod):
    go = backend.go
    key = steps.digest({"spec": [suite.spec(), extras.spec()], "go": go.version(), "code": _go_code()})
    version = suite.version

    def produce(tmp):
        backend.steps.say("conformance %s: go build %s; go test -c %s"
                          % (version, " ".join(sorted(PROGRAMS.values())), E2E_PACKAGE))
        texts = dict(zip((suite.name, extras.name), tools_gomods(suite, extras, kubernetes_gomod)))
        workdirs = {}
        for name, text in texts.items():
            workdirs[name] = os.path.join(backend.cache_dir, "go", name)
            os.makedirs(workdirs[name], exist_ok=True)
            path = os.path.join(workdirs[name], "go.mod")
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
        built = os.path.join(tmp, "build")
        log_path = os.path.join(tmp, "go-build.log")
        env = go.env()
        try:
            with open(log_path, "w", encoding="utf-8") as log:
                for module, argv, what in build_commands(go.go, suite, extras, built):
                    backend.steps.say("conformance %s: %s" % (version, what))
                    proc = backend.run(argv, cwd=workdirs[module], env=env, stdout=log, stderr=log, check=False)
                    if proc.returncode != 0:
                        raise gomod.GoError("go failed in %s (exit %d): %s"
                                            % (workdirs[module], proc.returncode, " ".join(argv)))
        finally:
            backend._append_log("conformance " + version, log_path)
        os.remove(log_path)
        with open(os.path.join(workdirs[suite.name], "go.mod"), encoding="utf-8") as handle:
            check_build_list(texts[suite.name], handle.read())
        proc = backend.run([go.go, "list", "-m", "-f", "{{.Version}}", GINKGO_MODULE], cwd=workdirs[extras.name],
                           capture_output=True, text=True, env=env, check=False)
        if proc.returncode != 0:
            raise gomod.GoError("go list -m %s failed in %s: %s"
                                % (GINKGO_MODULE, workdirs[extras.name], proc.stderr.strip()))
        ginkgo_version = check_ginkgo(kubernetes_gomod, proc.stdout.strip())
        for name, package in PROGRAMS.items():
            os.replace(os.path.join(built, gomod.default_exec_name(package)), os.path.join(tmp, name))
        os.replace(os.path.join(built, "e2e.test"), os.path.join(tmp, "e2e.test"))
        os.rmdir(built)
        # What the suite pulls, from the suite itself (no cluster is needed for it).
        proc = backend.run([os.path.join(tmp, "e2e.test"), "--list-images"], capture_output=True,
                           text=True, check=False, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
        if proc.returncode != 0:
            raise ConformanceError("e2e.test --list-images failed (exit %d): %s"
                                   % (proc.returncode, proc.stderr.strip()[-2000:]))
        with open(os.path.join(tmp, LIST_IMAGES), "w", encoding="utf-8") as handle:
            handle.write("\n".join(parse_list_images(proc.stdout)) + "\n")
        with open(os.path.join(tmp, "versions.json"), "w", encoding="utf-8") as handle:
            json.dump({"ginkgo": ginkgo_version}, handle, sort_keys=True)
        backend.steps.say("conformance %s: built (ginkgo %s)" % (version, ginkgo_version))

    return backend.steps.run("go-conformance-%s" % version, key, produce), key


def _image(backend, name, tag, ref, inputs, layout):
    key = steps.digest({"name": name, "ref": ref, "inputs": inputs, "code": _code()})

    def produce(tmp):
        backend.steps.say("image %s" % ref)
        layer, config = layout()
        config = dict(config, labels={"io.slipway.bundle.backend": "source"})
        dockerarchive.write_image(os.path.join(tmp, "image.tar"), layer, ref, **config)

    step = "image-e2e-%s-%s-%s" % (name.replace("/", "-"), tag, backend.kubernetes_version)
    return os.path.join(backend.steps.run(step, key, produce), "image.tar")


def components_entry(suite, extras, ginkgo_version, deb_versions, plan):
    return {"version": suite.version,
            "ginkgo": ginkgo_version,
            "source": "%s; %s; the images: %s" % (suite.source, extras.source, image_sources(deb_versions)),
            "images_from_release": ", ".join(plan["release"])}


def image_sources(deb_versions):
    return ("agnhost, nonewprivs and sample-apiserver from the Go modules above; nginx %s, dig "
            "(bind9-dnsutils %s) and getent (libc-bin %s) and busybox from Debian bookworm's packages"
            % (deb_versions["nginx"], deb_versions["bind9-dnsutils"], deb_versions["libc-bin"]))


def build(backend, result):
    """Build the suite of ``backend``'s release (after backend.build()); add its files to ``result``
    (conformance_binaries, conformance_images) and its components entry; return the image plan."""
    version = backend.kubernetes_version
    info = backend._module_info("k8s.io/kubernetes", version)
    with open(info["GoMod"], encoding="utf-8") as handle:
        kubernetes_gomod = handle.read()
    suite, extras = tools_components(version, gomod.module_time(info["Info"]), kubernetes_gomod)
    out, go_key = _go_step(backend, suite, extras, kubernetes_gomod)
    with open(os.path.join(out, LIST_IMAGES), encoding="utf-8") as handle:
        listed = parse_list_images(handle.read())
    with open(os.path.join(out, "versions.json"), encoding="utf-8") as handle:
        ginkgo_version = json.load(handle)["ginkgo"]
    plan = plan_images(listed, {ref for _path, _src, _name, ref, _comp in result.images})
    deb_versions = debs.candidate_versions(DEBIAN_PACKAGES, run=backend.run)
    deb_root, deb_key = backend._debian_root(deb_versions, step="debian-conformance-root",
                                             what="conformance images' Debian packages")
    # The bundle's busybox (its debian-root step, reused).
    busybox_root, busybox_key = backend._debian_root(
        debs.candidate_versions(backend._deb_packages(), run=backend.run))
    busybox = os.path.join(busybox_root, "bin", "busybox")
    applets = images.busybox_applets(busybox, run=backend.run)
    programs = {name: os.path.join(out, name) for name in PROGRAMS}
    for name in ("e2e.test", "ginkgo"):
        result.conformance_binaries.append(("%s/bin/%s" % (DIR, name), os.path.join(out, name), COMPONENT))
    for name, tag, ref in plan["build"]:
        inputs = {"go": go_key, "debian": deb_key, "busybox": busybox_key}

        def layout(name=name):
            return image_layout(name, programs, info["Dir"], busybox, applets, deb_root)

        archive = _image(backend, name, tag, ref, inputs, layout)
        short = image_name(name.replace("/", "-"), tag)
        result.conformance_images.append(("%s/images/%s.tar" % (DIR, short), archive, short, ref, COMPONENT))
    result.components[COMPONENT] = components_entry(suite, extras, ginkgo_version, deb_versions, plan)
    return plan
