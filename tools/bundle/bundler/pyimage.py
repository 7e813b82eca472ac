"""The slipway-operator image: Debian's Python 3.11, pinned wheels, the collection, built offline.

The same image runs slipway-operator, the fleet controller (`python3.11 -m slipway_fleet`) and each fleet
operation's Job (`python3.11 -m slipway_fleet.runner`: ansible-runner, ansible-playbook, and ssh to the hosts).

What goes in, and from where:
  Python        Debian bookworm's python3.11-minimal, libpython3.11-minimal and libpython3.11-stdlib
                (`apt-get download`, `dpkg-deb -x`, as debs.py does for the other images), with
                exactly the shared libraries that the interpreter, the standard library's extension
                modules and the wheels' extension modules load (elf.closure). The extension modules
                for terminals and databases (curses, readline, dbm, gdbm, sqlite3, nis) and the
                standard library's test and GUI packages are left out: nothing in the image uses them.
  Wheels        operator/requirements.lock: the full transitive closure of the operator's
                requirements (operator/image-requirements.txt), every one pinned with its sha256.
                `pip download --only-binary=:all: --platform manylinux... --python-version 3.11
                --require-hashes --no-deps` fetches exactly those files; they are unpacked into
                /usr/lib/python3/dist-packages (Debian's python3.11 reads it), and their console
                scripts (ansible-playbook, which ansible-runner runs, ansible, ...) are written to
                /usr/bin. The `ansible` wheel is the one exception: it is not installed, only the
                collections COLLECTIONS are taken out of it (Galaxy is not needed, nor reachable).
  Collections   /usr/share/ansible/collections/ansible_collections/: slipway/cluster (this checkout's
                COLLECTION_PATHS) and COLLECTIONS, without their tests and docs.
  The operator  operator/slipway_operator and operator/slipway_fleet, as packages in dist-packages; the
                entrypoint is `python3.11 -m slipway_operator`.
  OpenSSH       Debian's openssh-client: ssh, scp and sftp (what Ansible's ssh connection runs) and
                ssh-keyscan (the fleet runner reads the hosts' keys with it before any task), with
                exactly the shared libraries they load, like the interpreter's. /home/nonroot belongs to
                the image's user: ssh takes its home (known_hosts) from /etc/passwd, not from $HOME.
  busybox       /bin/sh and the commands Ansible's local connection runs (mkdir, rm, chmod...).
Every .py file is compiled to .pyc (unchecked-hash: the image is read-only and never changes), so
nothing is compiled when the pod starts. The image runs as user 65532 (nonroot), with LANG=C.UTF-8
(Debian's C.utf8 locale from libc-bin: ansible-core requires a UTF-8 locale).
"""

import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile

from . import debs, dockerarchive, elf, images, steps

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
OPERATOR_DIR = os.path.join(REPO_ROOT, "operator")
LOCK = os.path.join(OPERATOR_DIR, "requirements.lock")
LOCK_INPUT = os.path.join(OPERATOR_DIR, "image-requirements.txt")

NAME = "slipway-operator"
# The Python packages of operator/ in the image.
PACKAGES = ("slipway_operator", "slipway_fleet")
REPOSITORY = "localhost/slipway/operator"
COMPONENT = "slipway_operator"
PYTHON = "python3.11"
PYTHON_VERSION = "3.11"
USER = "65532:65532"

DEBIAN_PACKAGES = [
    "python3.11-minimal", "libpython3.11-minimal", "libpython3.11-stdlib",
    "libc6", "libc-bin", "libssl3", "libffi8", "zlib1g", "libexpat1", "libbz2-1.0", "liblzma5",
    "libcrypt1", "libuuid1", "libgcc-s1", "libstdc++6",
] + [
    # Ansible's ssh connection (fleet Jobs): openssh-client and what its programs load.
    "openssh-client", "libedit2", "libbsd0", "libmd0", "libtinfo6", "libfido2-1", "libcbor0.8", "libudev1",
    "libgssapi-krb5-2", "libkrb5-3", "libk5crypto3", "libkrb5support0", "libcom-err2", "libkeyutils1",
    "libselinux1", "libpcre2-8-0",
]
SSH_PROGRAMS = ("/usr/bin/ssh", "/usr/bin/scp", "/usr/bin/sftp", "/usr/bin/ssh-keyscan")
HOME = "/home/nonroot"
STDLIB = "/usr/lib/python3.11"
LIB_DYNLOAD = STDLIB + "/lib-dynload"
# Extension modules left out (their libraries are not in the image), and packages of the standard
# library nothing in the image imports.
DROPPED_MODULES = ("_curses", "_curses_panel", "readline", "_dbm", "_gdbm", "_sqlite3", "nis",
                   "ossaudiodev", "_ctypes_test", "_testbuffer", "_testcapi", "_testclinic",
                   "_testimportmultiple", "_testinternalcapi", "_testmultiphase", "_xxtestfuzz",
                   "xxlimited", "xxlimited_35", "_xxsubinterpreters")
