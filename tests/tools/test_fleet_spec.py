"""The fleet's translation of a SlipwayCluster spec (operator/slipway_fleet/spec.py): the inventory and settings
it gives the playbooks, the collection's own model over them (preflight), and the operation each edit becomes."""

from __future__ import annotations

import copy
import os

import pytest
import yaml

from slipway_fleet import spec as fleet
from slipway_operator import collection

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

COLLECTIONS = os.path.join(ROOT, ".cache", "collections")
MODEL = collection.model(COLLECTIONS)


def cluster(**changes) -> dict:
    """A valid spec (upstream artifacts: the model checks the release without reading a bundle)."""
    base = {
        "kubernetesVersion": "1.36.5",
        "hosts": [{"name": "cp1", "address": "10.10.0.11", "roles": ["control_plane"]},
                  {"name": "w1", "address": "10.10.0.21", "user": "debian", "port": 2222, "roles": ["worker"]}],
        "sshKeySecretRef": {"name": "ssh", "key": "ssh-privatekey"},
        "network": {"podCIDR": "10.233.64.0/18", "serviceCIDR": "10.233.0.0/18", "nodeCIDRMaskSize": 24,
                    "dnsDomain": "cluster.local", "cni": "flannel"},
        "controlPlaneEndpoint": {"mode": "local_haproxy"},
        "etcd": {"mode": "stacked"},
        "artifacts": {"source": "upstream"},
        "hardening": "cis",
        "secretsEncryption": True,
        "kubesphere": {"enabled": False},
        "deletionPolicy": "Reset",
    }
    base.update(changes)
    return base


def with_host(spec: dict, name: str, address: str, roles: list[str]) -> dict:
    spec = copy.deepcopy(spec)
    spec["hosts"].append({"name": name, "address": address, "roles": roles})
    return spec


# --- inventory and settings --------------------------------------------------------------------------------

def test_inventory_has_kubespray_groups_and_connection_variables():
    inv = fleet.inventory(cluster())
    assert inv["all"]["hosts"]["w1"] == {"ansible_host": "10.10.0.21", "ansible_user": "debian", "ansible_port": 2222}
    assert inv["all"]["hosts"]["cp1"]["ansible_user"] == "root" and inv["all"]["hosts"]["cp1"]["ansible_port"] == 22
    children = inv["all"]["children"]
    assert list(children["kube_control_plane"]["hosts"]) == ["cp1"]
    assert list(children["kube_node"]["hosts"]) == ["w1"]
    assert children["k8s_cluster"] == {"children": {"kube_control_plane": {}, "kube_node": {}}}
    # What ansible-playbook reads: plain YAML.
    assert yaml.safe_load(yaml.safe_dump(inv)) == inv


def test_ip_is_the_nodes_address_when_given():
    spec = cluster()
    spec["hosts"][1]["ip"] = "192.168.5.21"
    assert fleet.inventory(spec)["all"]["hosts"]["w1"]["ip"] == "192.168.5.21"


def test_settings_from_the_fields_and_variables_as_yaml():
    spec = cluster(variables={"control_plane_coredns_upstreams": "[]", "node_join_token_ttl": "30m"},
                   controlPlaneEndpoint={"mode": "vip", "address": "10.10.0.250", "port": 9443},
                   kubesphere={"enabled": True, "clusterConfiguration": {"monitoring": {"enabled": True}}})
    got = fleet.playbook_vars(spec, "prod")
    assert got["slipway_cluster_name"] == "prod"
    assert got["slipway_kubernetes_version"] == "1.36.5"
    assert got["slipway_lb_mode"] == "vip" and got["slipway_control_plane_endpoint"] == "10.10.0.250"
    assert got["slipway_lb_port"] == 9443
    assert got["slipway_kubesphere_enabled"] is True
    assert got["kubesphere_cluster_configuration"] == {"monitoring": {"enabled": True}}
    assert got["control_plane_coredns_upstreams"] == []
    assert got["node_join_token_ttl"] == "30m"


def test_every_setting_the_spec_gives_is_a_setting_of_the_model():
    names = set(fleet.settings(cluster(controlPlaneEndpoint={"mode": "vip", "address": "10.0.0.1", "port": 1},
                                       artifacts={"source": "bundle", "bundleDir": "/b", "mirrorURL": "http://m",
                                                  "registryMirror": "r:5000"}), "x"))
    assert names - {"kubesphere_cluster_configuration"} <= set(MODEL.DEFAULT_SETTINGS)


