"""python -m slipway_fleet.runner: one operation's playbook, in its Job's pod (also an execution environment's run).

Reads the ConfigMap the controller wrote (op.json, inventory.yml, vars.json) and the secret variables' files of the
mounted Secrets, and runs the collection's playbook with ansible-runner. Every value of the inventory and the
variables reaches Ansible marked ``!unsafe``: a tenant's spec is data, never a template. The SSH key is a file of
the mounted Secret, named by path only (never in a variable's value or the log). Before any task the hosts prove
who they are: each must offer the SSH host key pinned in the spec or recorded at its first contact (else the run is
refused, naming the host); a host met for the first time has its key recorded in the operation's status, and ssh
itself then checks every connection against those keys (StrictHostKeyChecking). A stored kubeconfig is held to the
strict form of kubeconfig.py before the playbooks' modules load it. The runner then leaves a JSON summary as the
container's termination message (the recap per host, the failed task and its message, the log's last lines),
which the controller copies into the SlipwayOperation. After an operation that leaves the admin kubeconfig on the
controller, it is stored in the Secret <cluster>-kubeconfig (Cluster API's name and key, ``value``).

Exit codes: 0 the playbook succeeded; 3 a task failed or the inputs were refused (the Job fails at once); 1
anything else (the Job runs the same playbook again, which converges).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from slipway_operator import collection
from slipway_operator.logic import ansible_config

from . import jobs
from . import kubeconfig as target_kubeconfig

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


class _UnsafeDumper(yaml.SafeDumper):  # pylint: disable=too-many-ancestors
    """YAML whose every string value is tagged ``!unsafe``: Ansible takes it as written and never templates it."""

    def ignore_aliases(self, data):
        return True


class _Key(str):
    """A mapping key: plain (variable and host names are names, not values)."""


_UnsafeDumper.add_representer(str, lambda dumper, value: dumper.represent_scalar("!unsafe", value))
_UnsafeDumper.add_representer(_Key, lambda dumper, value: dumper.represent_scalar("tag:yaml.org,2002:str", str(value)))
_UnsafeDumper.add_representer(dict, lambda dumper, value: dumper.represent_mapping(
    "tag:yaml.org,2002:map", [(_Key(k) if isinstance(k, str) else k, v) for k, v in value.items()]))


def unsafe_yaml(data: Any) -> str:
    """``data`` as YAML for Ansible, every string value marked unsafe (the tenant's values are data, never code)."""
    return yaml.dump(data, Dumper=_UnsafeDumper, sort_keys=False, default_flow_style=False)


class Refused(Exception):
    """An input the runner will not run with (exit 3, before any task): the host or Secret, and why."""

    def __init__(self, host: str, task: str, message: str):
        super().__init__(message)
        self.host, self.task, self.message = host, task, message


def secret_variables(run: dict, directory: Path) -> dict:
    """The values of spec.secretVariablesFrom, each read from its file of the mounted Secrets."""
    values, missing = {}, []
    for variable, form in sorted((run.get("secretVariables") or {}).items()):
        path = directory / variable
        if not path.is_file():
            missing.append(variable)
            continue
        text = path.read_text()
        values[variable] = yaml.safe_load(text) if form == "yaml" else text.rstrip("\n")
    if missing:
        raise Refused("", "Read the secret variables", "spec.secretVariablesFrom: the Secret key of "
                      f"{', '.join(missing)} is missing (no such Secret in the namespace, or no such key in it); create "
                      "it, or correct secretKeyRef's name and key")
    return values


# The host key recorded at a host's first contact: the first of these it offers.
KEY_PREFERENCE = ("ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521", "ssh-rsa")


def fingerprint(key: str) -> str:
    """OpenSSH's SHA256 fingerprint of a public key line ("TYPE BASE64")."""
    blob = base64.b64decode(key.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def known_name(address: str, port: int) -> str:
    return address if port == 22 else f"[{address}]:{port}"


def scan(hosts: dict[str, tuple[str, int]], timeout: int = 5) -> dict[str, list[str]]:
    """The public keys each host offers now ({host: ["TYPE BASE64", ...]}), read with ssh-keyscan (one run per
    port, the addresses on its standard input): no login, and no key is trusted by the reading itself."""
    by_port: dict[int, dict[str, str]] = {}
    for host, (address, port) in hosts.items():
        by_port.setdefault(port, {})[address] = host
    found: dict[str, list[str]] = {host: [] for host in hosts}
    for port, addresses in sorted(by_port.items()):
        answer = subprocess.run(["ssh-keyscan", "-T", str(timeout), "-p", str(port), "-t", "ed25519,ecdsa,rsa", "-f", "-"],
                                input="\n".join(addresses) + "\n", capture_output=True, text=True, check=False,
                                timeout=timeout * (len(addresses) + 2))
        for line in answer.stdout.splitlines():
            parts = line.split()
            if len(parts) < 3 or line.startswith("#"):
                continue
            name = parts[0][1:].rsplit("]:", 1)[0] if parts[0].startswith("[") else parts[0]
            if name in addresses:
                found[addresses[name]].append(f"{parts[1]} {parts[2]}")
    return found


def host_keys(run: dict, hosts: dict[str, tuple[str, int]], offered: dict[str, list[str]]) -> tuple[list[str], dict[str, str]]:
    """known_hosts' lines for the run and the keys of hosts met for the first time ({host: key}); Refused when a
    host offers another key than the one pinned in the spec or recorded at its first contact."""
    known = run.get("hostKeys") or {}
    pinned = set(run.get("pinnedHosts") or [])
    lines, new = [], {}
    for host, (address, port) in sorted(hosts.items()):
        keys = [" ".join(str(key).split()[:2]) for key in known.get(host) or []]
        now = offered.get(host) or []
        if not keys:
            first = next((key for kind in KEY_PREFERENCE for key in now if key.split()[0] == kind), None)
            if first:
                new[host] = first
                keys = [first]
        elif now and not set(keys) & set(now):
            where = (f"spec.hosts[{host}].hostKeys pins" if host in pinned
                     else "status.hostKeys recorded at its first contact holds")
            kinds = {key.split()[0] for key in keys}
            changed = [key for key in now if key.split()[0] in kinds] or now
            raise Refused(host, "Check the hosts' SSH keys", (
                f"{host} ({address}:{port}): its SSH host key is not the one {where}: it offers "
                f"{', '.join(key.split()[0] + ' ' + fingerprint(key) for key in changed)} where "
                f"{', '.join(key.split()[0] + ' ' + fingerprint(key) for key in keys)} was expected. Nothing was run. If "
                f"the machine was replaced or its keys renewed, pin its new key in spec.hosts[{host}].hostKeys "
                f"(ssh-keyscan -t ed25519 {address}), or remove the host from the spec and add it back; otherwise "
                "another machine answers at its address"))
        lines += [f"{known_name(address, port)} {key}" for key in keys]
    return lines, new


def report_host_keys(api_client, run: dict, new: dict[str, str]) -> None:
    """The keys of hosts met first, into this operation's status (the controller records them in the cluster's)."""
    if not new:
        return
    from kubernetes import client  # pylint: disable=import-outside-toplevel
    client.CustomObjectsApi(api_client).patch_namespaced_custom_object_status(
        "fleet.slipway.io", "v1alpha1", run["namespace"], "slipwayoperations", run["operation"],
        {"status": {"hostKeys": [{"name": host, "keys": [key]} for host, key in sorted(new.items())]}})


def inventory_hosts(inventory: dict) -> dict[str, tuple[str, int]]:
    return {name: (str(values.get("ansible_host") or name), int(values.get("ansible_port") or 22))
            for name, values in ((inventory.get("all") or {}).get("hosts") or {}).items()}


def prepare(input_dir: Path, work: Path, ssh_dir: Path, kubeconfig_dir: Path,  # pylint: disable=too-many-arguments
            secrets_dir: Path = Path(jobs.SECRET_VARIABLES_DIR)) -> tuple[dict, Path, Path, dict]:
    """The run's description, the inventory's and the variables' files (every value marked unsafe), and the
    inventory itself, with the files where the playbooks look. Refused: a stored kubeconfig of another form than
    kubeconfig.py's, or a secret variable whose Secret key is missing."""
    run = json.loads((input_dir / "op.json").read_text())
    variables = json.loads((input_dir / "vars.json").read_text())
    inventory_data = yaml.safe_load((input_dir / "inventory.yml").read_text())
    inventory_dir = work / "inventory"
    (inventory_dir / "artifacts").mkdir(parents=True, exist_ok=True)
    inventory = inventory_dir / "hosts.yml"
    inventory.write_text(unsafe_yaml(inventory_data))
    # The playbooks read and write the admin kubeconfig next to the inventory (inventory_dir/artifacts/admin.conf),
    # which the kubernetes.core modules load as kubeconfigs are loaded: it must be of the strict form first.
    stored = kubeconfig_dir / jobs.KUBECONFIG_KEY
    if stored.is_file():
        try:
            target_kubeconfig.parse(stored.read_bytes(), run.get("endpoint") or "")
        except target_kubeconfig.KubeconfigRefused as exc:
            raise Refused("", "Read the cluster's kubeconfig", f"{run['kubeconfigSecret']}: {exc}; the fleet reads "
                          "only the strict form docs/fleet.md describes (delete the Secret, or write the admin "
                          "kubeconfig site.yml made)") from None
        target = inventory_dir / "artifacts" / "admin.conf"
        shutil.copyfile(stored, target)
        target.chmod(0o600)
    variables.update(secret_variables(run, secrets_dir))
    # ssh refuses a key readable by others; the Secret's file is the pod's group's, so a private copy is made.
    key = ssh_dir / jobs.SSH_KEY_FILE
    if key.is_file():
        private = work / "ssh" / jobs.SSH_KEY_FILE
        private.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        shutil.copyfile(key, private)
        private.chmod(0o600)
        variables["ansible_ssh_private_key_file"] = str(private)
    extravars = work / "vars.yml"
    extravars.write_text(unsafe_yaml(variables))
    extravars.chmod(0o600)
    return run, inventory, extravars, inventory_data


def write_known_hosts(work: Path, lines: list[str]) -> Path:
    """The hosts' keys where ssh (UserKnownHostsFile) and Ansible's own check (~/.ssh) find them."""
    path = work / ".ssh" / "known_hosts"
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))
    path.chmod(0o600)
    return path


