"""What a fleet tenant may ask (operator/slipway_fleet/tenancy.py, kubeconfig.py) and how the runner holds the hosts
to their SSH keys and the values to data (runner.py): pure rules, and one real ansible-playbook run that shows a value
marked unsafe is never evaluated."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from slipway_fleet import jobs, runner, tenancy
from slipway_fleet import kubeconfig as target_kubeconfig

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CERT = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()
KEY = base64.b64encode(b"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n").decode()
ENDPOINT = "https://10.1.0.11:6443"


def admin_conf(**changes) -> dict:
    """A kubeconfig as kubeadm writes admin.conf (and site.yml stores it), with ``changes`` to its parts."""
    doc = {"apiVersion": "v1", "kind": "Config", "preferences": {}, "current-context": "kubernetes-admin@prod",
           "clusters": [{"name": "prod", "cluster": {"server": ENDPOINT, "certificate-authority-data": CERT}}],
           "users": [{"name": "kubernetes-admin", "user": {"client-certificate-data": CERT, "client-key-data": KEY}}],
           "contexts": [{"name": "kubernetes-admin@prod", "context": {"cluster": "prod", "user": "kubernetes-admin"}}]}
    for part, value in changes.items():
        if part in ("cluster", "user"):
            doc[part + "s"][0][part] = value
        else:
            doc[part] = value
    return doc


# --- the created cluster's kubeconfig --------------------------------------------------------------------------

def test_the_kubeconfig_site_yml_writes_is_accepted():
    credentials = target_kubeconfig.parse(yaml.safe_dump(admin_conf()), ENDPOINT)
    assert credentials.server == ENDPOINT and credentials.ca.startswith(b"-----BEGIN CERTIFICATE")
    assert credentials.client_key.startswith(b"-----BEGIN RSA PRIVATE KEY") and not credentials.token
    token = target_kubeconfig.parse(yaml.safe_dump(admin_conf(user={"token": "abc.def"})), "https://10.1.0.11:6443/")
    assert token.token == "abc.def" and not token.client_cert


@pytest.mark.parametrize("changes, says", [
    ({"user": {"exec": {"command": "/bin/sh", "args": ["-c", "touch /tmp/owned"], "apiVersion": "client.authentication.k8s.io/v1"}}},
     "no exec plugin"),
    ({"user": {"auth-provider": {"name": "oidc", "config": {}}}}, "auth-provider"),
    ({"user": {"tokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token"}}, "tokenFile"),
    ({"user": {"client-certificate": "/etc/kubernetes/pki/admin.crt", "client-key": "/etc/kubernetes/pki/admin.key"}},
     "client-certificate"),
    ({"user": {"token": "t", "as": "system:admin"}}, "impersonation"),
    ({"user": {"username": "admin", "password": "secret"}}, "password"),
    ({"cluster": {"server": ENDPOINT, "certificate-authority": "/etc/ssl/ca.crt"}}, "certificate-authority"),
    ({"cluster": {"server": ENDPOINT, "certificate-authority-data": CERT, "proxy-url": "http://10.9.9.9:3128"}}, "proxy-url"),
    ({"cluster": {"server": ENDPOINT, "insecure-skip-tls-verify": True}}, "insecure-skip-tls-verify"),
    ({"cluster": {"server": "https://10.96.0.1:443", "certificate-authority-data": CERT}}, "is not the cluster's endpoint"),
    ({"cluster": {"server": "http://10.1.0.11:6443", "certificate-authority-data": CERT}}, "is not an https URL"),
    ({"cluster": {"server": ENDPOINT, "certificate-authority-data": "not base64!"}}, "is not base64"),
    ({"extensions": [{"name": "x", "extension": {}}]}, "has extensions"),
    ({"preferences": {"colors": True}}, "preferences"),
    ({"contexts": [{"name": "c", "context": {"cluster": "prod", "user": "kubernetes-admin", "namespace": "kube-system"}}]},
     "contexts[0]"),
])
def test_a_kubeconfig_of_any_other_form_is_refused_with_the_reason(changes, says):
    with pytest.raises(target_kubeconfig.KubeconfigRefused) as refused:
        target_kubeconfig.parse(yaml.safe_dump(admin_conf(**changes)), ENDPOINT)
    assert says in str(refused.value), str(refused.value)


def test_a_kubeconfig_with_two_users_or_not_yaml_is_refused():
    doc = admin_conf()
    doc["users"].append({"name": "other", "user": {"token": "t"}})
    with pytest.raises(target_kubeconfig.KubeconfigRefused, match="exactly one"):
        target_kubeconfig.parse(yaml.safe_dump(doc), ENDPOINT)
    with pytest.raises(target_kubeconfig.KubeconfigRefused, match="is not YAML"):
        target_kubeconfig.parse("clusters: [", ENDPOINT)


def test_the_client_is_built_from_the_values_without_a_proxy(tmp_path, monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://10.9.9.9:3128")
    credentials = target_kubeconfig.parse(yaml.safe_dump(admin_conf()), ENDPOINT)
    api = target_kubeconfig.api_client(credentials, str(tmp_path))
    config = api.configuration
    assert config.host == ENDPOINT and config.proxy is None and config.verify_ssl
    assert Path(config.ssl_ca_cert).read_bytes() == credentials.ca and (tmp_path / "client.key").stat().st_mode & 0o077 == 0
    assert "authorization" not in (config.api_key or {})


# --- what a spec may claim -------------------------------------------------------------------------------------

SPEC = {"kubernetesVersion": "1.37.1", "sshKeySecretRef": {"name": "ssh"},
        "hosts": [{"name": "cp1", "address": "10.1.0.11", "roles": ["control_plane"]},
                  {"name": "w1", "address": "node-w1.example", "ip": "10.1.0.21", "roles": ["worker"]}]}


def a_cluster(namespace, name, spec=None, created=False, when="2026-01-01T00:00:00Z", uid=None, **meta):
    status = {"created": True} if created else {}
    return {"metadata": {"namespace": namespace, "name": name, "uid": uid or f"{namespace}/{name}",
                         "creationTimestamp": when, **meta}, "spec": spec or SPEC, "status": status}


def test_jinja_anywhere_in_the_spec_is_refused_by_field():
    host = {"name": "cp1", "address": "10.1.0.11", "user": "{{ lookup('pipe', 'id') }}", "roles": ["control_plane"]}
    spec = {**SPEC, "hosts": [host],
            "kubesphere": {"clusterConfiguration": {"common": {"x": ["ok", "{% if 1 %}"]}}},
            "variables": {"containerd_registry_mirrors": "{'a': '{# c #}'}"}}
    problems = tenancy.templates(spec)
    assert [p.split(":")[0] for p in problems] == [
        "spec.hosts[cp1].user", "spec.kubesphere.clusterConfiguration.common.x[1]", "spec.variables.containerd_registry_mirrors"]
    assert all("never evaluates it as a template" in p for p in problems)
    assert tenancy.templates(SPEC) == []


def test_the_console_certificate_settings_a_tenant_may_set_are_never_templates():
    """kubesphere_console_tls_names and _secret are fleet variables (slipway_fleet.variables): a template in them is
    refused like any other, and a plain name passes."""
    spec = {**SPEC, "variables": {"kubesphere_console_tls_names": ["console.example", "{{ lookup('env', 'HOME') }}"],
                                  "kubesphere_console_tls_secret": "{% raw %}x{% endraw %}"}}
    assert [p.split(":")[0] for p in tenancy.templates(spec)] == [
        "spec.variables.kubesphere_console_tls_names[1]", "spec.variables.kubesphere_console_tls_secret"]
    plain = {**SPEC, "variables": {"kubesphere_console_tls_names": ["console.example"],
                                   "kubesphere_console_tls_secret": "ks-console-tls"}}
    assert tenancy.templates(plain) == []


def test_secrets_of_the_cluster_configuration_stay_out_of_the_spec():
    spec = {**SPEC, "kubesphere": {"clusterConfiguration": {"authentication": {"jwtSecret": "k3y"},
                                                            "common": {"opensearch": {"basicAuth": {"password": ""}},
                                                                       "es": {"basicAuth": {"password": "admin"}}}}}}
    problems = tenancy.configuration_secrets(spec)
    assert [p.split(":")[0] for p in problems] == [
        "spec.kubesphere.clusterConfiguration.authentication.jwtSecret",
        "spec.kubesphere.clusterConfiguration.common.es.basicAuth.password"]
    assert all("k3y" not in p and "admin" not in p.split(":")[0] for p in problems)
    assert tenancy.configuration_secrets(SPEC) == []


def test_the_bundle_is_the_fleets_own():
    assert tenancy.bundle_dir({"artifacts": {"source": "bundle", "bundleDir": "/bundle/"}}, "/bundle") == []
    assert tenancy.bundle_dir({"artifacts": {"source": "upstream", "bundleDir": "/etc"}}, "/bundle") == []
    [problem] = tenancy.bundle_dir({"artifacts": {"source": "bundle", "bundleDir": "/var/run/secrets"}}, "/bundle")
    assert problem.startswith("spec.artifacts.bundleDir: /var/run/secrets is not where") and "set /bundle" in problem


def test_the_controllers_bundle_reader_reads_no_file_and_asks_no_server():
    class Reader:  # pylint: disable=too-few-public-methods
        def __init__(self):
            self.read = []

        def manifest(self, directory):
            self.read.append(directory)
            return {"kubernetes": "v1.37.1"}

        def checksum(self, path):
            return "sum of " + path

    reader = Reader()
    bundle = tenancy.FleetBundle(reader, "/bundle")
    assert bundle.manifest("/bundle/") == {"kubernetes": "v1.37.1"} and bundle.manifest("/etc") is None
    assert reader.read == ["/bundle"]
    assert bundle.yaml_file("/var/run/secrets/kubernetes.io/serviceaccount/token")[0] is None
    # The model asks a mirror only through url_exists: the controller's reader has none.
    assert not hasattr(bundle, "url_exists")


def test_a_host_belongs_to_the_cluster_ranked_first():
    prod = a_cluster("fleet", "prod", created=True, when="2026-02-01T00:00:00Z")
    thief_spec = {**SPEC, "hosts": [{"name": "x1", "address": "10.1.0.11", "roles": ["control_plane"]},
                                    {"name": "x2", "address": "10.9.0.2", "ip": "10.1.0.21", "roles": ["worker"]}]}
    thief = a_cluster("team-b", "thief", spec=thief_spec, when="2026-01-01T00:00:00Z")
    problems = tenancy.conflicts(thief, [prod, thief])
    assert problems == [
        "spec.hosts[x1]: 10.1.0.11 is a host of the SlipwayCluster fleet/prod (its cp1); a host belongs to one cluster: "
        "name another machine, or remove it from that cluster first",
        "spec.hosts[x2]: 10.1.0.21 is a host of the SlipwayCluster fleet/prod (its w1); a host belongs to one cluster: "
        "name another machine, or remove it from that cluster first"]
    # The created cluster is ranked first although it is younger: it is not refused for the thief's claim.
    assert tenancy.conflicts(prod, [prod, thief]) == []


def test_between_clusters_not_created_the_oldest_holds_and_names_compare_as_names():
    first = a_cluster("a", "first", when="2026-01-01T00:00:00Z")
    named = {**SPEC, "hosts": [{"name": "c", "address": "NODE-W1.example.", "roles": ["control_plane"]}]}
    second = a_cluster("b", "second", spec=named, when="2026-01-02T00:00:00Z")
    assert "a/first" in tenancy.conflicts(second, [first, second])[0]
    assert tenancy.conflicts(first, [first, second]) == []
    # Deleted before it touched anything: it holds nothing.
    gone = a_cluster("a", "first", when="2026-01-01T00:00:00Z", deletionTimestamp="2026-01-03T00:00:00Z")
    assert tenancy.conflicts(second, [gone, second]) == []


def test_the_applied_specs_hosts_are_held_too():
    applied = {**SPEC, "hosts": SPEC["hosts"] + [{"name": "w9", "address": "fd00::9", "roles": ["worker"]}]}
    prod = a_cluster("fleet", "prod", created=True)
    prod["status"]["appliedSpec"] = {"json": json.dumps(applied)}
    other = a_cluster("x", "y", spec={**SPEC, "hosts": [{"name": "c", "address": "fd00:0::9", "roles": ["control_plane"]}]},
                      when="2027-01-01T00:00:00Z")
    assert "fd00::9 is a host of the SlipwayCluster fleet/prod (its w9)" in tenancy.conflicts(other, [prod, other])[0]


def test_address_ranges_of_the_namespace():
    namespace = {"metadata": {"annotations": {tenancy.RANGES_ANNOTATION: "10.1.0.0/24, 192.0.2.0/28"}}}
    allowed = tenancy.ranges(namespace)
    assert tenancy.range_problems(SPEC, "fleet", allowed) == [
        "spec.hosts[w1].address: node-w1.example is a name; the namespace fleet allows only 10.1.0.0/24, 192.0.2.0/28 "
        f"({tenancy.RANGES_ANNOTATION}, set by an administrator): give the host's IP"]
    vip = {**SPEC, "hosts": SPEC["hosts"][:1], "controlPlaneEndpoint": {"mode": "vip", "address": "10.2.0.5"}}
    [problem] = tenancy.range_problems(vip, "fleet", allowed)
    assert problem.startswith("spec.controlPlaneEndpoint.address: 10.2.0.5 is outside the addresses the namespace fleet")
    assert tenancy.ranges({"metadata": {}}) is None and tenancy.range_problems(SPEC, "fleet", None) == []
    # A range that does not parse allows nothing, rather than everything.
    assert tenancy.ranges({"metadata": {"annotations": {tenancy.RANGES_ANNOTATION: "10.1.0.0/33"}}}) == []


def test_api_ports_and_the_endpoints_host():
    assert tenancy.api_ports({"controlPlaneEndpoint": {"mode": "external", "address": "lb.example:9443"}}) == [443, 6443, 8443, 9443]
    assert tenancy.api_ports({"controlPlaneEndpoint": {"mode": "vip", "port": 7443}}) == [443, 6443, 7443]
    assert tenancy.endpoint_host("[fd00::1]:6443") == "fd00::1" and tenancy.endpoint_host("fd00::1") == "fd00::1"


# --- host keys --------------------------------------------------------------------------------------------------

ED = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
ED2 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBm4iV+QaDD0Kq6Qn1s6tGo3Yo+1H3l2nK2b7r8Qkz4r"
RSA = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7"


def test_recorded_and_pinned_keys():
    spec = {"hosts": [{"name": "cp1", "hostKeys": [ED]}, {"name": "w1"}, {"name": "w2"}]}
    status = {"hostKeys": [{"name": "cp1", "keys": [ED2]}, {"name": "w1", "keys": [ED2]}]}
    assert tenancy.known_host_keys(spec, status) == {"cp1": [ED], "w1": [ED2]}
    obj = {"spec": spec}
    recorded = tenancy.record_host_keys(obj, status, [{"name": "w1", "keys": [ED]}, {"name": "w2", "keys": [ED]},
                                                      {"name": "cp1", "keys": [RSA]}, {"name": "gone", "keys": [ED]}])
    # w1 keeps its recorded key, w2 is recorded, cp1 is pinned (not recorded again), a host of no spec is dropped.
    assert recorded == [{"name": "cp1", "keys": [ED2]}, {"name": "w1", "keys": [ED2]}, {"name": "w2", "keys": [ED]}]
    removed = tenancy.record_host_keys({"spec": {"hosts": [{"name": "w2"}]}}, {"hostKeys": recorded}, None)
    assert removed == [{"name": "w2", "keys": [ED]}], "a host removed is met anew when it comes back"


def test_a_host_met_first_is_trusted_and_its_preferred_key_recorded():
    run = {"hostKeys": {}, "pinnedHosts": []}
    lines, new = runner.host_keys(run, {"cp1": ("10.1.0.11", 22), "w1": ("10.1.0.21", 2222)},
                                  {"cp1": [RSA, ED], "w1": []})
    assert new == {"cp1": ED} and lines == [f"10.1.0.11 {ED}"], "w1 did not answer: no key, so ssh refuses it"


def test_a_host_that_offers_another_key_is_refused_naming_it():
    run = {"hostKeys": {"cp1": [ED], "w1": [ED]}, "pinnedHosts": ["w1"]}
    with pytest.raises(runner.Refused) as refused:
        runner.host_keys(run, {"cp1": ("10.1.0.11", 22)}, {"cp1": [ED2, RSA]})
    assert refused.value.host == "cp1"
    message = refused.value.message
    assert message.startswith("cp1 (10.1.0.11:22): its SSH host key is not the one status.hostKeys recorded at its "
                              f"first contact holds: it offers ssh-ed25519 {runner.fingerprint(ED2)} where ssh-ed25519 "
                              f"{runner.fingerprint(ED)} was expected. Nothing was run."), message
    with pytest.raises(runner.Refused, match=r"spec.hosts\[w1\].hostKeys pins"):
        runner.host_keys(run, {"w1": ("10.1.0.21", 2222)}, {"w1": [ED2]})
    # The same key, or no answer at all (ssh judges then, against the known key): the known key is written.
    lines, new = runner.host_keys(run, {"cp1": ("10.1.0.11", 22), "w1": ("10.1.0.21", 2222)}, {"cp1": [RSA, ED]})
    assert lines == [f"10.1.0.11 {ED}", f"[10.1.0.21]:2222 {ED}"] and new == {}


def test_fingerprint_is_openssh_s():
    assert runner.fingerprint(ED).startswith("SHA256:") and len(runner.fingerprint(ED)) == 50


# --- values are data ---------------------------------------------------------------------------------------------

PLAY = """- hosts: all
  gather_facts: false
  tasks:
    - ansible.builtin.debug:
        msg: "user={{ ansible_user }} value={{ tenant_value }} nested={{ tenant_nested.list[0] }}"
