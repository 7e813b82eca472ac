# Unit tests of the read-only host checks: every failing fact names its host and the fix.
from __future__ import annotations

import copy

import pytest

from ansible_collections.slipway.cluster.plugins.module_utils._host_checks import check_hosts, node_summary, ports_for, unanswered
from ansible_collections.slipway.cluster.plugins.module_utils._model import build_model

GROUPS = {"kube_control_plane": ["cp1"], "kube_node": ["w1"], "loadbalancer": ["lb1"]}
HOSTVARS = {"cp1": {"ansible_host": "10.0.0.11"}, "w1": {"ansible_host": "10.0.0.21"}, "lb1": {"ansible_host": "10.0.0.31"}}


def facts_for(address: str, **override) -> dict:
    facts = {
        "os": {"id": "debian", "version_id": "12", "pretty_name": "Debian GNU/Linux 12 (bookworm)"},
        "arch": "x86_64",
        "cpus": 4,
        "memory_mb": 8000,
        "swap": {"total_mb": 0, "devices": []},
        "cgroup_version": 2,
        "container": False,
        "time_sync": {"synchronized": True, "services": ["chrony"]},
        "listening": [{"address": "0.0.0.0", "port": 22, "process": "sshd"}],
        "capabilities": {"sys_resource": True, "sys_admin": True, "net_admin": True},
        "addresses": [{"interface": "lo", "address": "127.0.0.1", "prefix": 8},
                      {"interface": "eth0", "address": address, "prefix": 24}],
        "kernel_modules": {"overlay": "builtin", "br_netfilter": "loaded"},
    }
    facts.update(override)
    return facts


@pytest.fixture(name="model")
def fixture_model():
    return build_model(GROUPS, HOSTVARS, {"slipway_lb_mode": "vip", "slipway_control_plane_endpoint": "10.0.0.250"})


def all_facts(**per_host):
    facts = {"cp1": facts_for("10.0.0.11"), "w1": facts_for("10.0.0.21"), "lb1": facts_for("10.0.0.31")}
    for host, override in per_host.items():
        facts[host] = None if override is None else {**facts[host], **override}
    return facts


def run(model, options=None, **per_host):
    problems, warnings = check_hosts(model, all_facts(**per_host), options)
    return [str(p) for p in problems], [str(w) for w in warnings]


def test_healthy_hosts_pass(model):
    assert run(model) == ([], [])


def test_unsupported_os(model):
    problems = run(model, w1={"os": {"id": "centos", "version_id": "7", "pretty_name": "CentOS Linux 7"}})[0]
    assert problems == ["host w1: runs CentOS Linux 7, which is not supported (debian 12, 13; ubuntu 22.04, 24.04); "
                        "use a supported OS or set preflight_allow_unsupported_os: true"]
    assert run(model, {"allow_unsupported_os": True}, w1={"os": {"id": "centos", "version_id": "7"}}) == ([], [])


def test_unsupported_arch(model):
    assert run(model, w1={"arch": "s390x"})[0] == ["host w1: has architecture s390x; use an x86_64 or aarch64 machine"]


def test_cpu_and_memory_minimums_by_role(model):
    problems = run(model, cp1={"cpus": 1, "memory_mb": 1024}, w1={"cpus": 1, "memory_mb": 1024})[0]
    assert problems == [
        "host cp1: has 1 CPU(s); a control plane needs at least 2 (preflight_min_cpus_control_plane)",
        "host cp1: has 1024 MB of memory; a control plane needs at least 1700 MB (preflight_min_memory_mb_control_plane)",
    ]


def test_load_balancer_only_hosts_have_no_size_minimum(model):
    assert run(model, lb1={"cpus": 1, "memory_mb": 256}) == ([], [])


def test_port_in_use_by_a_stranger(model):
    problems = run(model, cp1={"listening": [{"address": "0.0.0.0", "port": 6443, "process": "nginx"}]})[0]
    assert problems == ["host cp1: TCP port 6443 is in use by nginx on 0.0.0.0; the cluster needs it: "
                        "stop that service or move it to another port"]


def test_ports_held_by_the_cluster_itself_are_fine(model):
    listening = [{"address": "::", "port": 6443, "process": "kube-apiserver"},
                 {"address": "10.0.0.11", "port": 2379, "process": "etcd"},
                 {"address": "::", "port": 10250, "process": "kubelet"}]
    assert run(model, cp1={"listening": listening}) == ([], [])


