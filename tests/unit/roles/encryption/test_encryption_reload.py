# The encryption role's reading of a running API server for the encryption configuration: the probe
# apiserver_state.yml runs on a control plane (files/apiserver_probe.py, through vars/main.yml), run here for real
# against a stand-in kube-apiserver process
# (in a PID namespace of its own, so the machine's other API servers stay out of sight) and a stand-in kubectl
# that serves /metrics; and the decisions read from its output: which API servers do not encrypt with the file as
# last written, and which a key rotation must restart because they do not reload it themselves.
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess

import pytest

from ansible.parsing.dataloader import DataLoader
from ansible_collections.slipway.cluster.tests.unit.roles.templating import Templar, role_variables, trust_as_template

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", "..", ".."))
ROLE = os.path.join(ROOT, "roles", "encryption")
CONTROL_PLANE = os.path.join(ROOT, "roles", "control_plane")
CONFIG = "/etc/kubernetes/encryption/config.yaml"
SERVER = "https://10.88.0.11:6443"
METRIC = ('apiserver_encryption_config_controller_last_config_info{apiserver_id_hash="sha256:14f9d63e669337ac6bfda2e2'
          '162915ee6a6067743eddd4e5c374b572f951ff37",hash="%s"} 1')
VARIABLES = role_variables(ROLE)
PROBE_FILE = os.path.join(ROLE, "files", "apiserver_probe.py")
with open(PROBE_FILE, encoding="utf-8") as _handle:
    PROBE = _handle.read()


def render(expression: str, variables: dict | None = None, **extra):
    templar = Templar(loader=DataLoader(), variables={**(VARIABLES if variables is None else variables), **extra})
    return json.loads(json.dumps(templar.template(trust_as_template("{{ %s }}" % expression))))


def sha256(path) -> str:
    with open(path, "rb") as handle:
        return "sha256:" + hashlib.sha256(handle.read()).hexdigest()


def run_probe(tmp_path, flags, metrics=None, kubectl_fails=False) -> dict:
    """The probe against a process named kube-apiserver running with `flags`, alone in a PID namespace."""
    config = tmp_path / "config.yaml"
    config.write_text("kind: EncryptionConfiguration\napiVersion: apiserver.config.k8s.io/v1\nresources: []\n")
    fake = tmp_path / "kube-apiserver"
    shutil.copy("/bin/bash", fake)
    kubectl = tmp_path / "kubectl"
    calls = tmp_path / "kubectl-calls"
    body = "exit 1" if kubectl_fails else "cat %s" % (tmp_path / "metrics")
    kubectl.write_text('#!/bin/sh\necho "$@" >> %s\n%s\n' % (calls, body))
    kubectl.chmod(0o755)
    (tmp_path / "metrics").write_text("# TYPE x gauge\nx 1\n%s\nother_total 3\n"
                                      % (METRIC % (metrics or "")) if metrics else "x 1\n")
    probe = PROBE
    script = (
        '"$1" -c "sleep 60; :" apiserver %s &\n'
        'until grep -qx kube-apiserver /proc/[0-9]*/comm 2>/dev/null; do sleep 0.05; done\n'
        'python3 -c "$2" "$3" "$4" "$5"\n'
        'kill $!\n' % " ".join("--%s=%s" % item for item in flags.items()))
    result = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", script, "probe", str(fake), probe,
         str(config), str(kubectl), SERVER],
        capture_output=True, text=True, timeout=60, check=True)
    out = json.loads(result.stdout)
    out["_config_sha256"] = sha256(config)
    out["_kubectl_calls"] = calls.read_text().splitlines() if calls.exists() else []
    return out


RELOADING = {"encryption-provider-config": CONFIG, "encryption-provider-config-automatic-reload": "true"}


def test_probe_reads_the_loaded_configuration_from_the_api_servers_own_metrics(tmp_path):
    config_hash = "sha256:" + hashlib.sha256(
        b"kind: EncryptionConfiguration\napiVersion: apiserver.config.k8s.io/v1\nresources: []\n").hexdigest()
    out = run_probe(tmp_path, RELOADING, metrics=config_hash)
    assert out["flags"]["encryption-provider-config"] == CONFIG
    assert out["reloads"] is True
    assert out["config_hash"] == out["_config_sha256"] == config_hash
    assert out["loaded_hash"] == config_hash
    assert out["started"] > 0 and out["config_written"] > 0
    # Its own API server, never the load-balanced endpoint admin.conf names.
    assert out["_kubectl_calls"] == [
        "--kubeconfig /etc/kubernetes/admin.conf --server %s --request-timeout 10s get --raw /metrics" % SERVER]


def test_probe_reports_an_older_file_loaded(tmp_path):
    out = run_probe(tmp_path, RELOADING, metrics="sha256:" + "0" * 64)
    assert out["loaded_hash"] == "sha256:" + "0" * 64 != out["config_hash"]


def test_probe_reports_nothing_loaded_when_the_api_server_does_not_answer(tmp_path):
    out = run_probe(tmp_path, RELOADING, kubectl_fails=True)
    assert out["reloads"] is True and out["loaded_hash"] is None


def test_probe_asks_no_metrics_of_an_api_server_that_does_not_reload(tmp_path):
    out = run_probe(tmp_path, {"encryption-provider-config": CONFIG})
    assert out["reloads"] is False and "loaded_hash" not in out
    assert out["_kubectl_calls"] == []


def state(**fields) -> dict:
    return {"__encryption_apiserver_state": {"stdout": json.dumps(fields)}}


def hosts(**states) -> dict:
    hostvars = {name: {**value, "inventory_hostname": name} for name, value in states.items()}
    return {"hostvars": hostvars, "slipway_cluster": {"control_planes": list(states)},
            "ansible_play_hosts_all": list(states)}


