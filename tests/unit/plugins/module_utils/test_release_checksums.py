# Unit tests of the pinned release checksums: docs/bundle.md names every file a supported release lacks a sum of (and
# no other), and the release files are judged by the pinned sums alone, each problem naming the file and sums.
from __future__ import annotations

import pathlib
import re

import pytest

from ansible_collections.slipway.cluster.plugins.module_utils import _release_checksums as table_module
from ansible_collections.slipway.cluster.plugins.module_utils._artifacts import (
    KUBERNETES_RELEASES,
    RELEASE_ARCHES,
    from_bundle,
    from_release,
    inventory_checksums,
    release_files,
    release_problems,
)
from ansible_collections.slipway.cluster.plugins.module_utils._settings import SUPPORTED_KUBERNETES_MINORS

SUPPORTED = [f"{minor}.{patch}" for minor in SUPPORTED_KUBERNETES_MINORS for patch in range(KUBERNETES_RELEASES[minor] + 1)]


def missing_files(release: str) -> list[tuple[str, str]]:
    """The files of a release the table lacks a sum of, for either architecture."""
    return [(entry["file"], entry["version"]) for entry in release_files(release)
            if set(RELEASE_ARCHES) - set(table_module.CHECKSUMS.get(entry["file"], {}).get(entry["version"], {}))]


DOC = pathlib.Path(__file__).resolve().parents[4] / "docs" / "bundle.md"
KUBERNETES_FILES = ("kubeadm", "kubelet", "kubectl")
LABELS = {"cni_plugins": "the CNI plugins"}


def named_in(text: str, version: str) -> bool:
    """`version` written out, or inside a range `vX.Y.A to vX.Y.B` of the same minor."""
    if re.search(re.escape(version) + r"\b", text):
        return True
    major_minor, patch = version.rsplit(".", 1)
    return any(int(low) <= int(patch) <= int(high)
               for low, high in re.findall(re.escape(major_minor) + r"\.(\d+) to " + re.escape(major_minor) + r"\.(\d+)", text))


@pytest.mark.parametrize("release", SUPPORTED)
def test_every_file_a_supported_release_lacks_is_named_in_the_docs(release):
    """The table is written from upstream's published checksums only; those of the newest releases could not be read
    where it was last written, so a supported release may lack sums (it then installs from upstream or a mirror only
    with slipway_artifacts_release_checksums). docs/bundle.md's "It lacks ..." must name every such file, so that the
    gap is never silent: a release added to the support list without its sums, or a gap left out of the docs, fails."""
    text = " ".join(DOC.read_text(encoding="utf-8").split())
    lacks = text[text.index("It lacks "):].split(". ", 1)[0]
    unnamed = [f"{file} {version}" for file, version in missing_files(release)
               if not (named_in(lacks, version) and (file in KUBERNETES_FILES and "Kubernetes" in lacks
                                                     or LABELS.get(file, file) in lacks))]
    assert unnamed == [], f"Kubernetes {release}: docs/bundle.md does not say the table lacks {', '.join(unnamed)}"


def test_the_docs_name_no_gap_the_table_has_filled():
    """The other way round: every version the docs say the table lacks is one a supported release really lacks
    (else the docs are stale once its sums are added)."""
    text = " ".join(DOC.read_text(encoding="utf-8").split())
    lacks = text[text.index("It lacks "):].split(". ", 1)[0]
    named = set(re.findall(r"v\d+\.\d+\.\d+", lacks))
    for minor, low, high in re.findall(r"v(\d+\.\d+)\.(\d+) to v\1\.(\d+)", lacks):
        named |= {f"v{minor}.{patch}" for patch in range(int(low), int(high) + 1)}
    missing = {version for release in SUPPORTED for _file, version in missing_files(release)}
    assert named and named <= missing, f"docs/bundle.md says the table lacks {sorted(named - missing)}, which it has"