DROPPED_STDLIB = ("idlelib", "tkinter", "turtledemo", "lib2to3", "ensurepip", "sqlite3",
                  "curses", "dbm", "pydoc_data", "unittest/test", "ctypes/test", "distutils/tests")
LOCALE = "/usr/lib/locale/C.utf8"
SITE_PACKAGES = "/usr/lib/python3/dist-packages"
COLLECTIONS_ROOT = "/usr/share/ansible/collections/ansible_collections"
# Taken out of the `ansible` wheel: what the collection's roles and plugins use (galaxy.yml's
# dependencies).
COLLECTION_WHEEL = "ansible"
COLLECTIONS = ("kubernetes/core", "community/general", "community/crypto", "ansible/posix")
COLLECTION_SKIP = ("tests", "docs", "changelogs", "__pycache__")
# Parts of wheels nothing in the image imports: kubernetes' asyncio client (half of that wheel).
PRUNED = ("kubernetes/aio",)
# This checkout's files that make the collection.
COLLECTION_PATHS = ("galaxy.yml", "meta", "plugins", "roles", "playbooks", "README.md", "LICENSE")
PLATFORMS = ("manylinux_2_36_x86_64", "manylinux_2_34_x86_64", "manylinux_2_28_x86_64",
             "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux_2_5_x86_64",
             "manylinux1_x86_64")

_REQ_RE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")
_HASH_RE = re.compile(r"--hash=sha256:([0-9a-f]{64})")


class ImageError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# the lock file

def parse_lock(text):
    """[(name, version, [sha256...])] of a `pip --require-hashes` requirements file."""
    entries = []
    joined = re.sub(r"\\\n", " ", text)
    for line in joined.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        match = _REQ_RE.match(line)
        if not match:
            raise ImageError("%s: %r is not NAME==VERSION --hash=sha256:..." % (LOCK, line))
        hashes = _HASH_RE.findall(line)
        if not hashes:
            raise ImageError("%s: %s has no --hash" % (LOCK, match.group(1)))
        entries.append((match.group(1), match.group(2), hashes))
    return entries


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_text(report):
    """The lock file from `pip install --dry-run --report` output (a dict)."""
    lines = ["# slipway-operator image: every Python package, pinned with the sha256 of its wheel for",
             "# Python 3.11 on manylinux x86_64. Generated from image-requirements.txt by",
             "#   python3 tools/bundle/build.py operator-lock",
             "# The bundle builder fetches exactly these files (pip download --require-hashes).", ""]
    for item in sorted(report["install"], key=lambda each: normalize(each["metadata"]["name"])):
        meta, info = item["metadata"], item["download_info"]
        digest = info.get("archive_info", {}).get("hashes", {}).get("sha256")
        if not digest:
            raise ImageError("pip reported no sha256 for %s" % meta["name"])
        lines.append("%s==%s \\" % (normalize(meta["name"]), meta["version"]))
        lines.append("    --hash=sha256:%s" % digest)
    return "\n".join(lines) + "\n"


def pip_platform_args():
    args = ["--only-binary=:all:", "--python-version", PYTHON_VERSION, "--implementation", "cp",
            "--abi", "cp311"]
    for platform in PLATFORMS:
        args += ["--platform", platform]
    return args


