"""python -m slipway_fleet.runner: one operation's playbook, in its Job's pod (also an execution environment's run).

Reads the ConfigMap the controller wrote (op.json, inventory.yml, vars.json), runs the collection's playbook with
ansible-runner (the SSH key is a file of the mounted Secret, named by path only: never in a variable's value or the
log), then leaves a JSON summary as the container's termination message (the recap per host, the failed task and
its message, the log's last lines), which the controller copies into the SlipwayOperation. After an operation that
leaves the admin kubeconfig on the controller, it is stored in the Secret <cluster>-kubeconfig (Cluster API's
name and key, ``value``).

Exit codes: 0 the playbook succeeded; 3 a task failed (the Job fails at once); 1 anything else (the Job runs
the same playbook again, which converges).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml
from slipway_operator.logic import ansible_config

from . import jobs

TERMINATION_LOG = "/dev/termination-log"
MESSAGE_LIMIT = 4000  # the kubelet keeps 4096 bytes of a termination message
RECAP_KEYS = ("ok", "changed", "failures", "dark", "skipped", "rescued", "ignored")
RECAP_NAMES = {"failures": "failed", "dark": "unreachable"}


def recap(stats: dict | None) -> dict[str, dict[str, int]]:
    """ansible-runner's stats ({ok: {host: n}, failures: ...}) as {host: {ok, changed, failed, unreachable, ...}}."""
    hosts: dict[str, dict[str, int]] = {}
    for key in RECAP_KEYS:
        for host, count in ((stats or {}).get(key) or {}).items():
            hosts.setdefault(host, dict.fromkeys((RECAP_NAMES.get(k, k) for k in RECAP_KEYS), 0))[RECAP_NAMES.get(key, key)] = int(count)
    return hosts


def first_failure(events) -> tuple[str, str, str]:
    """(host, task, message) of the first task that failed or found its host unreachable, not ignored."""
    for event in events:
        kind = event.get("event")
        data = event.get("event_data") or {}
        if kind in ("runner_on_failed", "runner_on_unreachable") and not data.get("ignore_errors"):
            res = data.get("res") or {}
            message = res.get("msg") or res.get("stderr") or res.get("reason") or ""
            return str(data.get("host", "")), str(data.get("task", "")), str(message)[:1500]
    return "", "", ""


def summary_text(summary: dict) -> str:
    """The summary as JSON within the termination message's limit: the log's lines go first, then the message."""
    data = dict(summary)
    text = json.dumps(data, sort_keys=True)
    while len(text.encode()) > MESSAGE_LIMIT and data.get("logTail"):
        data["logTail"] = data["logTail"][1:]
        text = json.dumps(data, sort_keys=True)
    if len(text.encode()) > MESSAGE_LIMIT:
        data["message"] = str(data.get("message", ""))[:500]
        data["recap"] = {}
        text = json.dumps(data, sort_keys=True)
    return text


def store_kubeconfig(api_client, run: dict, content: str) -> None:
    """<cluster>-kubeconfig, Cluster API's Secret: key ``value``, owned by the SlipwayCluster."""
    from kubernetes import client  # pylint: disable=import-outside-toplevel
    from kubernetes.client.exceptions import ApiException  # pylint: disable=import-outside-toplevel
    core = client.CoreV1Api(api_client)
    name, namespace = run["kubeconfigSecret"], run["namespace"]
    data = {jobs.KUBECONFIG_KEY: base64.b64encode(content.encode()).decode()}
    # The client takes the Secret as a plain dict (it serializes dicts as they are).
    body: Any
    body = {"apiVersion": "v1", "kind": "Secret", "type": "cluster.x-k8s.io/secret",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"cluster.x-k8s.io/cluster-name": run["cluster"], jobs.LABEL_CLUSTER: run["cluster"],
                                    "app.kubernetes.io/managed-by": jobs.MANAGED_BY},
                         "ownerReferences": [{"apiVersion": "fleet.slipway.io/v1alpha1", "kind": "SlipwayCluster",
                                              "name": run["cluster"], "uid": run["clusterUID"]}]},
            "data": data}
    try:
        core.patch_namespaced_secret(name, namespace, {"data": data})
    except ApiException as exc:
        if exc.status != 404:
            raise
        core.create_namespaced_secret(namespace, body)


def prepare(input_dir: Path, work: Path, ssh_dir: Path, kubeconfig_dir: Path) -> tuple[dict, Path, dict]:
    """The run's description, the inventory's path and the variables, with the files where the playbooks look."""
    run = json.loads((input_dir / "op.json").read_text())
    variables = json.loads((input_dir / "vars.json").read_text())
    inventory_dir = work / "inventory"
    (inventory_dir / "artifacts").mkdir(parents=True, exist_ok=True)
    inventory = inventory_dir / "hosts.yml"
    inventory.write_text((input_dir / "inventory.yml").read_text())
    # The playbooks read and write the admin kubeconfig next to the inventory (inventory_dir/artifacts/admin.conf).
    stored = kubeconfig_dir / jobs.KUBECONFIG_KEY
    if stored.is_file():
        target = inventory_dir / "artifacts" / "admin.conf"
        shutil.copyfile(stored, target)
        target.chmod(0o600)
    # ssh refuses a key readable by others; the Secret's file is the pod's group's, so a private copy is made.
    key = ssh_dir / jobs.SSH_KEY_FILE
    if key.is_file():
        private = work / "ssh" / jobs.SSH_KEY_FILE
        private.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        shutil.copyfile(key, private)
        private.chmod(0o600)
        variables["ansible_ssh_private_key_file"] = str(private)
    return run, inventory, variables


