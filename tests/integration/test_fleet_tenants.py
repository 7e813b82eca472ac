"""The fleet's tenants (docs/security.md, "The fleet's tenants") against a real kube-apiserver and the real controller.

A tenant is a ServiceAccount of its namespace bound to operator/rbac/slipway-fleet-tenant.yml's ClusterRole: it may
write SlipwayClusters, SlipwayOperations and Secrets there and nothing else. The controller runs as a process with a
token of operator/rbac/slipway-fleet.yml's account, watching the namespaces `fleet` (another team's, whose cluster
`prod` is created) and `team-a` (the tenant's). Each attack the tenant tries is refused: by the API server (the CRD's
patterns, the adoption policy, RBAC), or by the controller before any Job, with no process started (a marker file an
exec plugin or a template would write), no request sent (a listener counts connections) and nothing of the attack
kept. No kubelet or Job controller runs here: the test writes the Jobs' pods and statuses as they would. No host is
contacted: the hosts are TEST-NET addresses.
"""

from __future__ import annotations

import base64
import json
import socket
import threading
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from kube_apiserver import fixture_kube_api, stop_processes  # pylint: disable=unused-import  # its API server, for this module
from test_cluster_configuration_api import ensure_namespace
from test_fleet import (ADMISSION, MERGE, PATHS, SUMMARY, apply_list, clusters, finished, fixture_crds,  # pylint: disable=unused-import
                        job_status, launch_controller, operations, refusal, run_pod, service_account_kubeconfig, wait_controller)

from slipway_fleet import jobs  # noqa: E402  pylint: disable=wrong-import-position,wrong-import-order

TENANT_NS, OTHER_NS, UNWATCHED = "team-a", "fleet", "team-z"
TENANT_ROLE = ROOT / "operator" / "rbac" / "slipway-fleet-tenant.yml"
# A pod network over the service network: the model refuses it, so no operation starts for the cluster.
OVERLAP = {"podCIDR": "10.233.0.0/16"}


def spec(*addresses: str, **more) -> dict:
    hosts = [{"name": f"n{index}", "address": address, "roles": ["control_plane" if index == 0 else "worker"]}
             for index, address in enumerate(addresses)]
    return {"kubernetesVersion": "1.36.5", "sshKeySecretRef": {"name": "ssh"}, "artifacts": {"source": "upstream"},
            "hosts": hosts, **more}


def body(name: str, cluster_spec: dict, **meta) -> dict:
    return {"apiVersion": "fleet.slipway.io/v1alpha1", "kind": "SlipwayCluster", "metadata": {"name": name, **meta},
            "spec": cluster_spec}


class Tenant:
    """The REST API as the tenant's ServiceAccount (its token), with the client's own error on a refusal."""

    def __init__(self, kube_api, token: str):
        from kubernetes import client  # pylint: disable=import-outside-toplevel
        from kubernetes.dynamic import DynamicClient  # pylint: disable=import-outside-toplevel
        from kube_apiserver import _NoDiscovery  # pylint: disable=import-outside-toplevel
        config = client.Configuration()
        config.host, config.ssl_ca_cert = kube_api.server, str(kube_api.ca_cert)
        config.api_key = {"authorization": f"Bearer {token}"}
        self.api = client.ApiClient(config)
        self._dynamic = DynamicClient(self.api, discoverer=_NoDiscovery)

    def request(self, method: str, path: str, body=None, content_type: str | None = None):  # pylint: disable=redefined-outer-name
        params = {"content_type": content_type} if content_type else {}
        return self._dynamic.request(method, path, body=body, serializer=lambda _client, data: data, **params)