def test_a_release_file_is_one_of_eight_per_release():
    assert [entry["file"] for entry in release_files("1.37.1")] == [
        "kubeadm", "kubelet", "kubectl", "runc", "crictl", "cni_plugins", "containerd", "etcd"]
    assert release_files("1.30.0") == []


def test_the_table_holds_only_sha256_of_known_files_and_architectures_each_with_its_source():
    files = {entry["file"] for entry in release_files("1.37.1")}
    assert set(table_module.CHECKSUMS) <= files
    for file, versions in table_module.CHECKSUMS.items():
        for version, sums in versions.items():
            assert re.match(r"^v\d+\.\d+\.\d+$", version), (file, version)
            assert set(sums) <= set(RELEASE_ARCHES), (file, version)
            assert all(re.match(r"^[0-9a-f]{64}$", value) for value in sums.values()), (file, version)
            assert table_module.SOURCES.get(f"{file} {version}"), f"{file} {version} has no source"


A, B, T = "a" * 64, "b" * 64, "f" * 64


def full_table(release="1.36.3", value=A):
    """A table the test writes: every file of the release pinned for both architectures."""
    table: dict = {}
    for entry in release_files(release):
        table.setdefault(entry["file"], {})[entry["version"]] = {arch: value for arch in RELEASE_ARCHES}
    return table


class Server:
    """What a file server sends: the sha256 of each URL's content (default: the pinned A); URLs it lacks answer 404."""

    def __init__(self, sums=None, missing=()):
        self.sums, self.missing, self.asked = dict(sums or {}), set(missing), []

    def __call__(self, url):
        self.asked.append(url)
        if url in self.missing:
            return None, "HTTP 404 Not Found"
        return self.sums.get(url, A), None


def test_a_release_with_every_file_pinned_and_served_intact_has_no_problem():
    artifacts = from_release("1.36.3", "upstream", table=full_table())[0]
    server = Server()
    assert release_problems(artifacts, ["amd64"], server) == []
    # one read per file of the architecture, never a checksum file beside it
    assert len(server.asked) == 8 and all("/amd64/" in url or "amd64" in url for url in server.asked)
    assert not any(url.endswith((".sha256", ".sha256sum", "SHA256SUMS")) for url in server.asked)


def test_a_tampered_file_names_the_url_the_pinned_and_the_found_sum():
    artifacts = from_release("1.36.3", "mirror", mirror_url="https://files.example", table=full_table())[0]
    url = "https://files.example/dl.k8s.io/release/v1.36.3/bin/linux/arm64/kubelet"
    problems = release_problems(artifacts, ["amd64", "arm64"], Server({url: T}))
    assert [str(p) for p in problems] == [
        f"release file {url}: kubelet v1.36.3 (arm64): the collection pins sha256 {A}, the server sent a file with "
        f"sha256 {T}; it was installed on no host. The server does not serve what upstream released: replace the "
        "file with upstream's (docs/security.md)"]


def test_a_file_the_controller_cannot_read_is_a_problem_naming_it():
    artifacts = from_release("1.36.3", "upstream", table=full_table())[0]
    url = "https://dl.k8s.io/release/v1.36.3/bin/linux/amd64/kubectl"
    problems = release_problems(artifacts, ["amd64"], Server(missing=[url]))
    assert [p.where for p in problems] == [f"release file {url}"]
    assert "could not be read by the controller (HTTP 404 Not Found)" in str(problems[0])