# --- preflight: the collection's model ------------------------------------------------------------------------

def test_a_good_spec_passes_the_model():
    result = fleet.preflight(cluster(), "prod", MODEL)
    assert result.passed, result.problems
    assert result.model["control_planes"] == ["cp1"] and result.model["workers"] == ["w1"]
    assert result.model["name"] == "prod"


def test_every_problem_is_reported_at_once_named_by_the_spec_field():
    spec = cluster(network={"podCIDR": "10.233.0.0/16", "serviceCIDR": "10.233.0.0/18", "nodeCIDRMaskSize": 24,
                            "dnsDomain": "cluster.local", "cni": "flannel"},
                   kubernetesVersion="1.30.1",
                   variables={"control_plane_kube_proxy_mode": "userspace", "bad": "[unclosed"})
    spec["hosts"][1]["address"] = "10.10.0.11"
    result = fleet.preflight(spec, "prod", MODEL)
    assert not result.passed
    text = "\n".join(result.problems)
    assert "spec.network.podCIDR (slipway_pod_cidr)" in text and "overlaps" in text
    assert "spec.kubernetesVersion (slipway_kubernetes_version): 1.30 is not supported" in text
    assert "spec.hosts[w1]: has the same address 10.10.0.11 as host cp1" in text
    assert "spec.variables.control_plane_kube_proxy_mode" in text
    assert "spec.variables.bad: is not YAML" in text
    assert result.message().startswith(f"{len(result.problems)} problem(s), no host touched")


def test_a_slipway_setting_written_as_a_variable_is_named_with_its_nearest():
    # The CRD refuses slipway_* names in spec.variables; a spec stored before that rule still meets the model.
    result = fleet.preflight(cluster(variables={"slipway_pod_cidrs": "10.0.0.0/16"}), "prod", MODEL)
    assert any("slipway_pod_cidrs" in p and "did you mean slipway_pod_cidr?" in p for p in result.problems), result.problems


def test_a_vip_without_its_address_is_refused_before_any_job():
    result = fleet.preflight(cluster(controlPlaneEndpoint={"mode": "vip"}), "prod", MODEL)
    assert any(p.startswith("spec.controlPlaneEndpoint.address (slipway_control_plane_endpoint)") for p in result.problems)


def test_a_bundle_that_is_not_there_is_a_problem():
    spec = cluster(artifacts={"source": "bundle", "bundleDir": "/nonexistent/bundle"})
    result = fleet.preflight(spec, "prod", MODEL, bundle=fleet.bundle_reader(COLLECTIONS), bundle_mount="/nonexistent/bundle")
    assert result.problems == ["spec.artifacts.bundleDir (slipway_artifacts_bundle_dir): /nonexistent/bundle has no "
                               "manifest.yml; build one with 'make bundle' or point it at a bundle"]


def test_a_bundle_that_is_not_the_fleets_is_refused_and_not_read(tmp_path):
    """A tenant names another directory of the controller's: refused by field, and the model's reader does not read
    it (the controller's reader knows only the fleet's mount)."""
    from slipway_fleet import tenancy  # pylint: disable=import-outside-toplevel
    (tmp_path / "manifest.yml").write_text("kubernetes: v1.37.1\n")
    spec = cluster(artifacts={"source": "bundle", "bundleDir": str(tmp_path)})
    result = fleet.preflight(spec, "prod", MODEL, bundle=tenancy.FleetBundle(fleet.bundle_reader(COLLECTIONS), "/bundle"))
    assert result.problems[0] == (f"spec.artifacts.bundleDir: {tmp_path} is not where the fleet's Jobs see the bundle; "
                                  "set /bundle (the fleet's bundle mount)")
    assert any(f"{tmp_path} has no manifest.yml" in problem for problem in result.problems), result.problems


# --- the plan: which operation ------------------------------------------------------------------------------

def test_a_new_cluster_is_created():
    step = fleet.plan(cluster(), None)
    assert step.type == "create" and step.hosts == ["cp1", "w1"] and step.target == cluster()
    assert step.run_spec == cluster()


def test_an_adopted_cluster_runs_nothing():
    step = fleet.plan(cluster(), None, adopt=True)
    assert step.type == "adopt" and step.target == cluster()


