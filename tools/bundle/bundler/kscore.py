"""KubeSphere's core, built from its sources by the source backend: ks-apiserver,
ks-controller-manager and the web console (ks-console), KubeSphere v3.4.1.

Neither repository is a Go module the proxy serves, so the sources come from `git archive`s of the
two repositories at tag v3.4.1 (shared/reference/kubesphere: kubesphere-v3.4.1.tar.gz with its
complete vendor tree, console-v3.4.1.tar.gz), unpacked afresh for every build. The patches of
PATCHES (tools/bundle/kubesphere/, listed with their reasons in docs/bundle.md) are applied with
`patch -p1`; nothing else of the sources is changed.

  ks-apiserver, ks-controller-manager
      `go build` of ./cmd/ks-apiserver and ./cmd/controller-manager in vendor mode
      (GOFLAGS=-mod=vendor, GOPROXY=off: nothing is fetched), stamped as upstream's
      hack/lib/golang.sh stamps them (pkg/version: gitVersion v3.4.1, the tag's commit, its
      date as the build date). Images as upstream's build/*/Dockerfile lay them out:
      /usr/local/bin/ks-apiserver and /usr/local/bin/controller-manager, busybox for the shell
      that upstream's alpine base has, cmd `sh`, root (KubeSphere's manifests give the command).
  ks-console
      `yarn install` from the npm registry (yarn 1.x itself from the npm registry) and
      `yarn build` (webpack: the client into dist/, the server into dist/server.js) with this
      machine's Node.js; node-sass, which does not build on Node.js above 14, is replaced by
      `sass` (dart-sass, which sass-loader 7 finds by itself). The image holds what upstream's
      build/Dockerfile copies (dist/, server/{locales,public,views,sample,config.yaml},
      package.json, server.js moved into server/) and Debian bookworm's Node.js with exactly the
      shared libraries it loads; it runs `node server/server.js` in /opt/kubesphere/console with
      NODE_ENV=production (upstream's `npm run serve`), as user 1002 like upstream's image.
"""

import concurrent.futures
import inspect
import os
import shutil
import subprocess
import tarfile

from . import debs, dockerarchive, elf, gomod, images, monitoring, pyimage, steps, versions

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS_BUNDLE = os.path.dirname(HERE)
REPO_ROOT = os.path.dirname(os.path.dirname(TOOLS_BUNDLE))
PATCH_DIR = os.path.join(TOOLS_BUNDLE, "kubesphere")
SOURCES_ENV = "SLIPWAY_KUBESPHERE_SOURCES"
# Where the sources are looked for without SLIPWAY_KUBESPHERE_SOURCES: shared/ beside the checkout.
SOURCE_DIRS = (os.path.join(os.path.dirname(REPO_ROOT), "shared", "reference", "kubesphere"),)
# Each repository's patches, applied in this order, with the reason (docs/bundle.md repeats them).
PATCHES = {
    "kubesphere": [
        ("controller-manager-no-quota.patch",
         "the archive lacks the repository's top-level kube/ folder (Kubernetes' resource quota "
         "code that KubeSphere copied in), which only the workspace resource quota controller and "
         "its admission webhook import; they are left out of ks-controller-manager"),
    ],
    "console": [
        ("console-dart-sass.patch",
         "node-sass 4 does not build on Node.js above 14: replaced by sass 1.32.13 (dart-sass, "
         "the last release before its `/` division warnings); cypress (end-to-end tests only) "
         "is dropped, its install step downloads a browser from outside the npm registry"),
        ("console-yarn-lock-registry.patch",
         "yarn.lock resolves react-input-autosize 3.0.0 from a retired npm mirror; the same "
         "file (same sha1) from the npm registry"),
    ],
}
GO_PROGRAMS = {"ks-apiserver": "./cmd/ks-apiserver", "controller-manager": "./cmd/controller-manager"}
VERSION_PACKAGE = "kubesphere.io/kubesphere/pkg/version"
CONSOLE_DIR = "/opt/kubesphere/console"
CONSOLE_USER = "1002:1002"
# What upstream's console Dockerfile copies into its image, from the built tree.
CONSOLE_PARTS = ("dist", "server/locales", "server/public", "server/views", "server/sample",
                 "server/config.yaml", "package.json")
# Debian bookworm's Node.js and the libraries it loads (elf.closure picks the files needed).
NODE_PACKAGES = ["nodejs", "libnode108", "libuv1", "libicu72", "libc-ares2", "libnghttp2-14",
                 "libbrotli1", "libssl3", "zlib1g", "libstdc++6", "libgcc-s1", "libc6"]
