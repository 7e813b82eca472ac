"""site.yml on inventories with one kind of mistake each: the run stops before any host is contacted, and the
message names the variable or the host (issue 12, items 2 and 9)."""

from __future__ import annotations

import functools
import http.server
import shutil
import textwrap
import threading

import pytest

from conftest import ROOT, run
from test_preflight_playbook import GOOD_INVENTORY, site, stopped_before_contact


def test_a_service_range_too_small_for_the_clusters_own_addresses(tmp_path, tool):
    output = stopped_before_contact(site(tmp_path, tool, "-e", "slipway_service_cidr=10.96.0.0/29"))
    assert "The inventory has 1 problem(s)" in output, output
    assert ("slipway_service_cidr: 10.96.0.0/29 has 8 addresses and cannot hold the API server's Service address "
            "10.96.0.1 and the cluster DNS address 10.96.0.10") in output


def test_a_pod_range_too_small_for_the_nodes(tmp_path, tool):
    output = stopped_before_contact(site(tmp_path, tool, "-e", "slipway_pod_cidr=10.233.64.0/24"))
    assert "slipway_node_cidr_mask_size: 24 must be longer than slipway_pod_cidr's /24" in output, output


def test_ipv6_ranges_the_api_server_and_controller_manager_refuse(tmp_path, tool):
    inventory = GOOD_INVENTORY.replace("192.0.2.11", "'2001:db8::11'").replace("192.0.2.21", "'2001:db8::21'")
    output = stopped_before_contact(site(tmp_path, tool, "-e", "slipway_pod_cidr=fd00:10::/40", "-e",
                                         "slipway_service_cidr=fd00:96::/96", "-e", "slipway_node_cidr_mask_size=64",
                                         inventory_text=inventory))
    assert "The inventory has 2 problem(s)" in output, output
    assert "slipway_service_cidr: fd00:96::/96 is larger than the API server accepts for IPv6" in output
    assert "slipway_node_cidr_mask_size: /64 is 24 bits longer than slipway_pod_cidr's /40" in output


def test_mixed_address_families_name_the_host(tmp_path, tool):
    inventory = GOOD_INVENTORY.replace("192.0.2.21", "'2001:db8::21'")
    output = stopped_before_contact(site(tmp_path, tool, inventory_text=inventory))
    assert ("slipway_service_cidr: is IPv4 but the address of host w1 is not; a single-stack cluster uses one "
            "address family") in output, output


def test_keepalived_settings(tmp_path, tool):
    output = stopped_before_contact(site(
        tmp_path, tool, "-e", "slipway_lb_mode=vip", "-e", "slipway_control_plane_endpoint=192.0.2.250",
        "-e", "loadbalancer_keepalived_virtual_router_id=300", "-e", "loadbalancer_keepalived_auth_pass=much-too-long"))
    assert "The inventory has 2 problem(s)" in output, output
    assert "loadbalancer_keepalived_virtual_router_id: '300' is not a VRRP router id; set a number from 1 to 255" in output
    assert "loadbalancer_keepalived_auth_pass: is longer than 8 characters" in output
    # Never the password itself.
    assert "much-too-long" not in output.split("problem(s)")[-1]


@pytest.mark.parametrize("cni", ["calico", "cilium"])
def test_calico_or_cilium_without_a_manifest(tmp_path, tool, cni):
    output = stopped_before_contact(site(tmp_path, tool, "-e", f"slipway_cni={cni}"))
    assert "The inventory has 1 problem(s)" in output, output
    assert f"cni_manifest_src: slipway_cni is {cni}: set it to the upstream manifest of the release you want" in output


def test_a_cluster_wide_setting_in_host_vars_names_the_host(tmp_path, tool):
    (tmp_path / "host_vars").mkdir()
    (tmp_path / "host_vars" / "w1.yml").write_text('slipway_kubernetes_version: "1.36.5"\nslipway_lb_port: 9443\n')
    output = stopped_before_contact(site(tmp_path, tool))
    assert "The inventory has 2 problem(s)" in output, output
    assert ("slipway_kubernetes_version: is cluster-wide but differs between hosts: w1 '1.36.5', the other 1 host(s) "
            "(not set); set it once, in group_vars/all or with -e, not in host_vars") in output
    assert "slipway_lb_port: is cluster-wide but differs between hosts: w1 9443" in output