def test_files_without_a_pinned_sum_are_listed_at_once_and_never_fetched():
    table = full_table()
    del table["containerd"]
    table["kubelet"]["v1.36.3"].pop("arm64")
    artifacts = from_release("1.36.3", "upstream", table=table)[0]
    server = Server()
    problems = release_problems(artifacts, ["amd64", "arm64"], server)
    assert [str(p) for p in problems] == [
        "slipway_artifacts_source: is upstream, but neither the collection nor slipway_artifacts_release_checksums "
        "pins a sha256 for kubelet v1.36.3 (arm64), containerd v2.3.7 (amd64, arm64): a release file is installed "
        "only when its content is what upstream published. Copy upstream's published sums into "
        "slipway_artifacts_release_checksums: python3 tools/release_checksums.py --published DIR --inventory "
        "--release 1.36.3 prints the entry to paste from the checksum files upstream publishes, saved under DIR "
        "(--fetch instead of --published DIR reads them from the official URLs; docs/bundle.md). Or set a release the "
        "collection pins, or use slipway_artifacts_source bundle"]
    # The release is refused whole: no file of it is read from the server.
    assert server.asked == []
    # Without a fetch (no node answered yet) the table alone is judged.
    assert release_problems(artifacts, [], None) == problems


def test_the_pinned_sum_decides_whatever_sum_the_server_publishes_beside_the_file():
    """The .sha256 file a mirror serves is not read: a server whose file and checksum file agree is still refused."""
    artifacts = from_release("1.36.3", "upstream", table=full_table(value=B))[0]
    problems = release_problems(artifacts, ["amd64"], Server())  # every file's sha256 is A, its own .sha256 would say A
    assert len(problems) == 8 and all(f"pins sha256 {B}, the server sent a file with sha256 {A}" in str(p) for p in problems)


def test_a_bundle_is_not_judged_by_the_release_table():
    manifest = {"format_version": 1, "kubernetes_version": "v1.37.1", "binaries": [], "images": []}
    artifacts = from_bundle(manifest, "/b", "1.37.1", lambda path: None)[0]
    assert release_problems(artifacts, ["amd64"], Server()) == []


# The inventory's sums (slipway_artifacts_release_checksums) for files the table lacks.

def _without(table, *files):
    return {file: versions for file, versions in table.items() if file not in files}


def test_the_inventory_pins_the_files_the_table_lacks_and_they_are_judged_like_the_tables():
    table = _without(full_table(), "kubelet", "containerd")
    given = {"kubelet": {"v1.36.3": {"amd64": B, "arm64": B}}, "containerd": {"v2.3.7": {"amd64": B.upper(), "arm64": B}}}
    pinned, problems = inventory_checksums(given, table)
    assert problems == [] and pinned["containerd"]["v2.3.7"]["amd64"] == B
    artifacts = from_release("1.36.3", "mirror", mirror_url="https://files.example", table=table, inventory=pinned)[0]
    kubelet = next(entry for entry in artifacts["binaries"] if entry["file"] == "kubelet")["files"]["amd64"]
    kubeadm = next(entry for entry in artifacts["binaries"] if entry["file"] == "kubeadm")["files"]["amd64"]
    assert (kubelet["sha256"], kubelet["pinned_by"]) == (B, "slipway_artifacts_release_checksums")
    assert (kubeadm["sha256"], kubeadm["pinned_by"]) == (A, "the collection")
    url = "https://files.example/dl.k8s.io/release/v1.36.3/bin/linux/amd64/kubelet"
    # The true file (B) is accepted; a changed one is refused, naming the setting that pinned it.
    intact = Server({url: B, artifacts["archives"]["containerd"]["files"]["amd64"]["url"]: B})
    assert release_problems(artifacts, ["amd64"], intact) == [] and url in intact.asked
    problems = release_problems(artifacts, ["amd64"], Server({url: T, artifacts["archives"]["containerd"]["files"]["amd64"]["url"]: B}))
    assert [str(p) for p in problems] == [
        f"release file {url}: kubelet v1.36.3 (amd64): slipway_artifacts_release_checksums pins sha256 {B}, the "
        f"server sent a file with sha256 {T}; it was installed on no host. The server does not serve what upstream "
        "released: replace the file with upstream's (docs/security.md), or correct slipway_artifacts_release_checksums "
        "if its sum was not copied from upstream's published checksum file"]


