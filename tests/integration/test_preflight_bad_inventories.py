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
    """A file mirror on loopback (kubespray's files_repo layout) with kubeadm's checksum file of 1.37.1 only."""
    root = tmp_path / "mirror"
    release = root / "dl.k8s.io/release/v1.37.1/bin/linux/amd64"
    release.mkdir(parents=True)
    (release / "kubeadm.sha256").write_text("0" * 64 + "\n")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_version_the_mirror_does_not_have(tmp_path, tool, mirror):
    mirror_settings = ["-e", "slipway_artifacts_source=mirror", "-e", f"slipway_artifacts_mirror_url={mirror}"]
    output = stopped_before_contact(site(tmp_path, tool, *mirror_settings, "-e", "slipway_kubernetes_version=1.37.2",
                                         "-e", "slipway_lb_prot=1"))
    assert "The inventory has 2 problem(s)" in output, output
    assert (f"slipway_kubernetes_version: 1.37.2 is not on the mirror slipway_artifacts_mirror_url: "
            f"{mirror}/dl.k8s.io/release/v1.37.2/bin/linux/amd64/kubeadm.sha256 is not there") in output
    # The release the mirror has passes the model: the run goes on to the hosts (here: none answers).
    result = site(tmp_path, tool, *mirror_settings, "-e", "slipway_kubernetes_version=1.37.1")
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "problem(s); nothing was changed" not in output.split("Read each node's facts")[0], output
    assert "Read each node's facts" in output


def test_a_mirror_the_controller_cannot_reach_is_a_warning_not_a_stop(tmp_path, tool):
    # Port 1 of loopback: nothing listens, the controller gets no answer (the nodes may reach the mirror).
    result = site(tmp_path, tool, "-e", "slipway_artifacts_source=mirror", "-e",
                  "slipway_artifacts_mirror_url=http://127.0.0.1:1", "-e", "slipway_kubernetes_version=1.37.7")
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