def test_a_setting_in_the_group_vars_of_a_group_other_than_all_names_the_hosts(tmp_path, tool):
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "all.yml").write_text("control_plane_kube_proxy_mode: iptables\n")
    (tmp_path / "group_vars" / "kube_node.yml").write_text("control_plane_kube_proxy_mode: nftables\n")
    output = stopped_before_contact(site(tmp_path, tool))
    assert ("control_plane_kube_proxy_mode: is cluster-wide but differs between hosts: w1 'nftables', the other 1 "
            "host(s) 'iptables'") in output, output


@pytest.mark.parametrize("version", ["1.37.99", "1.36.6"])
def test_an_upstream_version_that_was_never_released(tmp_path, tool, version):
    output = stopped_before_contact(site(tmp_path, tool, "-e", f"slipway_kubernetes_version={version}"))
    assert "The inventory has 1 problem(s)" in output, output
    assert f"slipway_kubernetes_version: {version} is not a Kubernetes release this collection knows of" in output


@pytest.fixture(name="mirror")
def fixture_mirror(tmp_path):
    """A file mirror on loopback (kubespray's files_repo layout) with the kubeadm of 1.37.1 only."""
    root = tmp_path / "mirror"
    release = root / "dl.k8s.io/release/v1.37.1/bin/linux/amd64"
    release.mkdir(parents=True)
    (release / "kubeadm").write_text("#!/bin/sh\n")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_version_the_mirror_does_not_have(tmp_path, tool, mirror):
    mirror_settings = ["-e", "slipway_artifacts_source=mirror", "-e", f"slipway_artifacts_mirror_url={mirror}",
                       "-e", "slipway_artifacts_mirror_insecure_http=true"]
    output = stopped_before_contact(site(tmp_path, tool, *mirror_settings, "-e", "slipway_kubernetes_version=1.37.2",
                                         "-e", "slipway_lb_prot=1"))
    assert "The inventory has 2 problem(s)" in output, output
    assert (f"slipway_kubernetes_version: 1.37.2 is not on the mirror slipway_artifacts_mirror_url: "
            f"{mirror}/dl.k8s.io/release/v1.37.2/bin/linux/amd64/kubeadm is not there") in output
    # The release the mirror has passes the model: the run goes on to the hosts (here: none answers).
    result = site(tmp_path, tool, *mirror_settings, "-e", "slipway_kubernetes_version=1.37.1")
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "problem(s); nothing was changed" not in output.split("Read each node's facts")[0], output
    assert "Read each node's facts" in output


def test_a_mirror_the_controller_cannot_reach_is_a_warning_not_a_stop(tmp_path, tool):
    # Port 1 of loopback: nothing listens, the controller gets no answer (the nodes may reach the mirror).
    result = site(tmp_path, tool, "-e", "slipway_artifacts_source=mirror", "-e",
                  "slipway_artifacts_mirror_url=http://127.0.0.1:1", "-e", "slipway_artifacts_mirror_insecure_http=true",
                  "-e", "slipway_kubernetes_version=1.37.7")
    output = result.stdout + result.stderr
    assert "slipway_kubernetes_version: 1.37.7 could not be checked: the mirror http://127.0.0.1:1 did not answer" in output
    assert "Read each node's facts" in output, output


def test_kubespray_inventory_keeps_the_cluster_wide_check_quiet(tmp_path, tool):
    # The same setting in group_vars/all and -e everywhere: one value, no problem.
    inventory = GOOD_INVENTORY.replace("      hosts:\n", "        slipway_lb_port: 9443\n      hosts:\n", 1)
    result = site(tmp_path, tool, "-e", "slipway_lb_port=9443", inventory_text=textwrap.dedent(inventory))
    output = result.stdout + result.stderr
    assert "cluster-wide" not in output, output
    assert "Read each node's facts" in output


