"""The fleet's Jobs (operator/slipway_fleet/jobs.py) and the runner in them (runner.py): what an operation's Job
holds, how a Job and its pods read back as the operation's status, and the runner itself with real ansible-runner
and the collection's site.yml (its model refuses the inventory on the controller: no host is contacted)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from slipway_fleet import jobs, runner
from slipway_fleet import spec as fleet

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CLUSTER = {"apiVersion": fleet.API_VERSION, "kind": "SlipwayCluster",
           "metadata": {"name": "prod", "namespace": "fleet", "uid": "u-1", "generation": 3},
           "spec": {"kubernetesVersion": "1.37.1", "sshKeySecretRef": {"name": "prod-ssh", "key": "id_ed25519"},
                    "hosts": [{"name": "cp1", "address": "10.1.0.11", "roles": ["control_plane"]}]}}


def an_operation(op_type="create"):
    body = jobs.operation(CLUSTER, op_type, ["cp1"], 3, jobs.operation_name("prod", op_type, 3))
    body["metadata"]["uid"] = "op-1"
    return body


def test_operation_names_are_dns_labels_and_differ_by_salt():
    long = "c" * 80
    name = jobs.operation_name(long, "remove-node", 12345)
    assert len(name) <= 63 and name == name.lower()
    assert jobs.operation_name("prod", "scale", 4, "a") != jobs.operation_name("prod", "scale", 4, "b")


def test_the_job_mounts_the_key_and_never_puts_it_in_the_environment():
    job = jobs.job(an_operation(), CLUSTER, jobs.JobSettings(image="img:1", bundle_claim="slipway-fleet-bundle"))
    pod = job["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["command"] == ["/usr/bin/python3.11", "-m", "slipway_fleet.runner"]
    ssh = next(v for v in pod["volumes"] if v["name"] == "ssh")["secret"]
    assert ssh["secretName"] == "prod-ssh" and ssh["items"] == [{"key": "id_ed25519", "path": jobs.SSH_KEY_FILE}]
    assert all("valueFrom" not in env for env in container["env"])
    assert {"name": "bundle", "mountPath": "/bundle", "readOnly": True} in container["volumeMounts"]
    assert pod["restartPolicy"] == "Never" and pod["serviceAccountName"] == jobs.runner_name("prod")
    # A failed task fails the Job at once; anything else (a pod that died) is run again.
    rule = job["spec"]["podFailurePolicy"]["rules"][0]
    assert rule["action"] == "FailJob" and rule["onExitCodes"]["values"] == [jobs.EXIT_PLAYBOOK_FAILED]
    assert job["spec"]["backoffLimit"] == 3
    assert job["metadata"]["ownerReferences"][0]["kind"] == "SlipwayOperation"


def test_only_an_etcd_backup_job_mounts_the_backup_volume_and_only_its_clusters_directory():
    job_settings = jobs.JobSettings(image="img:1", backup_claim="fleet-backups")
    assert jobs.has_backup_volume(job_settings)
    backup = jobs.job(an_operation("etcd-backup"), CLUSTER, job_settings)["spec"]["template"]["spec"]
    assert {"name": "backups", "persistentVolumeClaim": {"claimName": "fleet-backups"}} in backup["volumes"]
    assert {"name": "backups", "mountPath": jobs.BACKUP_DIR, "subPath": "prod"} in backup["containers"][0]["volumeMounts"]
    for op_type in ("create", "scale", "renew-certs", "reset"):
        other = jobs.job(an_operation(op_type), CLUSTER, job_settings)["spec"]["template"]["spec"]
        assert all(volume["name"] != "backups" for volume in other["volumes"])
    assert not jobs.has_backup_volume(jobs.JobSettings(image="img:1"))
    none = jobs.job(an_operation("etcd-backup"), CLUSTER, jobs.JobSettings(image="img:1"))["spec"]["template"]["spec"]
    assert all(volume["name"] != "backups" for volume in none["volumes"])


def test_the_input_holds_inventory_and_variables_and_nothing_secret():
    op = an_operation("remove-node")
    cm = jobs.input_config_map(op, CLUSTER, CLUSTER["spec"], {"remove_node_names": ["cp1"]},
                               host_keys={"cp1": ["ssh-ed25519 AAAA"]}, endpoint="https://10.1.0.11:6443")
    assert yaml.safe_load(cm["data"]["inventory.yml"])["all"]["hosts"]["cp1"]["ansible_host"] == "10.1.0.11"
    run = json.loads(cm["data"]["op.json"])
    assert run["playbook"] == "remove_node.yml" and run["kubeconfigSecret"] == "prod-kubeconfig"
    assert run["storeKubeconfig"] is False and run["endpoint"] == "https://10.1.0.11:6443"
    assert run["hostKeys"] == {"cp1": ["ssh-ed25519 AAAA"]} and run["pinnedHosts"] == [] and run["secretVariables"] == {}
    assert "id_ed25519" not in json.dumps(cm)


def test_the_runner_may_write_only_its_clusters_kubeconfig_and_its_operations_status():
    _account, role, binding = jobs.runner_rbac(CLUSTER, "prod-create-3-abcde")
    named = [rule for rule in role["rules"] if rule.get("resourceNames")]
    assert named == [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["prod-kubeconfig"],
                      "verbs": ["get", "update", "patch"]},
                     {"apiGroups": ["fleet.slipway.io"], "resources": ["slipwayoperations/status"],
                      "resourceNames": ["prod-create-3-abcde"], "verbs": ["get", "patch"]}]
    assert all("list" not in rule["verbs"] and "watch" not in rule["verbs"] for rule in role["rules"])
    assert binding["subjects"][0]["name"] == jobs.runner_name("prod")


def pod(created, exit_code=None, message=""):
    status = {}
    if exit_code is not None:
        status = {"containerStatuses": [{"name": jobs.CONTAINER, "state": {"terminated": {
            "exitCode": exit_code, "message": message}}}]}
    return {"metadata": {"creationTimestamp": created}, "status": status}


RECAP = {"cp1": {"ok": 10, "changed": 2, "failed": 0, "unreachable": 0, "skipped": 1, "rescued": 0, "ignored": 0}}
SUMMARY = json.dumps({"playbook": "site.yml", "recap": RECAP, "logTail": ["PLAY RECAP", "cp1 : ok=10"]})


def test_a_running_job_is_running():
    state = jobs.job_state({"status": {"active": 1}}, [pod("2026-01-01T00:00:00Z")])
    assert state.phase == "Running" and state.attempts == 1


def test_a_complete_job_gives_the_recap_of_its_last_run():
    state = jobs.job_state({"status": {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}},
                           [pod("2026-01-01T00:00:00Z", 0, SUMMARY)])
    assert state.phase == "Succeeded"
    status = jobs.operation_status(state, "prod-create-3-abcde", "2026-01-01T00:00:00Z")
    assert status["recap"] == [{"host": "cp1", "ok": 10, "changed": 2, "failed": 0, "unreachable": 0, "skipped": 1,
                                "rescued": 0, "ignored": 0}]
    assert status["logTail"][-1] == "cp1 : ok=10" and "completionTime" in status


def test_a_pod_that_died_is_a_rerun_and_the_summary_is_the_later_runs():
    killed = pod("2026-01-01T00:00:00Z", 137, "Killed\nlast line of the log")
    second = pod("2026-01-01T00:05:00Z", 0, SUMMARY)
    state = jobs.job_state({"status": {"failed": 1, "succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}},
                           [second, killed])
    assert state.phase == "Succeeded" and state.attempts == 2 and state.retried == 1
    assert state.summary["recap"]["cp1"]["ok"] == 10


def test_a_pod_deleted_while_it_ran_is_a_rerun_though_it_is_gone():
    # kubectl delete pod (or an eviction, or a lost node): the pod is gone from the API, the Job counts it failed.
    running = jobs.job_state({"status": {"failed": 1, "active": 1}}, [pod("2026-01-01T00:05:00Z")])
    assert running.phase == "Running" and running.attempts == 2 and running.retried == 1
    done = jobs.job_state({"status": {"failed": 1, "succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}},
                          [pod("2026-01-01T00:05:00Z", 0, SUMMARY)])
    assert done.phase == "Succeeded" and done.retried == 1


def test_a_deleted_pod_the_job_has_not_counted_yet_is_a_rerun():
    # Between the pod's finalizer removal and the Job's failed count, the pod is gone and listed as uncounted only.
    window = {"status": {"active": 1, "uncountedTerminatedPods": {"failed": ["0b7e-uid"]}}}
    state = jobs.job_state(window, [pod("2026-01-01T00:05:00Z")])
    assert state.phase == "Running" and state.attempts == 2 and state.retried == 1


def test_the_last_failure_of_a_failed_job_is_no_rerun():
    killed = [pod(f"2026-01-01T00:0{index}:00Z", 137, "Killed") for index in range(4)]
    out_of_retries = {"status": {"failed": 4, "conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]}}
    assert jobs.job_state(out_of_retries, killed).retried == 3
    failed_task = json.dumps({"failedTask": "Join the node", "message": "no"})
    after_a_kill = {"status": {"failed": 2, "conditions": [{"type": "Failed", "status": "True", "reason": "PodFailurePolicy"}]}}
    state = jobs.job_state(after_a_kill, [pod("2026-01-01T00:05:00Z", jobs.EXIT_PLAYBOOK_FAILED, failed_task)])
    assert state.phase == "Failed" and state.retried == 1 and state.message == "no"


def test_a_failed_task_fails_the_job_with_its_message():
    failed = json.dumps({"failedHost": "cp1", "failedTask": "Join the control plane", "message": "kubeadm join: timeout",
                         "recap": {"cp1": {"ok": 3, "failed": 1}}})
    failed_job = {"status": {"failed": 1, "conditions": [{"type": "Failed", "status": "True", "reason": "PodFailurePolicy"}]}}
    state = jobs.job_state(failed_job,
                           [pod("2026-01-01T00:00:00Z", jobs.EXIT_PLAYBOOK_FAILED, failed)])
    status = jobs.operation_status(state, "j", None)
    assert status["phase"] == "Failed" and status["failedTask"] == "Join the control plane"
    assert status["message"] == "kubeadm join: timeout" and status["failedHost"] == "cp1"
    assert state.retried == 0


def test_a_job_that_is_gone_is_a_failure_that_says_so():
    assert "gone" in jobs.job_state(None, []).message


def test_conditions_keep_their_transition_time_while_their_status_stays():
    first = jobs.set_condition([], "Ready", True, "NodesReady", "ok", 1)
    first[0]["lastTransitionTime"] = "2020-01-01T00:00:00Z"
    again = jobs.set_condition(first, "Ready", True, "NodesReady", "ok", 2)
    assert again[0]["lastTransitionTime"] == "2020-01-01T00:00:00Z" and again[0]["observedGeneration"] == 2
    flipped = jobs.set_condition(again, "Ready", False, "NodesNotReady", "w1", 2)
    assert flipped[0]["lastTransitionTime"] != "2020-01-01T00:00:00Z"


# --- the runner ---------------------------------------------------------------------------------------------

def test_recap_from_ansible_runner_stats():
    stats = {"ok": {"cp1": 5, "w1": 4}, "changed": {"cp1": 1}, "failures": {"w1": 1}, "dark": {}, "skipped": {},
             "rescued": {}, "ignored": {}}
    got = runner.recap(stats)
    assert got["w1"] == {"ok": 4, "changed": 0, "failed": 1, "unreachable": 0, "skipped": 0, "rescued": 0, "ignored": 0}
    assert got["cp1"]["changed"] == 1


def test_the_summary_fits_the_termination_message():
    summary = {"message": "m", "recap": {"h": {"ok": 1}}, "logTail": ["x" * 300] * 40}
    text = runner.summary_text(summary)
    assert len(text.encode()) <= runner.MESSAGE_LIMIT
    assert json.loads(text)["recap"] == {"h": {"ok": 1}} and json.loads(text)["logTail"]


@pytest.fixture(name="run_dirs")
def fixture_run_dirs(tmp_path):
    dirs = {name: tmp_path / name for name in ("input", "work", "ssh", "kubeconfig")}
    for path in dirs.values():
        path.mkdir()
    (dirs["ssh"] / jobs.SSH_KEY_FILE).write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nnot-a-real-key\n-----END OPENSSH PRIVATE KEY-----\n")
    return dirs


def test_the_runner_runs_site_yml_and_reports_the_models_refusal(run_dirs, tmp_path):
    """site.yml's first stage (the model, on the controller) refuses a vip without its address: no host is
    contacted (the hosts are TEST-NET addresses), the task and message are in the summary, exit code 3."""
    spec = {"kubernetesVersion": "1.37.1", "controlPlaneEndpoint": {"mode": "vip"}, "artifacts": {"source": "upstream"},
            "hosts": [{"name": "cp1", "address": "192.0.2.11", "roles": ["control_plane"]}]}
    op = {"apiVersion": fleet.API_VERSION, "kind": "SlipwayOperation",
          "metadata": {"name": "prod-create-1-aaaaa", "namespace": "fleet", "uid": "op"},
          "spec": {"cluster": "prod", "type": "create"}}
    cm = jobs.input_config_map(op, CLUSTER, spec, fleet.playbook_vars(spec, "prod"))
    for key, value in cm["data"].items():
        (run_dirs["input"] / key).write_text(value)
    log = tmp_path / "termination-log"
    code = runner.main(["--input", str(run_dirs["input"]), "--work", str(run_dirs["work"]), "--ssh", str(run_dirs["ssh"]),
                        "--kubeconfig-dir", str(run_dirs["kubeconfig"]), "--termination-log", str(log),
                        "--secret-variables", str(tmp_path / "no-secrets"),
                        "--collections-path", os.path.join(ROOT, ".cache", "collections")])
    summary = json.loads(log.read_text())
    assert code == jobs.EXIT_PLAYBOOK_FAILED, summary
    assert summary["playbook"] == "site.yml" and summary["failedHost"] in ("cp1", "localhost")
    assert "slipway_control_plane_endpoint" in summary["message"], summary
    assert "not-a-real-key" not in log.read_text()
    assert all(counts["changed"] == 0 for counts in summary["recap"].values())
    # The key went to a private copy that ssh accepts (mode 0600), named by path only.
    private = Path(run_dirs["work"]) / "ssh" / jobs.SSH_KEY_FILE
    assert private.stat().st_mode & 0o777 == 0o600
    # The variables went to a file of their own, every value marked unsafe, given to ansible-playbook with -e @file.
    extravars = (Path(run_dirs["work"]) / "vars.yml").read_text()
    assert "not-a-real-key" not in extravars and f"ansible_ssh_private_key_file: !unsafe '{private}'" in extravars
    assert (Path(run_dirs["work"]) / "runner" / "env" / "cmdline").read_text().strip() == f"-e @{Path(run_dirs['work']) / 'vars.yml'}"
    assert "!unsafe '192.0.2.11'" in (Path(run_dirs["work"]) / "inventory" / "hosts.yml").read_text()
    # The run's ansible.cfg (its poll interval) is the one written into the work directory.
    envvars = yaml.safe_load((Path(run_dirs["work"]) / "runner" / "env" / "envvars").read_text())
    assert envvars["ANSIBLE_CONFIG"] == str(Path(run_dirs["work"]) / "ansible.cfg")


class Recorder:  # pylint: disable=too-few-public-methods
    """The controller's API calls, recorded instead of made."""

    def __init__(self, operations):
        self.operations, self.op_status, self.events, self.cluster_status, self.started = operations, [], [], [], []