def test_nothing_changed_means_no_operation():
    assert fleet.plan(cluster(), cluster()).type is None


def test_the_deletion_policy_and_ssh_secret_are_not_the_hosts_business():
    wanted = cluster(deletionPolicy="Keep", sshKeySecretRef={"name": "other"})
    assert fleet.plan(wanted, cluster()).type is None


def test_a_host_added_is_a_scale():
    wanted = with_host(cluster(), "w2", "10.10.0.22", ["worker"])
    step = fleet.plan(wanted, cluster())
    assert step.type == "scale" and step.hosts == ["w2"] and step.target == wanted


def test_a_host_removed_is_a_remove_node_run_with_the_host_still_in_the_inventory():
    applied = with_host(cluster(), "w2", "10.10.0.22", ["worker"])
    step = fleet.plan(cluster(), applied)
    assert step.type == "remove-node" and step.hosts == ["w2"]
    assert step.target == cluster()
    assert "w2" in fleet.inventory(step.run_spec)["all"]["hosts"]
    assert fleet.operation_vars(step.type, step.hosts, step.run_spec, "prod")["remove_node_names"] == ["w2"]


def test_one_minor_up_is_an_upgrade():
    step = fleet.plan(cluster(kubernetesVersion="1.37.1"), cluster())
    assert step.type == "upgrade" and step.kubernetes_version == "1.37.1"
    assert step.target["kubernetesVersion"] == "1.37.1"


@pytest.mark.parametrize("version, says", [("1.38.0", "more than one minor"), ("1.36.4", "older"), ("1.35.9", "older"),
                                           ("2.36.5", "more than one minor")])
def test_versions_no_playbook_reaches_are_refused(version, says):
    step = fleet.plan(cluster(kubernetesVersion=version), cluster())
    assert step.type is None and says in step.refused and "spec.kubernetesVersion" in step.refused


def test_removal_upgrade_and_addition_in_one_edit_are_three_operations_in_order():
    applied = with_host(cluster(), "w2", "10.10.0.22", ["worker"])
    wanted = with_host(cluster(kubernetesVersion="1.37.1"), "w3", "10.10.0.23", ["worker"])
    seen = []
    while True:
        step = fleet.plan(wanted, applied)
        if step.type is None:
            break
        seen.append((step.type, step.hosts if step.type != "upgrade" else step.kubernetes_version))
        applied = step.target
    assert seen == [("remove-node", ["w2"]), ("upgrade", "1.37.1"), ("scale", ["w3"])]
    assert applied == wanted


def test_an_edit_of_a_setting_is_a_converge_with_site_yml():
    step = fleet.plan(cluster(variables={"node_join_token_ttl": "30m"}), cluster())
    assert step.type == "converge" and fleet.PLAYBOOKS[step.type] == "site.yml"


def test_a_changed_role_or_address_is_refused_with_what_to_do():
    wanted = cluster()
    wanted["hosts"][1]["roles"] = ["worker", "control_plane"]
    assert "remove it" in fleet.plan(wanted, cluster()).refused
    wanted = cluster()
    wanted["hosts"][1]["address"] = "10.10.0.99"
    assert "address of w1 changed" in fleet.plan(wanted, cluster()).refused


def test_deletion_resets_the_hosts_unless_kept():
    step = fleet.plan(cluster(), cluster(), deleting=True)
    assert step.type == "reset" and step.hosts == ["cp1", "w1"]
    # A host added whose scale failed, and one removed whose remove-node did not run yet: both may be touched.
    step = fleet.plan(with_host(cluster(), "w3", "10.10.0.23", ["worker"]),
                      with_host(cluster(), "w2", "10.10.0.22", ["worker"]), deleting=True)
    assert step.hosts == ["cp1", "w1", "w3", "w2"]
    assert set(fleet.inventory(step.run_spec)["all"]["hosts"]) == {"cp1", "w1", "w2", "w3"}
    assert fleet.operation_vars("reset", step.hosts, step.run_spec, "prod")["reset_confirm"] == "yes"
    assert fleet.plan(cluster(deletionPolicy="Keep"), cluster(), deleting=True).type is None


def test_deleting_a_cluster_never_created_touches_nothing():
    assert fleet.plan(cluster(), None, deleting=True).type is None
    # A create that failed halfway touched the hosts: they are reset.
    assert fleet.plan(cluster(), None, deleting=True, created=True).type == "reset"
