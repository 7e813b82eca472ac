"""The fleet (operator/slipway_fleet, operator/crds/fleet.slipway.io.yml) against a real kube-apiserver.

First the CRDs alone: good edits pass, and each edit no playbook can make is refused by the API server itself
(CEL rules, no webhook) with the message that says what to do instead. Then the controller as a process, with
kopf and a token of the ServiceAccount of operator/rbac/slipway-fleet.yml (so its RBAC is what is tested):
SlipwayClusters become SlipwayOperations and Jobs. No kubelet or Job controller
runs here, so the test plays their part through the API: it writes the Jobs' pods and statuses (a pod killed
mid-run, a run that ends with a recap, a failed task) and checks what the controller makes of them. Nothing
contacts a host: the hosts are TEST-NET addresses no Job ever runs against.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import urllib.request
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from kube_apiserver import fixture_kube_api, free_port, stop_processes  # pylint: disable=unused-import  # its API server, for this module
from slipway_fleet import jobs, runner
from slipway_fleet import spec as fleet
from test_cluster_configuration_api import ensure_namespace, wait_for

CRDS = ROOT / "operator" / "crds" / "fleet.slipway.io.yml"
CRD_API = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
MERGE = "application/merge-patch+json"
# Upper bounds for a loaded CI machine, not durations under test.
WAIT = 120.0


def clusters(namespace: str) -> str:
    return f"/apis/fleet.slipway.io/v1alpha1/namespaces/{namespace}/slipwayclusters"


def operations(namespace: str) -> str:
    return f"/apis/fleet.slipway.io/v1alpha1/namespaces/{namespace}/slipwayoperations"


def a_cluster(name: str, **spec) -> dict:
    body = {"kubernetesVersion": "1.36.5", "sshKeySecretRef": {"name": "fleet-ssh"}, "artifacts": {"source": "upstream"},
            "hosts": [{"name": "cp1", "address": "192.0.2.11", "roles": ["control_plane"]},
                      {"name": "w1", "address": "192.0.2.21", "roles": ["worker"]}]}
    body.update(spec)
    return {"apiVersion": "fleet.slipway.io/v1alpha1", "kind": "SlipwayCluster", "metadata": {"name": name}, "spec": body}


def refusal(call) -> str:
    """The API server's answer to an edit that must be refused (it raises); the edit passing fails the test."""
    try:
        call()
    except Exception as exc:  # pylint: disable=broad-exception-caught  # the dynamic client's 422
        return str(getattr(exc, "body", "") or exc)
    raise AssertionError("the API server accepted an edit it must refuse")


@pytest.fixture(name="crds", scope="module")
def fixture_crds(kube_api):
    for crd in yaml.safe_load(CRDS.read_text())["items"]:
        kube_api.request("post", CRD_API, body=crd)
    for crd in yaml.safe_load(CRDS.read_text())["items"]:
        wait_for(lambda name=crd["metadata"]["name"]: any(
            c["type"] == "Established" and c["status"] == "True"
            for c in (kube_api.request("get", f"{CRD_API}/{name}").get("status") or {}).get("conditions") or []),
            f"{crd['metadata']['name']} to be established", timeout=WAIT)
    return True


# --- the CRDs: structural schemas, defaults, printer columns, CEL rules ----------------------------------------

