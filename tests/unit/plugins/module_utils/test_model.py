# Unit tests of the cluster model: every bad input is reported, all at once, naming what to change.
from __future__ import annotations

import copy

import pytest

from ansible_collections.slipway.cluster.plugins.module_utils._model import DEFAULT_SETTINGS, ModelError, build_model, parse_version
from ansible_collections.slipway.cluster.plugins.module_utils._settings import ROLE_VARIABLE_NAMES, ROLE_VARIABLES, role_defaults

GOOD_GROUPS = {
    "kube_control_plane": ["cp1", "cp2", "cp3"],
    "kube_node": ["w1", "w2"],
    "etcd": ["cp1", "cp2", "cp3"],
}
GOOD_HOSTVARS = {
    "cp1": {"ansible_host": "10.0.0.11"},
    "cp2": {"ansible_host": "10.0.0.12"},
    "cp3": {"ansible_host": "10.0.0.13", "ip": "10.0.1.13"},
    "w1": {"ansible_host": "10.0.0.21"},
    "w2": {"ansible_host": "10.0.0.22"},
    "lb1": {"ansible_host": "10.0.0.31"},
}


def build(groups=None, hostvars=None, **settings):
    return build_model(groups or GOOD_GROUPS, hostvars or GOOD_HOSTVARS, settings)


def problems(groups=None, hostvars=None, **settings) -> list[str]:
    with pytest.raises(ModelError) as err:
        build(groups, hostvars, **settings)
    return [str(p) for p in err.value.problems]


def one_problem(groups=None, hostvars=None, **settings) -> str:
    found = problems(groups, hostvars, **settings)
    assert len(found) == 1, found
    return found[0]


def test_good_inventory_gives_the_model():
    model = build()
    assert model["kubernetes_version"] == "1.37.1"
    assert model["kubernetes_minor"] == "1.37"
    assert model["first_control_plane"] == "cp1"
    assert model["control_planes"] == ["cp1", "cp2", "cp3"]
    assert model["workers"] == ["w1", "w2"]
    assert model["etcd_members"] == ["cp1", "cp2", "cp3"]
    assert model["nodes"]["cp3"]["address"] == "10.0.1.13"  # ip wins over ansible_host
    assert model["nodes"]["cp3"]["url_host"] == "10.0.1.13"
    assert model["nodes"]["cp1"]["roles"] == ["control_plane", "etcd"]
    assert model["nodes"]["w1"]["roles"] == ["worker"]
    assert model["cluster_dns_ip"] == "10.233.0.10"
    assert model["kubernetes_service_ip"] == "10.233.0.1"
    assert model["endpoint"]["address"] == "127.0.0.1:8443"
    assert model["endpoint"]["external_url"] == "https://10.0.0.11:6443"
    assert model["warnings"] == []


def test_version_with_v_prefix_is_normalized():
    assert build(slipway_kubernetes_version="v1.36.4")["kubernetes_version"] == "1.36.4"


@pytest.mark.parametrize("text,parsed", [("1.36.2", (1, 36, 2)), ("v1.34.0", (1, 34, 0)), ("1.36", None), ("latest", None)])
def test_parse_version(text, parsed):
    assert parse_version(text) == parsed


def test_no_control_plane():
    groups = {"kube_node": ["w1"]}
    found = problems(groups)
    assert any(p.startswith("group kube_control_plane: has no host") for p in found)


def test_empty_control_plane_group_with_workers_only_is_one_clear_problem():
    found = problems({"kube_control_plane": [], "kube_node": ["w1", "w2"]})
    assert found == ["group kube_control_plane: has no host; add at least one control plane host"]


@pytest.mark.parametrize("cps", [["cp1", "cp2"], ["cp1", "cp2", "cp3", "w1"]])
def test_an_even_number_of_stacked_etcd_members_is_refused_with_the_reason(cps):
    found = one_problem({"kube_control_plane": cps, "kube_node": ["w2"]})
    count = len(cps)
    assert found.startswith(f"group kube_control_plane: etcd has {count} members: quorum is {count // 2 + 1} of {count}")
    assert f"use {count - 1} or {count + 1} control planes, or set slipway_etcd_even_members_ok: true" in found


@pytest.mark.parametrize("ok", [True, "true", "yes"])
def test_an_even_number_of_etcd_members_the_user_means_is_a_warning(ok):
    # A replacement passes through an even count (add the new control plane, then remove the old).
    model = build({"kube_control_plane": ["cp1", "cp2"], "kube_node": ["w2"]}, slipway_etcd_even_members_ok=ok)
    assert len(model["warnings"]) == 1
    assert model["warnings"][0].startswith("group kube_control_plane: etcd has 2 members")
    assert "use 1 or 3" in model["warnings"][0]


def test_an_even_number_of_external_etcd_members_is_refused_naming_the_etcd_group():
    groups = {**GOOD_GROUPS, "etcd": ["cp1", "cp2"]}
    assert one_problem(groups, slipway_etcd_mode="external").startswith("group etcd: etcd has 2 members")
    assert build(groups, slipway_etcd_mode="external", slipway_etcd_even_members_ok=True)["warnings"][0].startswith(
        "group etcd: etcd has 2 members")


def test_the_model_after_a_removal_only_warns_of_an_even_count():
    model = build_model(GOOD_GROUPS, GOOD_HOSTVARS, {}, exclude=["cp3"])
    assert model["etcd_members"] == ["cp1", "cp2"]
    assert model["warnings"][0].startswith("group kube_control_plane: etcd has 2 members")


def test_the_even_members_setting_is_a_boolean():
    assert "slipway_etcd_even_members_ok: 'sure' is not a boolean; set true or false" in problems(
        slipway_etcd_even_members_ok="sure")


def test_excluded_hosts_are_left_out_as_if_not_listed():
    model = build_model(GOOD_GROUPS, GOOD_HOSTVARS, {}, exclude=["cp1", "w2"])
    assert model["control_planes"] == ["cp2", "cp3"]
    assert model["first_control_plane"] == "cp2"
    assert model["workers"] == ["w1"]
    assert model["etcd_members"] == ["cp2", "cp3"]
    assert set(model["nodes"]) == {"cp2", "cp3", "w1"}


def test_excluding_every_control_plane_is_refused():
    found = [str(p) for p in pytest.raises(ModelError, build_model, GOOD_GROUPS, GOOD_HOSTVARS, {},
                                           exclude=["cp1", "cp2", "cp3"]).value.problems]
    assert found[0].startswith("group kube_control_plane: has no host")


def test_external_etcd_needs_members():
    groups = {k: v for k, v in GOOD_GROUPS.items() if k != "etcd"}
    assert one_problem(groups, slipway_etcd_mode="external").startswith("group etcd: slipway_etcd_mode is external")


def test_stacked_etcd_group_must_match_control_planes():
    groups = {**GOOD_GROUPS, "etcd": ["cp1", "w1", "w2"]}
    msg = one_problem(groups)
    assert msg.startswith("group etcd: stacked etcd runs on the control planes")
    assert "slipway_etcd_mode: external" in msg


def test_external_etcd_members_are_in_the_model():
    groups = {**GOOD_GROUPS, "etcd": ["w1", "w2", "lb1"]}
    model = build(groups, slipway_etcd_mode="external")
    assert model["etcd_members"] == ["w1", "w2", "lb1"]
    assert model["nodes"]["lb1"]["roles"] == ["etcd"]
    assert model["nodes"]["lb1"]["kubernetes"] is False


def test_external_etcd_on_workers_warns_naming_them():
    groups = {**GOOD_GROUPS, "etcd": ["w1", "w2", "lb1"]}
    warnings = build(groups, slipway_etcd_mode="external")["warnings"]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith("group etcd: w1, w2 are also in kube_node: their etcd member runs beside the "
                                  "cluster's workloads")
    # On the control planes (etcd's usual place) or hosts of its own: no warning.
    assert build(groups={**GOOD_GROUPS, "etcd": ["cp1", "cp2", "lb1"]}, slipway_etcd_mode="external")["warnings"] == []