def test_not_encrypting_follows_the_loaded_file_when_the_api_server_reloads_it():
    flags = {"encryption-provider-config": CONFIG, "encryption-provider-config-automatic-reload": "true"}
    found = render("_encryption_apiservers_not_encrypting", **hosts(
        # Loaded the file as written: encrypting, however long ago it started.
        cp1=state(flags=flags, reloads=True, started=100, config_written=200, config_hash="sha256:a", loaded_hash="sha256:a"),
        # Started after the write but still on the file before it: not yet.
        cp2=state(flags=flags, reloads=True, started=300, config_written=200, config_hash="sha256:b", loaded_hash="sha256:a"),
        # Did not answer its /metrics.
        cp3=state(flags=flags, reloads=True, started=300, config_written=200, config_hash="sha256:a", loaded_hash=None)))
    assert found == ["cp2", "cp3"]


def test_not_encrypting_follows_the_start_time_when_the_api_server_does_not_reload():
    flags = {"encryption-provider-config": CONFIG}
    found = render("_encryption_apiservers_not_encrypting", **hosts(
        cp1=state(flags=flags, reloads=False, started=300, config_written=200, config_hash="sha256:a"),
        cp2=state(flags=flags, reloads=False, started=100, config_written=200, config_hash="sha256:a"),
        cp3=state(flags={}, reloads=False, started=300, config_written=200),
        cp4={}))
    assert found == ["cp2", "cp3", "cp4"]


def test_a_rotation_restarts_only_the_api_servers_that_do_not_reload():
    flags = {"encryption-provider-config": CONFIG, "encryption-provider-config-automatic-reload": "true"}
    found = render("_encryption_rotation_restarted", **hosts(
        cp1=state(flags=flags, reloads=True), cp2=state(flags={"encryption-provider-config": CONFIG}, reloads=False)))
    assert found == ["cp2"]


@pytest.mark.parametrize("encryption", [True, False])
def test_the_api_server_reloads_the_encryption_configuration_when_there_is_one(encryption):
    apiserver = render("_encryption_apiserver", slipway_cluster={"secrets_encryption": encryption})
    assert (apiserver["args"].get("encryption-provider-config-automatic-reload") == "true") is encryption
    assert (apiserver["args"].get("encryption-provider-config") == CONFIG) is encryption
    assert [volume["hostPath"] for volume in apiserver["volumes"]] == (["/etc/kubernetes/encryption"] if encryption else [])


@pytest.mark.parametrize("encryption", [True, False])
def test_the_control_plane_gives_its_api_server_what_the_encryption_role_sets(encryption):
    # encryption_apiserver, the encryption role's public fact (tasks/main.yml), is what kubeadm's configuration gets.
    apiserver = render("_encryption_apiserver", slipway_cluster={"secrets_encryption": encryption})
    control_plane = {**role_variables(CONTROL_PLANE), "encryption_apiserver": apiserver, "_control_plane_hardened": False}
    args = render("_control_plane_apiserver_args", control_plane)
    volumes = render("_control_plane_apiserver_volumes", control_plane)
    assert {name: args[name] for name in apiserver["args"]} == apiserver["args"]
    assert ("encryption-provider-config" in args) is encryption
    assert volumes == apiserver["volumes"]


def test_the_probe_asks_this_nodes_own_api_server():
    argv = render("_encryption_apiserver_probe_argv", inventory_hostname="cp2", ansible_search_path=[ROLE],
                  slipway_cluster={"nodes": {"cp1": {"api_url": "https://10.88.0.11:6443"},
                                             "cp2": {"api_url": "https://10.88.0.12:6443"}}})
    assert argv[:2] == ["python3", "-c"] and argv[2] == PROBE.rstrip("\n")  # the file lookup drops the last newline
    assert argv[3:] == [CONFIG, VARIABLES["encryption_kubectl_bin"], "https://10.88.0.12:6443"]


# The probe's parts, on a /proc of files: the process it finds and the metric it reads.
def load_probe():
    # The role's file, imported through the collection as ansible-test units has it (any file of it is importable).
    from ansible_collections.slipway.cluster.roles.encryption.files import apiserver_probe  # pylint: disable=import-outside-toplevel

    return apiserver_probe


def test_the_probe_finds_the_kube_apiserver_process_and_its_flags(tmp_path):
    probe = load_probe()
    (tmp_path / "stat").write_text("cpu 1 2 3\nbtime 1700000000\n")
    for pid, comm in (("7", "etcd"), ("42", "kube-apiserver")):
        (tmp_path / pid).mkdir()
        (tmp_path / pid / "comm").write_text(comm + "\n")
        (tmp_path / pid / "cmdline").write_bytes(b"kube-apiserver\0--secure-port=6443\0--encryption-provider-config=/x\0")
        (tmp_path / pid / "stat").write_text("42 (kube apiserver) S " + " ".join(["0"] * 18) + " 500 0 0\n")
    (tmp_path / "self").mkdir()
    found = probe.apiserver(str(tmp_path))
    assert found["flags"] == {"secure-port": "6443", "encryption-provider-config": "/x"}
    assert found["started"] == 1700000000 + 500 / os.sysconf("SC_CLK_TCK")


def test_the_probe_finds_nothing_without_a_kube_apiserver(tmp_path):
    (tmp_path / "stat").write_text("btime 1700000000\n")
    assert load_probe().apiserver(str(tmp_path)) == {}


def test_the_probe_reads_the_loaded_hash_from_the_metric_only():
    probe = load_probe()
    assert probe.loaded_hash("x 1\n" + METRIC % "sha256:abc" + "\n") == "sha256:abc"
    assert probe.loaded_hash("x 1\n# apiserver_encryption_config_controller_last_config_info{hash=\"no\"} 1\n") is None