class TestResources:
    NS = "crds"

    @pytest.fixture(autouse=True, scope="class")
    @classmethod
    def leave_no_cluster(cls, kube_api, crds):  # pylint: disable=unused-argument
        """The clusters made here hold their hosts (status.created): gone before the controller's tests."""
        yield
        kube_api.request("delete", clusters(cls.NS))

    def edit(self, kube_api, name: str, spec: dict):
        return kube_api.request("patch", f"{clusters(self.NS)}/{name}", body={"spec": spec}, content_type=MERGE)

    def created(self, kube_api, name: str, **spec) -> dict:
        """A SlipwayCluster whose hosts were touched (status.created, as the controller writes it)."""
        ensure_namespace(kube_api, self.NS)
        obj = kube_api.request("post", clusters(self.NS), body=a_cluster(name, **spec))
        kube_api.request("patch", f"{clusters(self.NS)}/{name}/status", content_type=MERGE,
                         body={"status": {"created": True, "phase": "Running", "kubernetesVersion": obj["spec"]["kubernetesVersion"]}})
        return obj

    def test_defaults_and_columns(self, kube_api, crds):  # pylint: disable=unused-argument
        obj = self.created(kube_api, "defaults")
        assert obj["spec"]["network"] == {"podCIDR": "10.233.64.0/18", "serviceCIDR": "10.233.0.0/18",
                                          "nodeCIDRMaskSize": 24, "dnsDomain": "cluster.local", "cni": "flannel"}
        assert obj["spec"]["deletionPolicy"] == "Reset" and obj["spec"]["hosts"][0]["port"] == 22
        assert obj["spec"]["sshKeySecretRef"]["key"] == "ssh-privatekey"
        crd = kube_api.request("get", f"{CRD_API}/slipwayclusters.fleet.slipway.io")
        version = crd["spec"]["versions"][0]
        assert [c["name"] for c in version["additionalPrinterColumns"] if not c.get("priority")] == \
            ["Phase", "Version", "Nodes Ready", "Age"]
        assert version["subresources"] == {"status": {}}
        # Structural: unknown fields are dropped, except in KubeSphere's free-form ClusterConfiguration.
        kept = self.edit(kube_api, "defaults", {"bogus": 1, "kubesphere": {"clusterConfiguration": {"devops": {"enabled": True}}}})
        assert "bogus" not in kept["spec"]
        assert kept["spec"]["kubesphere"]["clusterConfiguration"] == {"devops": {"enabled": True}}

    def test_good_edits_pass(self, kube_api, crds):  # pylint: disable=unused-argument
        self.created(kube_api, "good")
        hosts = a_cluster("x")["spec"]["hosts"] + [{"name": "w2", "address": "192.0.2.22", "roles": ["worker"]}]
        assert len(self.edit(kube_api, "good", {"hosts": hosts})["spec"]["hosts"]) == 3
        assert self.edit(kube_api, "good", {"kubernetesVersion": "1.36.7"})["spec"]["kubernetesVersion"] == "1.36.7"
        assert self.edit(kube_api, "good", {"kubernetesVersion": "1.37.1"})["spec"]["kubernetesVersion"] == "1.37.1"
        # A second control plane, then the first removed: one of the control planes stays.
        with_cp2 = hosts + [{"name": "cp2", "address": "192.0.2.12", "roles": ["control_plane"]}]
        self.edit(kube_api, "good", {"hosts": with_cp2})
        without_cp1 = [host for host in with_cp2 if host["name"] != "cp1"]
        assert [h["name"] for h in self.edit(kube_api, "good", {"hosts": without_cp1})["spec"]["hosts"]] == ["w1", "w2", "cp2"]

    def test_a_cluster_not_created_yet_may_change_its_network(self, kube_api, crds):  # pylint: disable=unused-argument
        ensure_namespace(kube_api, self.NS)
        kube_api.request("post", clusters(self.NS), body=a_cluster("fresh"))
        network = {"podCIDR": "10.50.0.0/16"}
        assert self.edit(kube_api, "fresh", {"network": network})["spec"]["network"]["podCIDR"] == "10.50.0.0/16"

    @pytest.mark.parametrize("name, spec, says", [
        ("podnet", {"network": {"podCIDR": "10.50.0.0/16"}},
         "the pod and service networks of a created cluster cannot change (they are 10.233.64.0/18 and 10.233.0.0/18"),
        ("svcnet", {"network": {"serviceCIDR": "10.96.0.0/12"}}, "for other networks create a new SlipwayCluster"),
        ("twominors", {"kubernetesVersion": "1.38.0"},
         "1.38.0 is more than one minor after 1.36.5 and kubeadm upgrades one minor at a time: set a release of the minor "
         "after 1.36.5 first"),
        ("downgrade", {"kubernetesVersion": "1.36.4"}, "1.36.4 is older than 1.36.5 and kubeadm cannot downgrade"),
        ("etcdmode", {"etcd": {"mode": "external"}}, "the etcd of a created cluster stays stacked"),
        ("lastcp", {"hosts": [{"name": "cp9", "address": "192.0.2.19", "roles": ["control_plane"]},
                              {"name": "w1", "address": "192.0.2.21", "roles": ["worker"]}]},
         "this edit removes every control plane the cluster has: keep at least one of them; to replace them, "
         "add the new control plane first"),
        ("nocp", {"hosts": [{"name": "w1", "address": "192.0.2.21", "roles": ["worker"]}]},
         "no host has the role control_plane"),
        ("settingvar", {"variables": {"slipway_pod_cidr": "10.9.0.0/16"}}, "move them there"),
    ])
    def test_bad_edits_are_refused_by_the_api_server(self, kube_api, crds, name, spec, says):  # pylint: disable=unused-argument,too-many-arguments
        self.created(kube_api, name)
        answer = refusal(lambda: self.edit(kube_api, name, spec))
        assert says in answer, answer

    def test_a_version_beyond_the_running_one_is_refused_even_in_two_edits(self, kube_api, crds):  # pylint: disable=unused-argument
        self.created(kube_api, "steps")
        self.edit(kube_api, "steps", {"kubernetesVersion": "1.37.1"})  # accepted; the cluster still runs 1.36.5
        answer = refusal(lambda: self.edit(kube_api, "steps", {"kubernetesVersion": "1.38.0"}))
        assert "the cluster runs 1.36.5 and 1.38.0 is more than one minor after it" in answer, answer

    @pytest.mark.parametrize("op_type", sorted(fleet.PLAYBOOKS))
    def test_every_operation_the_controller_makes_is_a_type_of_the_crd(self, kube_api, crds, op_type):  # pylint: disable=unused-argument
        ensure_namespace(kube_api, self.NS)
        made = kube_api.request("post", operations(self.NS), body={
            "apiVersion": "fleet.slipway.io/v1alpha1", "kind": "SlipwayOperation", "metadata": {"name": f"every-{op_type}"},
            "spec": {"cluster": "good", "type": op_type, "hosts": ["w1"], "generation": 1}})
        assert made["spec"]["type"] == op_type

    def test_an_operation_does_not_change(self, kube_api, crds):  # pylint: disable=unused-argument
        ensure_namespace(kube_api, self.NS)
        body = {"apiVersion": "fleet.slipway.io/v1alpha1", "kind": "SlipwayOperation", "metadata": {"name": "backup-1"},
                "spec": {"cluster": "good", "type": "etcd-backup"}}
        kube_api.request("post", operations(self.NS), body=body)
        answer = refusal(lambda: kube_api.request("patch", f"{operations(self.NS)}/backup-1", content_type=MERGE,
                                                  body={"spec": {"type": "reset"}}))
        assert "an operation is the record of one run and does not change" in answer, answer
        answer = refusal(lambda: kube_api.request("post", operations(self.NS), body={
            **body, "metadata": {"name": "scale-1"}, "spec": {"cluster": "good", "type": "scale"}}))
        assert "name at least one" in answer, answer