# Debian's Node.js loads these from /usr/share/nodejs instead of bundling them.
NODE_JS_PACKAGES = ["node-acorn", "node-cjs-module-lexer", "node-undici"]


class KsCoreError(Exception):
    pass


def sources_dir(environ=None):
    """The folder holding the two archives: $SLIPWAY_KUBESPHERE_SOURCES, else SOURCE_DIRS."""
    environ = os.environ if environ is None else environ
    info = versions.KUBESPHERE_CORE
    wanted = (info["kubesphere_archive"], info["console_archive"])
    candidates = [environ[SOURCES_ENV]] if environ.get(SOURCES_ENV) else list(SOURCE_DIRS)
    for directory in candidates:
        if all(os.path.isfile(os.path.join(directory, name)) for name in wanted):
            return directory
    raise KsCoreError("KubeSphere's sources (%s) are not in %s; set %s to their folder, or build "
                      "without KubeSphere (--without kubesphere)"
                      % (", ".join(wanted), " nor ".join(candidates), SOURCES_ENV))


def file_sha256(path):
    return pyimage.sha256_file(path)


def patch_paths(repository):
    return [os.path.join(PATCH_DIR, name) for name, _reason in PATCHES[repository]]


def unpack(archive, dest, top, run=subprocess.run):
    """Unpack ``archive`` into a fresh ``dest``; its single top folder ``top`` becomes ``dest``.
    Returns the commit time of the archive (its files' mtime: `git archive` sets the commit's)."""
    if os.path.exists(dest):
        shutil.rmtree(dest)
    parent = os.path.dirname(dest)
    os.makedirs(parent, exist_ok=True)
    staging = dest + ".unpack"
    if os.path.exists(staging):
        shutil.rmtree(staging)
    os.makedirs(staging)
    with tarfile.open(archive) as tar:
        first = tar.next()
        if first is None or first.name.rstrip("/") != top:
            raise KsCoreError("%s does not start with its folder %s/" % (archive, top))
        mtime = first.mtime
    proc = run(["tar", "-xzf", archive, "-C", staging, "--no-same-owner"], capture_output=True,
               text=True, check=False)
    if proc.returncode != 0:
        raise KsCoreError("tar -xzf %s failed: %s" % (archive, proc.stderr.strip()))
    if os.listdir(staging) != [top]:
        raise KsCoreError("%s holds more than its folder %s/" % (archive, top))
    os.replace(os.path.join(staging, top), dest)
    os.rmdir(staging)
    return mtime


def apply_patches(tree, patches, run=subprocess.run, log=None):
    for path in patches:
        cmd = ["patch", "-p1", "--forward", "--batch", "--no-backup-if-mismatch", "-i", path]
        proc = run(cmd, cwd=tree, stdout=log, stderr=log, check=False)
        if proc.returncode != 0:
            raise KsCoreError("%s does not apply to %s (exit %d)"
                              % (os.path.basename(path), tree, proc.returncode))


def rfc3339(epoch):
    import datetime  # pylint: disable=import-outside-toplevel
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def version_ldflags(build_date):
    """What upstream's hack/lib/golang.sh stamps into pkg/version for the tag (`/kapis/version`
    answers it)."""
    info = versions.KUBESPHERE_CORE
    major, minor = info["version"].lstrip("v").split(".")[:2]
    return gomod.x_flags(VERSION_PACKAGE, [
        ("gitVersion", info["version"]), ("gitCommit", info["kubesphere_commit"]),
        ("gitTreeState", "clean"), ("buildDate", build_date),
        ("gitMajor", major), ("gitMinor", minor)])


def go_env():
    """Vendor mode, nothing fetched."""
    return {"GOFLAGS": "-mod=vendor -buildvcs=false", "GOPROXY": "off"}


