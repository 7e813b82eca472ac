"""The objects the controller writes for an operation, and what it reads back from the Job: pure Python.

- ``operation`` / ``input_config_map`` / ``runner_rbac`` / ``job``: the SlipwayOperation record, the
  ConfigMap with the playbook's inventory and variables, the ServiceAccount and Role that let the Job
  write only ``<cluster>-kubeconfig``, and the Job that runs ``python3 -m slipway_fleet.runner``.
- ``job_state``: a Job and its pods as the operation's phase, attempts and the runner's summary (the
  termination message each run's container leaves: recap per host, failed task, last log lines).
- ``condition`` / ``set_condition``: status conditions as Kubernetes writes them.
"""

from __future__ import annotations

import copy
import datetime
import hashlib
import ipaddress
import json
from dataclasses import dataclass, field
from typing import Any

import yaml

from . import spec as fleet

MANAGED_BY = "slipway-fleet"
LABEL_CLUSTER = f"{fleet.GROUP}/cluster"
LABEL_OPERATION = f"{fleet.GROUP}/operation"
FINALIZER = f"{fleet.GROUP}/reset"
CONTAINER = "playbook"
# The runner's exit code when the playbook itself failed (a task failed): the Job fails at once, as a rerun
# would fail the same way. Any other end of the pod (killed, evicted, node lost) is run again by the Job.
EXIT_PLAYBOOK_FAILED = 3
INPUT_DIR, SSH_DIR, KUBECONFIG_DIR, WORK_DIR = "/slipway/input", "/slipway/ssh", "/slipway/kubeconfig", "/slipway/work"
# The values of spec.secretVariablesFrom, a file per variable (read by the runner, never in the ConfigMap).
SECRET_VARIABLES_DIR = "/slipway/secret-variables"
# Where an etcd-backup operation's Job mounts its cluster's directory of the backup volume, and the directory of
# its own it keeps the snapshots in there (etcd_backup_dir): the mounted directory is made by the kubelet, as root
# with the volume's group (a restricted pod can write into it but not change its mode, which the etcd role sets).
BACKUP_DIR = "/slipway/backups"
BACKUP_SNAPSHOTS = BACKUP_DIR + "/snapshots"
SSH_KEY_FILE = "id_ssh"
KUBECONFIG_KEY = "value"  # Cluster API's key in <cluster>-kubeconfig
ACTIVE_PHASES = ("Pending", "Running")


@dataclass
class JobSettings:  # pylint: disable=too-many-instance-attributes
    """How the controller runs Jobs (its command line, docs/fleet.md)."""

    image: str
    python: str = "/usr/bin/python3.11"
    image_pull_policy: str = "IfNotPresent"
    backoff_limit: int = 3
    active_deadline: int = 4 * 3600
    ttl_after_finished: int = 7 * 24 * 3600
    # The bundle: a PersistentVolumeClaim of this name in each tenant namespace, mounted read-only at bundle_mount
    # (where the controller reads its own copy too). Jobs mount no host directory: a tenant namespace may enforce
    # Pod Security "restricted".
    bundle_claim: str = ""
    bundle_mount: str = "/bundle"
    # Where etcd-backup operations keep their snapshots: a PersistentVolumeClaim of this name in each tenant
    # namespace, of which a Job mounts only its cluster's directory (subPath <cluster>).
    backup_claim: str = ""
    node_selector: dict = field(default_factory=dict)
    # Each Job's pod: its requests and limits (a tenant's Jobs cannot take a node's whole CPU or memory).
    resources: dict = field(default_factory=lambda: {"requests": {"cpu": "100m", "memory": "256Mi"},
                                                     "limits": {"cpu": "2", "memory": "2Gi"}})


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def owner(obj: dict, controller: bool = True) -> dict:
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"],
            "uid": obj["metadata"]["uid"], "controller": controller, "blockOwnerDeletion": True}


def operation_name(cluster: str, op_type: str, generation: int, salt: str = "") -> str:
    """<cluster>-<type>-<generation>-<hash>: unique per cluster, type, generation and attempt salt, at most 63."""
    digest = hashlib.sha256(f"{cluster}/{op_type}/{generation}/{salt}".encode()).hexdigest()[:5]
    head = f"{cluster[:40]}-{op_type}-{generation}"
    return f"{head[:57]}-{digest}"