def run_playbook(run: dict, inventory: Path, variables: dict, work: Path, collections_path: str):
    import ansible_runner  # pylint: disable=import-outside-toplevel
    root = Path(collections_path.split(os.pathsep)[0]) / "ansible_collections" / "slipway" / "cluster"
    (work / "runner").mkdir(parents=True, exist_ok=True)
    playbook = run["playbook"] if os.path.isabs(run["playbook"]) else str(root / "playbooks" / run["playbook"])
    env = {"ANSIBLE_COLLECTIONS_PATH": collections_path, "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_HOST_KEY_CHECKING": "False", "ANSIBLE_RETRY_FILES_ENABLED": "0",
           "ANSIBLE_REMOTE_TMP": "/tmp/.ansible-remote", "ANSIBLE_LOCAL_TEMP": str(work / "ansible-local"),
           "ANSIBLE_SSH_CONTROL_PATH_DIR": str(work / "cp"), "ANSIBLE_FORCE_COLOR": "0",
           # As the checkout's ansible.cfg and Molecule's: pipelining, and no -C (the bundle's archives need no compression).
           "ANSIBLE_PIPELINING": "True", "ANSIBLE_SSH_ARGS": "-o ControlMaster=auto -o ControlPersist=120s -o ServerAliveInterval=15",
           # ansible-playbook beside this Python (a virtual environment's bin, or the image's /usr/bin).
           "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "/usr/bin:/bin")]),
           # Its only setting: how often ansible-playbook checks on its workers (slipway_operator.logic.ANSIBLE_CFG).
           "ANSIBLE_CONFIG": ansible_config(work)}
    return ansible_runner.run(private_data_dir=str(work / "runner"), playbook=playbook, inventory=str(inventory),
                              extravars=variables, envvars=env, quiet=False, rotate_artifacts=1), playbook


def summarize(result, playbook: str) -> dict:
    host, task, message = first_failure(result.events)
    try:
        lines = [line for line in result.stdout.read().splitlines() if line.strip()]
    except (OSError, AttributeError):
        lines = []
    summary = {"playbook": Path(playbook).name, "status": result.status, "rc": result.rc, "recap": recap(result.stats),
               "logTail": lines[-20:]}
    if host:
        summary.update(failedHost=host, failedTask=task, message=message)
    elif result.status != "successful":
        summary["message"] = f"ansible-playbook ended {result.status} (rc {result.rc})"
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="slipway_fleet.runner", description=__doc__.split("\n", 1)[0])
    parser.add_argument("--input", type=Path, default=Path(os.environ.get("SLIPWAY_FLEET_INPUT", jobs.INPUT_DIR)))
    parser.add_argument("--work", type=Path, default=Path(jobs.WORK_DIR))
    parser.add_argument("--ssh", type=Path, default=Path(jobs.SSH_DIR))
    parser.add_argument("--kubeconfig-dir", type=Path, default=Path(jobs.KUBECONFIG_DIR))
    parser.add_argument("--collections-path", default=os.environ.get("ANSIBLE_COLLECTIONS_PATH", "/usr/share/ansible/collections"))
    parser.add_argument("--termination-log", type=Path, default=Path(TERMINATION_LOG))
    parser.add_argument("--kubeconfig", help="for the Secret: a kubeconfig (default: the pod's service account)")
    args = parser.parse_args(argv)

    run, inventory, variables = prepare(args.input, args.work, args.ssh, args.kubeconfig_dir)
    print(f"slipway-fleet: {run['type']} of {run['namespace']}/{run['cluster']} ({run['operation']}): "
          f"playbooks/{run['playbook']}", flush=True)
    try:
        result, playbook = run_playbook(run, inventory, variables, args.work, args.collections_path)
        summary = summarize(result, playbook)
        ok = result.status == "successful" and result.rc == 0
        # Exit 3 only for a task that failed or a host that did not answer (a verdict a rerun repeats); anything
        # else (ansible-playbook missing, killed, timed out) exits 1 and the Job runs it again.
        code = 0 if ok else (jobs.EXIT_PLAYBOOK_FAILED if summary.get("failedTask") else 1)
    except Exception as exc:  # pylint: disable=broad-exception-caught  # reported, and the Job runs it again
        summary, ok, code = {"playbook": run["playbook"], "message": f"the playbook could not run: {exc}"}, False, 1
    admin = args.work / "inventory" / "artifacts" / "admin.conf"
    if ok and run.get("storeKubeconfig") and admin.is_file():
        try:
            from kubernetes import client, config  # pylint: disable=import-outside-toplevel
            if args.kubeconfig:
                api_client = config.new_client_from_config(config_file=args.kubeconfig)
            else:
                config.load_incluster_config()
                api_client = client.ApiClient()
            store_kubeconfig(api_client, run, admin.read_text())
            summary["kubeconfigSecret"] = run["kubeconfigSecret"]
        except Exception as exc:  # pylint: disable=broad-exception-caught  # the hosts are done; say what is missing
            summary["message"] = f"the playbook succeeded but {run['kubeconfigSecret']} could not be written: {exc}"
            code = 1
    try:
        args.termination_log.write_text(summary_text(summary))
    except OSError as exc:
        print(f"slipway-fleet: cannot write the summary to {args.termination_log}: {exc}", file=sys.stderr)
    print("slipway-fleet: " + yaml.safe_dump({"recap": summary.get("recap", {})}, default_flow_style=True).strip(), flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