def run_playbook(run: dict, inventory: Path, extravars: Path, work: Path, collections_path: str,  # pylint: disable=too-many-arguments
                 known_hosts: Path):
    import ansible_runner  # pylint: disable=import-outside-toplevel
    root = collection.root(collections_path)
    (work / "runner").mkdir(parents=True, exist_ok=True)
    playbook = run["playbook"] if os.path.isabs(run["playbook"]) else str(root / "playbooks" / run["playbook"])
    env = {"ANSIBLE_COLLECTIONS_PATH": collections_path, "ANSIBLE_NOCOLOR": "1",
           # The hosts prove who they are: their keys are in known_hosts (pinned, recorded, or read just now at their
           # first contact), and a host that offers another key is refused by ssh itself.
           "ANSIBLE_HOST_KEY_CHECKING": "True", "ANSIBLE_RETRY_FILES_ENABLED": "0",
           "ANSIBLE_REMOTE_TMP": "/tmp/.ansible-remote", "ANSIBLE_LOCAL_TEMP": str(work / "ansible-local"),
           "ANSIBLE_SSH_CONTROL_PATH_DIR": str(work / "cp"), "ANSIBLE_FORCE_COLOR": "0",
           # As the checkout's ansible.cfg and Molecule's: pipelining, and no -C (the bundle's archives need no compression).
           "ANSIBLE_PIPELINING": "True",
           "ANSIBLE_SSH_ARGS": "-o ControlMaster=auto -o ControlPersist=120s -o ServerAliveInterval=15 "
                               f"-o StrictHostKeyChecking=yes -o UserKnownHostsFile={known_hosts} "
                               "-o GlobalKnownHostsFile=/dev/null -o CheckHostIP=no -o UpdateHostKeys=no",
           # ansible-playbook beside this Python (a virtual environment's bin, or the image's /usr/bin).
           "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "/usr/bin:/bin")]),
           "HOME": str(work),
           # Its settings: how often ansible-playbook checks on its workers, and facts not injected as variables
           # (slipway_operator.logic.ANSIBLE_CFG).
           "ANSIBLE_CONFIG": ansible_config(work)}
    # The variables as a file of their own, every value marked unsafe (-e @file; ansible-runner's extravars would
    # write them as JSON, which Ansible templates).
    return ansible_runner.run(private_data_dir=str(work / "runner"), playbook=playbook, inventory=str(inventory),
                              cmdline=f"-e @{extravars}", envvars=env, quiet=False, rotate_artifacts=1), playbook


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