def regenerate_lock(run=subprocess.run, python=sys.executable, out=sys.stdout):
    """Resolve image-requirements.txt for the image's platform and write requirements.lock."""
    scratch = os.path.join(OPERATOR_DIR, ".lock-scratch")
    report = os.path.join(scratch, "report.json")
    os.makedirs(scratch, exist_ok=True)
    try:
        cmd = [python, "-m", "pip", "install", "--quiet", "--dry-run", "--ignore-installed",
               "--report", report, "--target", os.path.join(scratch, "target")] \
            + pip_platform_args() + ["-r", LOCK_INPUT]
        proc = run(cmd, check=False)
        if proc.returncode != 0:
            raise ImageError("%s failed" % " ".join(cmd))
        with open(report, encoding="utf-8") as handle:
            text = lock_text(json.load(handle))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    with open(LOCK, "w", encoding="utf-8") as handle:
        handle.write(text)
    out.write("wrote %s (%d packages)\n" % (LOCK, len(parse_lock(text))))
    return 0


def fetch_wheels(lock_path, dest, run=subprocess.run, python=sys.executable, log=None):
    """Every wheel of the lock file in ``dest`` (pip verifies each sha256); {name: wheel path}."""
    os.makedirs(dest, exist_ok=True)
    with open(lock_path, encoding="utf-8") as handle:
        entries = parse_lock(handle.read())
    cmd = [python, "-m", "pip", "download", "--disable-pip-version-check", "--no-deps",
           "--require-hashes", "--dest", dest] + pip_platform_args() + ["-r", lock_path]
    proc = run(cmd, stdout=log, stderr=log, check=False)
    if proc.returncode != 0:
        raise ImageError("pip download of %s failed (exit %d)" % (lock_path, proc.returncode))
    wheels = {}
    for name, version, hashes in entries:
        found = [path for path in glob.glob(os.path.join(dest, "*.whl"))
                 if wheel_name(path) == (normalize(name), version)]
        matching = [path for path in found if sha256_file(path) in hashes]
        if len(matching) != 1:
            raise ImageError("no wheel of %s==%s with a locked sha256 in %s" % (name, version, dest))
        wheels[normalize(name)] = matching[0]
    return wheels


def wheel_name(path):
    """(normalized name, version) from a wheel's file name."""
    parts = os.path.basename(path).split("-")
    return normalize(parts[0]), parts[1]


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# ---------------------------------------------------------------------------------------------
# installing wheels into the image's tree

def _safe_member(name):
    parts = name.split("/")
    if name.startswith("/") or ".." in parts:
        raise ImageError("unsafe path %r in a wheel" % name)
    return name


def console_scripts(entry_points_text):
    """{script: (module, function)} of an entry_points.txt's [console_scripts] section."""
    scripts, section = {}, None
    for line in entry_points_text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]").strip()
            continue
        if section != "console_scripts" or "=" not in line:
            continue
        name, target = (part.strip() for part in line.split("=", 1))
        target = target.split("[", 1)[0].strip()
        module, _colon, function = target.partition(":")
        scripts[name] = (module.strip(), function.strip())
    return scripts


def script_text(module, function, python="/usr/bin/" + PYTHON):
    """The launcher pip writes for a console script."""
    head = function.split(".", 1)[0]
    return ("#!%s\n# -*- coding: utf-8 -*-\nimport re\nimport sys\nfrom %s import %s\n"
            "if __name__ == '__main__':\n"
            "    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
            "    sys.exit(%s())\n" % (python, module, head, function))


def install_wheel(wheel, stage, pruned=PRUNED):
    """Unpack ``wheel`` into stage's site-packages; write its console scripts to stage's /usr/bin.
    Returns the names of the scripts."""
    site = os.path.join(stage, SITE_PACKAGES.lstrip("/"))
    bindir = os.path.join(stage, "usr/bin")
    os.makedirs(site, exist_ok=True)
    os.makedirs(bindir, exist_ok=True)
    scripts = []
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            name = _safe_member(info.filename)
            if info.is_dir() or any(name == prefix or name.startswith(prefix + "/")
                                    for prefix in pruned):
                continue
            parts = name.split("/")
            if parts[0].endswith(".data") and len(parts) > 2:
                kind, rest = parts[1], "/".join(parts[2:])
                if kind in ("purelib", "platlib"):
                    dest = os.path.join(site, rest)
                elif kind == "scripts":
                    dest = os.path.join(bindir, rest)
                    scripts.append(rest)
                else:
                    continue  # headers and data files: nothing in the image reads them
            else:
                dest = os.path.join(site, name)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with archive.open(info) as source, open(dest, "wb") as target:
                shutil.copyfileobj(source, target)
            mode = (info.external_attr >> 16) & 0o777
            os.chmod(dest, 0o755 if mode & 0o111 or dest.startswith(bindir + os.sep) else 0o644)
        entry_points = [name for name in archive.namelist()
                        if re.match(r"^[^/]+\.dist-info/entry_points\.txt$", name)]
        for member in entry_points:
            text = archive.read(member).decode("utf-8")
            for script, (module, function) in sorted(console_scripts(text).items()):
                path = os.path.join(bindir, script)
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write(script_text(module, function))
                os.chmod(path, 0o755)
                scripts.append(script)
    for path in scripts:
        full = os.path.join(bindir, path)
        with open(full, "rb") as handle:
            data = handle.read()
        if data.startswith(b"#!python") or data.startswith(b"#!/usr/bin/env python"):
            with open(full, "wb") as handle:
                handle.write(b"#!/usr/bin/" + PYTHON.encode() + data[data.index(b"\n"):])
    return sorted(scripts)


