"""slipway-operator (operator/slipway_operator) against a real kube-apiserver (kube_apiserver.py).

playbooks/operator.yml deploys it (twice: the second run changes nothing); the Deployment gets no pod
here (no kubelet), so the operator then runs as a local process, as in its pod: with a token of the
ServiceAccount the playbook made (so its RBAC is what is tested), no ansible.cfg. It takes the Lease,
watches the ClusterConfiguration with kopf and reconciles through ansible-runner and
playbooks/kubesphere.yml. The test never runs playbooks/kubesphere.yml itself: it only patches the
resource and reads the cluster, the Events and the operator's /metrics.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import urllib.request
from pathlib import Path

import pytest
import yaml
from bench.operator import own_metrics

from conftest import ROOT, run
from kube_apiserver import fixture_kube_api, free_port, stop_processes  # pylint: disable=unused-import  # its API server, for this module
from test_cluster_configuration_api import CC_PATH, CRD_PATH, ansible_env, ensure_namespace, remove_crd, wait_for

LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/kubesphere-system/leases/slipway-operator"
EVENTS_PATH = "/api/v1/namespaces/kubesphere-system/events"
SA_PATH = "/api/v1/namespaces/kubesphere-system/serviceaccounts/slipway-operator"
DEPLOYMENT_PATH = "/apis/apps/v1/namespaces/kubesphere-system/deployments/slipway-operator"
MERGE = "application/merge-patch+json"
MONITORING_CRDS = ROOT / "roles" / "kubesphere" / "files" / "crds" / "monitoring.coreos.com.yml"
# What ks-installer leaves after installing KubeSphere's defaults (tests/unit/fixtures/ks-installer-v3.3-status.yaml):
# core and monitoring enabled, without slipway's record, so they count as installed and current. The
# operator then starts on a cluster with nothing to do, as it does after moving from ks-installer.
KS_INSTALLER_STATUS = {"core": {"status": "enabled", "enabledTime": "2023-06-21T12:20:31CST", "version": "v3.4.1"},
                       "monitoring": {"status": "enabled", "enabledTime": "2023-06-21T12:26:53CST"}}


def metrics(port: int) -> dict[str, float]:
    """The operator's /metrics as {'name{labels}': value}."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        return own_metrics(answer.read().decode())


def component_status(kube_api, key: str) -> str | None:
    obj = kube_api.request("get", CC_PATH) or {}
    return ((obj.get("status") or {}).get(key) or {}).get("status")


def event_reasons(kube_api) -> list[tuple[str, str]]:
    events = kube_api.request("get", EVENTS_PATH)["items"]
    return [(event["reason"], event["message"]) for event in events
            if event.get("reportingComponent") == "slipway-operator"]


def deploy(kube_api, workdir: Path) -> dict:
    """playbooks/operator.yml from the controller with the admin kubeconfig: the ansible.posix.json output."""
    result = run([str(ROOT / ".venv/bin/ansible-playbook"), str(ROOT / "playbooks" / "operator.yml"),
                  "-e", f"operator_kubeconfig={kube_api.kubeconfig}"], env=ansible_env(kube_api), cwd=workdir)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return json.loads(result.stdout)


def service_account_kubeconfig(kube_api, path: Path) -> Path:
    """A kubeconfig with a token of the operator's ServiceAccount, as its pod would have: the RBAC under test."""
    token = kube_api.request("post", f"{SA_PATH}/token", body={
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}})["status"]["token"]
    config = json.loads(kube_api.kubeconfig.read_text())
    config["users"] = [{"name": "admin", "user": {"token": token}}]
    path.write_text(json.dumps(config))
    path.chmod(0o600)
    return path


@pytest.fixture(name="deployed", scope="module")
def fixture_deployed(kube_api, tmp_path_factory):
    """A cluster without the ClusterConfiguration CRD, then playbooks/operator.yml run twice."""
    workdir = tmp_path_factory.mktemp("deploy")
    remove_crd(kube_api)
    return deploy(kube_api, workdir), deploy(kube_api, workdir)


