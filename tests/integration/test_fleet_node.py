"""roles/fleet's node tasks (playbooks/fleet.yml's play on the management cluster's nodes), run by ansible-playbook on
this machine: a node without the bundle at fleet_bundle_host_path is refused with what to do, before the controller's
pods would wait for it; a node with it passes."""

from __future__ import annotations

from pathlib import Path

from conftest import ROOT, run

PLAY = """---
- name: The fleet's node tasks on this machine
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Prepare the node
      ansible.builtin.import_role:
        name: slipway.cluster.fleet
        tasks_from: node
"""


def node_tasks(tmp_path: Path, tool, *extra: str):
    playbook = tmp_path / "node.yml"
    playbook.write_text(PLAY, encoding="utf-8")
    # No backup directory: it would be chowned to the image's user on this machine.
    return run([tool("ansible-playbook"), str(playbook), "-e", "fleet_backup_host_path=", *extra], cwd=ROOT)


def test_a_node_without_the_bundle_is_refused_with_what_to_do(tmp_path, tool):
    empty = tmp_path / "srv"
    empty.mkdir()
    result = node_tasks(tmp_path, tool, "-e", f"fleet_bundle_host_path={empty}")
    assert result.returncode == 2, result.stdout[-3000:]
    assert f"fleet_bundle_host_path: {empty} on localhost has no manifest.yml" in result.stdout
    assert "make lab-down" in result.stdout


def test_a_node_with_the_bundle_passes(tmp_path, tool):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "manifest.yml").write_text("format_version: 1\n", encoding="utf-8")
    result = node_tasks(tmp_path, tool, "-e", f"fleet_bundle_host_path={bundle}")
    assert result.returncode == 0, result.stdout[-3000:]
    assert "failed=0" in result.stdout


def test_a_claim_needs_no_directory_on_the_node(tmp_path, tool):
    result = node_tasks(tmp_path, tool, "-e", "fleet_bundle_host_path=/nonexistent", "-e", "fleet_bundle_claim=bundle")
    assert result.returncode == 0, result.stdout[-3000:]


def test_the_backups_get_a_directory_per_watched_namespace_for_the_jobs_group(tmp_path, tool):
    """<fleet_backup_host_path>/<namespace>/ per watched namespace: group 65532 (the Jobs'), set-group-ID, so that the
    directory the kubelet makes there for a cluster (a Job's subPath) is writable by the Jobs, and no other
    namespace's."""
    backups = tmp_path / "backups"
    # The later -e wins over node_tasks' empty fleet_backup_host_path.
    result = node_tasks(tmp_path, tool, "-e", f"fleet_backup_host_path={backups}",
                        "-e", '{"fleet_watch_namespaces": ["team-a", "team-b"]}')
    assert result.returncode == 0, result.stdout[-3000:]
    for namespace in ("team-a", "team-b"):
        info = (backups / namespace).stat()
        assert (info.st_uid, info.st_gid, info.st_mode & 0o7777) == (0, 65532, 0o2770), (namespace, oct(info.st_mode))
    assert (backups.stat().st_uid, backups.stat().st_mode & 0o777) == (65532, 0o750)
