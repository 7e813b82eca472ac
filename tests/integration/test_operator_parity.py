"""One implementation: playbooks/kubesphere.yml and slipway-operator make the same objects and status.

Against the real kube-apiserver of kube_apiserver.py, with three control-plane Node objects (so
ks-installer's replicas rule gives 3 in both paths):
1. playbooks/kubesphere.yml from the controller with the admin kubeconfig installs core, monitoring,
   alerting and metrics_server; the objects and the status are read. (The logging components' RBAC is
   exercised on the lab, where the operator's resync reapplies them: molecule/kubesphere.)
2. Those objects are deleted and the status emptied, leaving the same ClusterConfiguration.
3. playbooks/operator.yml deploys the operator's ServiceAccount, RBAC and settings; the operator then
   runs from the bundle's image (podman, host network, read-only root) with a token of that
   ServiceAccount and the settings the role wrote, as in its pod: so its RBAC is what the components
   need, and the image's Python, wheels and collections are all a reconcile needs. This checkout's
   collection and operator are mounted over the image's own copies, so that a bundle built from an
   older checkout still tests this one (the Molecule scenario runs the image as built). It reconciles
   on start.
4. Its objects and status are read and compared with the playbook's: the same objects (kind,
   namespace, name) with the same content, and the same status, but for what is generated anew
   each time (uids, timestamps, the webhook certificates' keys).
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import tarfile

import pytest
import yaml

from bundler import pyimage
from conftest import ROOT, run
from kube_apiserver import BUNDLE_DIR, fixture_kube_api, free_port  # pylint: disable=unused-import  # its API server, for this module
from test_cluster_configuration_api import CC_PATH, ansible_env, remove_crd, run_role, wait_for
from test_operator import metrics, service_account_kubeconfig

IMAGE = BUNDLE_DIR / "images" / "slipway-operator.tar"
SPEC = {"authentication": {"jwtSecret": "parity-test-jwt-secret-0123456789"},
        "alerting": {"enabled": True},
        "metrics_server": {"enabled": True}}
SETTINGS = {"kubesphere_image_pull_policy": "Never", "kubesphere_wait": False,
            "metrics_server_image": "registry.k8s.io/metrics-server/metrics-server:v0.9.0",
            "metrics_server_kubelet_insecure_tls": True}
WANTED = {"core", "monitoring", "alerting", "metrics_server"}
CONTROL_PLANES = ("parity-cp1", "parity-cp2", "parity-cp3")
# Where the components' objects are: namespaced kinds in their namespaces, cluster-scoped kinds.
NAMESPACES = ("kubesphere-system", "kubesphere-monitoring-system", "kubesphere-logging-system", "kube-system")
NAMESPACED = ("/api/v1/{ns}/serviceaccounts", "/api/v1/{ns}/services", "/api/v1/{ns}/configmaps", "/api/v1/{ns}/secrets",
              "/apis/apps/v1/{ns}/deployments", "/apis/apps/v1/{ns}/statefulsets", "/apis/apps/v1/{ns}/daemonsets",
              "/apis/batch/v1/{ns}/cronjobs", "/apis/rbac.authorization.k8s.io/v1/{ns}/rolebindings",
              "/apis/monitoring.coreos.com/v1/{ns}/prometheuses", "/apis/monitoring.coreos.com/v1/{ns}/alertmanagers",
              "/apis/monitoring.coreos.com/v1/{ns}/servicemonitors", "/apis/monitoring.coreos.com/v1/{ns}/thanosrulers",
              "/apis/fluentbit.fluent.io/v1alpha2/{ns}/fluentbits")
CLUSTER = ("/apis/rbac.authorization.k8s.io/v1/clusterroles", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
           "/apis/apiregistration.k8s.io/v1/apiservices", "/apis/fluentbit.fluent.io/v1alpha2/clusterinputs",
           "/apis/fluentbit.fluent.io/v1alpha2/clusterfilters", "/apis/fluentbit.fluent.io/v1alpha2/clusteroutputs",
           "/apis/fluentbit.fluent.io/v1alpha2/clusterfluentbitconfigs", "/apis/iam.kubesphere.io/v1alpha2/globalroles",
           "/apis/iam.kubesphere.io/v1alpha2/globalrolebindings")
# Made by the API server or anew on every install, so never the same twice.
GENERATED_METADATA = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "selfLink")
WAIT = 600.0
FIELD_MANAGER = "slipway-kubesphere"
CONFIG_HASH = "kubesphere.io/config-hash"


def ours(obj: dict) -> bool:
    """An object the components applied: both paths apply with the kubesphere role's field manager."""
    return any(entry.get("manager") == FIELD_MANAGER for entry in obj["metadata"].get("managedFields") or [])


