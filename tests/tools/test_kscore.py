"""KubeSphere's core from source (tools/bundle/bundler/kscore.py): sources, patches, the Go and console
steps and the images, with the go, yarn and apt commands faked."""

import io
import json
import os
import subprocess
import tarfile
import threading

import pytest
import yaml

from bundler import dockerarchive, kscore, steps, versions

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def make_archive(path, top, files, mtime=1698659130):
    """A `git archive`-like tar.gz: the folder ``top`` first, then ``files`` ({relative path: text})."""
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo(top)
        info.type = tarfile.DIRTYPE
        info.mode = 0o755
        info.mtime = mtime
        tar.addfile(info)
        for name, text in sorted(files.items()):
            data = text.encode()
            info = tarfile.TarInfo(top + "/" + name)
            info.size = len(data)
            info.mtime = mtime
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return str(path)


def test_every_image_is_one_of_kubesphere_images():
    with open(os.path.join(ROOT, "roles", "kubesphere", "defaults", "main.yml"), encoding="utf-8") as handle:
        defaults = yaml.safe_load(handle)["kubesphere_images"]
    refs = versions.kubesphere_core_refs()
    for name, (component, repository) in versions.KUBESPHERE_CORE_IMAGES.items():
        assert component == name.replace("-", "_")
        assert refs[name] == "docker.io/" + defaults[component]
    assert refs["ks-apiserver"] == "docker.io/kubesphere/ks-apiserver:v3.4.1"


def test_sources_come_from_the_variable_or_shared_beside_the_checkout(tmp_path):
    info = versions.KUBESPHERE_CORE
    for name in (info["kubesphere_archive"], info["console_archive"]):
        (tmp_path / name).write_bytes(b"x")
    assert kscore.sources_dir({kscore.SOURCES_ENV: str(tmp_path)}) == str(tmp_path)
    assert kscore.SOURCE_DIRS[0] == os.path.join(os.path.dirname(ROOT), "shared", "reference", "kubesphere")
    with pytest.raises(kscore.KsCoreError) as error:
        kscore.sources_dir({kscore.SOURCES_ENV: str(tmp_path / "none")})
    assert kscore.SOURCES_ENV in str(error.value) and "--without kubesphere" in str(error.value)


def test_unpack_takes_the_archives_folder_and_its_commit_time(tmp_path):
    archive = make_archive(tmp_path / "a.tar.gz", "kubesphere", {"go.mod": "module kubesphere.io/kubesphere\n"})
    dest = tmp_path / "src" / "kubesphere-v3.4.1"
    dest.mkdir(parents=True)
    (dest / "stale").write_text("old")
    assert kscore.unpack(archive, str(dest), "kubesphere") == 1698659130
    assert sorted(os.listdir(dest)) == ["go.mod"]
    assert kscore.rfc3339(1698659130) == "2023-10-30T09:45:30Z"
    with pytest.raises(kscore.KsCoreError):
        kscore.unpack(archive, str(tmp_path / "other"), "console")