def test_kubesprays_sample_with_the_named_settings_fixed_passes_the_model(tmp_path, tool):
    # What docs/kubespray.md did on the lab: each setting the sample's run named, changed as its message says.
    sample = tmp_path / "sample"
    shutil.copytree(ROOT / "tests/integration/fixtures/kubespray_sample", sample)
    removed = {"k8s_cluster/k8s-cluster.yml": ("kube_version:", "kube_network_plugin:", "kube_proxy_mode:",
                                               "kube_cert_dir:", "enable_nodelocaldns:"),
               "all/etcd.yml": ("etcd_deployment_type:",),
               "all/all.yml": ("etcd_kubeadm_enabled:", "loadbalancer_apiserver_port:",
                               "loadbalancer_apiserver_healthcheck_port:"),
               "k8s_cluster/addons.yml": ("metrics_server_enabled:",)}
    for name, prefixes in removed.items():
        path = sample / "group_vars" / name
        lines = path.read_text().splitlines(keepends=True)
        kept = [line for line in lines if not line.startswith(prefixes)]
        assert len(lines) - len(kept) == len(prefixes), name
        path.write_text("".join(kept))
    (sample / "group_vars/all/slipway.yml").write_text(
        "---\nslipway_etcd_mode: external\nloadbalancer_haproxy_health_port: 8081\n")
    result = run([tool("ansible-playbook"), "-i", str(sample / "inventory.ini"), "-e", "ansible_port=1",
                  str(ROOT / "site.yml")])
    output = result.stdout + result.stderr
    assert "problem(s); nothing was changed" not in output.split("Read each node's facts")[0], output
    # The model passed: the run went on to read the hosts (which do not answer here).
    assert "Read each node's facts" in output
    assert "kubespray settings not read, as slipway.cluster does the same already" in output


# Issue 29: the broken inventories a second round of new users tried that reached the hosts, changed them, or
# dropped a host without a word. Each stops before any contact, naming every mistake of its family in one run.
# (name, the inventory, extra arguments, group_vars files, the expected problems, in any order)
LONG_NODE = "w" * 70
PROBES = [
    ("values no shell should see", GOOD_INVENTORY,
     ["-e", '{"control_plane_cert_sans": ["`reboot`", "api.example.com"], '
            '"control_plane_coredns_upstreams": ["8.8.8.8; reboot", "192.0.2.53:53"]}'], {},
     ["control_plane_cert_sans: '`reboot`' is neither a DNS name nor an IP address",
      "control_plane_coredns_upstreams: '8.8.8.8; reboot' is not a resolver CoreDNS forwards to; write each as an IP "
      "address with an optional port"]),
    ("names over their limits", GOOD_INVENTORY.replace("w1", LONG_NODE),
     ["-e", "slipway_dns_domain=" + "d" * 1000, "-e", "slipway_cluster_name=" + "c" * 1000], {},
     ["slipway_dns_domain: is 1000 characters long; the API server's certificate names kubernetes.default.svc.DOMAIN",
      "slipway_cluster_name: is 1000 characters long",
      f"host {LONG_NODE}: is 70 characters long: it becomes the node's Linux host name (at most 64)"]),
    ("hosts in no group the cluster uses",
     GOOD_INVENTORY.replace("    w1: {ansible_host: 192.0.2.21}\n",
                            "    w1: {ansible_host: 192.0.2.21}\n    w2: {ansible_host: 192.0.2.22}\n"
                            "    w3: {ansible_host: 192.0.2.23}\n")
     .replace("    kube_node: {hosts: {w1: {}}}\n", "    kube_node: {hosts: {w1: {}}}\n    kube-node: {hosts: {w3: {}}}\n"),
     [], {},
     ["host w2: is in no group the cluster uses, so it would be left out; put it in kube_control_plane (a control "
      "plane), kube_node (a worker)",
      "host w3: is in no group the cluster uses (in kube-node: kube-node is kubespray's older name of kube_node)"]),
    ("addresses no node can have",
     GOOD_INVENTORY.replace("cp1: {ansible_host: 192.0.2.11}", "cp1: {ansible_host: 192.0.2.11, ip: 0.0.0.0}")
     .replace("w1: {ansible_host: 192.0.2.21}", "w1: {ansible_host: 224.0.0.1}"), [], {},
     ["host cp1: ip 0.0.0.0 is the unspecified address", "host w1: ansible_host 224.0.0.1 is a multicast address"]),
    ("two control planes", GOOD_INVENTORY.replace("kube_control_plane: {hosts: {cp1: {}}}",
                                                  "kube_control_plane: {hosts: {cp1: {}, w1: {}}}"), [], {},
     ["group kube_control_plane: etcd has 2 members: quorum is 2 of 2, so it survives no more failures than 1 member "
      "would and a split into halves stops it; use 1 or 3 control planes, or set slipway_etcd_even_members_ok: true"]),
    ("YAML errors in group_vars", GOOD_INVENTORY, [],
     {"all/cluster.yml": "slipway_lb_mode: vip\nfoo: [a, b\nbar: 1\n", "kube_node.yml": "a: 1\n b: 2\n"},
     ["group_vars/all/cluster.yml line 3, column 4: expected ',' or ']', but got ':' (while parsing a flow sequence on "
      "line 2, column 6); fix the YAML there",
      "group_vars/kube_node.yml line 2, column 3: mapping values are not allowed here"]),
    ("an endpoint written as a URL", GOOD_INVENTORY,
     ["-e", "slipway_lb_mode=external", "-e", "slipway_control_plane_endpoint=https://lb.example:6443"], {},
     ["slipway_control_plane_endpoint: 'https://lb.example:6443' is a URL; drop the scheme (https://) and any path: "
      "set it to lb.example:6443"]),
    ("a pre-release", GOOD_INVENTORY, ["-e", "slipway_kubernetes_version=1.37.0-rc.1"], {},
     ["slipway_kubernetes_version: '1.37.0-rc.1' is a pre-release or build (rc.1) of 1.37.0; slipway.cluster installs "
      "released versions only: set a release such as 1.37.2"]),
    ("both networks of the other address family", GOOD_INVENTORY,
     ["-e", "slipway_pod_cidr=fd00:10::/56", "-e", "slipway_service_cidr=fd00:96::/108", "-e",
      "slipway_node_cidr_mask_size=64"], {},
     ["slipway_pod_cidr: fd00:10::/56 is IPv6 but the nodes' addresses are IPv4",
      "slipway_service_cidr: fd00:96::/108 is IPv6 but the nodes' addresses are IPv4"]),
    ("only kubespray's older groups",
     "[kube-master]\ncp1 ansible_host=192.0.2.11\n[kube-node]\nw1 ansible_host=192.0.2.21\n"
     "[k8s-cluster:children]\nkube-master\nkube-node\n[all:vars]\nansible_port=1\n", [], {},
     ["has no host in kube_control_plane or kube_node",
      "Its group kube-master is kubespray's older name of kube_control_plane: rename it.",
      "Its group kube-node is kubespray's older name of kube_node: rename it."]),
]


