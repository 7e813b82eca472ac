"""Every day-2 playbook on bad input (issue 49): its own settings, the run's -e and --limit, the files it names on the
controller and, where it reads one, what a real API server's Nodes say (kube_apiserver.py) are judged before the
first SSH contact, every problem of a run in one list naming the variable, host or file. Each run batches the cases
one list can show; every host is on a closed loopback port, so any contact would show as a failed SSH connection.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import textwrap
import time

import pytest

from conftest import ROOT, run
from kube_apiserver import BUNDLE_DIR, fixture_kube_api, free_port  # pylint: disable=unused-import  # its API server
from test_repair_playbooks import bolt_page

MERGE = "application/merge-patch+json"
INVENTORY = textwrap.dedent("""\
    all:
      vars:
        # Any connection attempt would hit a closed loopback port and fail via ssh.
        ansible_port: 1
        ansible_connection: ssh
      hosts:
        cp1: {ansible_host: 127.0.0.1}
        cp2: {ansible_host: 127.0.0.12}
        cp3: {ansible_host: 127.0.0.13}
        w1: {ansible_host: 127.0.0.21}
        w2: {ansible_host: 127.0.0.22}
      children:
        kube_control_plane: {hosts: {cp1: {}, cp2: {}, cp3: {}}}
        kube_node: {hosts: {w1: {}, w2: {}}}
        k8s_cluster: {children: {kube_control_plane: {}, kube_node: {}}}
    """)


def playbook(tmp_path, name, *extra, inventory=INVENTORY):
    (tmp_path / "hosts.yml").write_text(inventory)
    return run([str(ROOT / ".venv/bin/ansible-playbook"), "-i", str(tmp_path / "hosts.yml"),
                str(ROOT / "playbooks" / f"{name}.yml"), *extra])


def refused(result, *expected, count=None) -> str:
    """Non-zero, no host contacted, and every expected problem said (blanks as one)."""
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "via ssh" not in output and "UNREACHABLE" not in output, output
    assert "...ignoring" not in output, output
    flat = " ".join(output.split())
    if count is not None:
        assert f" {count} problem(s); nothing was changed on any host" in flat, output
    for problem in expected:
        assert " ".join(problem.split()) in flat, problem
    return flat


# Settings by type and range, misspelt names, words -e drops, and --limit where the playbook refuses it: one run each.
def test_upgrade_settings_and_limit(tmp_path):
    refused(playbook(tmp_path, "upgrade", "-e", "upgrade_drain_timeout=five", "-e", "upgrade_worker_batch=0",
                     "-e", "upgrade_min_certificate_hours=-1", "-e", "upgrade_drain_timout=60", "-e", "slipway_lb_prot=1",
                     "--limit", "w1"),
            "slipway_lb_prot: is not a setting of slipway.cluster; did you mean slipway_lb_port?",
            "upgrade_drain_timeout: 'five' is not a whole number; set a whole number from 1 to 86400",
            "upgrade_worker_batch: '0' is out of range; set a whole number from 1 to 100000",
            "upgrade_min_certificate_hours: '-1' is out of range; set a number from 0 to 87600",
            "upgrade_drain_timout: is not a setting of upgrade.yml; did you mean upgrade_drain_timeout?",
            "--limit: w1 leaves out cp1, cp2, cp3, w2: upgrade.yml upgrades the whole cluster", count=6)


def test_remove_node_settings_dropped_words_and_limit(tmp_path):
    refused(playbook(tmp_path, "remove_node", "-e", "remove_node_names=w1 w2", "-e", "remove_node_force=sure",
                     "-e", "remove_node_drain_timeout=-5", "-e", "remove_nodes_force=true", "--limit", "w1"),
            "remove_node_drain_timeout: '-5' is out of range",
            "remove_node_force: 'sure' is not a boolean; set true or false",
            "remove_nodes_force: is not a setting of remove_node.yml; did you mean remove_node_force?",
            "-e: Ansible read 'w2' as no variable",
            "separate a list with commas (-e remove_node_names=w1,w2)",
            "--limit: w1 leaves out cp1, cp2, cp3, w2: remove_node.yml takes the nodes to remove from remove_node_names",
            count=5)


def test_certs_backup_reset_scale_settings(tmp_path):
    refused(playbook(tmp_path, "certs", "-e", "certs_action=renw", "-e", "certs_warn_days=-3",
                     "-e", "certs_renew_before=tomorrow", "-e", "certs_renw_days=10"),
            "certs_action: unknown value 'renw'; set one of: check, renew (did you mean renew?)",
            "certs_warn_days: '-3' is out of range; set a whole number from 0 to 3650",
            "certs_renew_before: 'tomorrow' is not a time like 2027-01-31T00:00:00Z (UTC)",
            "certs_renw_days: is not a setting of certs.yml; did you mean certs_renew_days?", count=4)
    refused(playbook(tmp_path, "etcd_backup", "-e", "etcd_backup_keep=0", "-e", "etcd_backup_timer=daily",
                     "-e", "etcd_backup_kepe=3"),
            "etcd_backup_keep: '0' is out of range", "etcd_backup_timer: 'daily' is not a boolean",
            "etcd_backup_kepe: is not a setting of etcd_backup.yml; did you mean etcd_backup_keep?", count=3)
    refused(playbook(tmp_path, "reset", "-e", "reset_confirm=yess", "-e", "reset_in_cluster_ok=maybe"),
            "reset_confirm: 'yess' is not a boolean", "reset_in_cluster_ok: 'maybe' is not a boolean", count=2)
    refused(playbook(tmp_path, "scale", "-e", "scale_ready_timeout=1h", "-e", "scale_ready_timout=60"),
            "scale_ready_timeout: '1h' is not a whole number",
            "scale_ready_timout: is not a setting of scale.yml; did you mean scale_ready_timeout?", count=2)


def test_rotate_encryption_key_without_encryption_a_bad_name_and_limit(tmp_path):
    refused(playbook(tmp_path, "rotate_encryption_key", "-e", "slipway_secrets_encryption=false",
                     "-e", '{"rotate_encryption_key_name": "new key!"}', "--limit", "cp1"),
            "rotate_encryption_key_name: 'new key!' is not a key name",
            "slipway_secrets_encryption: is false: Secrets are not encrypted at rest, so there is no key to rotate",
            "--limit: cp1 leaves out cp2, cp3: every API server must hold the new key", count=3)


def write_snapshot(where, content, cluster="slipway", record=True):
    where.mkdir(parents=True, exist_ok=True)
    snapshot = where / f"etcd-{cluster}-20261201T000000Z.db"
    snapshot.write_bytes(content)
    if record:
        (where / (snapshot.name + ".json")).write_text(json.dumps({
            "cluster": cluster, "etcd_mode": "stacked", "ca_sha256": "c" * 64, "taken": "20261201T000000Z",
            "member": "cp1", "sha256": hashlib.sha256(content).hexdigest()}))
    return snapshot


def test_a_snapshot_is_checked_for_what_it_is_before_any_copy(tmp_path):
    backups = tmp_path / "backups"
    snapshot = write_snapshot(backups, b"etcd snapshot " * 4096)
    # Random bytes with a record that matches them, a setting out of range and --limit: one list.
    refused(playbook(tmp_path, "etcd_restore", "-e", f"etcd_snapshot={snapshot}", "-e", "etcd_restore_ready_timeout=0",
                     "--limit", "cp1"),
            f"etcd_snapshot: {snapshot} is not an etcd snapshot: it does not start with a bbolt meta page",
            "etcd_restore_ready_timeout: '0' is out of range",
            "--limit: cp1 leaves out cp2, cp3: a restore stops every API server", count=3)
    refused(playbook(tmp_path, "etcd_restore", "-e", f"etcd_snapshot={snapshot}.json"),
            f"etcd_snapshot: {snapshot}.json is the record of the snapshot {snapshot}, not the snapshot: give the snapshot "
            f"itself, -e etcd_snapshot={snapshot}", count=1)
    # recover_control_plane.yml: the same file checks, and a snapshot of external etcd, which it does not restore.
    external = INVENTORY.replace("    k8s_cluster:", "    etcd: {hosts: {cp1: {}, cp2: {}, w1: {}}}\n    k8s_cluster:")
    refused(playbook(tmp_path, "recover_control_plane", "-e", f"etcd_snapshot={backups}", "-e", "slipway_etcd_mode=external",
                     "--limit", "cp1", inventory=external),
            f"etcd_snapshot: {backups} is a directory, not a snapshot file: give one of its snapshots "
            f"({snapshot.name}, the newest last)",
            "etcd_snapshot: is set, but this cluster's etcd is external",
            "--limit: cp1 leaves out cp2, cp3, w1: recover_control_plane.yml counts a control plane that is not in its run "
            "as lost", count=3)


def test_the_bundles_etcdutl_reads_the_snapshot_on_the_controller(tmp_path):
    # A bbolt header over garbage: only etcdutl tells. The bundle's own etcdutl runs on the controller.
    assert (BUNDLE_DIR / "bin" / "etcdutl").is_file(), "run make bundle first: the test uses the bundle's etcdutl"
    snapshot = write_snapshot(tmp_path / "backups", bolt_page() + os.urandom(16384))
    refused(playbook(tmp_path, "etcd_restore", "-e", f"etcd_snapshot={snapshot}", "-e", "slipway_artifacts_source=bundle",
                     "-e", f"slipway_artifacts_bundle_dir={BUNDLE_DIR}"),
            f"etcd_snapshot: {snapshot} is not a snapshot etcdutl can read: etcdutl snapshot status says", count=1)


def test_a_real_snapshot_passes_and_members_that_do_not_answer_are_named_not_ignored(tmp_path):
    # A snapshot of a real etcd (the bundle's), through bbolt's header and the bundle's etcdutl; then the restore needs
    # every member and control plane, which do not answer here: each named once, with Ansible's reason, no "ignoring".
    etcd = subprocess.Popen([str(BUNDLE_DIR / "bin/etcd"), "--data-dir", str(tmp_path / "etcd"), "--log-level", "error",
                             "--listen-client-urls", f"http://127.0.0.1:{(client := free_port())}",
                             "--advertise-client-urls", f"http://127.0.0.1:{client}",
                             "--listen-peer-urls", f"http://127.0.0.1:{(peer := free_port())}",
                             "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
                             "--initial-cluster", f"default=http://127.0.0.1:{peer}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        saved = None
        for _attempt in range(50):
            saved = subprocess.run([str(BUNDLE_DIR / "bin/etcdctl"), "--endpoints", f"http://127.0.0.1:{client}",
                                    "snapshot", "save", str(tmp_path / "real.db")], capture_output=True, check=False)
            if saved.returncode == 0:
                break
            time.sleep(0.2)
        assert saved is not None and saved.returncode == 0, saved
    finally:
        etcd.terminate()
        etcd.wait(timeout=30)
    snapshot = write_snapshot(tmp_path / "backups", (tmp_path / "real.db").read_bytes())
    result = playbook(tmp_path, "etcd_restore", "-e", f"etcd_snapshot={snapshot}", "-e", "slipway_artifacts_source=bundle",
                      "-e", f"slipway_artifacts_bundle_dir={BUNDLE_DIR}", "-e", "preflight_connect_timeout=1")
    output = result.stdout + result.stderr
    flat = " ".join(output.split())
    assert result.returncode != 0, output
    assert "problem(s); nothing was changed on any host" not in flat.split("host(s) do not answer", maxsplit=1)[0], output
    assert "3 host(s) do not answer; nothing was changed on any host" in flat, output
    for host, address in (("cp1", "127.0.0.1"), ("cp2", "127.0.0.12"), ("cp3", "127.0.0.13")):
        assert (f"host {host}: is unreachable: Failed to connect to the host via ssh: ssh: connect to host {address} "
                "port 1: Connection refused; a restore stops and restores every etcd member and API server") in flat, output
    assert "...ignoring" not in output and "censored" not in output, output


def test_external_etcd_on_two_workers_names_the_workloads_beside_it(tmp_path):
    inventory = INVENTORY.replace("    k8s_cluster:", "    etcd: {hosts: {w1: {}, w2: {}}}\n    k8s_cluster:")
    (tmp_path / "hosts.yml").write_text(inventory)
    result = run([str(ROOT / ".venv/bin/ansible-playbook"), "-i", str(tmp_path / "hosts.yml"), str(ROOT / "site.yml"),
                  "-e", "slipway_etcd_mode=external"])
    refused(result, "group etcd: etcd has 2 members", "and 1 warning(s), which do not stop a run:",
            "group etcd: w1, w2 are also in kube_node: their etcd member runs beside the cluster's workloads", count=1)


# Against a real API server: its Node objects, compared with the request before any host is contacted.
class Cluster:
    """The API server's Nodes, as a running cluster's kubelets would have registered them."""

    def __init__(self, api):
        self.api = api

    def nodes(self, **nodes):
        """name=(version, ready, address, control plane) for each Node; every other Node is deleted."""
        for item in (self.api.request("get", "/api/v1/nodes") or {}).get("items", []):
            if item["metadata"]["name"] not in nodes:
                self.api.request("delete", f"/api/v1/nodes/{item['metadata']['name']}")
        for name, (version, ready, address) in nodes.items():
            labels = {"node-role.kubernetes.io/control-plane": ""} if name.startswith("cp") else {}
            if self.api.request("get", f"/api/v1/nodes/{name}") is None:
                self.api.request("post", "/api/v1/nodes", body={"apiVersion": "v1", "kind": "Node",
                                                                "metadata": {"name": name, "labels": labels}})
            else:
                self.api.request("patch", f"/api/v1/nodes/{name}", content_type=MERGE, body={"metadata": {"labels": {
                    "node-role.kubernetes.io/control-plane": "" if name.startswith("cp") else None}}})
            self.api.request("patch", f"/api/v1/nodes/{name}/status", content_type=MERGE, body={"status": {
                "addresses": [{"type": "InternalIP", "address": address}, {"type": "Hostname", "address": name}],
                "conditions": [{"type": "Ready", "status": "True" if ready else "False", "reason": "KubeletReady",
                                "message": "", "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                                "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                "nodeInfo": {"kubeletVersion": version, "machineID": "", "systemUUID": "", "bootID": "",
                             "kernelVersion": "", "osImage": "", "containerRuntimeVersion": "containerd://2.3.7",
                             "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64"}}})


@pytest.fixture(name="cluster", scope="module")
def fixture_cluster(kube_api):
    return Cluster(kube_api)


def api_run(tmp_path, kube_api, name, *extra, inventory=INVENTORY):
    port = kube_api.server.rsplit(":", 1)[1]
    return playbook(tmp_path, name, "-e", f"preflight_kubeconfig={kube_api.kubeconfig}", "-e", f"slipway_apiserver_port={port}",
                    *extra, inventory=inventory)


RUNNING = {"cp1": ("v1.36.5", True, "127.0.0.1"), "cp2": ("v1.36.5", True, "127.0.0.12"),
           "cp3": ("v1.36.5", True, "127.0.0.13"), "w1": ("v1.36.5", True, "127.0.0.21"),
           "w2": ("v1.36.5", True, "127.0.0.22")}


def test_upgrade_knows_from_the_api_before_any_etcd_read(tmp_path, kube_api, cluster):
    # cp2 runs newer than the target, w1 two minors behind (and so another start) and not Ready, w9 is not in the
    # inventory, w2 (in the inventory) is not in the cluster.
    cluster.nodes(cp1=RUNNING["cp1"], cp2=("v1.37.2", True, "127.0.0.12"), cp3=RUNNING["cp3"],
                  w1=("v1.35.9", False, "127.0.0.21"), w9=("v1.36.5", True, "127.0.0.29"))
    # cp3 registered without the control plane's label: the inventory's role is not the one it runs.
    kube_api.request("patch", "/api/v1/nodes/cp3", content_type=MERGE,
                     body={"metadata": {"labels": {"node-role.kubernetes.io/control-plane": None}}})
    flat = refused(api_run(tmp_path, kube_api, "upgrade", "-e", "slipway_kubernetes_version=1.37.1"),
                   "w2 is in the inventory but not in the cluster: add them with playbooks/scale.yml first",
                   "the cluster has w9, which the inventory lacks",
                   "node cp2 runs kubelet 1.37.2, kube-apiserver 1.37.2, kube-controller-manager 1.37.2, kube-scheduler "
                   "1.37.2, newer than the target 1.37.1: upgrade.yml does not downgrade",
                   "the nodes start from different versions (1.35.9 on w1; 1.36.5 on cp1, cp3, w9)",
                   "w1 runs 1.35.9: one minor version at a time, so upgrade to the newest 1.36 release first",
                   "w1 is not Ready",
                   "host cp3: the inventory makes it a control plane (kube_control_plane), but the cluster's Node cp3 is "
                   "a worker", count=7)
    assert "Read etcd's members" not in flat


def test_scale_refuses_another_version_and_a_replaced_machine(tmp_path, kube_api, cluster):
    # w2 is new; w1's machine was replaced (the inventory's address is not the Node's).
    cluster.nodes(cp1=RUNNING["cp1"], cp2=RUNNING["cp2"], cp3=RUNNING["cp3"], w1=("v1.36.5", True, "127.0.0.31"))
    refused(api_run(tmp_path, kube_api, "scale", "-e", "slipway_kubernetes_version=1.37.1"),
            "slipway_kubernetes_version is 1.37.1, the version new nodes join at, but the cluster runs cp1, cp2, cp3, w1 at "
            "1.36.5: w2 would join at another version than the cluster's; set slipway_kubernetes_version: 1.36.5",
            "host w1: the inventory gives it the address 127.0.0.21, but the cluster's Node w1 has 127.0.0.31: a machine "
            "replaced under an old node's name", count=2)
    # A new control plane listed first: its API server does not answer, and the message says what to do.
    first_new = INVENTORY.replace("cp1: {ansible_host: 127.0.0.1}", "cp0: {ansible_host: 127.0.0.9}\n    cp1: {ansible_host: 127.0.0.1}") \
        .replace("{cp1: {}, cp2: {}, cp3: {}}", "{cp0: {}, cp1: {}, cp2: {}, cp3: {}, cp4: {}}") \
        .replace("    w1:", "    cp4: {ansible_host: 127.0.0.14}\n    w1:", 1)
    refused(api_run(tmp_path, kube_api, "scale", "-e", "slipway_kubernetes_version=1.36.5", inventory=first_new),
            "The API server of cp0 (https://127.0.0.9:", "the first host of kube_control_plane) did not answer the controller",
            "if cp0 is a new control plane, list a running one first in kube_control_plane")


def test_remove_node_refuses_from_the_api_before_contact(tmp_path, kube_api, cluster):
    # w1's Node is at another address than the inventory's: the machine there would be reset.
    cluster.nodes(**{**RUNNING, "w1": ("v1.36.5", True, "127.0.0.31"), "w2": ("v1.36.5", False, "127.0.0.22")})
    flat = refused(api_run(tmp_path, kube_api, "remove_node", "-e", "remove_node_names=cp2,cp3,w1,w9"),
                   "remove_node_names: 'w9' is neither a node of the cluster nor a host of the inventory (nodes: cp1, cp2, "
                   "cp3, w1, w2); check the name",
                   "remove_node_names: removes 2 of the 3 control planes (cp2, cp3), and with them their etcd members: "
                   "etcd would keep 1 (cp1), fewer than its quorum of 2 today, and survive no failure",
                   "or set remove_node_etcd_shrink_ok: true if you mean it",
                   "remove_node_names: node(s) w2 not Ready",
                   "host w1: the inventory gives it the address 127.0.0.21, but the cluster's Node w1 has 127.0.0.31: "
                   "remove_node.yml would drain the Node and reset the machine at the inventory's address", count=4)
    assert "Read etcd's members" not in flat


def test_reset_with_limit_to_a_node_of_the_running_cluster(tmp_path, kube_api, cluster):
    cluster.nodes(**RUNNING)
    refused(api_run(tmp_path, kube_api, "reset", "-e", "reset_confirm=yes", "--limit", "w1"),
            "--limit w1 resets w1, a node of the running cluster (the API server lists them)",
            "playbooks/remove_node.yml -e remove_node_names=w1", "add -e reset_in_cluster_ok=true", count=1)