def node_version(run=subprocess.run):
    proc = run(["node", "--version"], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise KsCoreError("Node.js is needed to build KubeSphere's console (`node --version` "
                          "failed: %s); install Debian's nodejs and npm" % proc.stderr.strip())
    return proc.stdout.strip()


def node_deb_versions(run=subprocess.run):
    """{package: version} of NODE_PACKAGES + NODE_JS_PACKAGES + busybox. nodejs is taken at the
    version of libnode108's candidate (the same Debian source), since a Node.js installed from
    elsewhere (NodeSource) can be nodejs's candidate without being downloadable from Debian."""
    packages = [pkg for pkg in NODE_PACKAGES if pkg != "nodejs"] + NODE_JS_PACKAGES \
        + [versions.DEBIAN_BUSYBOX_PACKAGE]
    found = debs.candidate_versions(packages, run=run)
    found["nodejs"] = found["libnode108"]
    return found


def console_tree(built, out):
    """Copy what upstream's Dockerfile takes from the built console into ``out``; server.js moves
    from dist/ to server/ as there."""
    for part in CONSOLE_PARTS:
        src = os.path.join(built, part)
        if not os.path.exists(src):
            raise KsCoreError("the console's build made no %s" % part)
        dest = os.path.join(out, part)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        if os.path.isdir(src):
            shutil.copytree(src, dest, symlinks=False)
        else:
            shutil.copyfile(src, dest)
    server_js = os.path.join(out, "dist", "server.js")
    if not os.path.isfile(server_js):
        raise KsCoreError("the console's build made no dist/server.js")
    os.replace(server_js, os.path.join(out, "server", "server.js"))


def console_layer(console_dir, deb_root, busybox, applets):
    """The console image's files: Debian's Node.js with its libraries and JS modules, the
    console, busybox."""
    layer = images.base_layer()
    for path in elf.closure(deb_root, ["/usr/bin/node"]):
        layer.add_from_root(deb_root, path)
    share = os.path.join(deb_root, "usr/share/nodejs")
    for dirpath, dirnames, filenames in os.walk(share):
        dirnames.sort()
        for name in sorted(filenames) + sorted(
                entry for entry in dirnames if os.path.islink(os.path.join(dirpath, entry))):
            layer.add_from_root(deb_root, "/" + os.path.relpath(os.path.join(dirpath, name), deb_root))
    for path, source in sorted(monitoring.tree(console_dir, CONSOLE_DIR).items()):
        layer.add_file(path, source=source, mode=0o644)
    uid, gid = (int(part) for part in CONSOLE_USER.split(":"))
    layer.add_dir(CONSOLE_DIR, 0o755, uid=uid, gid=gid)
    images.add_busybox(layer, busybox, applets)
    return layer


# ---------------------------------------------------------------------------------------------

class KsCoreBuild:
    """The steps, run with the source backend's step runner, Go and log."""

    def __init__(self, backend, sources=None, run=None):
        self.backend = backend
        self.steps = backend.steps
        self.run = run or backend.run
        self.cache_dir = backend.cache_dir
        self.sources = sources or sources_dir()
        self.info = versions.KUBESPHERE_CORE

    def _archive(self, key):
        return os.path.join(self.sources, self.info[key])

    def _code(self, *names):
        return steps.files_digest([os.path.join(HERE, name) for name in names])

    def go_step(self):
        """ks-apiserver and controller-manager: (output dir, step key)."""
        archive = self._archive("kubesphere_archive")
        key = steps.digest({"archive": file_sha256(archive), "version": self.info["version"],
                            "commit": self.info["kubesphere_commit"], "programs": GO_PROGRAMS,
                            "version_package": VERSION_PACKAGE,
                            "patches": steps.files_digest(patch_paths("kubesphere")),
                            "go": self.backend.go.version(), "env": go_env(),
                            # the code of this step alone and the Go builder's, as the console step's
                            "code": steps.digest([self._code("gomod.py")] + [inspect.getsource(part) for part in (
                                KsCoreBuild.go_step, unpack, apply_patches, source_strip, version_ldflags,
                                rfc3339, go_env)])})

        def produce(tmp):
            self.steps.say("ks-apiserver, ks-controller-manager %s: go build (vendor mode)"
                           % self.info["version"])
            tree = os.path.join(self.cache_dir, "src", "kubesphere-" + self.info["version"])
            mtime = unpack(archive, tree, "kubesphere", run=self.run)
            log_path = os.path.join(tmp, "build.log")
            try:
                with open(log_path, "w", encoding="utf-8") as log:
                    apply_patches(tree, patch_paths("kubesphere"), run=self.run, log=log)
                    log.flush()
                    built = os.path.join(tmp, "build")
                    self.backend.go.build(
                        tree, sorted(GO_PROGRAMS.values()), built,
                        source_strip() + version_ldflags(rfc3339(mtime)), log=log, env=go_env())
            finally:
                self.backend._append_log("kubesphere " + self.info["version"], log_path)
            os.remove(log_path)
            for name in GO_PROGRAMS:
                os.replace(os.path.join(built, name), os.path.join(tmp, name))
            os.rmdir(built)
            shutil.rmtree(tree)
            self.steps.say("ks-apiserver, ks-controller-manager %s: built" % self.info["version"])

        return self.steps.run("go-kubesphere-" + self.info["version"], key, produce), key

    def console_step(self):
        """The built console tree (what its image holds under /opt/kubesphere/console)."""
        archive = self._archive("console_archive")
        node = node_version(run=self.run)
        # The code of this step alone (its functions), so that an edit elsewhere in this file does not
        # run its slow build again.
        code = steps.digest([inspect.getsource(part) for part in (
            KsCoreBuild.console_step, KsCoreBuild._yarn, unpack, apply_patches, console_env, console_tree)])
        key = steps.digest({"archive": file_sha256(archive), "version": self.info["version"],
                            "patches": steps.files_digest(patch_paths("console")),
                            "node": node, "yarn": self.info["yarn"], "code": code})

        def produce(tmp):
            self.steps.say("ks-console %s: yarn install, yarn build (Node.js %s, yarn %s)"
                           % (self.info["version"], node, self.info["yarn"]))
            tree = os.path.join(self.cache_dir, "src", "console-" + self.info["version"])
            unpack(archive, tree, "console", run=self.run)
            log_path = os.path.join(tmp, "build.log")
            try:
                with open(log_path, "w", encoding="utf-8") as log:
                    apply_patches(tree, patch_paths("console"), run=self.run, log=log)
                    yarn = self._yarn(log)
                    env = console_env(self.cache_dir, os.path.dirname(yarn))
                    for args in (["install", "--non-interactive", "--network-timeout", "600000"],
                                 ["build"]):
                        log.write("\n$ yarn %s\n" % " ".join(args))
                        log.flush()
                        proc = self.run([yarn] + args, cwd=tree, env=env, stdout=log, stderr=log,
                                        check=False)
                        if proc.returncode != 0:
                            raise KsCoreError("yarn %s of the console failed (exit %d)"
                                              % (args[0], proc.returncode))
            finally:
                self.backend._append_log("console " + self.info["version"], log_path)
            os.remove(log_path)
            console_tree(tree, os.path.join(tmp, "console"))
            shutil.rmtree(tree)
            self.steps.say("ks-console %s: built" % self.info["version"])

        return os.path.join(self.steps.run("console-" + self.info["version"], key, produce),
                            "console"), key

    def go_and_console(self):
        """Both slow steps at once: (go output dir, its key, console tree, its key).

        The Go build keeps both cores busy only while it compiles; the console's webpack build runs on
        one core and its yarn install mostly waits on the registry, so side by side they fill each
        other's idle time (docs/performance.md). Neither reads the other's output. A failure of either
        is raised once the other has finished (a step is never left half-written: Steps.run writes its
        output under a lock and stamps it last).
        """
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            go = pool.submit(self.go_step)
            console = pool.submit(self.console_step)
            concurrent.futures.wait([go, console])
            go_dir, go_key = go.result()
            console_dir, console_key = console.result()
        return go_dir, go_key, console_dir, console_key

    def _yarn(self, log):
        """yarn 1.x from the npm registry, installed once into the cache."""
        prefix = os.path.join(self.cache_dir, "yarn", self.info["yarn"])
        program = os.path.join(prefix, "node_modules", ".bin", "yarn")
        if not os.path.exists(program):
            proc = self.run(["npm", "install", "--no-save", "--prefix", prefix,
                             "yarn@" + self.info["yarn"]], stdout=log, stderr=log, check=False)
            if proc.returncode != 0 or not os.path.exists(program):
                raise KsCoreError("npm install yarn@%s failed (exit %d)"
                                  % (self.info["yarn"], proc.returncode))
        return program

    def node_root(self, deb_versions):
        key = steps.digest({"debs": deb_versions, "code": self._code("debs.py")})

        def produce(tmp):
            self.steps.say("Debian's Node.js for the console: apt-get download + dpkg-deb -x")
            with open(self.backend.log_path, "a", encoding="utf-8") as log:
                paths = debs.fetch(sorted(deb_versions), deb_versions,
                                   os.path.join(self.cache_dir, "debs"), run=self.run, log=log)
            debs.unpack(paths, os.path.join(tmp, "root"), run=self.run)

        return os.path.join(self.steps.run("debian-nodejs", key, produce), "root"), key

    def image(self, name, ref, key_inputs, make_layer, config):
        key = steps.digest({"name": name, "ref": ref, "inputs": key_inputs, "config": config,
                            "code": self._code("kscore.py", "dockerarchive.py", "images.py",
                                               "elf.py")})

        def produce(tmp):
            self.steps.say("image %s" % ref)
            dockerarchive.write_image(os.path.join(tmp, "image.tar"), make_layer(), ref, **config)

        tag = ref.rsplit(":", 1)[-1]
        return os.path.join(self.steps.run("image-%s-%s" % (name, tag), key, produce), "image.tar")


def source_strip():
    return ["-s", "-w"]


def console_env(cache_dir, yarn_bin, environ=None):
    """The console build's environment: the scripts of package.json call `yarn` again."""
    env = dict(os.environ if environ is None else environ)
    env.update({
        "PATH": yarn_bin + os.pathsep + env.get("PATH", os.defpath),
        # webpack 4 hashes with MD4, which OpenSSL 3 (Node.js 17 and later) only has in its legacy provider.
        "NODE_OPTIONS": "--openssl-legacy-provider",
        "YARN_CACHE_FOLDER": os.path.join(cache_dir, "yarn-cache"),
        "HUSKY_SKIP_INSTALL": "1",
        "CI": "true",
    })
    return env


def image_configs():
    labels = {"io.slipway.bundle.backend": "source"}
    local = "/usr/local/bin/"
    return {
        "ks-apiserver": {"cmd": ["sh"], "labels": labels},
        "ks-controller-manager": {"cmd": ["sh"], "labels": labels},
        "ks-console": {"cmd": ["node", "server/server.js"], "workdir": CONSOLE_DIR,
                       "user": CONSOLE_USER, "labels": labels,
                       "env": ["PATH=" + dockerarchive.DEFAULT_PATH, "NODE_ENV=production"]},
        "files": {"ks-apiserver": {local + "ks-apiserver": "ks-apiserver"},
                  "ks-controller-manager": {local + "controller-manager": "controller-manager"}},
    }


def components_entries(deb_versions, node):
    info = versions.KUBESPHERE_CORE
    go_patches = "; ".join("%s (%s)" % item for item in PATCHES["kubesphere"])
    console_patches = "; ".join("%s (%s)" % item for item in PATCHES["console"])
    go_source = ("kubesphere/kubesphere %s (commit %s, %s with its vendor tree), go build "
                 "-mod=vendor; patched: %s" % (info["version"], info["kubesphere_commit"],
                                               info["kubesphere_archive"], go_patches))
    return {
        versions.KUBESPHERE_COMPONENT_PREFIX + "ks_apiserver": {
            "version": info["version"], "source": go_source},
        versions.KUBESPHERE_COMPONENT_PREFIX + "ks_controller_manager": {
            "version": info["version"], "source": go_source},
        versions.KUBESPHERE_COMPONENT_PREFIX + "ks_console": {
            "version": info["version"],
            "source": "kubesphere/console %s (commit %s, %s), yarn %s install from the npm registry and "
                      "yarn build with Node.js %s; patched: %s; runs on Debian bookworm nodejs %s"
                      % (info["version"], info["console_commit"], info["console_archive"],
                         info["yarn"], node, console_patches, deb_versions["nodejs"])},
    }


def build(backend, sources=None):
    """Build the three images: a list of (bundle path, archive, name, ref, component) and the
    manifest's components entries."""
    work = KsCoreBuild(backend, sources=sources)
    go_dir, go_key, console_dir, console_key = work.go_and_console()
    deb_versions = node_deb_versions(run=work.run)
    node_root, node_key = work.node_root(deb_versions)
    busybox = os.path.join(node_root, "bin", "busybox")
    applets = images.busybox_applets(busybox, run=work.run)
    refs = versions.kubesphere_core_refs()
    configs = image_configs()
    added = []
    for name in ("ks-apiserver", "ks-controller-manager"):
        files = {path: os.path.join(go_dir, program)
                 for path, program in configs["files"][name].items()}

        def make_layer(files=files):
            layer = images.base_layer()
            for path, source in sorted(files.items()):
                layer.add_file(path, source=source, mode=0o755)
            images.add_busybox(layer, busybox, applets)
            return layer

        archive = work.image(name, refs[name], {"go": go_key, "debian": node_key,
                                                "files": sorted(files)},
                             make_layer, configs[name])
        added.append(("images/%s.tar" % name, archive, name, refs[name],
                      versions.KUBESPHERE_COMPONENT_PREFIX + versions.KUBESPHERE_CORE_IMAGES[name][0]))
    archive = work.image("ks-console", refs["ks-console"], {"console": console_key, "debian": node_key},
                         lambda: console_layer(console_dir, node_root, busybox, applets),
                         configs["ks-console"])
    added.append(("images/ks-console.tar", archive, "ks-console", refs["ks-console"],
                  versions.KUBESPHERE_COMPONENT_PREFIX + "ks_console"))
    return added, components_entries(deb_versions, node_version(run=work.run))