def test_external_etcd_on_two_workers_is_refused_and_the_warning_said_with_it():
    groups = {**GOOD_GROUPS, "etcd": ["w1", "w2"]}
    with pytest.raises(ModelError) as err:
        build(groups, slipway_etcd_mode="external")
    assert [str(p) for p in err.value.problems][0].startswith("group etcd: etcd has 2 members")
    assert str(err.value.warnings[0]).startswith("group etcd: w1, w2 are also in kube_node")


def test_duplicate_addresses():
    hostvars = copy.deepcopy(GOOD_HOSTVARS)
    hostvars["w2"]["ansible_host"] = "10.0.0.21"
    assert one_problem(hostvars=hostvars) == (
        "host w2: has the same address 10.0.0.21 as host w1; give each node its own ip"
    )


def test_duplicate_hostnames_differing_in_case_and_invalid_names():
    groups = {"kube_control_plane": ["cp1"], "kube_node": ["CP1", "web_1"]}
    hostvars = {"cp1": {"ansible_host": "10.0.0.1"}, "CP1": {"ansible_host": "10.0.0.2"}, "web_1": {"ansible_host": "10.0.0.3"}}
    found = problems(groups, hostvars)
    assert "host CP1: has the same hostname as host cp1; give each node a unique name" in found
    assert any(p.startswith("host CP1: is not a valid Kubernetes node name") for p in found)
    assert any(p.startswith("host web_1: is not a valid Kubernetes node name") for p in found)


@pytest.mark.parametrize("version,expected", [
    ("1.36", "is not a Kubernetes version"),
    ("one.two", "is not a Kubernetes version"),
    ("1.20.0", "1.20 is not supported"),
    ("2.0.0", "2.0 is not supported"),
])
def test_bad_kubernetes_versions(version, expected):
    msg = one_problem(slipway_kubernetes_version=version)
    assert msg.startswith("slipway_kubernetes_version:") and expected in msg


def test_overlapping_pod_and_service_cidrs():
    msg = one_problem(slipway_pod_cidr="10.96.0.0/12", slipway_service_cidr="10.96.0.0/16")
    assert msg == "slipway_pod_cidr: 10.96.0.0/12 overlaps slipway_service_cidr 10.96.0.0/16; choose ranges that do not overlap"


def test_cidr_containing_a_node_address():
    msg = one_problem(slipway_pod_cidr="10.0.0.0/16")
    assert msg == (
        "slipway_pod_cidr: 10.0.0.0/16 contains the address of host cp1 (10.0.0.11), cp2 (10.0.0.12), cp3 (10.0.1.13), "
        "w1 (10.0.0.21), w2 (10.0.0.22); choose a range outside the nodes' network"
    )


@pytest.mark.parametrize("value,expected", [
    ("10.233.64.1/18", "has host bits set; set it to the network address 10.233.64.0/18"),
    ("banana", "is not a network in CIDR notation"),
    ("", "is not a network in CIDR notation"),
])
def test_malformed_cidrs(value, expected):
    msg = one_problem(slipway_pod_cidr=value)
    assert msg.startswith("slipway_pod_cidr:") and expected in msg


def test_service_cidr_too_large():
    msg = one_problem(slipway_service_cidr="192.0.0.0/8", slipway_pod_cidr="172.16.0.0/16")
    assert "larger than the API server accepts" in msg


def test_pod_cidr_too_small_for_the_nodes():
    msg = one_problem(slipway_pod_cidr="10.233.64.0/22")
    assert msg.startswith("slipway_pod_cidr: 10.233.64.0/22 holds 4 node ranges of /24 but the cluster has 5 nodes")


def test_node_mask_must_be_longer_than_pod_prefix():
    msg = one_problem(slipway_node_cidr_mask_size=16)
    assert msg.startswith("slipway_node_cidr_mask_size: 16 must be longer")


IPV6 = {name: {"ansible_host": f"2001:db8::{index + 1}"} for index, name in enumerate(GOOD_HOSTVARS)}


@pytest.mark.parametrize("service", ["10.96.0.0/29", "10.96.0.0/30", "10.96.0.8/32", "fd00:96::/125"])
def test_a_service_range_must_hold_the_api_servers_and_the_dns_address(service):
    hostvars = IPV6 if ":" in service else None
    pod = {"slipway_pod_cidr": "fd00:10::/56", "slipway_node_cidr_mask_size": 64} if ":" in service else {}
    msg = one_problem(None, hostvars, slipway_service_cidr=service, **pod)
    assert msg.startswith(f"slipway_service_cidr: {service} has ") and "cannot hold the API server's Service address" in msg
    assert "/28 or shorter" in msg if ":" not in service else "/124 or shorter" in msg


def test_the_smallest_service_range_that_holds_them_is_accepted():
    model = build(slipway_service_cidr="10.96.0.0/28")
    assert model["kubernetes_service_ip"] == "10.96.0.1" and model["cluster_dns_ip"] == "10.96.0.10"


def test_an_ipv6_service_range_of_more_than_20_host_bits_is_refused():
    settings = {"slipway_pod_cidr": "fd00:10::/56", "slipway_node_cidr_mask_size": 64}
    assert one_problem(None, IPV6, slipway_service_cidr="fd00:96::/100", **settings) == (
        "slipway_service_cidr: fd00:96::/100 is larger than the API server accepts for IPv6 (at most 20 host bits); "
        "use a prefix of /108 or longer, e.g. fd00:10:96::/108")
    model = build(None, IPV6, slipway_service_cidr="fd00:96::/108", **settings)
    assert model["cluster_dns_ip"] == "fd00:96::a"


@pytest.mark.parametrize("pod, mask, expected", [
    # The IPv4 default of 24 is no node range of an IPv6 pod range.
    ("fd00:10::/56", 24, "slipway_node_cidr_mask_size: 24 must be longer than slipway_pod_cidr's /56 and at most 126 "
                         "(IPv6); set it like 64"),
    ("fd00:10::/64", 64, "slipway_node_cidr_mask_size: 64 must be longer than slipway_pod_cidr's /64"),
    ("fd00:10::/48", 127, "slipway_node_cidr_mask_size: 127 must be longer than slipway_pod_cidr's /48 and at most 126"),
    ("fd00:10::/40", 64, "slipway_node_cidr_mask_size: /64 is 24 bits longer than slipway_pod_cidr's /40; "
                         "kube-controller-manager allows at most 16: set it to 56 or shorter"),
    ("fd00:10::/62", 64, "slipway_pod_cidr: fd00:10::/62 holds 4 node ranges of /64 but the cluster has 5 nodes"),
])
def test_an_ipv6_node_mask_fits_the_pod_range(pod, mask, expected):
    msg = one_problem(None, IPV6, slipway_pod_cidr=pod, slipway_node_cidr_mask_size=mask,
                      slipway_service_cidr="fd00:96::/112")
    assert msg.startswith(expected), msg


def test_ipv4_node_ranges_at_most_16_bits_longer_than_the_pod_range():
    assert one_problem(slipway_pod_cidr="10.64.0.0/10", slipway_node_cidr_mask_size=27).startswith(
        "slipway_node_cidr_mask_size: /27 is 17 bits longer than slipway_pod_cidr's /10")
    assert build(slipway_pod_cidr="10.64.0.0/10", slipway_node_cidr_mask_size=26)["node_cidr_mask_size"] == 26