class Listener:
    """A TCP port on loopback that counts the connections made to it (a server a tenant names)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _addr = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()


@pytest.fixture(name="fleet", scope="module")
def fixture_fleet(kube_api, crds, tmp_path_factory):  # pylint: disable=unused-argument
    """The controller watching fleet and team-a, the tenant's token, and a listener."""
    workdir = tmp_path_factory.mktemp("tenants")
    for namespace in (TENANT_NS, OTHER_NS, UNWATCHED, "slipway-fleet"):
        ensure_namespace(kube_api, namespace)
    # The tenant's namespace enforces Pod Security restricted, as the fleet role labels it.
    kube_api.request("patch", f"/api/v1/namespaces/{TENANT_NS}", content_type=MERGE, body={"metadata": {"labels": {
        "pod-security.kubernetes.io/enforce": "restricted"}}})
    kubeconfig = service_account_kubeconfig(kube_api, workdir / "kubeconfig", (TENANT_NS, OTHER_NS))
    apply_list(kube_api, ADMISSION)
    apply_list(kube_api, TENANT_ROLE)
    kube_api.request("post", PATHS["ServiceAccount"].format(ns=TENANT_NS), body={
        "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "tenant"}})
    kube_api.request("post", PATHS["RoleBinding"].format(ns=TENANT_NS), body={
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "tenant"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "slipway-fleet-tenant"},
        "subjects": [{"kind": "ServiceAccount", "name": "tenant", "namespace": TENANT_NS}]})
    token = kube_api.request("post", f"/api/v1/namespaces/{TENANT_NS}/serviceaccounts/tenant/token", body={
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}})["status"]["token"]
    proc, port, log = launch_controller(workdir, kubeconfig, [OTHER_NS, TENANT_NS], "--max-parallel", "6",
                                        "--max-parallel-per-namespace", "2", "--backup-claim", "slipway-fleet-backups",
                                        "--bundle-claim", "slipway-fleet-bundle")
    try:
        yield {"tenant": Tenant(kube_api, token), "proc": proc, "port": port, "log": log, "listener": Listener(),
               "marker": workdir / "marker"}
    finally:
        stop_processes([proc])


def waited(fleet, predicate, what: str):
    """``predicate``'s answer once it has one, while the controller runs (its log's end in the failure)."""
    return wait_controller((fleet["proc"], fleet["port"], fleet["log"]), predicate, what)


def cluster_when(fleet, kube_api, namespace: str, name: str, predicate, what: str) -> dict:  # pylint: disable=too-many-arguments
    """The SlipwayCluster once ``predicate`` holds for it."""
    return waited(fleet, lambda: next((obj for obj in [get(kube_api, namespace, name)] if predicate(obj)), None), what)


def last_operation(obj: dict) -> tuple[str, str]:
    """The name and phase of the cluster's last operation."""
    last = (obj.get("status") or {}).get("lastOperation") or {}
    return last.get("name", ""), last.get("phase", "")


def get(kube_api, namespace: str, name: str) -> dict:
    return kube_api.request("get", f"{clusters(namespace)}/{name}") or {}


def condition(obj: dict, kind: str) -> dict:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == kind), {})


def ops(kube_api, namespace: str, cluster: str) -> list[dict]:
    return sorted((op for op in kube_api.request("get", operations(namespace))["items"] if op["spec"]["cluster"] == cluster),
                  key=lambda op: op["metadata"]["creationTimestamp"])


def refused_by_preflight(kube_api, fleet, namespace: str, name: str) -> str:
    """The PreflightPassed message of a cluster the controller refused, once it is written; and no operation."""
    obj = cluster_when(fleet, kube_api, namespace, name, lambda o: condition(o, "PreflightPassed").get("status") == "False",
                       f"{name}'s refusal")
    assert ops(kube_api, namespace, name) == [], "a refused spec got an operation"
    jobs_of = [j for j in kube_api.request("get", f"/apis/batch/v1/namespaces/{namespace}/jobs")["items"]
               if j["metadata"]["labels"].get(jobs.LABEL_CLUSTER) == name]
    assert jobs_of == [], "a refused spec got a Job"
    return condition(obj, "PreflightPassed")["message"]


def succeed(kube_api, namespace: str, op_name: str, cluster: str, summary: dict | None = None) -> None:
    run_pod(kube_api, op_name, cluster, 1, 0, json.dumps(summary or SUMMARY), namespace=namespace)
    job_status(kube_api, op_name, {"succeeded": 1, "active": 0, "startTime": "2026-01-01T00:00:00Z",
                                   "completionTime": "2026-01-01T00:02:00Z", "conditions": finished("Complete")},
               namespace=namespace)


def created(kube_api, fleet, namespace: str, name: str, cluster_spec: dict, as_tenant: bool = True) -> dict:
    """A cluster its create operation made (the Job's success played here): Running, its spec applied."""
    client = fleet["tenant"] if as_tenant else kube_api
    client.request("post", clusters(namespace), body=body(name, cluster_spec))
    op = waited(fleet, lambda: (ops(kube_api, namespace, name) or [None])[0], f"{name}'s create")
    succeed(kube_api, namespace, op["metadata"]["name"], name)
    return cluster_when(fleet, kube_api, namespace, name, lambda o: (o.get("status") or {}).get("phase") == "Running",
                        f"{name} Running")