def test_etcd_members_need_their_metrics_port_on_loopback(model):
    assert {("*", 2379), ("*", 2380), ("127.0.0.1", 2381)} <= set(ports_for(model, model["nodes"]["cp1"]))
    assert ("127.0.0.1", 2381) not in ports_for(model, model["nodes"]["w1"])
    problems = run(model, cp1={"listening": [{"address": "127.0.0.1", "port": 2381, "process": "node_exporter"}]})[0]
    assert problems == ["host cp1: TCP port 2381 is in use by node_exporter on 127.0.0.1; the cluster needs it: "
                        "stop that service or move it to another port"]


def test_loopback_only_port_check_ignores_other_addresses():
    model = build_model(GROUPS | {"loadbalancer": []}, HOSTVARS, {})
    assert ("127.0.0.1", 8443) in ports_for(model, model["nodes"]["w1"])
    problems = check_hosts(model, {
        "cp1": facts_for("10.0.0.11"),
        "w1": facts_for("10.0.0.21", listening=[{"address": "10.0.0.21", "port": 8443, "process": "java"}]),
    })[0]
    assert problems == []
    problems = check_hosts(model, {
        "cp1": facts_for("10.0.0.11"),
        "w1": facts_for("10.0.0.21", listening=[{"address": "0.0.0.0", "port": 8443, "process": "java"}]),
    })[0]
    assert [str(p) for p in problems] == ["host w1: TCP port 8443 is in use by java on 0.0.0.0; the cluster needs it: "
                                          "stop that service or move it to another port"]


def test_port_check_can_be_switched_off(model):
    stranger = {"listening": [{"address": "0.0.0.0", "port": 6443, "process": "nginx"}]}
    assert run(model, {"check_ports": False}, cp1=stranger) == ([], [])


def test_model_address_missing_on_the_host(model):
    problems = run(model, w1={"addresses": [{"interface": "eth0", "address": "10.0.0.99", "prefix": 24}]})[0]
    assert problems == ["host w1: ip 10.0.0.21 is not an address of this host (it has 10.0.0.99); set ip: to one of them"]


def test_cluster_network_overlapping_a_host_network(model):
    extra = {"interface": "eth1", "address": "10.233.10.5", "prefix": 16}
    facts = all_facts()["w1"]
    problems = run(model, w1={"addresses": facts["addresses"] + [extra]})[0]
    assert problems == [
        "host w1: slipway_pod_cidr 10.233.64.0/18 overlaps the network 10.233.0.0/16 of interface eth1; "
        "choose a slipway_pod_cidr outside the hosts' networks",
        "host w1: slipway_service_cidr 10.233.0.0/18 overlaps the network 10.233.0.0/16 of interface eth1; "
        "choose a slipway_service_cidr outside the hosts' networks",
    ]


def test_interfaces_the_cluster_creates_are_not_overlaps(model):
    facts = all_facts()["w1"]
    cni = [{"interface": "cni0", "address": "10.233.65.1", "prefix": 24},
           {"interface": "flannel.1", "address": "10.233.65.0", "prefix": 32}]
    assert run(model, w1={"addresses": facts["addresses"] + cni}) == ([], [])


def test_vip_outside_the_load_balancer_network(model):
    problems = run(model, lb1={"addresses": [{"interface": "eth0", "address": "10.0.0.31", "prefix": 32}]})[0]
    assert problems == ["host lb1: the virtual IP 10.0.0.250 is in none of this load balancer's networks; "
                        "choose slipway_control_plane_endpoint inside the network of its ip"]


def test_time_sync(model):
    unsynced = {"time_sync": {"synchronized": False, "services": []}}
    problems = run(model, w1=unsynced)[0]
    assert len(problems) == 1 and problems[0].startswith("host w1: its clock is not synchronized")
    assert run(model, w1={**unsynced, "container": True}) == ([], [])
    assert run(model, {"check_time_sync": False}, w1=unsynced) == ([], [])


def test_swap_and_cgroup_v1_are_warnings(model):
    problems, warnings = run(model, w1={"swap": {"total_mb": 2048}, "cgroup_version": 1})
    assert problems == []
    assert warnings[0] == "host w1: swap is on (2048 MB); the preinstall role turns it off for the kubelet"
    assert warnings[1].startswith("host w1: uses cgroup v1; the kubelet runs with failCgroupV1: false")


