"""etcd_restore.yml refuses a missing, unrecorded, damaged or another cluster's snapshot on the controller, in the
model's list, before any host is contacted (the lifecycle scenario checks the refusals on a real cluster)."""

from __future__ import annotations

import hashlib
import json
import struct
import textwrap

import pytest

from conftest import ROOT, run

INVENTORY = textwrap.dedent("""\
    all:
      vars:
        # Any connection attempt would hit a closed loopback port and show as UNREACHABLE.
        ansible_port: 1
        ansible_connection: ssh
        slipway_cluster_name: repairlab
      hosts:
        cp1: {ansible_host: 127.0.0.21}
        w1: {ansible_host: 127.0.0.22}
      children:
        kube_control_plane: {hosts: {cp1: {}}}
        etcd: {hosts: {cp1: {}}}
        kube_node: {hosts: {w1: {}}}
        k8s_cluster: {children: {kube_control_plane: {}, kube_node: {}}}
    """)


def bolt_page(size: int = 4096) -> bytes:
    """The first page of an etcd database (bbolt): a meta page with bbolt's magic and version 2."""
    page = bytearray(size)
    struct.pack_into("<QHHI", page, 0, 0, 0x04, 0, 0)
    struct.pack_into("<II", page, 16, 0xED0CDAED, 2)
    return bytes(page)


def _snapshot(tmp_path, record=True, damage=False, cluster="repairlab"):
    snapshot = tmp_path / "backups" / f"etcd-{cluster}-20261125T101500Z.db"
    snapshot.parent.mkdir()
    content = bolt_page() + b"etcd snapshot " * 4096
    snapshot.write_bytes(content)
    if record:
        (tmp_path / "backups" / (snapshot.name + ".json")).write_text(json.dumps({
            "cluster": cluster, "etcd_mode": "stacked", "ca_sha256": "c" * 64,
            "sha256": hashlib.sha256(content).hexdigest(), "taken": "20261125T101500Z", "member": "cp1"}))
    if damage:
        snapshot.write_bytes(b"X" + content[1:])
    return snapshot


@pytest.mark.parametrize("case, message", [
    ("damaged", "is damaged: its sha256 is"),
    ("unrecorded", ".db.json, the snapshot's record (its sha256 and the cluster it was taken from), is missing"),
    ("other", "is a snapshot of cluster 'elsewhere', not of 'repairlab'"),
    ("missing", "does not exist on the controller"),
])
def test_a_bad_snapshot_is_refused_before_any_host_is_contacted(tmp_path, tool, case, message):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(INVENTORY)
    if case == "missing":
        snapshot = tmp_path / "backups" / "etcd-repairlab-20261125T101500Z.db"
    else:
        snapshot = _snapshot(tmp_path, record=case != "unrecorded", damage=case == "damaged",
                             cluster="elsewhere" if case == "other" else "repairlab")
    result = run([tool("ansible-playbook"), "-i", str(inventory), str(ROOT / "playbooks/etcd_restore.yml"), "-e", f"etcd_snapshot={snapshot}"])
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "The run has 1 problem(s); nothing was changed on any host" in output, output
    assert message in output, output
    assert "UNREACHABLE" not in output


@pytest.fixture(name="in_checkout")
def fixture_in_checkout(tmp_path):
    """A directory inside the checkout (ignored by git), so paths to it can be written relative to the root."""
    import shutil
    import uuid

    where = ROOT / ".cache" / "test-relative-paths" / uuid.uuid4().hex[:12]
    where.mkdir(parents=True)
    yield where
    shutil.rmtree(where, ignore_errors=True)


def test_a_snapshot_path_relative_to_where_ansible_playbook_runs_is_found(in_checkout, tool):
    # docs/operations.md's form, typed at the repository's root: -e etcd_snapshot=inventories/.../backups/FILE.
    # A delegated stat reads a relative path against playbooks/, so before the fix the snapshot "did not exist".
    (in_checkout / "hosts.yml").write_text(INVENTORY)
    snapshot = _snapshot(in_checkout, damage=True)
    relative = snapshot.relative_to(ROOT)
    inventory = (in_checkout / "hosts.yml").relative_to(ROOT)
    result = run([tool("ansible-playbook"), "-i", str(inventory), "playbooks/etcd_restore.yml", "-e", f"etcd_snapshot={relative}"],
                 cwd=ROOT)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "does not exist on the controller" not in output, output
    assert f"{snapshot} is damaged: its sha256 is" in output, output
    assert "UNREACHABLE" not in output


def test_a_missing_relative_snapshot_is_named_as_resolved(in_checkout, tool):
    (in_checkout / "hosts.yml").write_text(INVENTORY)
    missing = in_checkout / "backups" / "etcd-repairlab-20261125T101500Z.db"
    result = run([tool("ansible-playbook"), "-i", str((in_checkout / "hosts.yml").relative_to(ROOT)), "playbooks/etcd_restore.yml",
                  "-e", f"etcd_snapshot={missing.relative_to(ROOT)}"], cwd=ROOT)
    output = result.stdout + result.stderr
    assert f"{missing} does not exist on the controller" in output, output
    assert "relative path is read from the directory ansible-playbook runs in" in output, output


def test_an_inventory_directory_with_its_backups_and_artifacts_beside_it(in_checkout, tool):
    # The lifecycle scenario's form: -i the inventory's directory, which holds backups/ (etcd_backup.yml's snapshots,
    # binary) and artifacts/ (site.yml's admin kubeconfig). They are no inventories: Ansible must not make hosts of them.
    inventory = in_checkout / "inventory"
    inventory.mkdir()
    (inventory / "hosts.yml").write_text(INVENTORY)
    snapshot = _snapshot(inventory, damage=True)
    snapshot.write_bytes(b"\x00\x00\x11\x00\x00\x00?\x03\x00\x00\n\x08_\x00 x\n" + snapshot.read_bytes()[16:])
    (inventory / "backups" / (snapshot.name + ".sha256")).write_text(f"{'a' * 64}  {snapshot.name}\n")
    (inventory / "artifacts").mkdir()
    (inventory / "artifacts" / "admin.conf").write_text("apiVersion: v1\nkind: Config\nclusters: []\n")
    result = run([tool("ansible-playbook"), "-i", str(inventory.relative_to(ROOT)), "playbooks/etcd_restore.yml",
                  "-e", f"etcd_snapshot={snapshot.relative_to(ROOT)}"], cwd=ROOT)
    output = result.stdout + result.stderr
    assert f"{snapshot} is damaged: its sha256 is" in output, output
    assert "is in no group the cluster uses" not in output, output
    assert "bytes of a file in the inventory's directory" not in output, output