@pytest.mark.parametrize("var,value,choices", [
    ("slipway_lb_mode", "nginx", "local_haproxy, vip, external"),
    ("slipway_cni", "weave", "flannel, calico, cilium, none"),
    ("slipway_etcd_mode", "embedded", "stacked, external"),
    ("slipway_artifacts_source", "internet", "upstream, mirror, bundle"),
])
def test_unknown_choices(var, value, choices):
    assert one_problem(**{var: value}) == f"{var}: unknown value '{value}'; set one of: {choices}"


def test_non_ip_addresses():
    hostvars = copy.deepcopy(GOOD_HOSTVARS)
    hostvars["w1"] = {"ansible_host": "w1.example.com"}
    hostvars["w2"] = {"ansible_host": "10.0.0.22", "ip": "not-an-ip"}
    found = problems(hostvars=hostvars)
    assert found == [
        "host w1: ansible_host 'w1.example.com' is not an IP address and ip is not set; "
        "set ip: to the address Kubernetes should use on this node",
        "host w2: ip 'not-an-ip' is not an IP address; set ip: to the node's IPv4 address",
    ]


def test_dns_ansible_host_with_ip_is_fine():
    hostvars = copy.deepcopy(GOOD_HOSTVARS)
    hostvars["w1"] = {"ansible_host": "w1.example.com", "ip": "10.0.0.21"}
    assert build(hostvars=hostvars)["nodes"]["w1"]["address"] == "10.0.0.21"


def test_host_without_any_address():
    hostvars = copy.deepcopy(GOOD_HOSTVARS)
    hostvars["w1"] = {}
    assert one_problem(hostvars=hostvars) == "host w1: has neither ip nor ansible_host; set ip: to the node's IPv4 address"


def test_vip_mode_model():
    groups = {**GOOD_GROUPS, "loadbalancer": ["lb1"]}
    model = build(groups, slipway_lb_mode="vip", slipway_control_plane_endpoint="10.0.0.250")
    assert model["endpoint"]["address"] == "10.0.0.250:8443"
    assert model["endpoint"]["vip"] == "10.0.0.250"
    assert model["loadbalancers"] == ["lb1"]
    assert model["nodes"]["lb1"]["roles"] == ["loadbalancer"]


def test_vip_mode_without_loadbalancer_group_uses_control_planes():
    model = build(slipway_lb_mode="vip", slipway_control_plane_endpoint="10.0.0.250:6443")
    assert model["loadbalancers"] == ["cp1", "cp2", "cp3"]
    assert model["endpoint"]["port"] == 6443


@pytest.mark.parametrize("endpoint,expected", [
    ("", "slipway_lb_mode is vip: set it to the virtual IP"),
    ("api.example.com", "'api.example.com' is not an IP address"),
    ("10.0.0.11", "is host cp1's address"),
    ("10.0.0.250:http", "has an invalid port"),
])
def test_bad_vip(endpoint, expected):
    msg = one_problem(slipway_lb_mode="vip", slipway_control_plane_endpoint=endpoint)
    assert msg.startswith("slipway_control_plane_endpoint:") and expected in msg


def test_vip_inside_the_pod_network():
    msg = one_problem(slipway_lb_mode="vip", slipway_control_plane_endpoint="10.233.64.5")
    assert msg == (
        "slipway_pod_cidr: 10.233.64.0/18 contains the control plane endpoint 10.233.64.5; "
        "choose a range outside the nodes' network"
    )


def test_external_endpoint():
    model = build(slipway_lb_mode="external", slipway_control_plane_endpoint="api.example.com")
    assert model["endpoint"]["address"] == "api.example.com:6443"
    assert build(slipway_lb_mode="external", slipway_control_plane_endpoint="[fd00::1]:443")["endpoint"]["address"] == "[fd00::1]:443"


def test_external_endpoint_missing_or_malformed():
    assert one_problem(slipway_lb_mode="external").startswith("slipway_control_plane_endpoint: slipway_lb_mode is external")
    assert "neither an IP address nor a DNS name" in one_problem(slipway_lb_mode="external", slipway_control_plane_endpoint="bad_name!")


def test_endpoint_given_with_local_haproxy():
    assert one_problem(slipway_control_plane_endpoint="10.0.0.250").startswith(
        "slipway_control_plane_endpoint: is only used with slipway_lb_mode vip or external"
    )


@pytest.mark.parametrize("var,value", [("slipway_lb_port", 0), ("slipway_lb_port", "http"), ("slipway_apiserver_port", 70000)])
def test_bad_ports(var, value):
    assert one_problem(**{var: value}).startswith(f"{var}: '{value}' is not a TCP port")


def test_kubesphere_toggle_must_be_boolean():
    assert one_problem(slipway_kubesphere_enabled="maybe") == "slipway_kubesphere_enabled: 'maybe' is not a boolean; set true or false"


@pytest.mark.parametrize("value,expected", [("yes", True), ("off", False), (1, True), (True, True)])
def test_kubesphere_toggle_accepts_ansible_booleans(value, expected):
    assert build(slipway_kubesphere_enabled=value)["kubesphere_enabled"] is expected


def test_loadbalancer_group_is_only_warned_about_outside_vip_mode():
    model = build({**GOOD_GROUPS, "loadbalancer": ["lb1"]})
    assert model["warnings"] == ["group loadbalancer: its hosts are only used with slipway_lb_mode vip; with local_haproxy they get nothing"]


def test_every_mistake_is_reported_at_once():
    groups = {"kube_control_plane": ["cp1", "cp2"], "kube_node": ["w1", "w2"], "etcd": ["cp1", "w2"]}
    hostvars = {
        "cp1": {"ansible_host": "10.0.0.11"},
        "cp2": {"ansible_host": "10.0.0.11"},
        "w1": {"ansible_host": "w1.lan"},
        "w2": {"ansible_host": "10.0.0.22"},
    }
    found = problems(
        groups, hostvars,
        slipway_kubernetes_version="1.19.0",
        slipway_pod_cidr="10.0.0.0/16",
        slipway_service_cidr="10.0.128.0/17",
        slipway_lb_mode="haproxy",
        slipway_cni="weave",
    )
    wheres = [p.split(":")[0] for p in found]
    for expected in ("host cp2", "host w1", "slipway_kubernetes_version", "slipway_lb_mode", "slipway_cni",
                     "group etcd", "slipway_pod_cidr"):
        assert expected in wheres, found
    assert len(found) >= 8


def test_operator_toggle_must_be_boolean_and_needs_kubesphere():
    assert one_problem(slipway_operator_enabled="maybe") == "slipway_operator_enabled: 'maybe' is not a boolean; set true or false"
    assert one_problem(slipway_operator_enabled=True).startswith(
        "slipway_operator_enabled: is true but slipway_kubesphere_enabled is false")
    assert build(slipway_operator_enabled="yes", slipway_kubesphere_enabled=True)["operator_enabled"] is True
    assert build()["operator_enabled"] is False


# Names that are not ours, types written as strings, and the role settings checked before any contact.

@pytest.mark.parametrize("name,suggestion", [
    ("slipway_kubernets_version", "did you mean slipway_kubernetes_version?"),
    ("slipway_podcidr", "did you mean slipway_pod_cidr?"),
    ("slipway_lb_mod", "did you mean slipway_lb_mode?"),
    ("slipway_frobnicate", "the settings are listed in docs/preflight.md"),
    ("slipway_kubesphere", "did you mean slipway_kubesphere_enabled?"),
    ("slipway_operater_enabled", "did you mean slipway_operator_enabled?"),
    ("slipway_artifact_source", "did you mean slipway_artifacts_source?"),
])
def test_an_unknown_slipway_setting_names_the_nearest_real_one(name, suggestion):
    assert one_problem(**{name: "x"}) == f"{name}: is not a setting of slipway.cluster; {suggestion}"