@pytest.mark.parametrize("inventory, extra, group_vars, expected", [probe[1:] for probe in PROBES],
                         ids=[probe[0] for probe in PROBES])
def test_probe_stops_before_contact_naming_every_mistake(tmp_path, tool, inventory, extra, group_vars, expected):
    for name, text in group_vars.items():
        (tmp_path / "group_vars" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "group_vars" / name).write_text(text)
    if inventory.startswith("["):
        (tmp_path / "hosts.ini").write_text(inventory)
        result = run([tool("ansible-playbook"), "-i", str(tmp_path / "hosts.ini"), str(ROOT / "site.yml"), *extra])
    else:
        result = site(tmp_path, tool, *extra, inventory_text=inventory)
    output = stopped_before_contact(result)
    if not inventory.startswith("["):
        assert f" {len(expected)} problem(s); nothing was changed on any host" in output, output
    for problem in expected:
        assert problem in " ".join(output.split()), problem


def test_an_even_etcd_the_user_means_passes_the_model(tmp_path, tool):
    inventory = GOOD_INVENTORY.replace("kube_control_plane: {hosts: {cp1: {}}}", "kube_control_plane: {hosts: {cp1: {}, w1: {}}}")
    result = site(tmp_path, tool, "-e", "slipway_etcd_even_members_ok=true", inventory_text=inventory)
    output = result.stdout + result.stderr
    assert "problem(s); nothing was changed" not in output.split("Read each node's facts")[0], output
    assert "etcd has 2 members" in output  # a warning now
    assert "Read each node's facts" in output