def operation(cluster_obj: dict, op_type: str, hosts: list[str], generation: int, name: str,
              kubernetes_version: str = "") -> dict:
    body: dict[str, Any]
    body = {"apiVersion": fleet.API_VERSION, "kind": "SlipwayOperation",
            "metadata": {"name": name, "namespace": cluster_obj["metadata"]["namespace"],
                         "labels": {LABEL_CLUSTER: cluster_obj["metadata"]["name"],
                                    "app.kubernetes.io/managed-by": MANAGED_BY},
                         "ownerReferences": [owner(cluster_obj, controller=False)]},
            "spec": {"cluster": cluster_obj["metadata"]["name"], "type": op_type, "generation": generation}}
    if hosts:
        body["spec"]["hosts"] = sorted(set(hosts))
    if kubernetes_version:
        body["spec"]["kubernetesVersion"] = kubernetes_version
    return body


def input_config_map(op_obj: dict, cluster_obj: dict, run_spec: dict, variables: dict,  # pylint: disable=too-many-arguments
                     host_keys: dict[str, list[str]] | None = None, endpoint: str = "") -> dict:
    """The playbook's inputs: inventory.yml, vars.json and op.json (what the runner does), nothing secret: the
    secret variables are named (op.json's secretVariables), their values stay in the Secrets the Job mounts."""
    meta = op_obj["metadata"]
    cluster_meta = cluster_obj["metadata"]
    op_type = op_obj["spec"]["type"]
    run = {"cluster": cluster_meta["name"], "namespace": cluster_meta["namespace"], "clusterUID": cluster_meta["uid"],
           "operation": meta["name"], "type": op_type, "playbook": fleet.PLAYBOOKS[op_type],
           "kubeconfigSecret": f"{cluster_meta['name']}-kubeconfig",
           # The server the stored kubeconfig must name (kubeconfig.py's strict form).
           "endpoint": endpoint,
           # The hosts' SSH keys: pinned in the spec, or recorded at their first contact (status.hostKeys); a host
           # without is trusted on first use and its key reported back.
           "hostKeys": {host: list(keys) for host, keys in sorted((host_keys or {}).items())},
           "pinnedHosts": sorted(host["name"] for host in run_spec.get("hosts") or [] if host.get("hostKeys")),
           "secretVariables": fleet.secret_variable_formats(cluster_obj["spec"]),
           # After these the first control plane's admin kubeconfig is on the controller, to be stored.
           "storeKubeconfig": op_type in ("create", "converge", "scale", "upgrade", "renew-certs")}
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"],
                         "labels": {LABEL_CLUSTER: cluster_meta["name"], LABEL_OPERATION: meta["name"],
                                    "app.kubernetes.io/managed-by": MANAGED_BY},
                         "ownerReferences": [owner(op_obj)]},
            "data": {"inventory.yml": yaml.safe_dump(fleet.inventory(run_spec), sort_keys=False),
                     "vars.json": json.dumps(variables, indent=1, sort_keys=True),
                     "op.json": json.dumps(run, indent=1, sort_keys=True)}}


def runner_name(cluster: str) -> str:
    """The runner's ServiceAccount and Role: one per cluster, whatever the length of its name (a hash of the whole
    name, so two long names that share their first characters never share a Role)."""
    digest = hashlib.sha256(cluster.encode()).hexdigest()[:10]
    return f"slipway-fleet-{cluster[:38].rstrip('-')}-{digest}"