def test_the_labs_own_variables_and_the_model_fact_are_not_settings_to_check():
    build(slipway_lab_cluster="lab", slipway_lab_subnet="10.99.0.0/24", slipway_lab_vip="10.99.0.250", slipway_cluster={})


def test_role_variables_are_not_slipway_settings():
    build(preflight_min_cpus_worker=1, control_plane_kube_proxy_mode="ipvs", node_join_token_ttl="15m")


@pytest.mark.parametrize("settings", [
    {"slipway_node_cidr_mask_size": "24"}, {"slipway_lb_port": "8443"}, {"slipway_apiserver_port": "6443"},
    {"slipway_kubesphere_enabled": "false"}, {"loadbalancer_haproxy_health_port": "8404"},
])
def test_numbers_and_booleans_written_as_strings_are_numbers_and_booleans(settings):
    build(**settings)


def test_a_wrong_type_is_one_line_naming_the_variable_the_value_and_what_is_expected():
    found = problems(slipway_node_cidr_mask_size="big", slipway_lb_port=[1], slipway_kubesphere_enabled="maybe")
    assert "slipway_node_cidr_mask_size: 'big' is not a prefix length; set a number such as 24" in found
    assert "slipway_lb_port: '[1]' is not a TCP port; set a number from 1 to 65535" in found
    assert "slipway_kubesphere_enabled: 'maybe' is not a boolean; set true or false" in found
    assert len(found) == 3


@pytest.mark.parametrize("settings,expected", [
    ({"slipway_lb_port": 6443}, "slipway_lb_port: is 6443 like slipway_apiserver_port, but haproxy runs on the "
     "control planes next to kube-apiserver (local_haproxy mode): set slipway_lb_port to another port, e.g. 8443"),
    ({"slipway_lb_mode": "vip", "slipway_control_plane_endpoint": "10.0.0.250", "slipway_lb_port": 6443},
     "slipway_lb_port: is 6443 like slipway_apiserver_port"),
    ({"slipway_lb_mode": "vip", "slipway_control_plane_endpoint": "10.0.0.250",
      "loadbalancer_keepalived_virtual_router_id": 300},
     "loadbalancer_keepalived_virtual_router_id: '300' is not a VRRP router id; set a number from 1 to 255, or 0 to "
     "derive it from the virtual IP"),
    ({"slipway_lb_mode": "vip", "slipway_control_plane_endpoint": "10.0.0.250",
      "loadbalancer_keepalived_auth_pass": "123456789"},
     "loadbalancer_keepalived_auth_pass: is longer than 8 characters, and VRRP ignores the rest; shorten it"),
    ({"loadbalancer_haproxy_health_port": 8443}, "loadbalancer_haproxy_health_port: is 8443, the port of haproxy; "
     "choose another free TCP port"),
    ({"control_plane_kube_proxy_mode": "userspace"}, "control_plane_kube_proxy_mode: unknown value 'userspace'; set "
     "one of: iptables, nftables, ipvs"),
    ({"control_plane_kube_proxy_conntrack_max_per_core": "lots"},
     "control_plane_kube_proxy_conntrack_max_per_core: 'lots' is not auto or a number"),
    ({"cni_flannel_backend": "vxlan2"}, "cni_flannel_backend: unknown value 'vxlan2'; set one of: vxlan, host-gw, "
     "wireguard, udp, ipip"),
    ({"slipway_cni": "calico"}, "cni_manifest_src: slipway_cni is calico: set it to the upstream manifest"),
    ({"containerd_registry_mirrors": ["https://m.example"]}, "containerd_registry_mirrors: '['https://m.example']' is "
     "not a mapping"),
    ({"containerd_registry_mirrors": {"docker.io": "https://m.example"}},
     "containerd_registry_mirrors[docker.io]: 'https://m.example' is not a list of mirror URLs"),
    ({"containerd_registry_mirrors": {"docker.io": ["m.example:5000"]}},
     "containerd_registry_mirrors[docker.io]: 'm.example:5000' is not an http:// or https:// URL"),
    ({"containerd_registry_auths": {"r.example": {"user": "u", "password": "p"}}},
     "containerd_registry_auths: is not a mapping of registry host to {username: ..., password: ...}"),
    ({"kubesphere_cluster_configuration": ["spec"]}, "kubesphere_cluster_configuration: is a list; set a mapping"),
    ({"kubesphere_cluster_configuration_merge_type": "patch"},
     "kubesphere_cluster_configuration_merge_type: unknown value 'patch'; set one of: merge, replace"),
    ({"slipway_artifacts_source": "mirror", "slipway_artifacts_mirror_url": "files.example"},
     "slipway_artifacts_mirror_url: 'files.example' is not an http:// or https:// URL"),
    ({"slipway_artifacts_registry_mirror": "https://registry.example"},
     "slipway_artifacts_registry_mirror: 'https://registry.example' is not a registry; set host[:port] without http://"),
    ({"slipway_dns_domain": "cluster_local"}, "slipway_dns_domain: 'cluster_local' is not a DNS domain"),
    ({"node_join_token_ttl": "15 minutes"}, "node_join_token_ttl: '15 minutes' is not a duration; set one such as 15m"),
    ({"metrics_server_replicas": "0"}, "metrics_server_replicas: '0' is not a number of replicas; set 1 or more"),
    ({"slipway_hardening": "strict"}, "slipway_hardening: unknown value 'strict'; set one of: cis, none"),
    ({"slipway_secrets_encryption": "maybe"}, "slipway_secrets_encryption: 'maybe' is not a boolean"),
    ({"control_plane_audit_log_maxage": "a month"}, "control_plane_audit_log_maxage: 'a month' is not a number"),
    ({"control_plane_audit_log_maxsize": 0}, "control_plane_audit_log_maxsize: '0' is not a number"),
    ({"control_plane_encryption_provider": "aesgcm"}, "control_plane_encryption_provider: unknown value 'aesgcm'; "
     "set one of: aescbc, secretbox"),
    ({"control_plane_kubelet_pod_pids_limit": "many"}, "control_plane_kubelet_pod_pids_limit: 'many' is not a number"),
    ({"control_plane_audit_policy_src": ["policy.yaml"]}, "control_plane_audit_policy_src: is not a path"),
    ({"metrics_server_kubelet_preferred_address_types": ["InternalIp"]},
     "metrics_server_kubelet_preferred_address_types: '['InternalIp']' is not a list of InternalIP, ExternalIP"),
])
def test_role_settings_a_later_role_would_refuse_are_in_the_one_list(settings, expected):
    found = one_problem(**settings)
    assert found.startswith(expected), found


def test_a_vip_on_dedicated_load_balancers_may_share_the_api_servers_port():
    groups = {**GOOD_GROUPS, "loadbalancer": ["lb1"]}
    build(groups, None, slipway_lb_mode="vip", slipway_control_plane_endpoint="10.0.0.250", slipway_lb_port=6443)


def test_kubespray_settings_are_checked_with_the_rest():
    found = problems(kube_version="v1.36.2", slipway_lb_mod="vip", kube_proxy_mode="iptables")
    assert found[0].startswith("slipway_lb_mod: is not a setting of slipway.cluster")
    assert found[1].startswith("kube_version: 'v1.36.2' is kubespray's and is not read")
    assert len(found) == 2
    assert build(kube_proxy_mode="iptables", kube_pods_subnet="10.233.64.0/18")["kubespray_ignored"] == [
        "kube_pods_subnet", "kube_proxy_mode"]