def test_a_file_neither_pins_is_still_refused_whole():
    table = _without(full_table(), "kubelet", "containerd")
    pinned = inventory_checksums({"kubelet": {"v1.36.3": {"amd64": B, "arm64": B}}}, table)[0]
    artifacts = from_release("1.36.3", "upstream", table=table, inventory=pinned)[0]
    server = Server()
    problems = release_problems(artifacts, ["amd64"], server)
    assert len(problems) == 1 and "pins a sha256 for containerd v2.3.7 (amd64, arm64):" in str(problems[0])
    assert server.asked == []


def test_the_table_wins_where_both_pin_a_file_and_a_disagreement_is_refused_naming_both():
    table = full_table()
    pinned, problems = inventory_checksums({"kubeadm": {"v1.36.3": {"amd64": A, "arm64": B}}}, table)
    assert [str(p) for p in problems] == [
        f"slipway_artifacts_release_checksums.kubeadm.v1.36.3.arm64: is sha256 {B}, but the collection pins {A} for "
        "kubeadm v1.36.3 (arm64), from upstream's published checksums; the collection's sum is the one used and the "
        "run is refused: remove the entry (the collection pins this file already) or check where its sum was copied "
        "from"]
    # An agreeing entry is harmless; the table's sum is the one every file is judged by.
    artifacts = from_release("1.36.3", "upstream", table=table, inventory=pinned)[0]
    assert {entry["files"]["arm64"]["pinned_by"] for entry in artifacts["binaries"]} == {"the collection"}
    assert {entry["files"]["arm64"]["sha256"] for entry in artifacts["binaries"]} == {A}


def test_every_problem_of_the_inventorys_sums_is_listed_at_once():
    given = {
        "kubelte": {"v1.36.3": {"amd64": A}},
        "kubeadm": {"1.36.3": {"amd64": A}, "v1.36.4": {"x86_64": A, "arm46": A, "arm64": "sha256:" + A}},
        "etcd": ["v3.6.8"],
        "crictl": {"v1.36.0": "abc"},
    }
    pinned, problems = inventory_checksums(given, {})
    assert pinned == {}
    assert [str(p) for p in problems] == [
        "slipway_artifacts_release_checksums: names file 'kubelte', which the collection installs none of (did you "
        "mean kubelet?); the files are kubeadm, kubelet, kubectl, runc, crictl, cni_plugins, containerd, etcd",
        "slipway_artifacts_release_checksums.kubeadm.1.36.3: '1.36.3' is not a release version; write it as the "
        "release names it, with its v (v1.36.3)",
        "slipway_artifacts_release_checksums.kubeadm.v1.36.4: names architecture 'x86_64' (did you mean amd64?); the "
        "release files' are amd64, arm64",
        "slipway_artifacts_release_checksums.kubeadm.v1.36.4: names architecture 'arm46' (did you mean arm64?); the "
        "release files' are amd64, arm64",
        "slipway_artifacts_release_checksums.kubeadm.v1.36.4.arm64: is not a sha256 (64 hexadecimal digits); copy it "
        "from the checksum file upstream publishes for the release",
        "slipway_artifacts_release_checksums.etcd: is not a mapping of version -> architecture -> sha256 (a mapping of "
        "file -> version -> architecture -> sha256, as python3 tools/release_checksums.py --published DIR --inventory "
        "prints it (docs/bundle.md))",
        "slipway_artifacts_release_checksums.crictl.v1.36.0: is not a mapping of architecture -> sha256 (a mapping of "
        "file -> version -> architecture -> sha256, as python3 tools/release_checksums.py --published DIR --inventory "
        "prints it (docs/bundle.md))",
    ]
    assert [str(p) for p in inventory_checksums("kubeadm", {})[1]] == [
        "slipway_artifacts_release_checksums: is str, not a mapping of file -> version -> architecture -> sha256, as "
        "python3 tools/release_checksums.py --published DIR --inventory prints it (docs/bundle.md)"]
    assert inventory_checksums({}, {}) == ({}, []) and inventory_checksums(None, {}) == ({}, [])
