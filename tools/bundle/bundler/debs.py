"""Debian packages for the images that need more than one static program.

`apt-get download` fetches a package (no install, no dependencies) from the configured Debian
mirror and `dpkg-deb -x` unpacks it into a private root; only the files an image needs are then
copied from that root. Both run as any user; the package lists must be current
(`apt-get update`).
"""

import glob
import os
import re
import shutil
import subprocess


class DebError(Exception):
    pass


def parse_policy(text):
    """{package: candidate version} from `apt-cache policy PKG...` output."""
    result = {}
    current = None
    for line in text.splitlines():
        header = re.match(r"^(\S+):$", line)
        if header:
            current = header.group(1)
            continue
        match = re.match(r"^\s+Candidate:\s+(\S+)", line)
        if match and current:
            result[current] = match.group(1)
    return result


def candidate_versions(packages, run=subprocess.run):
    proc = run(["apt-cache", "policy"] + list(packages), capture_output=True, text=True,
               env=dict(os.environ, LC_ALL="C"), check=False)
    if proc.returncode != 0:
        raise DebError("apt-cache policy failed: %s" % proc.stderr.strip())
    versions = parse_policy(proc.stdout)
    missing = [pkg for pkg in packages if versions.get(pkg) in (None, "(none)")]
    if missing:
        raise DebError("no installable version of %s in the package lists; run "
                       "`apt-get update` (Debian bookworm sources)" % ", ".join(missing))
    return {pkg: versions[pkg] for pkg in packages}


def fetch(packages, versions, cache_dir, run=subprocess.run, log=None):
    """Download each package at its version into cache_dir; reuse what is already there.
    Returns {package: path of the .deb}."""
    paths = {}
    for pkg in packages:
        version = versions[pkg]
        directory = os.path.join(cache_dir, pkg, version.replace(":", "%3a"))
        found = glob.glob(os.path.join(directory, "*.deb"))
        if not found:
            os.makedirs(directory, exist_ok=True)
            proc = run(["apt-get", "download", "%s=%s" % (pkg, version)], cwd=directory,
                       stdout=log, stderr=log, check=False)
            if proc.returncode != 0:
                raise DebError("apt-get download %s=%s failed (exit %d)"
                               % (pkg, version, proc.returncode))
            found = glob.glob(os.path.join(directory, "*.deb"))
            if len(found) != 1:
                raise DebError("apt-get download %s=%s left %d files in %s"
                               % (pkg, version, len(found), directory))
        paths[pkg] = found[0]
    return paths


def unpack(deb_paths, root, run=subprocess.run):
    """Unpack every .deb into a fresh ``root``."""
    if os.path.isdir(root):
        shutil.rmtree(root)
    os.makedirs(root)
    for pkg in sorted(deb_paths):
        proc = run(["dpkg-deb", "-x", deb_paths[pkg], root], capture_output=True, text=True,
                   check=False)
        if proc.returncode != 0:
            raise DebError("dpkg-deb -x %s failed: %s" % (deb_paths[pkg], proc.stderr.strip()))
    return root