def copy_tree(source, dest, skip=("__pycache__",)):
    """Copy a directory tree of regular files and symlinks, leaving out directories named in skip."""
    for dirpath, dirnames, filenames in os.walk(source):
        dirnames[:] = sorted(name for name in dirnames if name not in skip)
        rel = os.path.relpath(dirpath, source)
        target_dir = os.path.normpath(os.path.join(dest, rel))
        os.makedirs(target_dir, exist_ok=True)
        for name in sorted(filenames):
            if name.endswith((".pyc", ".pyo")):
                continue
            src = os.path.join(dirpath, name)
            dst = os.path.join(target_dir, name)
            if os.path.islink(src):
                os.symlink(os.readlink(src), dst)
            else:
                shutil.copyfile(src, dst)
                os.chmod(dst, 0o755 if os.stat(src).st_mode & 0o111 else 0o644)


def collection_files(root=REPO_ROOT):
    """This checkout's files of the collection (COLLECTION_PATHS, no caches), relative paths."""
    paths = []
    for top in COLLECTION_PATHS:
        full = os.path.join(root, top)
        if os.path.isfile(full):
            paths.append(top)
            continue
        for dirpath, dirnames, filenames in os.walk(full):
            dirnames[:] = sorted(name for name in dirnames if name != "__pycache__")
            for name in sorted(filenames):
                if not name.endswith((".pyc", ".pyo")):
                    paths.append(os.path.relpath(os.path.join(dirpath, name), root))
    return sorted(paths)


def operator_files(root=REPO_ROOT):
    """The .py files of PACKAGES, relative paths."""
    paths = []
    for package in PACKAGES:
        base = os.path.join(root, "operator", package)
        paths += ["operator/%s/%s" % (package, name) for name in os.listdir(base) if name.endswith(".py")]
    return sorted(paths)


def sources_digest(root=REPO_ROOT):
    """What the image holds of this checkout: the collection, the operator, the fleet and the lock file."""
    hasher = hashlib.sha256()
    for rel in collection_files(root) + operator_files(root) + ["operator/requirements.lock"]:
        hasher.update(rel.encode() + b"\0")
        with open(os.path.join(root, rel), "rb") as handle:
            hasher.update(handle.read())
        hasher.update(b"\0")
    return hasher.hexdigest()


def galaxy_version(root=REPO_ROOT):
    with open(os.path.join(root, "galaxy.yml"), encoding="utf-8") as handle:
        for line in handle:
            match = re.match(r"^version:\s*['\"]?([^'\"\s]+)", line)
            if match:
                return match.group(1)
    raise ImageError("galaxy.yml has no version")


def image_ref(root=REPO_ROOT):
    """localhost/slipway/operator:<the collection's version> (roles/operator's operator_image)."""
    return "%s:%s" % (REPOSITORY, galaxy_version(root))


# ---------------------------------------------------------------------------------------------
# the image's tree