def runner_rbac(cluster_obj: dict, op_name: str) -> list[dict]:
    """The Job's ServiceAccount, and a Role that lets it create Secrets, read and write only <cluster>-kubeconfig
    (create cannot be limited to a name; it reads no other Secret), and report the host keys it met first into its
    own operation's status."""
    meta = cluster_obj["metadata"]
    name = runner_name(meta["name"])
    labels = {LABEL_CLUSTER: meta["name"], "app.kubernetes.io/managed-by": MANAGED_BY}
    base = {"name": name, "namespace": meta["namespace"], "labels": labels, "ownerReferences": [owner(cluster_obj)]}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": dict(base), "automountServiceAccountToken": True},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": dict(base),
         "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
                   {"apiGroups": [""], "resources": ["secrets"], "resourceNames": [f"{meta['name']}-kubeconfig"],
                    "verbs": ["get", "update", "patch"]},
                   {"apiGroups": [fleet.GROUP], "resources": [f"{fleet.OPERATIONS}/status"], "resourceNames": [op_name],
                    "verbs": ["get", "patch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": dict(base),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
         "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": meta["namespace"]}]},
    ]


def network_policy(cluster_obj: dict, spec: dict, api_ports: list[int]) -> dict:
    """What the cluster's Job pods may reach: SSH on its hosts, the API servers (its own and the management
    cluster's), and DNS; nothing may reach them. Hosts given by IP are reached only there; a host given by name
    (resolved in the pod) only on its SSH port."""
    meta = cluster_obj["metadata"]
    selector = {LABEL_CLUSTER: meta["name"], "app.kubernetes.io/managed-by": MANAGED_BY}
    by_port: dict[int, set[str]] = {}
    named_ports: set[int] = set()
    for host in spec.get("hosts") or []:
        port = int(host.get("port") or 22)
        try:
            by_port.setdefault(port, set()).add(str(ipaddress.ip_network(str(host["address"]))))
        except ValueError:
            named_ports.add(port)
    egress: list[dict[str, Any]] = [
        {"to": [{"ipBlock": {"cidr": cidr}} for cidr in sorted(cidrs)], "ports": [{"protocol": "TCP", "port": port}]}
        for port, cidrs in sorted(by_port.items()) if port not in named_ports]
    egress += [{"ports": [{"protocol": "TCP", "port": port} for port in sorted(named_ports)]}] if named_ports else []
    # The API servers are reached by their Service or endpoint address, which a policy cannot name in advance: by
    # port; DNS for hosts and endpoints given by name.
    egress.append({"ports": [{"protocol": "TCP", "port": port} for port in sorted(set(api_ports))]})
    egress.append({"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]})
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": runner_name(meta["name"]), "namespace": meta["namespace"], "labels": dict(selector),
                         "ownerReferences": [owner(cluster_obj)]},
            "spec": {"podSelector": {"matchLabels": selector}, "policyTypes": ["Ingress", "Egress"], "ingress": [],
                     "egress": egress}}


def has_backup_volume(settings: JobSettings) -> bool:
    return bool(settings.backup_claim)


def _secret_volume(spec: dict) -> dict | None:
    """One projected volume of every Secret key spec.secretVariablesFrom names, each file named by its variable.
    Optional: a missing Secret or key is found by the runner, which says which (a pod would wait for it silently)."""
    sources: dict[str, list[dict]] = {}
    for entry in spec.get("secretVariablesFrom") or []:
        ref = entry["secretKeyRef"]
        sources.setdefault(ref["name"], []).append({"key": ref["key"], "path": entry["variable"]})
    if not sources:
        return None
    return {"name": "secret-variables", "projected": {"defaultMode": 0o400, "sources": [
        {"secret": {"name": name, "optional": True, "items": items}} for name, items in sorted(sources.items())]}}