def snapshot(kube_api) -> dict[str, dict]:
    """Every object of the components, by 'path/name', without what is generated anew."""
    objects = {}
    for template in NAMESPACED:
        for namespace in NAMESPACES:
            path = template.format(ns=f"namespaces/{namespace}")
            objects.update(_listed(kube_api, path))
    for path in CLUSTER:
        objects.update(_listed(kube_api, path))
    return objects


def _listed(kube_api, path: str) -> dict[str, dict]:
    answer = kube_api.request("get", path)
    found = {}
    for obj in (answer or {}).get("items", []):
        kind = answer["kind"].removesuffix("List")
        obj = {"kind": kind, **obj}
        if ours(obj):
            found[f"{path}/{obj['metadata']['name']}"] = normalize(obj)
    return found


def normalize(obj: dict) -> dict:
    obj = copy.deepcopy(obj)
    meta = obj["metadata"]
    for key in GENERATED_METADATA:
        meta.pop(key, None)
    obj.pop("status", None)
    if obj["kind"] == "Secret" and obj.get("type") == "kubernetes.io/tls":
        obj["data"] = sorted(obj.get("data", {}))  # keys and certificates made anew: only which are there
    if obj["kind"] == "Secret" and meta["name"] == "kubesphere-admin":
        obj["data"] = sorted(obj.get("data", {}))  # the admin password, generated on every first install
    if obj["kind"] == "Deployment":  # the restart annotation hashes the JWT Secret's resourceVersion: only that it is there
        annotations = obj.get("spec", {}).get("template", {}).get("metadata", {}).get("annotations") or {}
        if CONFIG_HASH in annotations:
            annotations[CONFIG_HASH] = "<set>"
    for webhook in obj.get("webhooks", []):
        webhook.get("clientConfig", {}).pop("caBundle", None)
    if obj["kind"] == "APIService":
        obj["spec"].pop("caBundle", None)
    if obj["kind"] == "Service":  # allocated by the API server
        for key in ("clusterIP", "clusterIPs"):
            obj["spec"].pop(key, None)
    return obj


def differences(before, after, where: str = "") -> list[str]:
    """The paths where two objects differ."""
    if isinstance(before, dict) and isinstance(after, dict):
        return [diff for key in sorted(set(before) | set(after))
                for diff in differences(before.get(key), after.get(key), f"{where}.{key}")]
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [diff for index, (one, other) in enumerate(zip(before, after))
                for diff in differences(one, other, f"{where}[{index}]")]
    return [] if before == after else [f"{where}: {before!r} != {after!r}"[:300]]


def component_status(status: dict) -> dict:
    """Each component's status entry without its time (enabledTime is when it was installed)."""
    result = {}
    for key, value in (status or {}).items():
        if isinstance(value, dict) and "status" in value:
            entry = {k: v for k, v in value.items() if k != "enabledTime"}
            result[key] = entry
        elif isinstance(value, dict):
            result[key] = component_status(value)
    return result


def statuses(status: dict) -> list[str]:
    """Every component's status, nested ones included."""
    found = []
    for value in status.values():
        if isinstance(value, dict):
            found.extend([value["status"]] if "status" in value else statuses(value))
    return sorted(found)


@pytest.fixture(name="nodes", scope="module")
def fixture_nodes(kube_api):
    """Three control-plane Nodes (objects only: no kubelet), removed afterwards."""
    for name in CONTROL_PLANES:
        kube_api.request("post", "/api/v1/nodes", body={
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"node-role.kubernetes.io/control-plane": ""}}})
    yield CONTROL_PLANES
    for name in CONTROL_PLANES:
        kube_api.request("delete", f"/api/v1/nodes/{name}")


def load_image() -> str:
    """The bundle's operator image in podman's store; its reference."""
    with tarfile.open(IMAGE) as archive:
        manifest = json.load(archive.extractfile("manifest.json"))
    ref = manifest[0]["RepoTags"][0]
    result = subprocess.run(["podman", "load", "-q", "-i", str(IMAGE)], capture_output=True, text=True, check=False,
                            env={**os.environ, "CONTAINERS_CONF": str(ROOT / "lab" / "containers.conf")})
    assert result.returncode == 0, result.stderr
    return ref