@pytest.fixture(name="operator", scope="module")
def fixture_operator(kube_api, deployed, tmp_path_factory):  # pylint: disable=unused-argument  # deployed: the RBAC
    """A fresh ClusterConfiguration (empty spec) and the operator process watching it, with the
    ServiceAccount and RBAC that playbooks/operator.yml made."""
    workdir = tmp_path_factory.mktemp("operator")
    # monitoring's CRDs, as its installation left them (alerting's ThanosRuler is one of them).
    for crd in yaml.safe_load(MONITORING_CRDS.read_text()):
        if crd and kube_api.request("get", f"{CRD_PATH.rsplit('/', 1)[0]}/{crd['metadata']['name']}") is None:
            kube_api.request("post", CRD_PATH.rsplit("/", 1)[0], body=crd)
    ensure_namespace(kube_api, "kubesphere-system")
    ensure_namespace(kube_api, "kubesphere-monitoring-system")
    wait_for(lambda: _create_cc(kube_api), "the ClusterConfiguration to be created")
    kube_api.request("patch", CC_PATH + "/status", body={"status": KS_INSTALLER_STATUS}, content_type=MERGE)
    extra = workdir / "vars.yml"
    # No kubelet here: Deployments never get pods, so the role must not wait for them; nothing is pulled.
    extra.write_text(yaml.safe_dump({"kubesphere_wait": False, "kubesphere_image_pull_policy": "Never"}))
    kubeconfig = service_account_kubeconfig(kube_api, workdir / "kubeconfig")
    port = free_port()
    log = workdir / "operator.log"
    env = {**os.environ, "PATH": f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}"}
    # As in its pod: no ansible.cfg, no KUBECONFIG; everything it needs is on its command line.
    for name in ("KUBECONFIG", "ANSIBLE_CONFIG", "K8S_AUTH_KUBECONFIG"):
        env.pop(name, None)
    with log.open("wb") as handle:
        proc = subprocess.Popen(  # pylint: disable=consider-using-with  # stopped below
            [str(ROOT / ".venv" / "bin" / "python"), "-m", "slipway_operator", "--kubeconfig", str(kubeconfig),
             "--collections-path", str(ROOT / ".cache" / "collections"), "--extra-vars", str(extra), "--port", str(port),
             "--debounce", "1", "--resync", "3600", "--identity", "test-operator", "--workdir", str(workdir / "runner")],
            env=env, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_operator((proc, port, log), lambda: _answers(port), "the operator's /readyz to answer")
        yield proc, port, log
    finally:
        stop_processes([proc])


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False


def _create_cc(kube_api) -> bool:
    try:
        kube_api.request("post", CC_PATH.rsplit("/", 1)[0], body={
            "apiVersion": "installer.kubesphere.io/v1alpha1", "kind": "ClusterConfiguration",
            "metadata": {"name": "ks-installer", "namespace": "kubesphere-system"}, "spec": {}})
    except Exception:  # pylint: disable=broad-exception-caught  # the CRD's API may take a moment to be served
        return False
    return True


# Upper bounds for a loaded CI machine, not durations under test (a reconcile takes seconds when idle).
WAIT = 300.0


def wait_operator(operator, predicate, what: str, timeout: float = WAIT):
    proc, _port, log = operator

    def check():
        if proc.poll() is not None:
            raise AssertionError(f"the operator exited with {proc.returncode}:\n" + Path(log).read_text()[-4000:])
        return predicate()
    try:
        return wait_for(check, what, timeout=timeout)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- operator log\n" + Path(log).read_text()[-4000:]) from None


class TestOperator:
    """Each test builds on the one before, on one ClusterConfiguration.

    Switching a component on and off with the Events it records, a status-only write that triggers nothing,
    the leader killed in the middle of a reconcile and the resync are checked on the lab by the kubesphere
    scenario (molecule/kubesphere/verify_operator.yml), with the operator's image in its pods."""

    def test_the_playbook_deploys_it_once(self, kube_api, deployed):
        first, second = deployed
        assert first["stats"]["localhost"]["changed"] > 0
        assert second["stats"]["localhost"]["changed"] == 0, [task["task"]["name"] for play in second["plays"]
                                                              for task in play["tasks"] if task["hosts"]["localhost"].get("changed")]
        assert kube_api.request("get", CRD_PATH)["spec"]["versions"][0]["subresources"] == {"status": {}}
        deployment = kube_api.request("get", DEPLOYMENT_PATH)
        assert deployment["spec"]["replicas"] == 2
        pod = deployment["spec"]["template"]["spec"]
        assert pod["serviceAccountName"] == "slipway-operator"
        container = pod["containers"][0]
        assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
        assert container["ports"] == [{"name": "metrics", "containerPort": 8080, "protocol": "TCP"}]
        assert kube_api.request("get", SA_PATH) is not None

    def test_first_reconcile_has_nothing_to_do_after_ks_installer(self, kube_api, operator):
        _proc, port, _log = operator
        wait_operator(operator, lambda: metrics(port).get('slipway_operator_reconciles_total{result="success"}', 0) >= 1,
                      "the first reconcile")
        assert component_status(kube_api, "core") == "enabled"
        assert component_status(kube_api, "monitoring") == "enabled"
        values = metrics(port)
        assert values["slipway_operator_leader"] == 1
        assert values['slipway_operator_components{status="enabled"}'] == 2
        assert values['slipway_operator_components{status="failed"}'] == 0
        lease = kube_api.request("get", LEASE_PATH)
        assert lease["spec"]["holderIdentity"] == "test-operator"
        assert event_reasons(kube_api) == [], "nothing changed, so no Event"
        # kopf keeps its record in an annotation, never in status (ks-installer's format).
        cc = kube_api.request("get", CC_PATH)
        assert cc["status"] == KS_INSTALLER_STATUS, "a reconcile with nothing to do writes no status"
        assert any(key.startswith("operator.slipway.io/") for key in cc["metadata"].get("annotations", {}))

    def test_sigterm_releases_the_lease(self, kube_api, operator):
        proc, _port, _log = operator
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert kube_api.request("get", LEASE_PATH)["spec"]["holderIdentity"] == ""