def test_a_missing_or_partial_k8s_cluster_group_is_named():
    assert one_problem_k8s({**GOOD_GROUPS}) == (
        "group k8s_cluster: does not exist; the plays on it would miss hosts: add k8s_cluster with the children "
        "kube_control_plane and kube_node to the inventory (site.yml adds them by itself)")
    assert one_problem_k8s({**GOOD_GROUPS, "k8s_cluster": ["cp1", "cp2", "cp3"]}).startswith(
        "group k8s_cluster: lacks w1, w2;")
    build_model({**GOOD_GROUPS, "k8s_cluster": ["cp1", "cp2", "cp3", "w1", "w2"]}, GOOD_HOSTVARS, {}, check_k8s_cluster=True)


def one_problem_k8s(groups):
    with pytest.raises(ModelError) as err:
        build_model(groups, GOOD_HOSTVARS, {}, check_k8s_cluster=True)
    assert len(err.value.problems) == 1, err.value.problems
    return str(err.value.problems[0])


# One authority: the defaults the model checks with are the ones the roles document and use, read from the roles.
COLLECTION = __file__.split("/tests/unit/", maxsplit=1)[0]
ROLE_OF = {name: role for role, names in ROLE_VARIABLES.items() for name in names}


def _yaml(path):
    import yaml

    with open(f"{COLLECTION}/{path}", encoding="utf-8") as handle:
        return yaml.safe_load(handle)


@pytest.mark.parametrize("name", sorted(ROLE_VARIABLE_NAMES))
def test_the_models_role_defaults_are_the_roles_defaults_and_argument_specs(name):
    role = ROLE_OF[name]
    assert role_defaults()[name] == _yaml(f"roles/{role}/defaults/main.yml")[name]
    assert _yaml(f"roles/{role}/meta/argument_specs.yml")["argument_specs"]["main"]["options"][name]["default"] == role_defaults()[name]


def test_the_role_defaults_come_from_the_roles_directory(tmp_path):
    for role, names in ROLE_VARIABLES.items():
        (tmp_path / role / "defaults").mkdir(parents=True)
        (tmp_path / role / "defaults" / "main.yml").write_text("".join(f"{name}: {role}\n" for name in names))
    assert role_defaults(str(tmp_path)) == {name: ROLE_OF[name] for name in ROLE_VARIABLE_NAMES}


def test_a_role_without_the_default_is_named(tmp_path):
    for role in ROLE_VARIABLES:
        (tmp_path / role / "defaults").mkdir(parents=True)
        (tmp_path / role / "defaults" / "main.yml").write_text("other: 1\n")
    with pytest.raises(KeyError, match="sets no default for"):
        role_defaults(str(tmp_path))


@pytest.mark.parametrize("name", sorted(DEFAULT_SETTINGS))
def test_the_preflight_argument_spec_documents_every_setting_with_the_models_default(name):
    options = _yaml("roles/preflight/meta/argument_specs.yml")["argument_specs"]["main"]["options"]
    assert name in options
    assert options[name]["default"] == DEFAULT_SETTINGS[name]


# What the argument specs offer is what the model accepts: the same tuples.
@pytest.mark.parametrize("role, option, choices", [
    ("control_plane", "control_plane_kube_proxy_mode", "KUBE_PROXY_MODES"),
    ("control_plane", "control_plane_encryption_provider", "ENCRYPTION_PROVIDERS"),
    ("cni", "cni_flannel_backend", "FLANNEL_BACKENDS"),
    ("operator", "operator_image_pull_policy", "IMAGE_PULL_POLICIES"),
    ("kubesphere", "kubesphere_cluster_configuration_merge_type", "MERGE_TYPES"),
    ("preflight", "slipway_lb_mode", "LB_MODES"),
    ("preflight", "slipway_cni", "CNIS"),
    ("preflight", "slipway_etcd_mode", "ETCD_MODES"),
    ("preflight", "slipway_artifacts_source", "ARTIFACT_SOURCES"),
    ("preflight", "slipway_hardening", "HARDENING"),
])
def test_the_argument_specs_choices_are_the_models(role, option, choices):
    from ansible_collections.slipway.cluster.plugins.module_utils import _settings

    spec = _yaml(f"roles/{role}/meta/argument_specs.yml")["argument_specs"]["main"]["options"][option]
    assert tuple(spec["choices"]) == getattr(_settings, choices)


def test_the_kubelet_address_types_argument_spec_offers_the_models():
    from ansible_collections.slipway.cluster.plugins.module_utils._settings import KUBELET_ADDRESS_TYPES

    spec = _yaml("roles/metrics_server/meta/argument_specs.yml")["argument_specs"]["main"]["options"]
    assert tuple(spec["metrics_server_kubelet_preferred_address_types"]["choices"]) == KUBELET_ADDRESS_TYPES


def test_every_choices_list_of_a_checked_variable_is_tested_against_the_model():
    # A role variable the model checks that gets `choices` in its argument spec must join the test above.
    tested = {"control_plane_kube_proxy_mode", "control_plane_encryption_provider", "cni_flannel_backend",
              "operator_image_pull_policy", "metrics_server_kubelet_preferred_address_types",
              "kubesphere_cluster_configuration_merge_type"}
    with_choices = set()
    for name in ROLE_VARIABLE_NAMES:
        role = ROLE_OF[name]
        if "choices" in _yaml(f"roles/{role}/meta/argument_specs.yml")["argument_specs"]["main"]["options"][name]:
            with_choices.add(name)
    assert with_choices <= tested, with_choices - tested


def test_operator_settings_are_checked_by_the_model():
    found = problems(operator_replicas=0, operator_image_pull_policy="Sometimes", operator_resync_seconds="often",
                     operator_kubesphere_vars={"kubesphere_kubeconfig": "/x", "kubesphere_wait": False})
    assert found == [
        "operator_image_pull_policy: unknown value 'Sometimes'; set one of: Always, IfNotPresent, Never",
        "operator_replicas: '0' is not a number of replicas; set 1 or more (2: one stands by)",
        "operator_resync_seconds: 'often' is not a number of seconds; set 1 or more",
        "operator_kubesphere_vars: sets kubesphere_kubeconfig, which the operator sets itself (its service account, the "
        "stored ClusterConfiguration); remove them",
    ]
    assert one_problem(operator_kubesphere_vars=["kubesphere_wait"]) == (
        "operator_kubesphere_vars: is a list; set a mapping of kubesphere_* settings")


def test_check_settings_checks_the_settings_without_an_inventory():
    from ansible_collections.slipway.cluster.plugins.module_utils._model import check_settings

    assert check_settings({"operator_replicas": "3"}) == []
    with pytest.raises(ModelError) as err:
        check_settings({"operator_replicas": 0, "slipway_kubernets_version": "1.37.1", "kube_proxy_mode": "ipvs"})
    assert [p.where for p in err.value.problems] == ["slipway_kubernets_version", "operator_replicas", "kube_proxy_mode"]


def test_both_join_token_lifetimes_are_durations():
    assert one_problem(control_plane_join_token_ttl="a day") == (
        "control_plane_join_token_ttl: 'a day' is not a duration; set one such as 15m or 1h")
    assert build(control_plane_join_token_ttl="1h30m")["control_planes"]


def test_the_etcd_certificate_directories_follow_the_mode_and_etcd_pki_dir():
    model = build()
    assert (model["etcd_pki_dir"], model["etcd_certs_dir"]) == ("/etc/kubernetes/pki", "/etc/kubernetes/pki/etcd")
    groups = {**GOOD_GROUPS, "etcd": ["lb1"]}
    model = build(groups, None, slipway_etcd_mode="external", etcd_pki_dir="/srv/etcd/pki/")
    assert (model["etcd_pki_dir"], model["etcd_certs_dir"]) == ("/srv/etcd/pki", "/srv/etcd/pki/etcd")
    assert build(groups, None, slipway_etcd_mode="external")["etcd_certs_dir"] == "/etc/etcd/pki/etcd"
    assert one_problem(etcd_pki_dir="pki") == "etcd_pki_dir: 'pki' is not an absolute path; set a directory such as /etc/etcd/pki"