def a_controller(recorder, backup_claim=""):
    from kubernetes import client  # pylint: disable=import-outside-toplevel
    from slipway_fleet import controller  # pylint: disable=import-outside-toplevel
    options = controller.Options(kubeconfig=None, jobs=jobs.JobSettings(image="img:1", backup_claim=backup_claim),
                                 collections_path=os.path.join(ROOT, ".cache", "collections"))
    ctl = controller.Controller(options, controller.Metrics(), client.ApiClient())
    ctl.list_operations = lambda namespace=None, cluster=None: recorder.operations
    ctl.patch_operation_status = lambda op, status: recorder.op_status.append((op["metadata"]["name"], status))
    ctl.post_event = lambda obj, kind, reason, message, once=False: recorder.events.append((reason, message))
    ctl.patch_cluster_status = lambda obj, status: recorder.cluster_status.append(dict(status))
    ctl.running_operations = lambda namespace=None: 0
    ctl.tenancy_problems = lambda obj: []
    ctl.start = lambda obj, op_type, *args: recorder.started.append(op_type) or "op"
    return ctl


def a_running_cluster():
    spec = {"kubernetesVersion": "1.37.1", "sshKeySecretRef": {"name": "prod-ssh"}, "artifacts": {"source": "upstream"},
            "hosts": [{"name": "cp1", "address": "192.0.2.11", "roles": ["control_plane", "worker"]}]}
    return {**CLUSTER, "spec": spec}, {"created": True, "phase": "Running",
                                       "appliedSpec": {"json": json.dumps(spec, sort_keys=True)}}


BACKUP_OP = {"apiVersion": fleet.API_VERSION, "kind": "SlipwayOperation",
             "metadata": {"name": "backup-1", "namespace": "fleet", "creationTimestamp": "2026-01-01T00:00:00Z"},
             "spec": {"cluster": "prod", "type": "etcd-backup"}}


def test_an_etcd_backup_without_a_backup_volume_is_refused_before_any_job():
    recorder = Recorder([BACKUP_OP])
    obj, status = a_running_cluster()
    a_controller(recorder).next_operation(obj, status, deleting=False)
    assert not recorder.started
    [(name, op_status)] = recorder.op_status
    assert name == "backup-1" and op_status["phase"] == "Failed"
    assert "--backup-claim" in op_status["message"] and "fleet_backup_host_path" in op_status["message"]
    assert [reason for reason, _message in recorder.events] == ["OperationFailed"]


def test_an_etcd_backup_with_a_backup_volume_starts():
    recorder = Recorder([BACKUP_OP])
    obj, status = a_running_cluster()
    a_controller(recorder, backup_claim="fleet-backups").next_operation(obj, status, deleting=False)
    assert recorder.started == ["etcd-backup"] and not recorder.op_status
