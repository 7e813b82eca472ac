#!/usr/bin/env python
"""Write plugins/module_utils/_release_checksums.py: the sha256 of every release file slipway installs from
``slipway_artifacts_source`` upstream or mirror, per version and architecture, from the upstream releases' own
published checksums.

Sources, each optional and merged (two that disagree about a file stop the tool, naming both):

``--published DIR``
    Upstream's published checksum files, as the releases serve them, under DIR in kubespray's files_repo layout
    (the URL without its scheme): ``dl.k8s.io/release/vX/bin/linux/ARCH/kubeadm.sha256`` (and kubelet, kubectl),
    ``github.com/kubernetes-sigs/cri-tools/releases/download/vX/crictl-vX-linux-ARCH.tar.gz.sha256``,
    ``github.com/containernetworking/plugins/releases/download/vX/cni-plugins-linux-ARCH-vX.tgz.sha256``,
    ``github.com/etcd-io/etcd/releases/download/vX/SHA256SUMS``,
    ``github.com/containerd/containerd/releases/download/vX/containerd-X-linux-ARCH.tar.gz.sha256sum``,
    ``github.com/opencontainers/runc/releases/download/vX/runc.sha256sum``.
``--fetch``
    The same files read from the official URLs (a machine with internet access).
``--kubespray PATH``
    kubespray's ``roles/kubespray_defaults/vars/main/checksums.yml`` (the file, or a kubespray tree or ``git
    archive`` tarball holding it): kubespray generates it from the same published checksum files
    (its scripts/download_hash.py), so it is upstream's data for the releases it lists.

The sums already in the table are kept; a source that disagrees with one stops the tool. Nothing is ever computed
from a file: a sum is what upstream published for it. Without ``--release`` the tool covers every release the
collection supports (``KUBERNETES_RELEASES`` and their companions) and lists those no source had (exit 1, the table
still written with everything found).

``--inventory`` writes no table: it prints, as YAML to paste into the inventory, the
``slipway_artifacts_release_checksums`` entry of every file the sources have and the table lacks (a user's way to
install a release, from upstream or a mirror, whose sums the collection does not pin yet). Usage:

    python3 tools/release_checksums.py --kubespray kubespray-46dbdd399.tar.gz --published ~/sums
    python3 tools/release_checksums.py --fetch --release 1.37.3
    python3 tools/release_checksums.py --published ~/sums --inventory --release 1.36.5
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import sys
import tarfile
import urllib.request
from pathlib import Path
from typing import Any, Callable, Iterable

import yaml

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "plugins" / "module_utils" / "_release_checksums.py"
COLLECTIONS = ROOT / ".cache" / "collections"
if str(COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS))

from ansible_collections.slipway.cluster.plugins.module_utils import _artifacts as artifacts  # noqa: E402

HEX = re.compile(r"^[0-9a-f]{64}$")
# kubespray's variable for each file of the table.
KUBESPRAY_KEYS = {
    "kubeadm": "kubeadm_checksums", "kubelet": "kubelet_checksums", "kubectl": "kubectl_checksums",
    "crictl": "crictl_checksums", "cni_plugins": "cni_binary_checksums", "etcd": "etcd_binary_checksums",
    "containerd": "containerd_archive_checksums", "runc": "runc_checksums",
}
KUBESPRAY_FILE = "roles/kubespray_defaults/vars/main/checksums.yml"

Table = dict[str, dict[str, dict[str, str]]]


class Conflict(Exception):
    """Two sources name different sums for one file."""


def wanted(releases: Iterable[str]) -> list[tuple[str, str, str]]:
    """(file, version, arch) of every file the collection installs for these Kubernetes releases."""
    found = set()
    for release in releases:
        for entry in artifacts.release_files(release):
            for arch in artifacts.RELEASE_ARCHES:
                found.add((entry["file"], entry["version"], arch))
    return sorted(found)


def supported_releases() -> list[str]:
    return [f"{minor}.{patch}" for minor, newest in sorted(artifacts.KUBERNETES_RELEASES.items())
            for patch in range(newest + 1)]


def parse_sums(text: str, name: str) -> str | None:
    """The sum for ``name`` in a published checksum file: a bare sum (kubeadm.sha256), ``SUM  NAME`` lines
    (SHA256SUMS, runc.sha256sum, ``*NAME`` for binary mode) or one ``SUM NAME`` line (containerd's .sha256sum)."""
    lines = [line.split() for line in text.splitlines() if line.strip()]
    if len(lines) == 1 and len(lines[0]) == 1 and HEX.match(lines[0][0].lower()):
        return lines[0][0].lower()
    for fields in lines:
        if len(fields) >= 2 and HEX.match(fields[0].lower()) and fields[1].lstrip("*").split("/")[-1] == name:
            return fields[0].lower()
    return None


def from_published(read: Callable[[str], str | None], keys: list[tuple[str, str, str]]) -> tuple[Table, dict[str, str]]:
    """Sums read through ``read(url)`` (the text at a published checksum URL, or None) for each wanted file."""
    table: Table = {}
    sources = {}
    for file, version, arch in keys:
        url, sums_url = artifacts.release_file_urls(file, version, arch)
        text = read(sums_url)
        if text is None:
            continue
        found = parse_sums(text, url.rsplit("/", 1)[-1])
        if found is None:
            raise ValueError(f"{sums_url} has no sha256 for {url.rsplit('/', 1)[-1]}")
        table.setdefault(file, {}).setdefault(version, {})[arch] = found
        sources[f"{file} {version}"] = "published checksums (" + sums_url.split("/", 3)[2] + ")"
    return table, sources


def read_directory(directory: Path) -> Callable[[str], str | None]:
    def read(url: str) -> str | None:
        path = directory / url.split("://", 1)[1]
        return path.read_text(encoding="utf-8") if path.is_file() else None
    return read


def read_urls(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:  # nosec: the official release URLs
            return response.read().decode()
    except OSError:
        return None


def kubespray_data(path: Path) -> tuple[dict[str, Any], str]:
    """kubespray's checksums.yml from the file, a tree, or a tarball; and how to name it."""
    if path.is_dir():
        path = path / KUBESPRAY_FILE
    if tarfile.is_tarfile(path):
        with tarfile.open(path) as tar:
            member = next((m for m in tar.getmembers() if m.name.endswith(KUBESPRAY_FILE)), None)
            if member is None:
                raise ValueError(f"{path} has no {KUBESPRAY_FILE}")
            handle = tar.extractfile(member)
            assert handle is not None
            return yaml.safe_load(io.TextIOWrapper(handle, encoding="utf-8")), f"kubespray {path.name} {KUBESPRAY_FILE}"
    return yaml.safe_load(path.read_text(encoding="utf-8")), f"kubespray {KUBESPRAY_FILE}"


def from_kubespray(data: dict[str, Any], name: str, keys: list[tuple[str, str, str]]) -> tuple[Table, dict[str, str]]:
    table: Table = {}
    sources = {}
    for file, version, arch in keys:
        value = ((data.get(KUBESPRAY_KEYS[file]) or {}).get(arch) or {}).get(version.lstrip("v"))
        if not isinstance(value, str) or not value.startswith("sha256:") or not HEX.match(value[7:]):
            continue
        table.setdefault(file, {}).setdefault(version, {})[arch] = value[7:]
        sources[f"{file} {version}"] = name
    return table, sources


def merge(into: Table, sources: dict[str, str], found: Table, found_sources: dict[str, str]) -> None:
    for file, versions in found.items():
        for version, arches in versions.items():
            for arch, value in arches.items():
                have = into.get(file, {}).get(version, {}).get(arch)
                if have is not None and have != value:
                    raise Conflict(f"{file} {version} {arch}: {found_sources[f'{file} {version}']} says {value}, "
                                   f"{sources.get(f'{file} {version}', 'the table')} says {have}")
                into.setdefault(file, {}).setdefault(version, {})[arch] = value
                sources.setdefault(f"{file} {version}", found_sources[f"{file} {version}"])


def read_table(path: Path = TABLE) -> tuple[Table, dict[str, str]]:
    """The table as the module holds it (read without importing it)."""
    if not path.is_file():
        return {}, {}
    module = ast.parse(path.read_text(encoding="utf-8"))
    values = {}
    for node in module.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            values[node.target.id] = ast.literal_eval(node.value)
    return values.get("CHECKSUMS", {}), values.get("SOURCES", {})


HEADER = '''\
# Private to the slipway.cluster collection: no compatibility promise outside it.
"""The sha256 upstream published for every release file slipway installs from slipway_artifacts_source upstream or
mirror: CHECKSUMS[file][version][arch], file as _artifacts.release_files names it. SOURCES names where each
version's sums were read. Written by tools/release_checksums.py from the releases' published checksums: add a
release with it, never by hand, and never with a sum computed from a downloaded file.
"""

from __future__ import annotations

'''


def render(table: Table, sources: dict[str, str]) -> str:
    out = [HEADER, "CHECKSUMS: dict[str, dict[str, dict[str, str]]] = {\n"]
    for file in sorted(table):
        out.append(f"    {file!r}: {{\n")
        for version in sorted(table[file], key=_version_key):
            out.append(f"        {version!r}: {{\n")
            out.extend(f"            {arch!r}: {table[file][version][arch]!r},\n" for arch in sorted(table[file][version]))
            out.append("        },\n")
        out.append("    },\n")
    out.append("}\n\nSOURCES: dict[str, str] = {\n")
    for key in sorted(sources, key=lambda k: (k.split()[0], _version_key(k.split()[1]))):
        out.append(f"    {key!r}: {sources[key]!r},\n")
    out.append("}\n")
    return "".join(out)


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version))