class TestTenants:  # pylint: disable=too-many-public-methods
    """In order: the other team's prod is created; then the tenant's attacks, each refused."""

    def test_the_other_teams_cluster_is_created(self, kube_api, fleet):
        prod = created(kube_api, fleet, OTHER_NS, "prod", spec("192.0.2.51", "192.0.2.52"), as_tenant=False)
        assert prod["status"]["created"] is True

    def test_a_host_of_another_namespaces_cluster_is_refused_naming_it(self, kube_api, fleet):
        fleet["tenant"].request("post", clusters(TENANT_NS), body=body("thief", spec("192.0.2.61", "192.0.2.52")))
        message = refused_by_preflight(kube_api, fleet, TENANT_NS, "thief")
        assert "spec.hosts[n1]: 192.0.2.52 is a host of the SlipwayCluster fleet/prod (its n1); a host belongs to one " \
               "cluster" in message, message
        assert condition(get(kube_api, TENANT_NS, "thief"), "PreflightPassed")["reason"] == "TenancyRefused"

    def test_adopting_hosts_needs_the_right_the_api_server_checks(self, kube_api, fleet):
        adopt = {"annotations": {"fleet.slipway.io/adopt": "true"}}
        answer = refusal(lambda: fleet["tenant"].request("post", clusters(TENANT_NS),
                                                         body=body("squat", spec("192.0.2.71"), **adopt)))
        assert "needs the right adopt on slipwayclusters in team-a" in answer and "system:serviceaccount:team-a:tenant" in answer
        assert kube_api.request("get", f"{clusters(TENANT_NS)}/squat") is None
        # Nor added later to a cluster of its own (one the model refuses, so that no operation starts for it).
        fleet["tenant"].request("post", clusters(TENANT_NS), body=body("later", spec("192.0.2.72", network=OVERLAP)))
        answer = refusal(lambda: fleet["tenant"].request("patch", f"{clusters(TENANT_NS)}/later", content_type=MERGE,
                                                         body={"metadata": adopt}))
        assert "needs the right adopt" in answer, answer
        kube_api.request("delete", f"{clusters(TENANT_NS)}/later")

    def test_without_the_adoption_policy_the_controller_adopts_nothing(self, kube_api, fleet):
        binding = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/slipway-fleet-adopt"
        kept = kube_api.request("get", binding)
        kube_api.request("delete", binding)
        try:
            kube_api.request("post", clusters(OTHER_NS), body=body("unguarded", spec("192.0.2.73"), annotations={
                "fleet.slipway.io/adopt": "true"}))
            obj = cluster_when(fleet, kube_api, OTHER_NS, "unguarded",
                               lambda o: condition(o, "PreflightPassed").get("reason") == "AdoptionNotGuarded",
                               "the unguarded adoption refused")
            assert "ValidatingAdmissionPolicyBinding slipway-fleet-adopt" in condition(obj, "PreflightPassed")["message"]
            assert not (obj.get("status") or {}).get("created") and not (obj.get("status") or {}).get("appliedSpec")
            assert ops(kube_api, OTHER_NS, "unguarded") == []
        finally:
            kube_api.request("post", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
                             body={key: kept[key] for key in ("apiVersion", "kind", "spec")} | {
                                 "metadata": {"name": "slipway-fleet-adopt"}})
            kube_api.request("delete", f"{clusters(OTHER_NS)}/unguarded")

    @pytest.mark.parametrize("field, value, says", [
        ("user", "{{ lookup('pipe', 'touch /tmp/x') }}", "spec.hosts[0].user"),
        ("user", "-oProxyCommand=touch /tmp/x", "spec.hosts[0].user"),
        ("address", "{{ lookup('pipe', 'id') }}", "spec.hosts[0].address"),
        ("address", "-oProxyCommand=id", "spec.hosts[0].address"),
        ("ip", "{{ 1 }}", "is not an IP address"),
        ("hostKeys", ["ssh-ed25519 AAAA {{ x }}"], "spec.hosts[0].hostKeys[0]"),
    ])
    def test_the_api_server_refuses_templates_and_options_in_host_fields(self, fleet, field, value, says):
        hosts = [{"name": "cp1", "address": "192.0.2.81", "roles": ["control_plane"], field: value}]
        answer = refusal(lambda: fleet["tenant"].request("post", clusters(TENANT_NS), body=body("jinja", spec() | {"hosts": hosts})))
        assert says in answer, answer

    @pytest.mark.parametrize("extra, says", [
        ({"variables": {"containerd_registry_mirrors": "{'x': '{{ lookup(\"pipe\", \"id\") }}'}"}},
         "spec.variables.containerd_registry_mirrors"),
        ({"variables": {"{{x}}": "1"}}, "a variable's name"),
        ({"network": {"dnsDomain": "{{ x }}"}}, "spec.network.dnsDomain"),
        ({"network": {"podCIDR": "{{ x }}"}}, "spec.network.podCIDR"),
        ({"network": {"serviceCIDR": "{% x %}"}}, "spec.network.serviceCIDR"),
        ({"network": {"cni": "{{ x }}"}}, "spec.network.cni"),
        ({"controlPlaneEndpoint": {"mode": "vip", "address": "{{ x }}"}}, "spec.controlPlaneEndpoint.address"),
        ({"artifacts": {"source": "mirror", "mirrorURL": "https://m/{{ x }}"}}, "spec.artifacts.mirrorURL"),
        ({"artifacts": {"source": "mirror", "mirrorURL": "https://m", "registryMirror": "{{x}}"}}, "spec.artifacts.registryMirror"),
        ({"artifacts": {"source": "bundle", "bundleDir": "/b/{{ x }}"}}, "spec.artifacts.bundleDir"),
        ({"sshKeySecretRef": {"name": "{{ x }}"}}, "spec.sshKeySecretRef.name"),
        ({"sshKeySecretRef": {"name": "ssh", "key": "{{ x }}"}}, "spec.sshKeySecretRef.key"),
        ({"kubernetesVersion": "{{ x }}"}, "spec.kubernetesVersion"),
        ({"hardening": "{{ x }}"}, "spec.hardening"),
        ({"deletionPolicy": "{{ x }}"}, "spec.deletionPolicy"),
        ({"secretVariablesFrom": [{"variable": "{{ x }}", "secretKeyRef": {"name": "s", "key": "k"}}]},
         "spec.secretVariablesFrom[0].variable"),
        ({"secretVariablesFrom": [{"variable": "v", "secretKeyRef": {"name": "{{ x }}", "key": "k"}}]},
         "spec.secretVariablesFrom[0].secretKeyRef.name"),
        ({"secretVariablesFrom": [{"variable": "v", "secretKeyRef": {"name": "s", "key": "{{ x }}"}}]},
         "spec.secretVariablesFrom[0].secretKeyRef.key"),
    ])
    def test_the_api_server_refuses_templates_in_every_string_field_a_pattern_fits(self, fleet, extra, says):
        answer = refusal(lambda: fleet["tenant"].request("post", clusters(TENANT_NS), body=body("jinja", spec("192.0.2.82") | extra)))
        assert says in answer, answer

    def test_the_controller_asks_no_mirror_a_tenant_names(self, kube_api, fleet):
        listener = fleet["listener"]
        before = listener.connections
        # The model refuses it for another reason (no operation starts), after it has read all of the spec.
        fleet["tenant"].request("post", clusters(TENANT_NS), body=body("mirror", spec("192.0.2.90", network=OVERLAP, artifacts={
            "source": "mirror", "mirrorURL": f"http://127.0.0.1:{listener.port}/files"})))
        waited(fleet, lambda: condition(get(kube_api, TENANT_NS, "mirror"), "PreflightPassed"), "mirror's preflight")
        assert listener.connections == before, "the controller sent a request to the mirror a tenant named"
        kube_api.request("delete", f"{clusters(TENANT_NS)}/mirror")

    def test_templates_where_no_pattern_fits_are_refused_by_the_controller(self, kube_api, fleet):
        marker = fleet["marker"]
        configuration = {"common": {"core": {"console": {"port": "{{ lookup('pipe', 'touch " + str(marker) + "') }}"}}}}
        fleet["tenant"].request("post", clusters(TENANT_NS), body=body("ksjinja", spec("192.0.2.83", kubesphere={
            "enabled": False, "clusterConfiguration": configuration})))
        message = refused_by_preflight(kube_api, fleet, TENANT_NS, "ksjinja")
        assert "spec.kubesphere.clusterConfiguration.common.core.console.port: holds '{{'" in message, message
        assert not marker.exists()
        kube_api.request("delete", f"{clusters(TENANT_NS)}/ksjinja")

    def test_role_variables_that_act_in_the_job_and_secrets_in_variables_are_refused(self, kube_api, fleet):
        variables = {"control_plane_audit_policy_src": "/var/run/secrets/kubernetes.io/serviceaccount/token",
                     "cni_manifest_src": "/etc/passwd", "loadbalancer_keepalived_auth_pass": "s3cret",
                     "containerd_registry_mirors": "{}"}
        fleet["tenant"].request("post", clusters(TENANT_NS), body=body("paths", spec("192.0.2.84", variables=variables)))
        message = refused_by_preflight(kube_api, fleet, TENANT_NS, "paths")
        for name in variables:
            assert f"spec.variables.{name}" in message, (name, message)
        assert "spec.secretVariablesFrom" in message and "did you mean containerd_registry_mirrors" in message
        assert "s3cret" not in json.dumps(get(kube_api, TENANT_NS, "paths").get("status"))
        kube_api.request("delete", f"{clusters(TENANT_NS)}/paths")

    def test_names_longer_than_a_label_are_refused_and_long_names_get_their_own_runner(self, kube_api, fleet):
        answer = refusal(lambda: fleet["tenant"].request("post", clusters(TENANT_NS), body=body("c" * 64, spec("192.0.2.85"))))
        assert "a SlipwayCluster's name is at most 63 characters" in answer, answer
        answer = refusal(lambda: fleet["tenant"].request("post", operations(TENANT_NS), body={
            "apiVersion": "fleet.slipway.io/v1alpha1", "kind": "SlipwayOperation", "metadata": {"name": "o" * 64},
            "spec": {"cluster": "x", "type": "etcd-backup"}}))
        assert "a SlipwayOperation's name is at most 63 characters" in answer, answer
        long_a, long_b = "l" * 62 + "a", "l" * 62 + "b"
        for name, address in ((long_a, "192.0.2.86"), (long_b, "192.0.2.87")):
            fleet["tenant"].request("post", clusters(TENANT_NS), body=body(name, spec(address)))
        first, second = (waited(fleet, lambda name=name: (ops(kube_api, TENANT_NS, name) or [None])[0], f"{name[-1]}'s create")
                         for name in (long_a, long_b))
        job_a, job_b = (waited(fleet, lambda op=op: kube_api.request(
            "get", f"/apis/batch/v1/namespaces/{TENANT_NS}/jobs/{op['metadata']['name']}"), "its Job") for op in (first, second))
        accounts = {job["spec"]["template"]["spec"]["serviceAccountName"] for job in (job_a, job_b)}
        assert len(accounts) == 2, "two long names that share their first characters share no runner"
        for account, cluster in zip(sorted(accounts), sorted((long_a, long_b), key=jobs.runner_name)):
            role = kube_api.request("get", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{TENANT_NS}/roles/{account}")
            assert role["rules"][1]["resourceNames"] == [f"{cluster}-kubeconfig"]

    def test_one_namespace_holds_at_most_its_share_of_the_slots(self, kube_api, fleet):
        # The two long clusters' creates run; a third cluster of the namespace waits for one of them.
        fleet["tenant"].request("post", clusters(TENANT_NS), body=body("third", spec("192.0.2.88")))
        waited(fleet, lambda: any(e["reason"] == "WaitingForSlot" and "max_parallel_per_namespace" in e["message"]
                                  for e in kube_api.request("get", f"/api/v1/namespaces/{TENANT_NS}/events")["items"]
                                  if e["involvedObject"]["name"] == "third"), "third to wait for its namespace's slot")
        assert ops(kube_api, TENANT_NS, "third") == []
        for name in ("l" * 62 + "a", "l" * 62 + "b"):
            succeed(kube_api, TENANT_NS, ops(kube_api, TENANT_NS, name)[0]["metadata"]["name"], name)
        waited(fleet, lambda: ops(kube_api, TENANT_NS, "third"), "third's create once a slot is free")

    def test_the_job_is_a_restricted_pod_the_namespace_admits(self, kube_api, fleet):  # pylint: disable=unused-argument
        op = ops(kube_api, TENANT_NS, "third")[0]["metadata"]["name"]
        job = waited(fleet, lambda: kube_api.request("get", f"/apis/batch/v1/namespaces/{TENANT_NS}/jobs/{op}"), "third's Job")
        template = job["spec"]["template"]
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "as-the-job", "labels": template["metadata"]["labels"]},
               "spec": template["spec"]}
        admitted = kube_api.request("post", f"/api/v1/namespaces/{TENANT_NS}/pods?dryRun=All", body=pod)
        assert admitted["metadata"]["name"] == "as-the-job"
        container = template["spec"]["containers"][0]
        assert container["resources"]["limits"] and container["resources"]["requests"]
        # The namespace does enforce it: the same pod with a host directory is refused.
        hostpath = json.loads(json.dumps(pod))
        hostpath["spec"]["volumes"].append({"name": "host", "hostPath": {"path": "/srv"}})
        answer = refusal(lambda: kube_api.request("post", f"/api/v1/namespaces/{TENANT_NS}/pods?dryRun=All", body=hostpath))
        assert "violates PodSecurity" in answer and "hostPath" in answer, answer
        policy = kube_api.request("get", f"/apis/networking.k8s.io/v1/namespaces/{TENANT_NS}/networkpolicies/"
                                         f"{jobs.runner_name('third')}")
        assert policy["spec"]["egress"][0] == {"to": [{"ipBlock": {"cidr": "192.0.2.88/32"}}],
                                               "ports": [{"protocol": "TCP", "port": 22}]}
        succeed(kube_api, TENANT_NS, op, "third")

    def test_the_applied_spec_is_not_taken_from_an_annotation(self, kube_api, fleet):
        obj = cluster_when(fleet, kube_api, TENANT_NS, "third", lambda o: (o.get("status") or {}).get("phase") == "Running",
                           "third Running")
        assert [h["address"] for h in json.loads(obj["status"]["appliedSpec"]["json"])["hosts"]] == ["192.0.2.88"]
        # The tenant may not write the status the controller keeps.
        answer = refusal(lambda: fleet["tenant"].request("patch", f"{clusters(TENANT_NS)}/third/status", content_type=MERGE,
                                                         body={"status": {"appliedSpec": {"json": "{}"}}}))
        assert "forbidden" in answer.lower(), answer
        fleet["tenant"].request("patch", f"{clusters(TENANT_NS)}/third", content_type=MERGE, body={"spec": {"hosts": [
            {"name": "n0", "address": "192.0.2.88", "roles": ["control_plane"]},
            {"name": "n1", "address": "192.0.2.89", "roles": ["worker"]}]}})
        scale = waited(fleet, lambda: next((o for o in ops(kube_api, TENANT_NS, "third") if o["spec"]["type"] == "scale"), None),
                       "third's scale")["metadata"]["name"]
        # While it runs, the tenant writes what it likes into the operation's annotations (it may patch its
        # SlipwayOperations): a spec that would make prod's host its own. The controller reads none of it.
        fleet["tenant"].request("patch", f"{operations(TENANT_NS)}/{scale}", content_type=MERGE, body={"metadata": {
            "annotations": {"fleet.slipway.io/target-spec": json.dumps(spec("192.0.2.52"), sort_keys=True)}}})
        succeed(kube_api, TENANT_NS, scale, "third")
        obj = cluster_when(fleet, kube_api, TENANT_NS, "third",
                           lambda o: last_operation(o) == (scale, "Succeeded"),
                           "the scale applied")
        assert [h["address"] for h in json.loads(obj["status"]["appliedSpec"]["json"])["hosts"]] == ["192.0.2.88", "192.0.2.89"]

    def test_host_keys_met_first_are_recorded_and_required(self, kube_api, fleet):
        key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
        fleet["tenant"].request("post", operations(TENANT_NS), body={
            "apiVersion": "fleet.slipway.io/v1alpha1", "kind": "SlipwayOperation", "metadata": {"name": "third-certs-1"},
            "spec": {"cluster": "third", "type": "renew-certs"}})
        waited(fleet, lambda: kube_api.request("get", f"/apis/batch/v1/namespaces/{TENANT_NS}/jobs/third-certs-1"), "the Job")
        run = json.loads(kube_api.request("get", f"/api/v1/namespaces/{TENANT_NS}/configmaps/third-certs-1")["data"]["op.json"])
        assert run["hostKeys"] == {} and run["endpoint"] == "https://192.0.2.88:6443"
        # The runner's report, with its own token: the keys of the hosts it met first, into its operation's status.
        token = kube_api.request("post", f"/api/v1/namespaces/{TENANT_NS}/serviceaccounts/{jobs.runner_name('third')}/token",
                                 body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                                       "spec": {"expirationSeconds": 600}})["status"]["token"]
        from slipway_fleet import runner  # pylint: disable=import-outside-toplevel
        as_runner = Tenant(kube_api, token)
        runner.report_host_keys(as_runner.api, {"namespace": TENANT_NS, "operation": "third-certs-1"}, {"n0": key, "n1": key})
        # The tenant cannot write that status itself.
        answer = refusal(lambda: fleet["tenant"].request("patch", f"{operations(TENANT_NS)}/third-certs-1/status",
                                                         content_type=MERGE, body={"status": {"hostKeys": []}}))
        assert "forbidden" in answer.lower(), answer
        succeed(kube_api, TENANT_NS, "third-certs-1", "third", {**SUMMARY, "playbook": "certs.yml"})
        obj = cluster_when(fleet, kube_api, TENANT_NS, "third", lambda o: (o.get("status") or {}).get("hostKeys"),
                           "the keys recorded")
        assert obj["status"]["hostKeys"] == [{"name": "n0", "keys": [key]}, {"name": "n1", "keys": [key]}]
        fleet["tenant"].request("post", operations(TENANT_NS), body={
            "apiVersion": "fleet.slipway.io/v1alpha1", "kind": "SlipwayOperation", "metadata": {"name": "third-certs-2"},
            "spec": {"cluster": "third", "type": "renew-certs"}})
        data = waited(fleet, lambda: kube_api.request("get", f"/api/v1/namespaces/{TENANT_NS}/configmaps/third-certs-2"),
                      "the next operation's inputs")["data"]
        assert json.loads(data["op.json"])["hostKeys"] == {"n0": [key], "n1": [key]}
        succeed(kube_api, TENANT_NS, "third-certs-2", "third", {**SUMMARY, "playbook": "certs.yml"})

    @pytest.mark.parametrize("name, user, cluster_extra, says", [
        ("exec", {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "/bin/sh",
                           "args": ["-c", "touch MARKER"]}}, {}, "no exec plugin"),
        ("authprovider", {"auth-provider": {"name": "gcp", "config": {"cmd-path": "/bin/sh", "cmd-args": "-c 'touch MARKER'"}}},
         {}, "auth-provider"),
        ("tokenfile", {"tokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token"}, {}, "tokenFile"),
        ("certfile", {"client-certificate": "/etc/kubernetes/pki/admin.crt", "client-key": "/etc/kubernetes/pki/admin.key"},
         {}, "client-certificate"),
        ("proxy", {"token": "t"}, {"proxy-url": "http://127.0.0.1:LISTENER"}, "proxy-url"),
        ("insecure", {"token": "t"}, {"insecure-skip-tls-verify": True}, "insecure-skip-tls-verify"),
        ("server", {"token": "t"}, {"server": "https://127.0.0.1:LISTENER"}, "is not the cluster's endpoint"),
    ])
    def test_a_kubeconfig_secret_of_any_other_form_runs_nothing_and_reaches_nothing(  # pylint: disable=too-many-arguments
            self, kube_api, fleet, name, user, cluster_extra, says):
        marker, listener = fleet["marker"], fleet["listener"]
        before = listener.connections
        ca = base64.b64encode(kube_api.ca_cert.read_bytes()).decode()
        cluster = {"server": "https://192.0.2.88:6443", "certificate-authority-data": ca}
        cluster.update({key: str(value).replace("LISTENER", str(listener.port)) if isinstance(value, str) else value
                        for key, value in cluster_extra.items()})
        user = json.loads(json.dumps(user).replace("MARKER", str(marker)))
        kubeconfig = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
                      "clusters": [{"name": "c", "cluster": cluster}], "users": [{"name": "u", "user": user}],
                      "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "third-kubeconfig"},
                  "data": {"value": base64.b64encode(yaml.safe_dump(kubeconfig).encode()).decode()}}
        if kube_api.request("get", f"/api/v1/namespaces/{TENANT_NS}/secrets/third-kubeconfig"):
            fleet["tenant"].request("delete", f"/api/v1/namespaces/{TENANT_NS}/secrets/third-kubeconfig")
        fleet["tenant"].request("post", f"/api/v1/namespaces/{TENANT_NS}/secrets", body=secret)
        obj = cluster_when(fleet, kube_api, TENANT_NS, "third", lambda o: says in condition(o, "Ready").get("message", ""),
                           f"the {name} kubeconfig refused")
        assert condition(obj, "Ready")["reason"] == "KubeconfigRefused"
        assert not marker.exists(), "the controller ran a command the kubeconfig named"
        assert listener.connections == before, "the controller sent a request where the kubeconfig said"

    def test_the_controller_cannot_read_secrets_or_make_jobs_where_it_does_not_watch(self, kube_api, fleet):  # pylint: disable=unused-argument
        def allowed(namespace: str, verb: str, resource: str, group: str = "") -> bool:
            review = kube_api.request("post", "/apis/authorization.k8s.io/v1/subjectaccessreviews", body={
                "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {
                    "user": "system:serviceaccount:slipway-fleet:slipway-fleet",
                    "groups": ["system:serviceaccounts", "system:serviceaccounts:slipway-fleet", "system:authenticated"],
                    "resourceAttributes": {"namespace": namespace, "verb": verb, "resource": resource, "group": group}}})
            return review["status"]["allowed"]
        for verb, resource, group in (("get", "secrets", ""), ("create", "jobs", "batch"), ("create", "roles", "rbac.authorization.k8s.io"),
                                      ("patch", "slipwayclusters", "fleet.slipway.io")):
            assert allowed(TENANT_NS, verb, resource, group), (verb, resource)
            assert not allowed(UNWATCHED, verb, resource, group), (verb, resource, "in a namespace it does not watch")
        # Verbs it never uses, even where it watches.
        for verb, resource, group in (("list", "secrets", ""), ("delete", "secrets", ""), ("delete", "jobs", "batch"),
                                      ("escalate", "roles", "rbac.authorization.k8s.io"), ("bind", "roles", "rbac.authorization.k8s.io"),
                                      ("create", "pods", ""), ("create", "persistentvolumes", "")):
            assert not allowed(TENANT_NS, verb, resource, group), (verb, resource)

    def test_secrets_come_from_secrets_and_stay_there(self, kube_api, fleet):
        fleet["tenant"].request("post", f"/api/v1/namespaces/{TENANT_NS}/secrets", body={
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "vip-secrets"},
            "stringData": {"vrrp": "k33pal1v", "auths": "registry.example:5000: {username: u, password: hunter22}"}})
        fleet["tenant"].request("post", clusters(TENANT_NS), body=body("secrets", spec("192.0.2.91", secretVariablesFrom=[
            {"variable": "loadbalancer_keepalived_auth_pass", "secretKeyRef": {"name": "vip-secrets", "key": "vrrp"}},
            {"variable": "containerd_registry_auths", "secretKeyRef": {"name": "vip-secrets", "key": "auths"}}])))
        op = waited(fleet, lambda: (ops(kube_api, TENANT_NS, "secrets") or [None])[0], "the create")["metadata"]["name"]
        job = waited(fleet, lambda: kube_api.request("get", f"/apis/batch/v1/namespaces/{TENANT_NS}/jobs/{op}"), "its Job")
        inputs = kube_api.request("get", f"/api/v1/namespaces/{TENANT_NS}/configmaps/{op}")["data"]
        assert json.loads(inputs["op.json"])["secretVariables"] == {
            "containerd_registry_auths": "yaml", "loadbalancer_keepalived_auth_pass": "text"}
        volume = next(v for v in job["spec"]["template"]["spec"]["volumes"] if v["name"] == "secret-variables")
        assert volume["projected"]["sources"][0]["secret"]["name"] == "vip-secrets"
        everything = json.dumps([inputs, job, get(kube_api, TENANT_NS, "secrets"), kube_api.request("get", operations(TENANT_NS)),
                                 kube_api.request("get", f"/api/v1/namespaces/{TENANT_NS}/events")])
        assert "k33pal1v" not in everything and "hunter22" not in everything
        log = Path(fleet["log"]).read_text()
        assert "k33pal1v" not in log and "hunter22" not in log