def test_a_supported_platform_no_test_runs_is_a_warning(model):
    ubuntu = {"os": {"id": "ubuntu", "version_id": "24.04", "pretty_name": "Ubuntu 24.04.3 LTS"}}
    problems, warnings = run(model, w1=ubuntu, cp1={"arch": "aarch64"})
    assert problems == []
    assert warnings == [
        "host cp1: runs aarch64, which is supported but run by none of the collection's tests (they run Debian 12 and "
        "13 on x86_64; docs/preflight.md, the platforms): report what differs",
        "host w1: runs Ubuntu 24.04, which is supported but run by none of the collection's tests (they run Debian 12 "
        "and 13 on x86_64; docs/preflight.md, the platforms): report what differs"]
    both = run(model, w1={**ubuntu, "arch": "arm64"})[1]
    assert both[0].startswith("host w1: runs Ubuntu 24.04 on aarch64, which is supported but run by none")
    debian13 = {"os": {"id": "debian", "version_id": "13", "pretty_name": "Debian GNU/Linux 13 (trixie)"}}
    assert run(model, w1=debian13) == ([], [])


def test_unreachable_host_is_reported_with_the_others(model):
    problems = run(model, w1=None, cp1={"cpus": 1})[0]
    assert "host w1: could not be checked (unreachable or failed); fix the connection and rerun" in problems
    assert any(p.startswith("host cp1: has 1 CPU(s)") for p in problems)


def test_node_summary_keeps_what_roles_need():
    summary = node_summary(facts_for("10.0.0.11", capabilities={"sys_resource": False}, cgroup_version=1, container=True))
    assert summary == {
        "os": "debian", "os_version": "12", "arch": "x86_64", "cgroup_version": 1, "container": True,
        "cap_sys_resource": False, "swap_mb": 0, "kernel_modules": {"overlay": "builtin", "br_netfilter": "loaded"},
        "hostname": "", "static_hostname": "", "swap_fstab": [], "packages": [], "services": {"active": [], "enabled": []},
    }


def test_node_summary_keeps_what_roles_skip_on():
    summary = node_summary(facts_for(
        "10.0.0.11", hostname="cp1", static_hostname="cp1", packages=["conntrack", "iptables"],
        swap={"total_mb": 0, "devices": [], "fstab": ["/swapfile none swap sw 0 0"]},
        services={"active": ["containerd.service"], "enabled": ["containerd.service", "ssh.service"]},
    ))
    assert {key: summary[key] for key in ("hostname", "static_hostname", "swap_fstab", "packages", "services")} == {
        "hostname": "cp1", "static_hostname": "cp1", "swap_fstab": ["/swapfile none swap sw 0 0"],
        "packages": ["conntrack", "iptables"],
        "services": {"active": ["containerd.service"], "enabled": ["containerd.service", "ssh.service"]},
    }


def test_options_do_not_leak_between_calls(model):
    options = {"min_cpus_worker": 8}
    before = copy.deepcopy(options)
    run(model, options)
    assert options == before


def test_missing_kernel_module_is_a_problem_available_is_not(model):
    modules = {"overlay": "available", "br_netfilter": "missing"}
    problems = run(model, w1={"kernel_modules": modules}, lb1={"kernel_modules": modules})[0]
    assert problems == ["host w1: kernel module br_netfilter is neither built in nor installed; install the kernel's "
                        "extra modules package (e.g. linux-modules-extra-$(uname -r)) or boot a kernel that has it"]


def test_unreachable_host_is_reported_with_ansibles_reason_beside_the_other_problems(model):
    reason = unanswered("w1", "Failed to connect to the host via ssh: ssh: connect to host 10.0.0.21 port 1:\n Connection refused",
                        unreachable=True)
    problems, dummy = check_hosts(model, {**all_facts(w1=None, cp1={"cpus": 1})}, None, {"w1": reason})
    found = [str(p) for p in problems]
    assert ("host w1: is unreachable: Failed to connect to the host via ssh: ssh: connect to host 10.0.0.21 port 1: "
            "Connection refused; check its address, port, user and key, then rerun") in found
    assert any(p.startswith("host cp1: has 1 CPU(s)") for p in found)


def test_a_host_whose_read_failed_is_named_with_the_error():
    assert str(unanswered("w1", "python3: not found", unreachable=False)) == (
        "host w1: could not be read: python3: not found; fix it and rerun")
    assert str(unanswered("w1", None, unreachable=False)) == "host w1: could not be read: no reason given; fix it and rerun"


def test_options_written_as_strings_count_and_a_wrong_one_is_one_line(model):
    assert run(model, {"min_cpus_worker": "1", "check_ports": "false", "allow_unsupported_os": "no"}) == ([], [])
    assert run(model, {"min_cpus_worker": "one"})[0] == [
        "preflight_min_cpus_worker: 'one' is not a number; set a whole number such as 1"]
    assert run(model, {"check_ports": "maybe"})[0] == ["preflight_check_ports: 'maybe' is not a boolean; set true or false"]