def missing(table: Table, keys: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    return [(file, version, arch) for file, version, arch in keys if arch not in table.get(file, {}).get(version, {})]


INVENTORY_SETTING = "slipway_artifacts_release_checksums"


def render_inventory(found: Table, table: Table, releases: list[str]) -> str:
    """The inventory's entry for the sums found that the table lacks, as YAML to paste into group_vars/all."""
    lacking: Table = {}
    for file, versions in found.items():
        for version, arches in versions.items():
            for arch, value in arches.items():
                if arch not in table.get(file, {}).get(version, {}):
                    lacking.setdefault(file, {}).setdefault(version, {})[arch] = value
    head = (f"# upstream's published sha256 of the release files of Kubernetes {', '.join(releases)} the collection pins "
            "none for\n# (tools/release_checksums.py --inventory; docs/bundle.md)\n")
    if not lacking:
        return head + f"{INVENTORY_SETTING}: {{}}\n"
    return head + yaml.safe_dump({INVENTORY_SETTING: lacking}, default_flow_style=False, sort_keys=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--published", type=Path, help="a directory of upstream's published checksum files")
    parser.add_argument("--fetch", action="store_true", help="read the published checksum files from the official URLs")
    parser.add_argument("--kubespray", type=Path, help="kubespray's checksums.yml, tree or tarball")
    parser.add_argument("--release", action="append", help="a Kubernetes release (default: every supported one)")
    parser.add_argument("--inventory", action="store_true",
                        help=f"print the inventory's {INVENTORY_SETTING} for what the table lacks; write no table")
    parser.add_argument("--table", type=Path, default=TABLE, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    releases = args.release or supported_releases()
    keys = wanted(releases)
    table, sources = read_table(args.table)
    before = {file: {version: dict(arches) for version, arches in versions.items()} for file, versions in table.items()}
    try:
        if args.kubespray:
            merge(table, sources, *from_kubespray(*kubespray_data(args.kubespray), keys))
        if args.published:
            merge(table, sources, *from_published(read_directory(args.published), keys))
        if args.fetch:
            merge(table, sources, *from_published(read_urls, keys))
    except (Conflict, ValueError) as err:
        print(f"release_checksums: {err}; " + ("nothing was printed" if args.inventory else "the table was not changed"),
              file=sys.stderr)
        return 2
    if args.inventory:
        sys.stdout.write(render_inventory(table, before, releases))
    else:
        args.table.write_text(render(table, sources), encoding="utf-8")
    absent = missing(table, keys)
    for file, version, arch in absent:
        print(f"no published sha256 found for {file} {version} {arch}", file=sys.stderr)
    return 1 if absent else 0


if __name__ == "__main__":
    sys.exit(main())