def management_client(kubeconfig: str | None):
    """The management cluster's API: the pod's ServiceAccount, or a kubeconfig given on the command line."""
    from kubernetes import client, config  # pylint: disable=import-outside-toplevel
    if kubeconfig:
        return config.new_client_from_config(config_file=kubeconfig)
    config.load_incluster_config()
    return client.ApiClient()


def main(argv: list[str] | None = None) -> int:  # pylint: disable=too-many-locals
    parser = argparse.ArgumentParser(prog="slipway_fleet.runner", description=__doc__.split("\n", 1)[0])
    parser.add_argument("--input", type=Path, default=Path(os.environ.get("SLIPWAY_FLEET_INPUT", jobs.INPUT_DIR)))
    parser.add_argument("--work", type=Path, default=Path(jobs.WORK_DIR))
    parser.add_argument("--ssh", type=Path, default=Path(jobs.SSH_DIR))
    parser.add_argument("--kubeconfig-dir", type=Path, default=Path(jobs.KUBECONFIG_DIR))
    parser.add_argument("--secret-variables", type=Path, default=Path(jobs.SECRET_VARIABLES_DIR))
    collection.add_option(parser, None)
    parser.add_argument("--termination-log", type=Path, default=Path(TERMINATION_LOG))
    parser.add_argument("--kubeconfig", help="for the Secret: a kubeconfig (default: the pod's service account)")
    args = parser.parse_args(argv)

    run = json.loads((args.input / "op.json").read_text())
    print(f"slipway-fleet: {run['type']} of {run['namespace']}/{run['cluster']} ({run['operation']}): "
          f"playbooks/{run['playbook']}", flush=True)
    summary: dict[str, Any]
    ok = False
    try:
        run, inventory, extravars, inventory_data = prepare(args.input, args.work, args.ssh, args.kubeconfig_dir,
                                                            args.secret_variables)
        hosts = inventory_hosts(inventory_data)
        lines, new = host_keys(run, hosts, scan(hosts))
        known_hosts = write_known_hosts(args.work, lines)
        if new:
            # Trust on first use: recorded before any task, so that every later operation requires the same key.
            report_host_keys(management_client(args.kubeconfig), run, new)
            print("slipway-fleet: first contact, host keys recorded: "
                  + ", ".join(f"{host} {fingerprint(key)}" for host, key in sorted(new.items())), flush=True)
        result, playbook = run_playbook(run, inventory, extravars, args.work, args.collections_path, known_hosts)
        summary = summarize(result, playbook)
        ok = result.status == "successful" and result.rc == 0
        # Exit 3 only for a task that failed or a host that did not answer (a verdict a rerun repeats); anything
        # else (ansible-playbook missing, killed, timed out) exits 1 and the Job runs it again.
        code = 0 if ok else (jobs.EXIT_PLAYBOOK_FAILED if summary.get("failedTask") else 1)
    except Refused as refused:
        summary = {"playbook": run["playbook"], "failedTask": refused.task, "message": refused.message, "recap": {}}
        if refused.host:
            summary["failedHost"] = refused.host
        code = jobs.EXIT_PLAYBOOK_FAILED
    except Exception as exc:  # pylint: disable=broad-exception-caught  # reported, and the Job runs it again
        summary, code = {"playbook": run["playbook"], "message": f"the playbook could not run: {exc}"}, 1
    admin = args.work / "inventory" / "artifacts" / "admin.conf"
    if ok and run.get("storeKubeconfig") and admin.is_file():
        try:
            store_kubeconfig(management_client(args.kubeconfig), run, admin.read_text())
            summary["kubeconfigSecret"] = run["kubeconfigSecret"]
        except Exception as exc:  # pylint: disable=broad-exception-caught  # the hosts are done; say what is missing
            summary["message"] = f"the playbook succeeded but {run['kubeconfigSecret']} could not be written: {exc}"
            code = 1
    try:
        args.termination_log.write_text(summary_text(summary))
    except OSError as exc:
        print(f"slipway-fleet: cannot write the summary to {args.termination_log}: {exc}", file=sys.stderr)
    if summary.get("failedTask") and not summary.get("recap"):
        print(f"slipway-fleet: refused before any task: {summary.get('message')}", flush=True)
    print("slipway-fleet: " + yaml.safe_dump({"recap": summary.get("recap", {})}, default_flow_style=True).strip(), flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