def test_the_vrrp_router_id_is_the_models():
    vip = {"slipway_lb_mode": "vip", "slipway_control_plane_endpoint": "10.0.0.250"}
    # Derived from the virtual IP as the loadbalancer role did (sha1, first 8 hex digits, mod 255, plus 1).
    assert build(**vip)["endpoint"]["vrrp_router_id"] == int(__import__("hashlib").sha1(b"10.0.0.250").hexdigest()[:8], 16) % 255 + 1
    assert build(**vip, loadbalancer_keepalived_virtual_router_id="42")["endpoint"]["vrrp_router_id"] == 42
    assert "vrrp_router_id" not in build()["endpoint"]


def test_networks_and_node_addresses_of_different_address_families_are_named():
    assert one_problem(slipway_pod_cidr="fd00:10::/56", slipway_node_cidr_mask_size=64) == (
        "slipway_pod_cidr: fd00:10::/56 is IPv6 but the nodes' addresses are IPv4; a single-stack cluster uses one "
        "address family: set an IPv4 range, e.g. 10.233.64.0/18")
    hostvars = {**GOOD_HOSTVARS, "w2": {"ansible_host": "2001:db8::22"}}
    assert one_problem(None, hostvars) == (
        "slipway_service_cidr: is IPv4 but the address of host w2 is not; a single-stack cluster uses one address "
        "family: give the nodes addresses of the networks' family (ip:) or change the networks")


class FilesOnly:
    """The controller's files as the action plugin reads them; no bundle."""

    def __init__(self, files):
        self.files = files

    def manifest(self, bundle_dir):
        return None

    def checksum(self, path):
        return None

    def yaml_file(self, path):
        if path not in self.files:
            return None, "is not found"
        return self.files[path], None


@pytest.mark.parametrize("content, expected", [
    (None, "kubesphere_cluster_configuration: the file cc.yml is not found; give the path of a ClusterConfiguration"),
    (["spec"], "kubesphere_cluster_configuration: the file cc.yml holds a list, not a ClusterConfiguration"),
    ({"kind": "ConfigMap", "spec": {}}, "kubesphere_cluster_configuration: the file cc.yml is a ConfigMap, not a "
     "ClusterConfiguration"),
    ({"kind": "ClusterConfiguration", "spec": "on"}, "kubesphere_cluster_configuration: the file cc.yml has a spec that "
     "is a str"),
])
def test_a_cluster_configuration_file_is_read_before_any_host_changes(content, expected):
    files = FilesOnly({} if content is None else {"cc.yml": content})
    with pytest.raises(ModelError) as err:
        build_model(GOOD_GROUPS, GOOD_HOSTVARS, {"slipway_kubesphere_enabled": True,
                                                 "kubesphere_cluster_configuration": "cc.yml"}, bundle=files)
    assert str(err.value.problems[0]).startswith(expected), err.value.problems
    assert len(err.value.problems) == 1


def test_a_good_cluster_configuration_file_passes_and_is_not_read_without_kubesphere():
    good = FilesOnly({"cc.yml": {"apiVersion": "installer.kubesphere.io/v1alpha1", "kind": "ClusterConfiguration",
                                 "spec": {"alerting": {"enabled": True}}}})
    build_model(GOOD_GROUPS, GOOD_HOSTVARS, {"slipway_kubesphere_enabled": True,
                                             "kubesphere_cluster_configuration": "cc.yml"}, bundle=good)
    build_model(GOOD_GROUPS, GOOD_HOSTVARS, {"kubesphere_cluster_configuration": "missing.yml"}, bundle=FilesOnly({}))


def test_the_model_says_how_the_cluster_is_hardened_and_where_each_api_server_answers():
    model = build()
    assert model["hardening"] == "cis" and model["secrets_encryption"] is True
    assert model["nodes"]["cp1"]["api_url"] == "https://" + model["nodes"]["cp1"]["url_host"] + ":6443"
    assert "api_url" not in model["nodes"]["w1"]
    model = build(slipway_hardening="none", slipway_secrets_encryption="false")
    assert model["hardening"] == "none" and model["secrets_encryption"] is False


def test_etcd_client_urls_are_one_per_member_with_ipv6_in_brackets():
    model = build()
    assert model["etcd_client_urls"] == [f"https://{model['nodes'][m]['address']}:2379" for m in ("cp1", "cp2", "cp3")]
    assert model["etcd_client_urls"][0].startswith("https://10.")
    settings = {"slipway_pod_cidr": "fd00:10::/56", "slipway_node_cidr_mask_size": 64, "slipway_service_cidr": "fd00:96::/108"}
    model = build(None, IPV6, **settings)
    assert model["etcd_client_urls"] == [f"https://[{model['nodes'][m]['address']}]:2379" for m in model["etcd_members"]]
    assert model["etcd_client_urls"][0].startswith("https://[2001:db8::")


# Issue 29: the values that end up in a certificate, a configuration file or a command line, the limits of what
# takes each name, hosts the cluster would leave out, addresses no host has, URLs and pre-releases.

@pytest.mark.parametrize("sans, bad", [
    (["`reboot`"], "'`reboot`' is"),
    (["api.example.com", "$(reboot)", "192.0.2.10", "a b"], "'$(reboot)', 'a b' are"),
    (["x" * 64 + ".example.com"], f"'{'x' * 64}.example.com' is"),
    (["api.example.com;reboot"], "'api.example.com;reboot' is"),
    ([" 192.0.2.10"], "' 192.0.2.10' is"),
    ([42], "42 is"),
])
def test_certificate_sans_are_dns_names_or_ip_addresses(sans, bad):
    assert one_problem(control_plane_cert_sans=sans) == (
        f"control_plane_cert_sans: {bad} neither a DNS name nor an IP address, which is all a certificate's subject "
        "alternative name holds; write each as a DNS name (api.example.com, *.example.com) or an IP address (192.0.2.10)")


@pytest.mark.parametrize("sans", [["api.example.com", "*.apps.example.com", "192.0.2.10", "2001:db8::10", "API.Example.com"], []])
def test_good_certificate_sans_pass(sans):
    build(control_plane_cert_sans=sans)


def test_certificate_sans_not_a_list():
    assert one_problem(control_plane_cert_sans="api.example.com").startswith(
        "control_plane_cert_sans: is a str; set a list of DNS names and IP addresses")


@pytest.mark.parametrize("upstreams, bad", [
    (["8.8.8.8; reboot"], "'8.8.8.8; reboot' is"),
    (["8.8.8.8", "dns.example.com", "tls://1.1.1.1", "1.1.1.1:99999"], "'dns.example.com', 'tls://1.1.1.1', '1.1.1.1:99999' are"),
    (["2001:db8::53:53"], None),
    (["/etc/resolv.conf }"], "'/etc/resolv.conf }' is"),
    (["192.0.2.53 192.0.2.54"], "'192.0.2.53 192.0.2.54' is"),
])
def test_coredns_upstreams_are_ip_addresses_with_an_optional_port(upstreams, bad):
    if bad is None:  # an IPv6 address is one, whatever its last group looks like
        build(control_plane_coredns_upstreams=upstreams)
        return
    assert one_problem(control_plane_coredns_upstreams=upstreams) == (
        f"control_plane_coredns_upstreams: {bad} not a resolver CoreDNS forwards to; write each as an IP address with "
        "an optional port (192.0.2.53, 192.0.2.53:5353, [2001:db8::53]:53) or the path of a resolv.conf on the nodes "
        "(/etc/resolv.conf)")


@pytest.mark.parametrize("upstreams", [["/etc/resolv.conf"], ["192.0.2.53", "192.0.2.54:5353", "[2001:db8::53]:53"], []])
def test_good_coredns_upstreams_pass(upstreams):
    build(control_plane_coredns_upstreams=upstreams)