# --- the controller ------------------------------------------------------------------------------------------

NS = "fleet"


def metrics(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    values = {}
    for line in text.splitlines():
        match = re.match(r"^(slipway_fleet_[a-z_]+(?:\{[^}]*\})?) (\S+)$", line)
        if match:
            values[match.group(1)] = float(match.group(2))
    return values


RBAC = ROOT / "operator" / "rbac" / "slipway-fleet.yml"
ADMISSION = ROOT / "operator" / "admission" / "fleet.slipway.io.yml"
PATHS = {"ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts", "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
         "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
         "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
         "ValidatingAdmissionPolicy": "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
         "ValidatingAdmissionPolicyBinding": "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
         "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"}


def apply_list(kube_api, path: Path) -> None:
    """Each object of one of operator/'s List files, created as the fleet role applies it."""
    for obj in yaml.safe_load(path.read_text())["items"]:
        kube_api.request("post", PATHS[obj["kind"]].format(ns=obj["metadata"].get("namespace", "")), body=obj)


def service_account_kubeconfig(kube_api, path: Path, namespaces: tuple[str, ...] = ("fleet",)) -> Path:
    """operator/rbac/slipway-fleet.yml applied, its namespace rights bound in ``namespaces`` (as the fleet role binds
    them in the watched ones), and a kubeconfig with a token of its ServiceAccount: the controller runs with exactly
    the rights those files give."""
    apply_list(kube_api, RBAC)
    for namespace in namespaces:
        kube_api.request("post", PATHS["RoleBinding"].format(ns=namespace), body={
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "slipway-fleet"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "slipway-fleet-namespace"},
            "subjects": [{"kind": "ServiceAccount", "name": "slipway-fleet", "namespace": "slipway-fleet"}]})
    token = kube_api.request("post", "/api/v1/namespaces/slipway-fleet/serviceaccounts/slipway-fleet/token", body={
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}})["status"]["token"]
    config = json.loads(kube_api.kubeconfig.read_text())
    config["users"] = [{"name": "admin", "user": {"token": token}}]
    path.write_text(json.dumps(config))
    path.chmod(0o600)
    return path


@pytest.fixture(name="controller", scope="module")
def fixture_controller(kube_api, crds, tmp_path_factory):  # pylint: disable=unused-argument
    workdir = tmp_path_factory.mktemp("fleet")
    for namespace in (NS, "slipway-fleet"):
        ensure_namespace(kube_api, namespace)
    kube_api.request("post", f"/api/v1/namespaces/{NS}/secrets", body={
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "fleet-ssh"}, "type": "kubernetes.io/ssh-auth",
        "stringData": {"ssh-privatekey": "-----BEGIN OPENSSH PRIVATE KEY-----\nsecret-test-key\n-----END OPENSSH PRIVATE KEY-----\n"}})
    kubeconfig = service_account_kubeconfig(kube_api, workdir / "kubeconfig")
    apply_list(kube_api, ADMISSION)
    proc, port, log = launch_controller(workdir, kubeconfig, [NS], "--max-parallel", "1", "--backup-claim", "fleet-backups")
    try:
        yield proc, port, log
    finally:
        stop_processes([proc])


def launch_controller(workdir: Path, kubeconfig: Path, namespaces: list[str], *extra: str):
    """python -m slipway_fleet as a process, with ``kubeconfig`` (a token of its ServiceAccount), watching
    ``namespaces``: (process, metrics port, log file). The caller stops it (stop_processes)."""
    port = free_port()
    log = workdir / "controller.log"
    env = dict(os.environ)
    for name in ("KUBECONFIG", "ANSIBLE_CONFIG"):
        env.pop(name, None)
    with log.open("wb") as handle:
        proc = subprocess.Popen(  # pylint: disable=consider-using-with  # stopped by the caller
            [str(ROOT / ".venv" / "bin" / "python"), "-m", "slipway_fleet", "--kubeconfig", str(kubeconfig),
             *[arg for namespace in namespaces for arg in ("--namespace", namespace)],
             "--collections-path", str(ROOT / ".cache" / "collections"), "--port", str(port),
             "--resync", "2", "--image", "localhost/slipway/operator:test", "--identity", "test-fleet",
             "--lease-namespace", "slipway-fleet", *extra],
            env=env, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    return proc, port, log


def wait_controller(controller, predicate, what: str):
    proc, _port, log = controller

    def check():
        if proc.poll() is not None:
            raise AssertionError(f"the controller exited with {proc.returncode}:\n" + Path(log).read_text()[-4000:])
        return predicate()
    try:
        return wait_for(check, what, timeout=WAIT)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- controller log\n" + Path(log).read_text()[-6000:]) from None


def get(kube_api, name: str) -> dict:
    return kube_api.request("get", f"{clusters(NS)}/{name}") or {}


def ops_of(kube_api, cluster: str) -> list[dict]:
    items = kube_api.request("get", operations(NS))["items"]
    return sorted((op for op in items if op["spec"]["cluster"] == cluster), key=lambda op: op["metadata"]["creationTimestamp"])


def events(kube_api, name: str) -> list[tuple[str, str]]:
    items = kube_api.request("get", f"/api/v1/namespaces/{NS}/events")["items"]
    return [(e["reason"], e["message"]) for e in items
            if e.get("reportingComponent") == "slipway-fleet" and e["involvedObject"]["name"] == name]


def status_of(obj: dict, key: str):
    return (obj.get("status") or {}).get(key)


def cluster_when(kube_api, name: str, predicate) -> dict | None:
    """The SlipwayCluster once ``predicate`` holds for it, else None."""
    obj = get(kube_api, name)
    return obj if obj and predicate(obj) else None


def operation_when(kube_api, name: str, predicate) -> dict | None:
    """The SlipwayOperation once ``predicate`` holds for it, else None."""
    obj = kube_api.request("get", f"{operations(NS)}/{name}")
    return obj if obj and predicate(obj) else None


def condition(obj: dict, kind: str) -> dict:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == kind), {})