def job(op_obj: dict, cluster_obj: dict, settings: JobSettings) -> dict:
    """The Job of one operation: the runner in the image, the key and the kubeconfig as read-only files, volumes a
    restricted pod may have (no host directory), requests and limits."""
    meta = op_obj["metadata"]
    cluster = cluster_obj["metadata"]["name"]
    key_ref = cluster_obj["spec"]["sshKeySecretRef"]
    labels = {LABEL_CLUSTER: cluster, LABEL_OPERATION: meta["name"], "app.kubernetes.io/managed-by": MANAGED_BY}
    volumes = [
        {"name": "input", "configMap": {"name": meta["name"]}},
        {"name": "ssh", "secret": {"secretName": key_ref["name"], "defaultMode": 0o400,
                                   "items": [{"key": key_ref.get("key") or "ssh-privatekey", "path": SSH_KEY_FILE}]}},
        {"name": "kubeconfig", "secret": {"secretName": f"{cluster}-kubeconfig", "optional": True, "defaultMode": 0o400}},
        {"name": "work", "emptyDir": {}},
    ]
    mounts = [{"name": "input", "mountPath": INPUT_DIR, "readOnly": True},
              {"name": "ssh", "mountPath": SSH_DIR, "readOnly": True},
              {"name": "kubeconfig", "mountPath": KUBECONFIG_DIR, "readOnly": True},
              {"name": "work", "mountPath": WORK_DIR}]
    secrets = _secret_volume(cluster_obj["spec"])
    if secrets:
        volumes.append(secrets)
        mounts.append({"name": "secret-variables", "mountPath": SECRET_VARIABLES_DIR, "readOnly": True})
    if settings.bundle_claim:
        volumes.append({"name": "bundle", "persistentVolumeClaim": {"claimName": settings.bundle_claim, "readOnly": True}})
        mounts.append({"name": "bundle", "mountPath": settings.bundle_mount, "readOnly": True})
    # Only an etcd-backup operation mounts the backup volume, and only its own cluster's directory of it.
    if op_obj["spec"]["type"] == "etcd-backup" and has_backup_volume(settings):
        volumes.append({"name": "backups", "persistentVolumeClaim": {"claimName": settings.backup_claim}})
        mounts.append({"name": "backups", "mountPath": BACKUP_DIR, "subPath": cluster})
    pod = {
        "serviceAccountName": runner_name(cluster),
        "restartPolicy": "Never",
        "securityContext": {"runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532, "fsGroup": 65532,
                            "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{
            "name": CONTAINER, "image": settings.image, "imagePullPolicy": settings.image_pull_policy,
            "command": [settings.python, "-m", "slipway_fleet.runner"],
            "env": [{"name": "SLIPWAY_FLEET_INPUT", "value": INPUT_DIR}, {"name": "HOME", "value": WORK_DIR}],
            "volumeMounts": mounts,
            "resources": copy.deepcopy(settings.resources),
            # The runner's summary (recap, failed task, last lines) is the termination message; a pod killed before
            # writing one leaves the last lines of its log.
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "FallbackToLogsOnError",
            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                                "runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        }],
        "volumes": volumes,
    }
    if settings.node_selector:
        pod["nodeSelector"] = dict(settings.node_selector)
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"], "labels": labels,
                         "ownerReferences": [owner(op_obj)]},
            "spec": {"backoffLimit": settings.backoff_limit, "activeDeadlineSeconds": settings.active_deadline,
                     "ttlSecondsAfterFinished": settings.ttl_after_finished,
                     # A failed task fails the Job at once; a pod that died is run again (the playbook converges).
                     "podFailurePolicy": {"rules": [
                         {"action": "FailJob", "onExitCodes": {"containerName": CONTAINER, "operator": "In",
                                                               "values": [EXIT_PLAYBOOK_FAILED]}}]},
                     "template": {"metadata": {"labels": labels}, "spec": pod}}}


# --- reading the Job back ---------------------------------------------------------------------------------

@dataclass
class JobState:
    """What an operation's Job says: phase (Pending, Running, Succeeded, Failed), runs so far, the summary."""

    phase: str
    attempts: int = 0
    summary: dict = field(default_factory=dict)
    message: str = ""
    retried: int = 0  # runs that ended without finishing (pod killed, evicted...), each run again


def _terminated(pod: dict) -> dict | None:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if status.get("name") == CONTAINER:
            return ((status.get("state") or {}).get("terminated")
                    or (status.get("lastState") or {}).get("terminated"))
    return None


def summary_of(terminated: dict | None) -> dict:
    """The runner's JSON summary from a termination message, or the log's last lines when there is none."""
    if not terminated:
        return {}
    text = terminated.get("message") or ""
    try:
        data = json.loads(text)
        if isinstance(data, dict):
            return data
    except ValueError:
        pass
    lines = [line for line in text.splitlines() if line.strip()][-20:]
    return {"logTail": lines} if lines else {}


