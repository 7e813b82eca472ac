"""site.yml with release files from a mirror (issue 44): a mirror on loopback that serves a changed kubelet with a
matching kubelet.sha256 stops the run on the controller before any host is changed, naming the file, the sha256 the
collection pins and the one found; the same when the collection pins nothing of the release and the inventory's
slipway_artifacts_release_checksums does, and upstream's kubelet then passes; an http:// mirror is refused before any
connection unless the inventory accepts the risk by name.

The pinned sums of the run are a table the test writes, in a copy of the collection (every file linked to the
checkout's but plugins/module_utils/_release_checksums.py), so the collection's own table is neither read nor
changed. The hosts are this machine through the local connection, each with an address it does not have: the read
of the facts is read-only, the host checks stop the run in any case, and it runs with --check besides.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import re
import sys
import textwrap
import threading

import pytest
import yaml

from conftest import ROOT, VENV_BIN, run
from test_preflight_playbook import site, stopped_before_contact

sys.path.insert(0, str(ROOT / ".cache" / "collections"))

from ansible_collections.slipway.cluster.plugins.module_utils._artifacts import (  # noqa: E402
    RELEASE_ARCHES,
    from_release,
    release_files,
)

RELEASE = "1.36.3"


def _collection_copy(tmp_path, table):
    """ansible_collections/slipway/cluster under tmp_path: links to the checkout's files, and its own table."""
    copy = tmp_path / "collections" / "ansible_collections" / "slipway" / "cluster"
    copy.mkdir(parents=True)
    for entry in ROOT.iterdir():
        if entry.name not in ("plugins", ".cache", ".venv", ".git", "bundle"):
            (copy / entry.name).symlink_to(entry)
    for entry in (ROOT / "plugins").iterdir():
        if entry.name != "module_utils":
            (copy / "plugins" / entry.name).parent.mkdir(exist_ok=True)
            (copy / "plugins" / entry.name).symlink_to(entry)
    module_utils = copy / "plugins" / "module_utils"
    module_utils.mkdir()
    for entry in (ROOT / "plugins" / "module_utils").iterdir():
        if entry.name not in ("_release_checksums.py", "__pycache__"):
            (module_utils / entry.name).symlink_to(entry)
    (module_utils / "_release_checksums.py").write_text(
        f"from __future__ import annotations\n\nCHECKSUMS = {table!r}\n\nSOURCES = {{}}\n")
    return copy


@pytest.fixture(name="tampered_mirror")
def fixture_tampered_mirror(tmp_path):
    """A mirror (files_repo layout, on loopback) with every amd64 file of the release, the kubelet changed and its
    kubelet.sha256 the changed file's; and the table that pins upstream's (here: the unchanged files') sums."""
    root = tmp_path / "mirror"
    base = "http://127.0.0.1:{port}"
    listed = from_release(RELEASE, "mirror", mirror_url="http://mirror.invalid")[0]
    entries = [*listed["binaries"], *listed["archives"].values()]
    table: dict = {}
    for entry in entries:
        content = f"upstream's {entry['file']} {entry['version']}\n".encode()
        table.setdefault(entry["file"], {})[entry["version"]] = {
            arch: hashlib.sha256(content if arch == "amd64" else content + arch.encode()).hexdigest()
            for arch in RELEASE_ARCHES}
        url = entry["files"]["amd64"]["url"].replace("http://mirror.invalid/", "")
        path = root / url
        path.parent.mkdir(parents=True, exist_ok=True)
        if entry["file"] == "kubelet":
            content = b"#!/bin/sh\n# not upstream's kubelet\n"
        path.write_bytes(content)
        # What a mirror whose owner changed the file also changes: the checksum file beside it.
        (path.parent / (path.name + ".sha256")).write_text(hashlib.sha256(content).hexdigest() + "\n")
    assert len(entries) == len(release_files(RELEASE)) == 8
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield base.format(port=server.server_address[1]), table, root
    server.shutdown()
    server.server_close()


def _inventory(tmp_path, mirror):
    """The inventory of the run: two hosts, the release from the mirror."""
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(textwrap.dedent(f"""\
        all:
          vars:
            ansible_connection: local
            ansible_python_interpreter: {VENV_BIN / "python"}
            slipway_kubernetes_version: "{RELEASE}"
            slipway_artifacts_source: mirror
            slipway_artifacts_mirror_url: "{mirror}"
            slipway_artifacts_mirror_insecure_http: true
          hosts:
            cp1: {{ansible_host: 127.0.0.1, ip: 192.0.2.51}}
            w1: {{ansible_host: 127.0.0.1, ip: 192.0.2.52}}
          children:
            kube_control_plane: {{hosts: {{cp1: {{}}}}}}
            kube_node: {{hosts: {{w1: {{}}}}}}
            k8s_cluster: {{children: {{kube_control_plane: {{}}, kube_node: {{}}}}}}
        """))
    return inventory