@pytest.mark.parametrize("settings, expected", [
    ({"etcd_pki_dir": "/etc/etcd/pki; reboot"}, "etcd_pki_dir: '/etc/etcd/pki; reboot' has a character a path in etcd's"),
    ({"etcd_pki_dir": "/etc/my pki"}, "etcd_pki_dir: '/etc/my pki' has a character"),
    ({"containerd_insecure_registries": ["registry.example:5000", "http://r.example", "r.example/path"]},
     "containerd_insecure_registries: 'http://r.example', 'r.example/path' not registry hosts; write host[:port]"),
    ({"containerd_registry_mirrors": {"https://docker.io": ["https://mirror.example"]}},
     "containerd_registry_mirrors: has the key(s) 'https://docker.io', not registry hosts"),
    ({"containerd_registry_auths": {"../etc": {"username": "u", "password": "p"}}},
     "containerd_registry_auths: has the key(s) '../etc', not registry hosts"),
    ({"slipway_lb_mode": "vip", "slipway_control_plane_endpoint": "10.0.0.250", "loadbalancer_keepalived_auth_pass": "a b#"},
     "loadbalancer_keepalived_auth_pass: has a blank, a quote or a character keepalived.conf reads as a comment"),
])
def test_values_written_into_files_and_command_lines_are_checked_for_what_they_are(settings, expected):
    found = one_problem(**settings)
    assert found.startswith(expected), found
    assert "a b#" not in found  # never the password


def test_good_registry_hosts_pass():
    build(containerd_insecure_registries=["registry.example:5000", "192.0.2.5:5000", "[2001:db8::5]:5000"],
          containerd_registry_mirrors={"docker.io": ["https://m.example"], "_default": ["https://m.example"]})


@pytest.mark.parametrize("settings, expected", [
    ({"slipway_dns_domain": "a" * 1000}, "slipway_dns_domain: is 1000 characters long; the API server's certificate "
     "names kubernetes.default.svc.DOMAIN, which DNS limits to 253: use at most 230 characters"),
    ({"slipway_dns_domain": "x" * 64 + ".local"}, f"slipway_dns_domain: '{'x' * 64}.local' has a label of 64 characters"),
    ({"slipway_dns_domain": "y." * 116}, "slipway_dns_domain: 'y.y.y."),
    ({"slipway_cluster_name": "c" * 1000}, "slipway_cluster_name: is 1000 characters long; it names kubeadm's cluster, "
     "the kubeconfig contexts and the etcd snapshot files (etcd-NAME-TIME.db): use at most 63"),
    ({"slipway_cluster_name": "my cluster; reboot"}, "slipway_cluster_name: 'my cluster; reboot' is not a name"),
])
def test_names_have_the_limits_of_what_takes_them(settings, expected):
    assert one_problem(**settings).startswith(expected)


def test_the_longest_names_pass():
    build(slipway_dns_domain=("a" * 63 + ".") * 3 + "b" * 38, slipway_cluster_name="c" * 63)
    assert len(("a" * 63 + ".") * 3 + "b" * 38) == 230


@pytest.mark.parametrize("length, ok", [(63, True), (64, False), (70, False)])
def test_a_node_name_is_at_most_63_characters(length, ok):
    name = "w" * length
    groups = {"kube_control_plane": ["cp1"], "kube_node": [name]}
    hostvars = {"cp1": {"ansible_host": "10.0.0.1"}, name: {"ansible_host": "10.0.0.2"}}
    if ok:
        build(groups, hostvars)
    else:
        assert one_problem(groups, hostvars) == (
            f"host {name}: is {length} characters long: it becomes the node's Linux host name (at most 64) and its "
            "Kubernetes node name (labels of at most 63); rename it in the inventory to at most 63 characters")


@pytest.mark.parametrize("var, address, why", [
    ("ip", "0.0.0.0", "is the unspecified address"),
    ("ansible_host", "::", "is the unspecified address"),
    ("ip", "224.0.0.5", "is a multicast address"),
    ("ip", "ff02::1", "is a multicast address"),
    ("ip", "255.255.255.255", "is the broadcast address"),
    ("ansible_host", "240.0.0.1", "is in 240.0.0.0/4"),
])
def test_a_node_address_no_host_can_have_is_refused(var, address, why):
    hostvars = {**GOOD_HOSTVARS, "w2": {var: address}}
    found = problems(None, hostvars)
    assert f"host w2: {var} {address} {why}" in found[0], found
    assert "set ip: to the node's own unicast address" in found[0]


@pytest.mark.parametrize("vip, why", [("0.0.0.0", "is the unspecified address"), ("224.0.0.18", "is a multicast address"),
                                      ("255.255.255.255", "is the broadcast address")])
def test_a_virtual_ip_no_host_can_have_is_refused(vip, why):
    found = one_problem(slipway_lb_mode="vip", slipway_control_plane_endpoint=vip)
    assert found.startswith(f"slipway_control_plane_endpoint: {vip} {why}"), found
    assert found.endswith("; choose an unused unicast address of the load balancers' network for the virtual IP")


@pytest.mark.parametrize("mode, endpoint, fixed", [
    ("external", "https://lb.example:6443", "lb.example:6443"),
    ("external", "https://lb.example:6443/", "lb.example:6443"),
    ("external", "tcp://192.0.2.80", "192.0.2.80"),
    ("vip", "https://10.0.0.250:8443", "10.0.0.250:8443"),
])
def test_an_endpoint_written_as_a_url_gets_the_drop_the_scheme_hint(mode, endpoint, fixed):
    scheme = endpoint.split("//")[0] + "//"
    assert one_problem(slipway_lb_mode=mode, slipway_control_plane_endpoint=endpoint) == (
        f"slipway_control_plane_endpoint: '{endpoint}' is a URL; drop the scheme ({scheme}) and any path: set it to {fixed}")


def test_an_external_endpoint_name_over_dns_limits_is_named():
    found = one_problem(slipway_lb_mode="external", slipway_control_plane_endpoint="l" * 64 + ".example:6443")
    assert found.startswith("slipway_control_plane_endpoint: '" + "l" * 64 + ".example' is neither an IP address nor a "
                            "DNS name: it has a label of 64 characters")


@pytest.mark.parametrize("version, expected", [
    ("1.37.0-rc.1", "'1.37.0-rc.1' is a pre-release or build (rc.1) of 1.37.0; slipway.cluster installs released "
     "versions only: set a release such as 1.37.2"),
    ("v1.36.0-alpha.3", "'v1.36.0-alpha.3' is a pre-release or build (alpha.3) of 1.36.0; slipway.cluster installs "
     "released versions only: set a release such as 1.36.5"),
    ("1.38.0-beta.0", "'1.38.0-beta.0' is a pre-release or build (beta.0) of 1.38.0; slipway.cluster installs released "
     "versions only: set a release such as 1.37.2"),
])
def test_a_pre_release_version_gets_a_clear_message(version, expected):
    assert one_problem(slipway_kubernetes_version=version) == f"slipway_kubernetes_version: {expected}"


def test_every_network_of_the_wrong_address_family_is_named_in_one_run():
    found = problems(slipway_pod_cidr="fd00:10::/56", slipway_service_cidr="fd00:96::/108", slipway_node_cidr_mask_size=64)
    assert found == [
        "slipway_pod_cidr: fd00:10::/56 is IPv6 but the nodes' addresses are IPv4; a single-stack cluster uses one "
        "address family: set an IPv4 range, e.g. 10.233.64.0/18",
        "slipway_service_cidr: fd00:96::/108 is IPv6 but the nodes' addresses are IPv4; a single-stack cluster uses one "
        "address family: set an IPv4 range, e.g. 10.233.0.0/18",
    ]