def test_playbook_and_operator_make_the_same_objects_and_status(kube_api, nodes, tmp_path):  # pylint: disable=unused-argument,too-many-locals
    remove_crd(kube_api)
    # 1. the playbook, as an administrator runs it
    played = run_role(kube_api, tmp_path, {"spec": SPEC}, **SETTINGS)
    assert played.returncode == 0, played.summary() or played.stderr[-3000:]
    by_playbook = snapshot(kube_api)
    status_by_playbook = component_status(kube_api.request("get", CC_PATH)["status"])
    assert statuses(status_by_playbook) == ["enabled"] * len(WANTED), played.summary()
    deployments = "/apis/apps/v1/namespaces/kubesphere-system/deployments/"
    assert by_playbook[deployments + "ks-controller-manager"]["spec"]["replicas"] == 3, "one per control-plane node"
    assert by_playbook[deployments + "ks-apiserver"]["spec"]["replicas"] == 1, "its token cache is in memory: one replica"
    assert "/apis/apps/v1/namespaces/kube-system/deployments/metrics-server" in by_playbook

    # 2. nothing of it left but the ClusterConfiguration
    for path in sorted(by_playbook, reverse=True):
        kube_api.request("delete", path)
    assert snapshot(kube_api) == {}
    kube_api.request("put", CC_PATH + "/status", body={**kube_api.request("get", CC_PATH), "status": {}})

    # 3. the operator from its image, with its ServiceAccount and the settings playbooks/operator.yml wrote
    deployed = run([str(ROOT / ".venv/bin/ansible-playbook"), str(ROOT / "playbooks" / "operator.yml"),
                    "-e", f"operator_kubeconfig={kube_api.kubeconfig}", "-e", json.dumps({"operator_kubesphere_vars": SETTINGS})],
                   env=ansible_env(kube_api), cwd=tmp_path)
    assert deployed.returncode == 0, deployed.stdout[-3000:] + deployed.stderr[-3000:]
    settings = kube_api.request("get", "/api/v1/namespaces/kubesphere-system/configmaps/slipway-operator")["data"]["vars.yml"]
    assert yaml.safe_load(settings) == SETTINGS
    (tmp_path / "vars.yml").write_text(settings)
    kubeconfig = service_account_kubeconfig(kube_api, tmp_path / "kubeconfig")
    for path in (kubeconfig, tmp_path / "vars.yml"):
        path.chmod(0o644)  # readable by the image's user (65532)
    ref = load_image()
    port = free_port()
    name = f"slipway-operator-parity-{port}"
    log = tmp_path / "operator.log"
    env = {**os.environ, "CONTAINERS_CONF": str(ROOT / "lab" / "containers.conf")}
    with log.open("wb") as handle:
        proc = subprocess.Popen(  # pylint: disable=consider-using-with  # stopped below
            ["podman", "run", "--rm", "--name", name, "--network", "host", "--read-only", "--tmpfs", "/tmp",
             "-v", f"{kubeconfig}:/etc/slipway-operator/kubeconfig:ro", "-v", f"{tmp_path / 'vars.yml'}:/etc/slipway-operator/vars.yml:ro",
             # This checkout's collection and operator over the image's copies (a bundle built from an older
             # checkout still tests this one): the image gives Python, the wheels and the other collections.
             "-v", f"{ROOT}:{pyimage.COLLECTIONS_ROOT}/slipway/cluster:ro",
             "-v", f"{ROOT / 'operator' / 'slipway_operator'}:{pyimage.SITE_PACKAGES}/slipway_operator:ro",
             ref, "--kubeconfig", "/etc/slipway-operator/kubeconfig", "--extra-vars", "/etc/slipway-operator/vars.yml",
             "--port", str(port), "--debounce", "1", "--resync", "3600", "--identity", "parity", "--workdir", "/tmp/slipway-operator"],
            env=env, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        def reconciled():
            if proc.poll() is not None:
                raise AssertionError(f"the operator exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
            try:
                values = metrics(port)
            except OSError:
                return False
            return sum(value for key, value in values.items() if key.startswith("slipway_operator_reconciles_total")) >= 1
        try:
            wait_for(reconciled, "the operator's first reconcile", timeout=WAIT)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n--- operator log\n{log.read_text()[-6000:]}") from None
        values = metrics(port)
        assert values['slipway_operator_reconciles_total{result="success"}'] == 1, log.read_text()[-6000:]
        assert values["slipway_operator_playbook_runs_total"] == 1
    finally:
        subprocess.run(["podman", "stop", "-t", "10", name], capture_output=True, check=False, env=env)
        proc.wait(timeout=60)

    # 4. the same objects and the same status
    by_operator = snapshot(kube_api)
    assert sorted(by_operator) == sorted(by_playbook)
    differing = {path: differences(by_playbook[path], by_operator[path]) for path in by_playbook
                 if by_operator[path] != by_playbook[path]}
    assert not differing, differing
    assert component_status(kube_api.request("get", CC_PATH)["status"]) == status_by_playbook