"""


@pytest.mark.parametrize("dump, marked", [(runner.unsafe_yaml, True), (yaml.safe_dump, False)])
def test_a_value_marked_unsafe_is_never_evaluated(tmp_path, dump, marked):
    """The runner's files through real ansible-playbook: with the values marked, the lookup is printed as written and
    runs nothing; written plainly (the other case, which shows the test can fail), Ansible runs it."""
    marker = tmp_path / "marker"
    lookup = "{{ lookup('pipe', 'touch " + str(marker) + "') }}"
    (tmp_path / "inventory.yml").write_text(dump({"all": {"hosts": {"cp1": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable, "ansible_user": lookup}}}}))
    (tmp_path / "vars.yml").write_text(dump({"tenant_value": lookup, "tenant_nested": {"list": [lookup]}}))
    (tmp_path / "play.yml").write_text(PLAY)
    env = {**os.environ, "ANSIBLE_CONFIG": os.path.join(ROOT, "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    result = subprocess.run([os.path.join(ROOT, ".venv", "bin", "ansible-playbook"), "-i", str(tmp_path / "inventory.yml"),
                             "-e", f"@{tmp_path / 'vars.yml'}", str(tmp_path / "play.yml")],
                            env=env, capture_output=True, text=True, timeout=300, check=False)
    if marked:
        assert result.returncode == 0, result.stdout + result.stderr
        assert not marker.exists(), "a value marked unsafe was evaluated"
        assert "value={{ lookup('pipe'" in result.stdout and "nested={{ lookup('pipe'" in result.stdout
    else:
        assert marker.exists(), "plain values are templated: without the marking the attack runs"


def test_unsafe_yaml_keeps_names_plain():
    text = runner.unsafe_yaml({"all": {"hosts": {"cp1": {"ansible_port": 22, "ip": "10.1.0.11"}}}, "flag": True})
    assert "cp1:" in text and "ip: !unsafe '10.1.0.11'" in text and "ansible_port: 22" in text and "flag: true" in text


# --- the Job's objects --------------------------------------------------------------------------------------------

CLUSTER = {"apiVersion": "fleet.slipway.io/v1alpha1", "kind": "SlipwayCluster",
           "metadata": {"name": "prod", "namespace": "fleet", "uid": "u-1", "generation": 3},
           "spec": {**SPEC, "secretVariablesFrom": [
               {"variable": "loadbalancer_keepalived_auth_pass", "secretKeyRef": {"name": "prod-secrets", "key": "vrrp"}},
               {"variable": "containerd_registry_auths", "secretKeyRef": {"name": "prod-secrets", "key": "auths"}}]}}


def test_runner_names_are_unique_per_cluster_whatever_their_length():
    long_a, long_b = "a" * 62 + "x", "a" * 62 + "y"
    names = {jobs.runner_name(name) for name in ("prod", long_a, long_b, "a" * 38, "a" * 38 + "-")}
    assert len(names) == 5 and all(len(name) <= 63 for name in names)
    assert all(name == name.lower() and not name.endswith("-") for name in names)


def test_the_job_is_a_restricted_pod_with_requests_and_limits():
    op = jobs.operation(CLUSTER, "etcd-backup", [], 3, "prod-backup-1")
    op["metadata"]["uid"] = "op-1"
    settings = jobs.JobSettings(image="img:1", bundle_claim="slipway-fleet-bundle", backup_claim="slipway-fleet-backups")
    pod = jobs.job(op, CLUSTER, settings)["spec"]["template"]["spec"]
    allowed = {"configMap", "secret", "emptyDir", "persistentVolumeClaim", "projected", "downwardAPI", "csi", "ephemeral"}
    assert all(set(volume) - {"name"} <= allowed for volume in pod["volumes"]), pod["volumes"]
    container = pod["containers"][0]
    assert container["resources"] == {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"cpu": "2", "memory": "2Gi"}}
    assert {"name": "backups", "mountPath": jobs.BACKUP_DIR, "subPath": "prod"} in container["volumeMounts"]
    assert {"name": "bundle", "persistentVolumeClaim": {"claimName": "slipway-fleet-bundle", "readOnly": True}} in pod["volumes"]
    secrets = next(volume for volume in pod["volumes"] if volume["name"] == "secret-variables")["projected"]
    assert secrets["sources"] == [{"secret": {"name": "prod-secrets", "optional": True, "items": [
        {"key": "vrrp", "path": "loadbalancer_keepalived_auth_pass"}, {"key": "auths", "path": "containerd_registry_auths"}]}}]
    assert container["securityContext"]["allowPrivilegeEscalation"] is False and pod["securityContext"]["runAsNonRoot"]


def test_the_network_policy_lets_the_jobs_reach_ssh_and_api_servers_only():
    api_and_dns = [{"ports": [{"protocol": "TCP", "port": p} for p in (443, 6443, 8443)]},
                   {"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}]
    by_ip = {**SPEC, "hosts": [SPEC["hosts"][0], {"name": "w1", "address": "10.1.0.21", "port": 2222, "roles": ["worker"]}]}
    policy = jobs.network_policy(CLUSTER, by_ip, [443, 6443, 8443])
    assert policy["spec"]["ingress"] == [] and policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert policy["spec"]["egress"] == [
        {"to": [{"ipBlock": {"cidr": "10.1.0.11/32"}}], "ports": [{"protocol": "TCP", "port": 22}]},
        {"to": [{"ipBlock": {"cidr": "10.1.0.21/32"}}], "ports": [{"protocol": "TCP", "port": 2222}]}] + api_and_dns
    assert policy["spec"]["podSelector"]["matchLabels"][jobs.LABEL_CLUSTER] == "prod"
    # w1 given by name (resolved in the pod): its SSH port opens to any address.
    named = jobs.network_policy(CLUSTER, SPEC, [443, 6443, 8443])
    assert named["spec"]["egress"] == [{"ports": [{"protocol": "TCP", "port": 22}]}] + api_and_dns


def test_the_secret_variables_are_read_from_their_files_and_a_missing_one_is_named(tmp_path):
    (tmp_path / "loadbalancer_keepalived_auth_pass").write_text("s3cret\n")
    (tmp_path / "containerd_registry_auths").write_text("registry.example:5000: {username: u, password: p}\n")
    run = {"secretVariables": {"loadbalancer_keepalived_auth_pass": "text", "containerd_registry_auths": "yaml"}}
    assert runner.secret_variables(run, tmp_path) == {
        "loadbalancer_keepalived_auth_pass": "s3cret",
        "containerd_registry_auths": {"registry.example:5000": {"username": "u", "password": "p"}}}
    (tmp_path / "containerd_registry_auths").unlink()
    with pytest.raises(runner.Refused, match="containerd_registry_auths is missing"):
        runner.secret_variables(run, tmp_path)