def run_pod(kube_api, op_name: str, cluster: str, index: int, exit_code: int, message: str,  # pylint: disable=too-many-arguments
            namespace: str = NS) -> None:
    """A pod of the operation's Job that ran and ended (the kubelet's part)."""
    name = f"{op_name}-run{index}"
    # Its ServiceAccount comes with the Job; the Job comes after the SlipwayOperation.
    wait_for(lambda: kube_api.request("get", f"/apis/batch/v1/namespaces/{namespace}/jobs/{op_name}"), f"the Job {op_name}",
             timeout=WAIT)
    labels = {jobs.LABEL_OPERATION: op_name, jobs.LABEL_CLUSTER: cluster, "app.kubernetes.io/managed-by": "slipway-fleet"}
    kube_api.request("post", f"/api/v1/namespaces/{namespace}/pods", body={
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
        # The runner's account (the controller made it; no controller manager makes "default" here).
        # A restricted pod, as the Job's (its namespace may enforce Pod Security restricted).
        "spec": {"restartPolicy": "Never", "serviceAccountName": jobs.runner_name(cluster), "automountServiceAccountToken": False,
                 "securityContext": {"runAsNonRoot": True, "runAsUser": 65532, "seccompProfile": {"type": "RuntimeDefault"}},
                 "containers": [{"name": jobs.CONTAINER, "image": "localhost/slipway/operator:test", "securityContext": {
                     "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}]}})
    kube_api.request("patch", f"/api/v1/namespaces/{namespace}/pods/{name}/status", content_type=MERGE, body={"status": {
        "phase": "Failed" if exit_code else "Succeeded",
        "containerStatuses": [{"name": jobs.CONTAINER, "image": "localhost/slipway/operator:test", "imageID": "", "ready": False,
                               "restartCount": 0, "state": {"terminated": {
                                   "exitCode": exit_code, "message": message, "reason": "Error" if exit_code else "Completed",
                                   "startedAt": "2026-01-01T00:00:00Z", "finishedAt": f"2026-01-01T00:0{index}:00Z"}}}]}})


def job_status(kube_api, op_name: str, status: dict, namespace: str = NS) -> None:
    """The Job controller's part: the Job's counts and conditions (once the controller has made the Job: it makes
    the SlipwayOperation first)."""
    wait_for(lambda: kube_api.request("get", f"/apis/batch/v1/namespaces/{namespace}/jobs/{op_name}"), f"the Job {op_name}",
             timeout=WAIT)
    kube_api.request("patch", f"/apis/batch/v1/namespaces/{namespace}/jobs/{op_name}/status", content_type=MERGE,
                     body={"status": status})


def finished(kind: str, reason: str = "") -> list[dict]:
    now = "2026-01-01T00:02:00Z"
    first = {"SuccessCriteriaMet" if kind == "Complete" else "FailureTarget"}
    return [{"type": t, "status": "True", "reason": reason or "Done", "message": "", "lastProbeTime": now,
             "lastTransitionTime": now} for t in sorted(first) + [kind]]


SUMMARY = {"playbook": "site.yml", "status": "successful", "rc": 0,
           "recap": {"cp1": {"ok": 120, "changed": 60, "failed": 0, "unreachable": 0, "skipped": 30, "rescued": 0, "ignored": 0},
                     "w1": {"ok": 80, "changed": 40, "failed": 0, "unreachable": 0, "skipped": 20, "rescued": 0, "ignored": 0}},
           "logTail": ["PLAY RECAP ****", "cp1 : ok=120 changed=60", "w1 : ok=80 changed=40"]}


class TestController:
    """Each test builds on the one before: alpha is created, edited while it runs, grown; beta waits for the one
    slot (--max-parallel 1); gamma fails preflight; alpha is deleted and reset."""

    def test_a_cluster_becomes_a_create_operation_and_its_job(self, kube_api, controller):
        # Its endpoint is this API server (an external load balancer's address), whose nodes the controller reads
        # with the kubeconfig a later test stores.
        kube_api.request("post", clusters(NS), body=a_cluster("alpha", controlPlaneEndpoint={
            "mode": "external", "address": kube_api.server.removeprefix("https://")}))
        op = wait_controller(controller, lambda: (ops_of(kube_api, "alpha") or [None])[0], "alpha's create operation")
        assert op["spec"]["type"] == "create" and op["spec"]["hosts"] == ["cp1", "w1"]
        name = op["metadata"]["name"]
        job = wait_controller(controller, lambda: kube_api.request("get", f"/apis/batch/v1/namespaces/{NS}/jobs/{name}"),
                              "the Job")
        pod = job["spec"]["template"]["spec"]
        assert pod["containers"][0]["command"][1:] == ["-m", "slipway_fleet.runner"]
        assert next(v for v in pod["volumes"] if v["name"] == "ssh")["secret"]["secretName"] == "fleet-ssh"
        inputs = kube_api.request("get", f"/api/v1/namespaces/{NS}/configmaps/{name}")["data"]
        assert yaml.safe_load(inputs["inventory.yml"])["all"]["children"]["kube_node"]["hosts"] == {"w1": {}}
        assert json.loads(inputs["vars.json"])["slipway_kubernetes_version"] == "1.36.5"
        assert "secret-test-key" not in json.dumps(inputs) and "secret-test-key" not in json.dumps(job)
        obj = wait_controller(controller, lambda: cluster_when(kube_api, "alpha", lambda o: status_of(o, "phase") == "Provisioning"),
                              "alpha Provisioning")
        assert jobs.FINALIZER in obj["metadata"]["finalizers"]
        assert obj["status"]["lastOperation"]["name"] == name and obj["status"]["created"] is True
        assert obj["status"]["endpoint"] == kube_api.server
        assert condition(obj, "PreflightPassed")["status"] == "True"
        assert any(reason == "OperationStarted" for reason, _message in events(kube_api, "alpha"))

    def test_a_second_cluster_waits_for_a_slot(self, kube_api, controller):
        kube_api.request("post", clusters(NS), body=a_cluster("beta", hosts=[
            {"name": "cp1", "address": "192.0.2.31", "roles": ["control_plane"]}]))
        wait_controller(controller, lambda: any(r == "WaitingForSlot" for r, _message in events(kube_api, "beta")), "beta to wait")
        assert ops_of(kube_api, "beta") == []
        assert metrics(controller[1])["slipway_fleet_clusters_waiting"] == 1

    def test_an_edit_during_the_operation_waits_and_a_pod_killed_is_run_again(self, kube_api, controller):
        hosts = a_cluster("x")["spec"]["hosts"] + [{"name": "w2", "address": "192.0.2.22", "roles": ["worker"]}]
        kube_api.request("patch", f"{clusters(NS)}/alpha", body={"spec": {"hosts": hosts}}, content_type=MERGE)
        name = ops_of(kube_api, "alpha")[0]["metadata"]["name"]
        run_pod(kube_api, name, "alpha", 1, 137, "")
        job_status(kube_api, name, {"failed": 1, "active": 1, "startTime": "2026-01-01T00:00:00Z"})
        op = wait_controller(controller, lambda: operation_when(kube_api, name, lambda op: status_of(op, "attempts") == 2),
                             "the second run")
        assert op["status"]["phase"] == "Running" and op["status"]["reruns"] == 1
        assert [r for r, _message in events(kube_api, "alpha")].count("PlaybookRerun") == 1
        assert len(ops_of(kube_api, "alpha")) == 1, "the edit waits for the operation in progress"

    def test_the_job_completes_the_spec_is_applied_and_the_edit_follows_as_a_scale(self, kube_api, controller):
        name = ops_of(kube_api, "alpha")[0]["metadata"]["name"]
        run_pod(kube_api, name, "alpha", 2, 0, json.dumps(SUMMARY))
        job_status(kube_api, name, {"failed": 1, "succeeded": 1, "active": 0, "completionTime": "2026-01-01T00:02:00Z",
                                    "conditions": finished("Complete")})
        scale = wait_controller(controller, lambda: next((op for op in ops_of(kube_api, "alpha")
                                                          if op["spec"]["type"] == "scale"), None), "the scale of w2")
        assert scale["spec"]["hosts"] == ["w2"]
        create = kube_api.request("get", f"{operations(NS)}/{name}")["status"]
        assert create["phase"] == "Succeeded" and create["attempts"] == 2 and create["reruns"] == 1
        assert {entry["host"]: entry["changed"] for entry in create["recap"]} == {"cp1": 60, "w1": 40}
        assert create["logTail"][-1] == "w1 : ok=80 changed=40"
        obj = wait_controller(controller, lambda: cluster_when(kube_api, "alpha", lambda o: status_of(o, "phase") == "Scaling"),
                              "alpha Scaling")
        applied = json.loads(obj["status"]["appliedSpec"]["json"])
        assert [h["name"] for h in applied["hosts"]] == ["cp1", "w1"], "the create applied the spec it started with"
        assert obj["status"]["kubernetesVersion"] == "1.36.5"
        assert ops_of(kube_api, "beta") == [], "alpha's next step took the slot first"
        values = metrics(controller[1])
        assert values['slipway_fleet_operations_total{result="succeeded",type="create"}'] == 1
        assert values['slipway_fleet_operation_duration_seconds_count{type="create"}'] == 1
        assert values["slipway_fleet_playbook_reruns_total"] == 1

    def test_the_nodes_of_the_created_cluster_are_read_with_its_kubeconfig(self, kube_api, controller):
        # The runner's part: the kubeconfig stored as Cluster API's Secret, here pointing at this API server;
        # the created cluster's Nodes, here written as its kubelets would.
        admin = kube_api.kubeconfig.read_text()
        run = {"kubeconfigSecret": "alpha-kubeconfig", "namespace": NS, "cluster": "alpha",
               "clusterUID": get(kube_api, "alpha")["metadata"]["uid"]}
        from kubernetes import config  # pylint: disable=import-outside-toplevel
        runner.store_kubeconfig(config.new_client_from_config(config_file=str(kube_api.kubeconfig)), run, admin)
        runner.store_kubeconfig(config.new_client_from_config(config_file=str(kube_api.kubeconfig)), run, admin)  # again: patched
        secret = kube_api.request("get", f"/api/v1/namespaces/{NS}/secrets/alpha-kubeconfig")
        assert secret["type"] == "cluster.x-k8s.io/secret" and base64.b64decode(secret["data"]["value"]).decode() == admin
        assert secret["metadata"]["ownerReferences"][0]["kind"] == "SlipwayCluster"
        for node, ready in (("cp1", "True"), ("w1", "False")):
            kube_api.request("post", "/api/v1/nodes", body={"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})
            kube_api.request("patch", f"/api/v1/nodes/{node}/status", content_type=MERGE, body={"status": {
                "conditions": [{"type": "Ready", "status": ready, "reason": "KubeletReady", "message": "",
                                "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                "nodeInfo": {"kubeletVersion": "v1.36.5", "machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "",
                             "osImage": "", "containerRuntimeVersion": "", "kubeProxyVersion": "", "operatingSystem": "linux",
                             "architecture": "amd64"}}})
        obj = wait_controller(controller, lambda: cluster_when(kube_api, "alpha", lambda o: status_of(o, "nodesReady") == "1/2"),
                              "alpha's nodes")
        assert {n["name"]: (n["ready"], n["kubernetesVersion"]) for n in obj["status"]["nodes"]} == \
            {"cp1": (True, "v1.36.5"), "w1": (False, "v1.36.5")}
        assert condition(obj, "Ready")["status"] == "False" and "w1" in condition(obj, "Ready")["message"]

    def test_the_runners_account_writes_its_kubeconfig_and_reads_no_other_secret(self, kube_api, controller):  # pylint: disable=unused-argument
        token = kube_api.request("post", f"/api/v1/namespaces/{NS}/serviceaccounts/{jobs.runner_name('alpha')}/token", body={
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 600}})["status"]["token"]
        from kubernetes import client  # pylint: disable=import-outside-toplevel
        from kubernetes.client.exceptions import ApiException  # pylint: disable=import-outside-toplevel
        conf = client.Configuration()
        conf.host, conf.ssl_ca_cert = kube_api.server, str(kube_api.ca_cert)
        conf.api_key = {"authorization": f"Bearer {token}"}
        as_runner = client.ApiClient(conf)
        run = {"kubeconfigSecret": "alpha-kubeconfig", "namespace": NS, "cluster": "alpha",
               "clusterUID": get(kube_api, "alpha")["metadata"]["uid"]}
        runner.store_kubeconfig(as_runner, run, "apiVersion: v1\nkind: Config\n")
        with pytest.raises(ApiException) as denied:
            client.CoreV1Api(as_runner).read_namespaced_secret("fleet-ssh", NS)
        assert denied.value.status == 403
        # Put the working kubeconfig back for the node reads.
        runner.store_kubeconfig(as_runner, run, kube_api.kubeconfig.read_text())

    def test_a_pod_deleted_while_it_runs_is_counted_and_run_again(self, kube_api, controller):
        """kubectl delete pod on the scale's first run: the pod is gone from the API (no terminated state to read),
        the Job counts it failed and runs the playbook again."""
        scale = next(op for op in ops_of(kube_api, "alpha") if op["spec"]["type"] == "scale")["metadata"]["name"]
        # The Job controller's order: the ended pod listed as uncounted (its finalizer removed, the pod gone), the
        # next run started, then the pod counted as failed. The rerun is told once.
        job_status(kube_api, scale, {"active": 1, "startTime": "2026-01-01T00:00:00Z",
                                     "uncountedTerminatedPods": {"failed": ["6a1f0c9e-0000-4000-8000-000000000001"]}})
        op = wait_controller(controller, lambda: operation_when(kube_api, scale, lambda op: status_of(op, "reruns") == 1),
                             "the scale's rerun")
        assert op["status"]["phase"] == "Running" and op["status"]["attempts"] == 2
        job_status(kube_api, scale, {"failed": 1, "active": 1, "startTime": "2026-01-01T00:00:00Z",
                                     "uncountedTerminatedPods": {"failed": []}})
        wait_controller(controller, lambda: operation_when(kube_api, scale, lambda op: status_of(op, "attempts") == 2
                                                           and status_of(op, "reruns") == 1), "the scale's second read")
        rerun = [message for reason, message in events(kube_api, "alpha") if reason == "PlaybookRerun"]
        assert len(rerun) == 2 and any(scale in message and "scale.yml" in message for message in rerun)
        assert metrics(controller[1])["slipway_fleet_playbook_reruns_total"] == 2

    def test_a_spec_the_model_refuses_gets_no_job(self, kube_api, controller):
        hosts = [{"name": "cp1", "address": "192.0.2.41", "roles": ["control_plane"]}]
        kube_api.request("post", clusters(NS), body=a_cluster("gamma", controlPlaneEndpoint={"mode": "vip"}, hosts=hosts,
                                                              network={"podCIDR": "10.233.0.0/16"}))
        obj = wait_controller(controller, lambda: cluster_when(kube_api, "gamma", lambda o: condition(o, "PreflightPassed").get("status") == "False"),
                              "gamma's preflight")
        message = condition(obj, "PreflightPassed")["message"]
        assert message.startswith("2 problem(s), no host touched"), message
        assert "spec.controlPlaneEndpoint.address (slipway_control_plane_endpoint)" in message
        assert "spec.network.podCIDR (slipway_pod_cidr)" in message
        assert obj["status"]["phase"] == "Failed" and not obj["status"].get("created")
        assert [r for r, _message in events(kube_api, "gamma")] == ["PreflightFailed"]
        assert ops_of(kube_api, "gamma") == []
        jobs_of = [j for j in kube_api.request("get", f"/apis/batch/v1/namespaces/{NS}/jobs")["items"]
                   if j["metadata"]["labels"].get(jobs.LABEL_CLUSTER) == "gamma"]
        assert jobs_of == []

    def test_deleting_a_cluster_never_created_touches_nothing(self, kube_api, controller):
        kube_api.request("delete", f"{clusters(NS)}/gamma")
        wait_controller(controller, lambda: kube_api.request("get", f"{clusters(NS)}/gamma") is None, "gamma to go")
        assert ops_of(kube_api, "gamma") == []

    def test_a_failed_task_fails_the_operation_and_frees_the_slot(self, kube_api, controller):
        scale = next(op for op in ops_of(kube_api, "alpha") if op["spec"]["type"] == "scale")["metadata"]["name"]
        failure = {"playbook": "scale.yml", "failedHost": "w2", "failedTask": "Join the node",
                   "message": "kubeadm join: connection refused", "recap": {"w2": {"ok": 12, "failed": 1}}}
        run_pod(kube_api, scale, "alpha", 2, jobs.EXIT_PLAYBOOK_FAILED, json.dumps(failure))
        job_status(kube_api, scale, {"failed": 2, "active": 0, "startTime": "2026-01-01T00:00:00Z",
                                     "conditions": finished("Failed", "PodFailurePolicy")})
        obj = wait_controller(controller, lambda: cluster_when(kube_api, "alpha", lambda o: status_of(o, "phase") == "Failed"),
                              "alpha Failed")
        message = condition(obj, "OperationSucceeded")["message"]
        assert "failed on w2 in task 'Join the node': kubeadm join: connection refused" in message, message
        assert ("OperationFailed", message) in events(kube_api, "alpha")
        assert kube_api.request("get", f"{operations(NS)}/{scale}")["status"]["reruns"] == 1, "its end is no rerun"
        beta = wait_controller(controller, lambda: (ops_of(kube_api, "beta") or [None])[0], "beta's create")
        assert beta["spec"]["type"] == "create"
        assert len([op for op in ops_of(kube_api, "alpha") if op["spec"]["type"] == "scale"]) == 1, \
            "the same spec is not tried again by itself"

    def test_deleting_a_created_cluster_resets_its_hosts(self, kube_api, controller):
        beta = ops_of(kube_api, "beta")[0]["metadata"]["name"]
        kube_api.request("delete", f"{clusters(NS)}/alpha")
        obj = get(kube_api, "alpha")
        assert obj["metadata"].get("deletionTimestamp") and jobs.FINALIZER in obj["metadata"]["finalizers"]
        run_pod(kube_api, beta, "beta", 1, 0, json.dumps(SUMMARY))
        job_status(kube_api, beta, {"succeeded": 1, "active": 0, "startTime": "2026-01-01T00:00:00Z",
                                    "completionTime": "2026-01-01T00:02:00Z", "conditions": finished("Complete")})
        reset = wait_controller(controller, lambda: next((op for op in ops_of(kube_api, "alpha")
                                                          if op["spec"]["type"] == "reset"), None), "alpha's reset")
        assert reset["spec"]["hosts"] == ["cp1", "w1", "w2"], "w2's failed scale may have touched it"
        # The operation is written first, then its ConfigMap (owned by it) and its Job: wait for the inputs too.
        inputs = wait_controller(controller, lambda: kube_api.request(
            "get", f"/api/v1/namespaces/{NS}/configmaps/{reset['metadata']['name']}"), "the reset's inputs")["data"]
        assert json.loads(inputs["vars.json"])["reset_confirm"] == "yes"
        assert json.loads(inputs["op.json"])["playbook"] == "reset.yml"
        wait_controller(controller, lambda: cluster_when(kube_api, "alpha", lambda o: status_of(o, "phase") == "Deleting"),
                        "alpha Deleting")
        name = reset["metadata"]["name"]
        run_pod(kube_api, name, "alpha", 1, 0, json.dumps({**SUMMARY, "playbook": "reset.yml"}))
        job_status(kube_api, name, {"succeeded": 1, "active": 0, "startTime": "2026-01-01T00:00:00Z",
                                    "completionTime": "2026-01-01T00:02:00Z", "conditions": finished("Complete")})
        wait_controller(controller, lambda: kube_api.request("get", f"{clusters(NS)}/alpha") is None, "alpha to go")
        assert get(kube_api, "beta")["status"]["phase"] == "Running"
        values = metrics(controller[1])
        assert values['slipway_fleet_operations_total{result="succeeded",type="reset"}'] == 1
        assert values['slipway_fleet_operations_total{result="failed",type="scale"}'] == 1

    def test_a_cluster_made_with_site_yml_is_adopted_and_nothing_runs(self, kube_api, controller, tmp_path):
        """playbooks/fleet_adopt.yml on the sample inventory (no host contacted) writes and applies the SlipwayCluster;
        the first reconcile records it as applied and runs no operation."""
        inventory = tmp_path / "inventory"
        subprocess.run(["cp", "-r", str(ROOT / "inventories" / "sample"), str(inventory)], check=True)
        env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
        result = subprocess.run(
            [str(ROOT / ".venv" / "bin" / "ansible-playbook"), "-i", str(inventory / "hosts.yml"),
             str(ROOT / "playbooks" / "fleet_adopt.yml"), "-e", "fleet_adopt_ssh_secret=fleet-ssh", "-e", "fleet_adopt_name=adopted",
             "-e", f"fleet_adopt_kubeconfig={kube_api.kubeconfig}", "-e", f"fleet_adopt_namespace={NS}",
             "-e", '{"fleet_adopt_variables": ["node_join_token_ttl"]}', "-e", "node_join_token_ttl=30m"],
            env=env, capture_output=True, text=True, timeout=300, check=False)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
        written = yaml.safe_load((inventory / "artifacts" / "slipwaycluster.yml").read_text())
        assert written["metadata"]["annotations"] == {"fleet.slipway.io/adopt": "true"}
        assert [(h["name"], h["roles"], h.get("ip")) for h in written["spec"]["hosts"]] == [
            ("cp1", ["control_plane"], None), ("cp2", ["control_plane"], None), ("cp3", ["control_plane"], None),
            ("node1", ["worker"], None), ("node2", ["worker"], "198.51.100.22")]
        assert written["spec"]["variables"] == {"node_join_token_ttl": '"30m"'}
        obj = wait_controller(controller, lambda: cluster_when(kube_api, "adopted", lambda o: status_of(o, "phase") == "Running"),
                              "the adopted cluster Running")
        assert obj["status"]["kubernetesVersion"] == "1.37.1" and obj["status"]["created"] is True
        assert json.loads(obj["status"]["appliedSpec"]["json"])["hosts"] == obj["spec"]["hosts"]
        assert [r for r, _message in events(kube_api, "adopted")] == ["Adopted"]
        assert ops_of(kube_api, "adopted") == []

    def test_an_operation_a_user_writes_runs_on_a_running_cluster(self, kube_api, controller):
        assert get(kube_api, "beta")["status"]["phase"] == "Running"
        kube_api.request("post", operations(NS), body={
            "apiVersion": "fleet.slipway.io/v1alpha1", "kind": "SlipwayOperation", "metadata": {"name": "beta-backup-1"},
            "spec": {"cluster": "beta", "type": "etcd-backup"}})
        job = wait_controller(controller, lambda: kube_api.request("get", f"/apis/batch/v1/namespaces/{NS}/jobs/beta-backup-1"),
                              "the backup's Job")
        assert job["metadata"]["ownerReferences"][0]["name"] == "beta-backup-1"
        inputs = kube_api.request("get", f"/api/v1/namespaces/{NS}/configmaps/beta-backup-1")["data"]
        assert json.loads(inputs["op.json"])["playbook"] == "etcd_backup.yml"
        assert yaml.safe_load(inputs["inventory.yml"])["all"]["hosts"]["cp1"]["ansible_host"] == "192.0.2.31"
        # The snapshots go to the backup volume (--backup-claim), beyond the pod's life: the Job mounts its cluster's
        # directory of it only.
        assert json.loads(inputs["vars.json"])["etcd_backup_dir"] == "/slipway/backups/snapshots"
        pod = job["spec"]["template"]["spec"]
        assert {"name": "backups", "persistentVolumeClaim": {"claimName": "fleet-backups"}} in pod["volumes"]
        assert {"name": "backups", "mountPath": "/slipway/backups", "subPath": "beta"} in pod["containers"][0]["volumeMounts"]
        obj = wait_controller(controller, lambda: cluster_when(
            kube_api, "beta", lambda o: (status_of(o, "lastOperation") or {}).get("name") == "beta-backup-1"), "beta's last operation")
        assert obj["status"]["lastOperation"]["type"] == "etcd-backup" and obj["status"]["lastOperation"]["phase"] in ("Pending", "Running")
        run_pod(kube_api, "beta-backup-1", "beta", 1, 0, json.dumps({**SUMMARY, "playbook": "etcd_backup.yml"}))
        job_status(kube_api, "beta-backup-1", {"succeeded": 1, "active": 0, "startTime": "2026-01-01T00:00:00Z",
                                               "completionTime": "2026-01-01T00:02:00Z", "conditions": finished("Complete")})
        wait_controller(controller, lambda: cluster_when(kube_api, "beta", lambda o: status_of(o, "lastOperation")["phase"] == "Succeeded"),
                        "the backup to succeed")
        assert kube_api.request("get", f"{operations(NS)}/beta-backup-1")["status"]["phase"] == "Succeeded"
        assert get(kube_api, "beta")["status"]["phase"] == "Running"