def _with_all(groups):
    every = sorted({host for members in groups.values() for host in members})
    return {**groups, "all": every}


@pytest.mark.parametrize("extra_groups, expected", [
    ({"ungrouped": ["w3"]}, "host w3: is in no group the cluster uses, so it would be left out; put it in "
     "kube_control_plane (a control plane), kube_node (a worker), etcd (an external etcd member) or loadbalancer (a vip "
     "load balancer), or remove it from the inventory"),
    ({"kube-node": ["w3"]}, "host w3: is in no group the cluster uses (in kube-node: kube-node is kubespray's older name "
     "of kube_node), so it would be left out"),
    ({"kube-master": ["w3"]}, "host w3: is in no group the cluster uses (in kube-master: kube-master is kubespray's older "
     "name of kube_control_plane)"),
    ({"kube_nodes": ["w3"]}, "host w3: is in no group the cluster uses (in kube_nodes: kube_nodes is not kube_node)"),
    ({"k8s_cluster": ["w3"]}, "host w3: is in no group the cluster uses (in k8s_cluster: k8s_cluster is made of "
     "kube_control_plane and kube_node, it is in neither)"),
])
def test_a_host_in_no_group_the_cluster_uses_is_named_with_where_it_could_go(extra_groups, expected):
    groups = _with_all({**GOOD_GROUPS, **extra_groups})
    hostvars = {**GOOD_HOSTVARS, "w3": {"ansible_host": "10.0.0.23"}}
    found = one_problem(groups, hostvars)
    assert found.startswith(expected), found


def test_every_left_out_host_is_named_in_one_run():
    groups = _with_all({**GOOD_GROUPS, "kube-node": ["w3", "w4"], "ungrouped": ["w5"]})
    assert [p.split(":")[0] for p in problems(groups)] == ["host w3", "host w4", "host w5"]


def test_the_controllers_own_entry_is_no_left_out_machine():
    assert build(_with_all({**GOOD_GROUPS, "ungrouped": ["localhost"]}))["warnings"] == []


def test_bytes_of_a_file_that_is_no_inventory_are_no_left_out_host():
    # -i the inventory's directory, with backups/ beside it: Ansible's ini parser makes hosts of a snapshot's bytes.
    junk = "\x00\x00\x11\x00?\x03 x"
    model = build(_with_all({**GOOD_GROUPS, "ungrouped": [junk]}))
    assert [w.split(":")[0] for w in model["warnings"]] == [f"host {junk!r}"]
    assert "is not a host name but bytes of a file in the inventory's directory" in model["warnings"][0]


def test_a_host_only_in_a_group_of_the_users_own_is_a_warning():
    # A spare machine or a bastion: the user put it there on purpose, and is told it gets nothing.
    model = build(_with_all({**GOOD_GROUPS, "bastion": ["b1"]}))
    assert model["warnings"] == ["host b1: is in no group the cluster uses (only in bastion) and gets nothing; put it in "
                                 "kube_control_plane (a control plane), kube_node (a worker), etcd (an external etcd "
                                 "member) or loadbalancer (a vip load balancer) for it to be part of the cluster"]


def test_the_run_level_check_names_the_models_older_group_names():
    from ansible_collections.slipway.cluster.plugins.module_utils._model import OLD_GROUPS

    run_level = _yaml("roles/preflight/vars/main.yml")["_preflight_old_groups"]
    assert run_level.items() <= OLD_GROUPS.items()
    assert {new for new in OLD_GROUPS.values() if new != "calico_rr"} == set(run_level.values())


@pytest.mark.parametrize("settings, expected", [
    ({"containerd_registry_mirrors": {"docker.io": ['https://mirror.example/"] # x']}},
     "containerd_registry_mirrors[docker.io]: 'https://mirror.example/\"] # x' is not an http:// or https:// URL"),
    ({"containerd_registry_mirrors": {"docker.io": ["https://mirror`reboot`.example"]}},
     "containerd_registry_mirrors[docker.io]: 'https://mirror`reboot`.example' is not an http:// or https:// URL"),
    ({"slipway_artifacts_source": "mirror", "slipway_artifacts_mirror_url": "https://files.example/k8s'"},
     "slipway_artifacts_mirror_url: 'https://files.example/k8s'' is not an http:// or https:// URL"),
    ({"slipway_artifacts_registry_mirror": "registry.example:5000/a b"},
     "slipway_artifacts_registry_mirror: 'registry.example:5000/a b' is not a registry"),
    ({"slipway_artifacts_registry_mirror": 'registry.example:5000/"x'},
     "slipway_artifacts_registry_mirror: 'registry.example:5000/\"x' is not a registry"),
])
def test_urls_and_registries_hold_only_what_a_url_or_an_image_reference_can(settings, expected):
    found = problems(**settings)
    assert any(problem.startswith(expected) for problem in found), found


@pytest.mark.parametrize("url", ["https://mirror.example:5000", "http://192.0.2.5:8080/files/k8s", "https://m.example/a_b~c%20d"])
def test_good_mirror_urls_pass(url):
    build(containerd_registry_mirrors={"docker.io": [url]}, slipway_artifacts_registry_mirror="registry.example:5000/mirror")


def test_an_http_mirror_is_refused_saying_why_unless_the_inventory_accepts_the_risk():
    mirror = {"slipway_artifacts_source": "mirror", "slipway_artifacts_mirror_url": "http://files.example:8080/k8s"}
    assert one_problem(**mirror) == (
        "slipway_artifacts_mirror_url: 'http://files.example:8080/k8s' is plain http://: anyone on the network between "
        "the mirror and the controller or the nodes can read what they download and send other files in its place "
        "(each is checked against the sha256 the collection pins and the run stops, but no cluster is made); serve "
        "the mirror over https://, or set slipway_artifacts_mirror_insecure_http: true to accept that risk")
    assert build(**mirror, slipway_artifacts_mirror_insecure_http=True)["artifacts"]["source"] == "mirror"
    assert build(**mirror, slipway_artifacts_mirror_insecure_http="yes")["artifacts"]["source"] == "mirror"
    build(slipway_artifacts_source="mirror", slipway_artifacts_mirror_url="https://files.example")


def test_the_insecure_http_setting_is_a_boolean_and_misspelt_is_named():
    assert "slipway_artifacts_mirror_insecure_http: 'sure' is not a boolean" in problems(slipway_artifacts_mirror_insecure_http="sure")[0]
    assert problems(slipway_artifacts_mirror_insecure_htp=True) == [
        "slipway_artifacts_mirror_insecure_htp: is not a setting of slipway.cluster; did you mean "
        "slipway_artifacts_mirror_insecure_http?"]


def test_the_inventorys_release_sums_reach_the_model_and_their_problems_are_the_inventorys():
    sums = {"containerd": {"v2.3.7": {"amd64": "c" * 64, "arm64": "d" * 64}}}
    model = build(slipway_artifacts_source="mirror", slipway_artifacts_mirror_url="https://files.example",
                  slipway_artifacts_release_checksums=sums)
    assert model["artifacts"]["archives"]["containerd"]["files"]["arm64"]["sha256"] == "d" * 64
    assert model["artifacts"]["archives"]["containerd"]["files"]["arm64"]["pinned_by"] == "slipway_artifacts_release_checksums"
    assert problems(slipway_artifacts_release_checksums={"containerd": {"v2.3.7": {"amd64": "c"}}}) == [
        "slipway_artifacts_release_checksums.containerd.v2.3.7.amd64: is not a sha256 (64 hexadecimal digits); copy "
        "it from the checksum file upstream publishes for the release"]
    assert problems(slipway_artifacts_release_checksum=sums) == [
        "slipway_artifacts_release_checksum: is not a setting of slipway.cluster; did you mean "
        "slipway_artifacts_release_checksums?"]