def test_a_patch_that_does_not_apply_stops_the_build(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.txt").write_text("one\ntwo\n")
    good = tmp_path / "good.patch"
    good.write_text("--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+three\n")
    kscore.apply_patches(str(tree), [str(good)], log=subprocess.DEVNULL)
    assert (tree / "a.txt").read_text() == "one\nthree\n"
    with pytest.raises(kscore.KsCoreError) as error:
        kscore.apply_patches(str(tree), [str(good)], log=subprocess.DEVNULL)
    assert "good.patch does not apply" in str(error.value)


def test_every_patch_is_listed_with_a_reason_in_the_docs():
    with open(os.path.join(ROOT, "docs", "bundle.md"), encoding="utf-8") as handle:
        doc = handle.read()
    listed = sorted(os.listdir(kscore.PATCH_DIR))
    assert listed == sorted(name for patches in kscore.PATCHES.values() for name, _reason in patches)
    for patches in kscore.PATCHES.values():
        for name, reason in patches:
            assert name in doc and reason
            with open(os.path.join(kscore.PATCH_DIR, name), encoding="utf-8") as handle:
                assert handle.read().startswith("--- a/")


def yarn_lock_patterns(text):
    """A yarn.lock (v1) -> {each pattern it locks ("name@range"): the patterns its package depends on}."""
    locked, dependencies, section = {}, None, False
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if not line.startswith(" "):
            dependencies = []
            for pattern in line.rstrip(":").split(", "):
                locked[pattern.strip().strip('"')] = dependencies
            section = False
        elif line.startswith("    ") and section:
            name, _space, wanted_range = line.strip().partition(" ")
            dependencies.append(name.strip('"') + "@" + wanted_range.strip('"'))
        else:
            section = line.strip() in ("dependencies:", "optionalDependencies:")
    return locked


def test_the_patches_apply_to_the_reference_sources(tmp_path):
    """The archives of shared/reference/kubesphere: each patch applies to exactly the files it names."""
    sources = kscore.sources_dir()
    for repository, archive_key in (("kubesphere", "kubesphere_archive"), ("console", "console_archive")):
        patches = kscore.patch_paths(repository)
        names = []
        for path in patches:
            with open(path, encoding="utf-8") as handle:
                names += [line[6:].strip() for line in handle if line.startswith("+++ b/")]
        tree = tmp_path / repository
        with tarfile.open(os.path.join(sources, versions.KUBESPHERE_CORE[archive_key])) as tar:
            for name in names:
                member = tar.getmember(repository + "/" + name)
                target = tree / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(tar.extractfile(member).read())
        kscore.apply_patches(str(tree), patches, log=subprocess.DEVNULL)
    package = json.loads((tmp_path / "console" / "package.json").read_text())
    assert "node-sass" not in package["devDependencies"] and package["devDependencies"]["sass"] == "1.32.13"
    lock = yarn_lock_patterns((tmp_path / "console" / "yarn.lock").read_text())
    assert "taobao" not in (tmp_path / "console" / "yarn.lock").read_text()
    # yarn install resolves nothing from the registry's newest releases: every dependency of package.json and of every
    # locked package is in yarn.lock (sass 1.32.13's chokidar range too), so a build today and one next year agree.
    wanted = {name + "@" + wanted_range for field in ("dependencies", "devDependencies")
              for name, wanted_range in package.get(field, {}).items()}
    wanted |= {dependency for dependencies in lock.values() for dependency in dependencies}
    assert "sass@1.32.13" in lock and "chokidar@>=3.0.0 <4.0.0" in lock
    assert sorted(wanted - set(lock)) == []
    manager = (tmp_path / "kubesphere" / "cmd" / "controller-manager" / "app" / "controllers.go").read_text()
    assert "pkg/controller/quota" not in manager and "serviceaccount.Reconciler" in manager


def test_the_version_stamp_is_upstreams():
    flags = kscore.version_ldflags("2023-10-30T09:45:30Z")
    for expected in ("gitVersion=v3.4.1", "gitCommit=" + versions.KUBESPHERE_CORE["kubesphere_commit"],
                     "gitTreeState=clean", "buildDate=2023-10-30T09:45:30Z", "gitMajor=3", "gitMinor=4"):
        assert "-X kubesphere.io/kubesphere/pkg/version." + expected in flags


class FakeGo:
    def __init__(self):
        self.builds = []

    def version(self):
        return "go1.26.8"

    def build(self, workdir, packages, outdir, ldflags, tags=(), log=None, env=None):
        self.builds.append({"workdir": workdir, "packages": packages, "ldflags": ldflags, "env": env,
                            "patched": open(os.path.join(workdir, "a.go"), encoding="utf-8").read()})
        os.makedirs(outdir)
        for package in packages:
            with open(os.path.join(outdir, package.rsplit("/", 1)[-1]), "w", encoding="utf-8") as handle:
                handle.write("program")


class FakeBackend:
    def __init__(self, tmp_path):
        self.cache_dir = str(tmp_path / "cache")
        self.steps = steps.Steps(self.cache_dir, io.StringIO())
        self.go = FakeGo()
        self.run = subprocess.run
        self.log_path = os.path.join(self.cache_dir, "build.log")
        self.logs = []

    def _append_log(self, name, part):
        self.logs.append(name)


@pytest.fixture
def sources(tmp_path, monkeypatch):
    """Archives of one Go file and a console, and one patch for each."""
    info = versions.KUBESPHERE_CORE
    folder = tmp_path / "sources"
    folder.mkdir()
    make_archive(folder / info["kubesphere_archive"], "kubesphere", {"a.go": "package a\n// quota\n"})
    make_archive(folder / info["console_archive"], "console", {"package.json": '{"name": "console"}\n'})
    patches = tmp_path / "patches"
    patches.mkdir()
    (patches / "go.patch").write_text("--- a/a.go\n+++ b/a.go\n@@ -1,2 +1,2 @@\n package a\n-// quota\n+// none\n")
    (patches / "console.patch").write_text(
        '--- a/package.json\n+++ b/package.json\n@@ -1 +1 @@\n-{"name": "console"}\n+{"name": "patched"}\n')
    monkeypatch.setattr(kscore, "PATCH_DIR", str(patches))
    monkeypatch.setattr(kscore, "PATCHES", {"kubesphere": [("go.patch", "test")],
                                            "console": [("console.patch", "test")]})
    return str(folder)


def test_the_go_step_builds_both_programs_in_vendor_mode_once(tmp_path, sources):
    backend = FakeBackend(tmp_path)
    work = kscore.KsCoreBuild(backend, sources=sources)
    out, key = work.go_step()
    build, = backend.go.builds
    assert build["patched"] == "package a\n// none\n"
    assert build["packages"] == ["./cmd/controller-manager", "./cmd/ks-apiserver"]
    assert build["env"] == {"GOFLAGS": "-mod=vendor -buildvcs=false", "GOPROXY": "off"}
    assert "-X kubesphere.io/kubesphere/pkg/version.buildDate=2023-10-30T09:45:30Z" in build["ldflags"]
    programs = sorted(name for name in os.listdir(out) if not name.startswith("."))
    assert programs == ["controller-manager", "ks-apiserver"]
    # the unpacked sources are not kept
    assert not os.path.exists(build["workdir"])
    # again: reused; another patch: built again
    assert kscore.KsCoreBuild(backend, sources=sources).go_step() == (out, key)
    assert len(backend.go.builds) == 1
    with open(os.path.join(kscore.PATCH_DIR, "go.patch"), "a", encoding="utf-8") as handle:
        handle.write(" \n")
    assert kscore.KsCoreBuild(backend, sources=sources).go_step()[1] != key


def fake_yarn(calls, tree_files=None):
    """subprocess.run for the console step: node --version, npm install yarn, yarn install/build."""
    def run(cmd, **kwargs):
        if cmd[:2] == ["node", "--version"]:
            return subprocess.CompletedProcess(cmd, 0, stdout="v20.20.2\n", stderr="")
        if cmd[0] == "npm":
            prefix = cmd[cmd.index("--prefix") + 1]
            os.makedirs(os.path.join(prefix, "node_modules", ".bin"))
            open(os.path.join(prefix, "node_modules", ".bin", "yarn"), "w", encoding="utf-8").close()
            calls.append(("npm", cmd[-1]))
            return subprocess.CompletedProcess(cmd, 0)
        if cmd[0].endswith("/yarn"):
            calls.append(("yarn", cmd[1], kwargs["env"]["NODE_OPTIONS"],
                          kwargs["env"]["PATH"].split(os.pathsep)[0] == os.path.dirname(cmd[0]),
                          open(os.path.join(kwargs["cwd"], "package.json"), encoding="utf-8").read()))
            if cmd[1] == "build":
                for name in (tree_files or {}):
                    path = os.path.join(kwargs["cwd"], name)
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    with open(path, "w", encoding="utf-8") as handle:
                        handle.write(name)
            return subprocess.CompletedProcess(cmd, 0)
        kwargs.pop("check", None)
        return subprocess.run(cmd, check=False, **kwargs)  # tar, patch
    return run


BUILT_CONSOLE = ["dist/server.js", "dist/assets/logo.svg", "dist/index.html", "server/locales/en.json",
                 "server/public/favicon.ico", "server/views/login.html", "server/sample/x.yaml",
                 "server/config.yaml"]


def test_the_console_step_builds_with_yarn_and_keeps_what_upstreams_image_holds(tmp_path, sources):
    backend = FakeBackend(tmp_path)
    calls = []
    work = kscore.KsCoreBuild(backend, sources=sources, run=fake_yarn(calls, BUILT_CONSOLE))
    out, key = work.console_step()
    assert calls[0] == ("npm", "yarn@" + versions.KUBESPHERE_CORE["yarn"])
    assert [call[1] for call in calls[1:]] == ["install", "build"]
    for call in calls[1:]:
        # webpack 4 needs OpenSSL's legacy MD4; the scripts find yarn on PATH; the patch was applied
        assert call[2] == "--openssl-legacy-provider" and call[3] and '"patched"' in call[4]
    files = sorted(os.path.relpath(os.path.join(dirpath, name), out)
                   for dirpath, _dirs, names in os.walk(out) for name in names)
    assert files == sorted(["dist/assets/logo.svg", "dist/index.html", "package.json", "server/server.js",
                            "server/locales/en.json", "server/public/favicon.ico", "server/views/login.html",
                            "server/sample/x.yaml", "server/config.yaml"])
    # again: reused, yarn not run
    assert kscore.KsCoreBuild(backend, sources=sources, run=fake_yarn(calls)).console_step() == (out, key)
    assert len(calls) == 3


def test_a_console_build_without_its_server_fails(tmp_path, sources):
    backend = FakeBackend(tmp_path)
    work = kscore.KsCoreBuild(backend, sources=sources,
                              run=fake_yarn([], [name for name in BUILT_CONSOLE if name != "dist/server.js"]))
    with pytest.raises(kscore.KsCoreError) as error:
        work.console_step()
    assert "dist/server.js" in str(error.value)
    assert backend.steps.stamp_of("console-v3.4.1") is None


class MeetingGo(FakeGo):
    """A Go build that waits, inside its build, for the console's yarn build to be running too."""

    def __init__(self, meeting):
        super().__init__()
        self.meeting = meeting

    def build(self, workdir, packages, outdir, ldflags, tags=(), log=None, env=None):
        self.meeting.wait()
        super().build(workdir, packages, outdir, ldflags, tags=tags, log=log, env=env)


def meeting_yarn(meeting, calls):
    """fake_yarn whose `yarn build` waits for the Go build to be running too."""
    inner = fake_yarn(calls, BUILT_CONSOLE)

    def run(cmd, **kwargs):
        if cmd[0].endswith("/yarn") and cmd[1] == "build":
            meeting.wait()
        return inner(cmd, **kwargs)
    return run


def test_the_go_and_console_builds_run_side_by_side(tmp_path, sources):
    # Each waits inside its build for the other: built one after the other, the barrier breaks.
    meeting = threading.Barrier(2, timeout=60)
    backend = FakeBackend(tmp_path)
    backend.go = MeetingGo(meeting)
    calls = []
    work = kscore.KsCoreBuild(backend, sources=sources, run=meeting_yarn(meeting, calls))
    go_dir, go_key, console_dir, console_key = work.go_and_console()
    assert (go_dir, go_key) == kscore.KsCoreBuild(backend, sources=sources).go_step()
    assert (console_dir, console_key) == kscore.KsCoreBuild(
        backend, sources=sources, run=fake_yarn(calls)).console_step()
    assert os.path.exists(os.path.join(go_dir, "ks-apiserver"))
    assert os.path.exists(os.path.join(console_dir, "server", "server.js"))
    assert sorted(name for name, _seconds in backend.steps.ran) == ["console-v3.4.1", "go-kubesphere-v3.4.1"]


def test_a_failed_go_build_keeps_the_console_built_beside_it(tmp_path, sources):
    backend = FakeBackend(tmp_path)

    def failing(*_args, **_kwargs):
        raise kscore.KsCoreError("go build failed")
    backend.go.build = failing
    calls = []
    work = kscore.KsCoreBuild(backend, sources=sources, run=fake_yarn(calls, BUILT_CONSOLE))
    with pytest.raises(kscore.KsCoreError, match="go build failed"):
        work.go_and_console()
    # the console step finished and is stamped: the next build reuses it and runs only the Go step again
    assert backend.steps.stamp_of("console-v3.4.1") is not None
    assert backend.steps.stamp_of("go-kubesphere-v3.4.1") is None


def test_nodejs_is_taken_at_libnode_version():
    def run(cmd, **kwargs):
        assert "nodejs" not in cmd
        return subprocess.CompletedProcess(cmd, 0, stdout="".join(
            "%s:\n  Candidate: %s\n" % (pkg, "18.20.4+dfsg-1~deb12u3" if pkg == "libnode108" else "1.0")
            for pkg in cmd[2:]), stderr="")
    found = kscore.node_deb_versions(run=run)
    assert found["nodejs"] == found["libnode108"] == "18.20.4+dfsg-1~deb12u3"
    assert set(found) == set(kscore.NODE_PACKAGES + kscore.NODE_JS_PACKAGES + [versions.DEBIAN_BUSYBOX_PACKAGE])


def test_the_console_image_runs_node_on_the_built_server_as_upstream(tmp_path, monkeypatch):
    root = tmp_path / "root"
    for path in ("usr/bin/node", "usr/lib/x86_64-linux-gnu/libnode.so.108", "usr/share/nodejs/acorn/index.js",
                 "bin/busybox"):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(path)
    console = tmp_path / "console"
    (console / "server").mkdir(parents=True)
    (console / "server" / "server.js").write_text("server")
    monkeypatch.setattr(kscore.elf, "closure", lambda deb_root, programs: [
        "/usr/bin/node", "/usr/lib/x86_64-linux-gnu/libnode.so.108"])
    layer = kscore.console_layer(str(console), str(root), str(root / "bin" / "busybox"), ["/bin/sh"])
    config = kscore.image_configs()["ks-console"]
    archive = tmp_path / "image.tar"
    dockerarchive.write_image(str(archive), layer, "docker.io/kubesphere/ks-console:v3.4.1", **config)
    _manifest, image, names = dockerarchive.read_image(str(archive))
    for name in ("usr/bin/node", "usr/lib/x86_64-linux-gnu/libnode.so.108", "usr/share/nodejs/acorn/index.js",
                 "opt/kubesphere/console/server/server.js", "bin/sh"):
        assert name in names
    assert image["config"]["Cmd"] == ["node", "server/server.js"]
    assert image["config"]["WorkingDir"] == "/opt/kubesphere/console"
    assert image["config"]["User"] == "1002:1002"
    assert "NODE_ENV=production" in image["config"]["Env"]


def test_the_manifest_names_each_source_and_patch():
    entries = kscore.components_entries({"nodejs": "18.20.4+dfsg-1~deb12u3"}, "v20.20.2")
    assert set(entries) == {"kubesphere_ks_apiserver", "kubesphere_ks_controller_manager", "kubesphere_ks_console"}
    assert "controller-manager-no-quota.patch" in entries["kubesphere_ks_apiserver"]["source"]
    assert "-mod=vendor" in entries["kubesphere_ks_controller_manager"]["source"]
    assert "console-dart-sass.patch" in entries["kubesphere_ks_console"]["source"]
    assert "nodejs 18.20.4+dfsg-1~deb12u3" in entries["kubesphere_ks_console"]["source"]
    assert {entry["version"] for entry in entries.values()} == {"v3.4.1"}