def stage_python(deb_root, stage):
    """Debian's interpreter, its standard library and OpenSSH's client programs into ``stage``; returns the
    ELF files to resolve."""
    def copy(path):
        src = os.path.join(deb_root, path.lstrip("/"))
        dst = os.path.join(stage, path.lstrip("/"))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.islink(src):
            os.symlink(os.readlink(src), dst)
        else:
            shutil.copyfile(src, dst)
            os.chmod(dst, os.stat(src).st_mode & 0o777)

    copy("/usr/bin/" + PYTHON)
    os.symlink(PYTHON, os.path.join(stage, "usr/bin/python3"))
    stdlib = os.path.join(deb_root, STDLIB.lstrip("/"))
    dropped_dirs = {os.path.join(stdlib, name) for name in DROPPED_STDLIB}
    programs = ["/usr/bin/" + PYTHON]
    for dirpath, dirnames, filenames in os.walk(stdlib):
        dirnames[:] = sorted(name for name in dirnames
                             if os.path.join(dirpath, name) not in dropped_dirs
                             and name not in ("__pycache__", "test", "tests"))
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            image_path = "/" + os.path.relpath(full, deb_root)
            if name.endswith(".so"):
                if name.split(".", 1)[0] in DROPPED_MODULES:
                    continue
                programs.append(image_path)
            elif name.endswith((".pyc", ".pyo")):
                continue
            copy(image_path)
    for path in SSH_PROGRAMS:
        copy(path)
        programs.append(path)
    for top in ("/etc/" + PYTHON, LOCALE):
        for dirpath, _dirnames, filenames in os.walk(os.path.join(deb_root, top.lstrip("/"))):
            for name in sorted(filenames):
                copy("/" + os.path.relpath(os.path.join(dirpath, name), deb_root))
    return programs


def wheel_extensions(stage):
    """Image paths of the wheels' extension modules and of the libraries the wheels carry."""
    site = os.path.join(stage, SITE_PACKAGES.lstrip("/"))
    found = []
    for dirpath, _dirnames, filenames in os.walk(site):
        for name in filenames:
            full = os.path.join(dirpath, name)
            if (name.endswith(".so") or ".so." in name) and elf.is_elf(full):
                found.append("/" + os.path.relpath(full, stage))
    return sorted(found)


def resolve_libraries(deb_root, stage, programs):
    """Copy into ``stage`` every Debian library that ``programs`` (in deb_root or in stage) load.

    A wheel's own libraries (auditwheel's ``<package>.libs/``, found through RUNPATH $ORIGIN) are
    already in stage; everything else must come from the Debian packages. Raises naming what is
    missing."""
    wheel_lib_dirs = sorted({os.path.dirname(path) for path in wheel_extensions(stage)
                             if ".libs/" in path})
    needed, missing, seen = set(), [], set()
    queue = list(programs)
    while queue:
        path = queue.pop()
        if path in seen:
            continue
        seen.add(path)
        in_stage = os.path.lexists(os.path.join(stage, path.lstrip("/")))
        root = stage if in_stage else deb_root
        chain = elf.resolve_in_root(root, path)
        if not in_stage:
            needed.update(chain)
        real = os.path.join(root, chain[-1].lstrip("/"))
        if not elf.is_elf(real):
            continue
        interp, libs = elf.read_dynamic(real)
        if interp:
            queue.append(interp)
        for lib in libs:
            own = elf.find_library(stage, lib, tuple(wheel_lib_dirs))
            found = own or elf.find_library(deb_root, lib)
            if found is None:
                missing.append("%s (needed by %s)" % (lib, path))
            else:
                queue.append(found)
    if missing:
        raise elf.ElfError("shared libraries not found in the Debian packages of the operator "
                           "image: " + ", ".join(sorted(set(missing))))
    for path in sorted(needed):
        src = os.path.join(deb_root, path.lstrip("/"))
        dst = os.path.join(stage, path.lstrip("/"))
        if os.path.lexists(dst):
            continue
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.islink(src):
            os.symlink(os.readlink(src), dst)
        else:
            shutil.copyfile(src, dst)
            os.chmod(dst, os.stat(src).st_mode & 0o777)
    return sorted(needed)