def job_state(job_obj: dict | None, pods: list[dict]) -> JobState:
    if job_obj is None:
        return JobState("Failed", message="the operation's Job is gone (deleted, or removed after ttlSecondsAfterFinished)")
    status = job_obj.get("status") or {}
    conditions = {c.get("type"): c for c in status.get("conditions") or [] if c.get("status") == "True"}
    ended = [(pod, term) for pod in pods for term in [_terminated(pod)] if term]
    # The runs in the order they ended (then started): the last one's summary is the operation's.
    finished = sorted(ended,
                      key=lambda item: (item[1].get("finishedAt") or "", item[0]["metadata"].get("creationTimestamp") or "",
                                        item[0]["metadata"].get("name") or ""))
    summary = summary_of(finished[-1][1]) if finished else {}
    # A pod that ended is first listed in uncountedTerminatedPods, its finalizer removed (the pod may be gone from
    # the API then), and only then added to failed or succeeded: count it in both places.
    uncounted = status.get("uncountedTerminatedPods") or {}
    failed = int(status.get("failed") or 0) + len(uncounted.get("failed") or [])
    attempts = failed + int(status.get("succeeded") or 0) + len(uncounted.get("succeeded") or []) + int(status.get("active") or 0)
    # Runs that ended unfinished and were run again. A pod deleted while it ran (kubectl delete, an eviction, a lost
    # node) is gone from the API by the time it is read, but the Job counts it as failed: while the Job goes on,
    # each failed run was one; a failed Job's last failure ended it. A killed pod still there (an exit code other
    # than the runner's 0 and 3) counts too, should the Job's count lag behind its pods.
    killed = sum(1 for _pod, term in finished if term.get("exitCode") not in (0, EXIT_PLAYBOOK_FAILED))
    retried = max(failed - 1, 0) if "Failed" in conditions else max(killed, failed)
    if "Complete" in conditions:
        return JobState("Succeeded", attempts, summary, retried=retried)
    if "Failed" in conditions:
        condition = conditions["Failed"]
        message = summary.get("message") or condition.get("message") or condition.get("reason") or "the Job failed"
        return JobState("Failed", attempts, summary, message=message, retried=retried)
    return JobState("Running" if status.get("active") or attempts else "Pending", attempts, summary, retried=retried)


def operation_status(state: JobState, job_name: str, started: str | None) -> dict:
    """The SlipwayOperation's status from its Job."""
    summary = state.summary
    status = {"phase": state.phase, "job": job_name, "attempts": state.attempts, "startTime": started or now()}
    for key in ("playbook", "failedHost", "failedTask"):
        if summary.get(key):
            status[key] = str(summary[key])
    if summary.get("recap"):
        status["recap"] = [{"host": host, **{k: int(v) for k, v in counts.items()}}
                           for host, counts in sorted(summary["recap"].items())]
    message = state.message or summary.get("message") or ""
    if message:
        status["message"] = str(message)[:2000]
    if summary.get("logTail"):
        status["logTail"] = [str(line)[:500] for line in summary["logTail"][-20:]]
    if state.phase in ("Succeeded", "Failed"):
        status["completionTime"] = now()
    return status


# --- conditions ---------------------------------------------------------------------------------------------

def condition(conditions: list[dict] | None, kind: str) -> dict | None:
    return next((c for c in conditions or [] if c.get("type") == kind), None)


def set_condition(conditions: list[dict] | None, kind: str, status: bool, reason: str, message: str,
                  generation: int) -> list[dict]:
    """The list with one condition set; its lastTransitionTime moves only when its status does."""
    text = "True" if status else "False"
    result = [dict(c) for c in conditions or [] if c.get("type") != kind]
    old = condition(conditions, kind)
    since = old["lastTransitionTime"] if old and old.get("status") == text and old.get("lastTransitionTime") else now()
    result.append({"type": kind, "status": text, "reason": reason, "message": message[:4000],
                   "observedGeneration": generation, "lastTransitionTime": since})
    return sorted(result, key=lambda c: c["type"])