def _site(tmp_path, tool, copy, inventory):
    env = {"ANSIBLE_COLLECTIONS_PATH": str(tmp_path / "collections"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    result = run([tool("ansible-playbook"), "--check", "-i", str(inventory), str(copy / "site.yml")], env=env)
    return result.returncode, result.stdout + result.stderr


def _remembered(tmp_path):
    """The release files the controller found intact (url sha256 per line of the record)."""
    with open(tmp_path / "cache" / "slipway" / "release-files.json", encoding="utf-8") as handle:
        return handle.read()


def test_a_changed_file_with_a_matching_checksum_file_stops_the_run_before_any_host_changes(
        tmp_path, tool, tampered_mirror):
    mirror, table = tampered_mirror[:2]
    copy = _collection_copy(tmp_path, table)
    returncode, output = _site(tmp_path, tool, copy, _inventory(tmp_path, mirror))
    assert returncode != 0, output
    assert "The hosts have" in output and "nothing was changed on any host" in output, output
    kubelet = f"{mirror}/dl.k8s.io/release/v{RELEASE}/bin/linux/amd64/kubelet"
    changed = hashlib.sha256(b"#!/bin/sh\n# not upstream's kubelet\n").hexdigest()
    assert (f"release file {kubelet}: kubelet v{RELEASE} (amd64): the collection pins sha256 "
            f"{table['kubelet']['v' + RELEASE]['amd64']}, the server sent a file with sha256 {changed}; it was "
            "installed on no host") in output, output
    # Only the changed file is named: the other seven are upstream's, and no arm64 file is read (no arm64 node).
    assert set(re.findall(r"release file (\S+):", output)) == {kubelet}, output
    assert "Prepare the operating system" not in output
    # The intact files are remembered, the changed one is not.
    remembered = _remembered(tmp_path)
    assert "/kubeadm " in remembered and "/kubelet " not in remembered


def test_a_release_the_collection_does_not_pin_is_judged_by_the_inventorys_sums(tmp_path, tool, tampered_mirror):
    """The collection's table has nothing of the release; the inventory's slipway_artifacts_release_checksums pins
    upstream's sums: the changed kubelet (with its matching kubelet.sha256) is still refused before any host changes,
    and once the mirror serves upstream's kubelet every file passes the preflight's check."""
    mirror, table, root = tampered_mirror
    copy = _collection_copy(tmp_path, {})
    inventory = _inventory(tmp_path, mirror)
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "all.yml").write_text(yaml.safe_dump({"slipway_artifacts_release_checksums": table}))
    kubelet = f"{mirror}/dl.k8s.io/release/v{RELEASE}/bin/linux/amd64/kubelet"
    changed = hashlib.sha256(b"#!/bin/sh\n# not upstream's kubelet\n").hexdigest()
    returncode, output = _site(tmp_path, tool, copy, inventory)
    assert returncode != 0, output
    assert "The hosts have" in output and "nothing was changed on any host" in output, output
    assert (f"release file {kubelet}: kubelet v{RELEASE} (amd64): slipway_artifacts_release_checksums pins sha256 "
            f"{table['kubelet']['v' + RELEASE]['amd64']}, the server sent a file with sha256 {changed}; it was "
            "installed on no host") in output, output
    assert set(re.findall(r"release file (\S+):", output)) == {kubelet}, output
    assert "Prepare the operating system" not in output
    assert "/kubelet " not in _remembered(tmp_path)
    # The mirror now serves upstream's kubelet (its .sha256 left as it was: it is never read).
    (root / kubelet.split("/", 3)[3]).write_bytes(f"upstream's kubelet v{RELEASE}\n".encode())
    returncode, output = _site(tmp_path, tool, copy, inventory)
    # The hosts' addresses still stop the run (the hosts are this machine), but no release file is a problem.
    assert returncode != 0 and "The hosts have" in output, output
    assert "release file" not in output and "pins a sha256" not in output, output
    assert f"{kubelet} {table['kubelet']['v' + RELEASE]['amd64']}" in _remembered(tmp_path)


def test_an_http_mirror_is_refused_before_any_connection(tmp_path, tool):
    mirror = ["-e", "slipway_artifacts_source=mirror", "-e", "slipway_artifacts_mirror_url=http://192.0.2.80/files"]
    output = stopped_before_contact(site(tmp_path, tool, *mirror))
    assert "The inventory has 1 problem(s)" in output, output
    assert ("slipway_artifacts_mirror_url: 'http://192.0.2.80/files' is plain http://: anyone on the network between "
            "the mirror and the controller or the nodes can read what they download and send other files in its place"
            ) in output
    assert "slipway_artifacts_mirror_insecure_http: true" in output