def stage_checkout(stage, root=REPO_ROOT):
    """What the image holds of this checkout: the slipway.cluster collection, the operator and the fleet."""
    own = os.path.join(stage, COLLECTIONS_ROOT.lstrip("/"), "slipway", "cluster")
    for rel in collection_files(root):
        dst = os.path.join(own, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copyfile(os.path.join(root, rel), dst)
        os.chmod(dst, 0o644)
    for package in PACKAGES:
        copy_tree(os.path.join(root, "operator", package), os.path.join(stage, SITE_PACKAGES.lstrip("/"), package))


def stage_collections(ansible_wheel, stage):
    """COLLECTIONS from the `ansible` wheel."""
    target = os.path.join(stage, COLLECTIONS_ROOT.lstrip("/"))
    prefixes = tuple("ansible_collections/%s/" % name for name in COLLECTIONS)
    copied = set()
    with zipfile.ZipFile(ansible_wheel) as archive:
        for info in archive.infolist():
            name = _safe_member(info.filename)
            if info.is_dir() or not name.startswith(prefixes):
                continue
            parts = name.split("/")
            if any(part in COLLECTION_SKIP for part in parts[3:-1]) or name.endswith(".pyc"):
                continue
            copied.add("/".join(parts[1:3]))
            dest = os.path.join(target, *parts[1:])
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with archive.open(info) as source, open(dest, "wb") as handle:
                shutil.copyfileobj(source, handle)
            os.chmod(dest, 0o644)
    missing = sorted(set(COLLECTIONS) - copied)
    if missing:
        raise ImageError("the ansible wheel has no collection %s" % ", ".join(missing))


def collection_versions(stage):
    """{namespace.name: version} of the collections in the image (their MANIFEST.json)."""
    versions = {}
    for name in COLLECTIONS:
        path = os.path.join(stage, COLLECTIONS_ROOT.lstrip("/"), name, "MANIFEST.json")
        with open(path, encoding="utf-8") as handle:
            versions[name.replace("/", ".")] = json.load(handle)["collection_info"]["version"]
    return versions


def compile_tree(stage, run=subprocess.run, python=sys.executable, log=None,
                 tops=(STDLIB, SITE_PACKAGES, COLLECTIONS_ROOT)):
    """Compile every .py file under ``tops`` of the image to unchecked-hash .pyc, with image paths
    in them."""
    if "%d.%d" % sys.version_info[:2] != PYTHON_VERSION:
        raise ImageError("compiling the image's .pyc files needs Python %s; this is %d.%d"
                         % (PYTHON_VERSION, sys.version_info[0], sys.version_info[1]))
    dirs = [os.path.join(stage, path.lstrip("/")) for path in tops
            if os.path.isdir(os.path.join(stage, path.lstrip("/")))]
    cmd = [python, "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash",
           "-s", stage, "-p", "/"] + dirs
    proc = run(cmd, stdout=log, stderr=log, check=False)
    if proc.returncode != 0:
        raise ImageError("compileall failed for the operator image (exit %d; see build.log)"
                         % proc.returncode)


def layer_from_stages(stages, busybox, applets):
    """One layer of the trees in ``stages`` (image roots, none overlapping another's files) and busybox."""
    layer = images.base_layer()
    for stage in stages:
        for dirpath, dirnames, filenames in os.walk(stage):
            dirnames.sort()
            for name in sorted(dirnames) + sorted(filenames):
                full = os.path.join(dirpath, name)
                image_path = "/" + os.path.relpath(full, stage)
                if os.path.isdir(full) and not os.path.islink(full):
                    layer.add_dir(image_path, 0o755)
                else:
                    layer.add_from_root(stage, image_path)
    uid, gid = (int(part) for part in USER.split(":"))
    layer.add_dir(HOME, 0o700, uid=uid, gid=gid)
    images.add_busybox(layer, busybox, applets)
    return layer


def image_config(ref, digest):
    return {"entrypoint": ["/usr/bin/" + PYTHON, "-m", "slipway_operator"],
            "env": ["PATH=" + dockerarchive.DEFAULT_PATH, "LANG=C.UTF-8",
                    "PYTHONDONTWRITEBYTECODE=1", "HOME=/tmp",
                    "ANSIBLE_COLLECTIONS_PATH=/usr/share/ansible/collections"],
            "user": USER, "workdir": "/tmp",
            "labels": {"io.slipway.bundle.backend": "source",
                       "io.slipway.operator.sources": digest,
                       "org.opencontainers.image.title": ref}}


# ---------------------------------------------------------------------------------------------
# the build step

def build(step_runner, cache_dir, run=subprocess.run, log_path=None, root=REPO_ROOT):
    """The operator image in two cached steps: (archive path, ref, component entry).

    ``operator-python``: Debian's Python, the locked wheels and the other collections, compiled;
    it changes only with the lock file, the Debian packages or this code, and is the slow part.
    ``image-slipway-operator-TAG``: that tree with this checkout's collection and operator (compiled
    apart) in one layer; it runs again whenever the collection changes, in seconds.
    """
    deb_versions = debs.candidate_versions(DEBIAN_PACKAGES + [images_busybox_package()], run=run)
    with open(LOCK, encoding="utf-8") as handle:
        lock = handle.read()
    code = steps.files_digest([os.path.join(HERE, name) for name in
                               ("pyimage.py", "debs.py", "elf.py", "dockerarchive.py", "images.py")])
    python_key = steps.digest({"debs": deb_versions, "lock": lock, "code": code,
                               "python": list(sys.version_info[:2])})

    def produce_python(tmp):
        step_runner.say("operator image: Debian's %s and %d locked wheels" % (PYTHON, len(parse_lock(lock))))
        with open(log_path or os.devnull, "a", encoding="utf-8") as log:
            log.write("\n==== operator image: Python\n")
            log.flush()
            paths = debs.fetch(sorted(deb_versions), deb_versions,
                               os.path.join(cache_dir, "debs"), run=run, log=log)
            deb_root = debs.unpack(paths, os.path.join(tmp, "debian"), run=run)
            wheels = fetch_wheels(LOCK, os.path.join(cache_dir, "wheels"), run=run, log=log)
            if COLLECTION_WHEEL not in wheels:
                raise ImageError("%s does not lock the %s wheel the collections come from"
                                 % (LOCK, COLLECTION_WHEEL))
            stage = os.path.join(tmp, "root")
            programs = stage_python(deb_root, stage)
            for name, wheel in sorted(wheels.items()):
                if name != COLLECTION_WHEEL:
                    install_wheel(wheel, stage)
            stage_collections(wheels[COLLECTION_WHEEL], stage)
            resolve_libraries(deb_root, stage, programs + wheel_extensions(stage))
            compile_tree(stage, run=run, log=log)
            busybox = os.path.join(deb_root, "bin", "busybox")
            shutil.copyfile(busybox, os.path.join(tmp, "busybox"))
            os.chmod(os.path.join(tmp, "busybox"), 0o755)
            with open(os.path.join(tmp, "python.json"), "w", encoding="utf-8") as handle:
                json.dump({"applets": images.busybox_applets(busybox, run=run),
                           "collections": collection_versions(stage)}, handle, indent=1, sort_keys=True)
            shutil.rmtree(deb_root)

    python_dir = step_runner.run("operator-python", python_key, produce_python)
    with open(os.path.join(python_dir, "python.json"), encoding="utf-8") as handle:
        python_info = json.load(handle)

    ref = image_ref(root)
    digest = sources_digest(root)
    key = steps.digest({"python": python_key, "sources": digest, "ref": ref, "code": code})

    def produce(tmp):
        step_runner.say("image %s: the collection and the operator of this checkout" % ref)
        stage = os.path.join(tmp, "checkout")
        stage_checkout(stage, root)
        with open(log_path or os.devnull, "a", encoding="utf-8") as log:
            compile_tree(stage, run=run, log=log, tops=(SITE_PACKAGES, COLLECTIONS_ROOT))
        layer = layer_from_stages([os.path.join(python_dir, "root"), stage],
                                  os.path.join(python_dir, "busybox"), python_info["applets"])
        dockerarchive.write_image(os.path.join(tmp, "image.tar"), layer, ref, **image_config(ref, digest))
        shutil.rmtree(stage)

    out = step_runner.run("image-%s-%s" % (NAME, ref.rsplit(":", 1)[-1]), key, produce)
    entry = component_entry(ref.rsplit(":", 1)[-1], deb_versions, parse_lock(lock),
                            python_info["collections"])
    return os.path.join(out, "image.tar"), ref, entry


def images_busybox_package():
    from . import versions  # pylint: disable=import-outside-toplevel
    return versions.DEBIAN_BUSYBOX_PACKAGE


def component_entry(version, deb_versions, locked, collections):
    pins = {normalize(name): pin for name, pin, _hashes in locked}
    return {"version": version,
            "source": "Debian bookworm %s %s and openssh-client %s, %d wheels of operator/requirements.lock "
                      "(kopf %s, ansible-core %s, ansible-runner %s, kubernetes %s), collections %s and "
                      "slipway.cluster, slipway_operator and slipway_fleet from the checkout"
                      % (PYTHON, deb_versions["python3.11-minimal"], deb_versions["openssh-client"], len(locked) - 1,
                         pins.get("kopf"), pins.get("ansible-core"), pins.get("ansible-runner"),
                         pins.get("kubernetes"),
                         ", ".join("%s %s" % item for item in sorted(collections.items())))}
