"""site.yml on an inventory full of mistakes: every mistake listed, no host contacted."""

from __future__ import annotations

import textwrap

from conftest import ROOT, VENV_BIN, run

BAD_INVENTORY = textwrap.dedent("""\
    all:
      vars:
        # Any connection attempt would hit a closed loopback port and show as UNREACHABLE.
        ansible_port: 1
        ansible_connection: ssh
        slipway_kubernetes_version: "1.20.1"
        slipway_lb_mode: nginx
        slipway_pod_cidr: 127.0.0.0/16
        slipway_service_cidr: 127.0.128.0/17
        slipway_cni: weave
      hosts:
        cp1: {ansible_host: 127.0.0.11}
        cp2: {ansible_host: 127.0.0.11}
        Worker_1: {ansible_host: worker1.example.invalid}
      children:
        kube_control_plane: {hosts: {cp1: {}, cp2: {}}}
        kube_node: {hosts: {Worker_1: {}}}
        k8s_cluster: {children: {kube_control_plane: {}, kube_node: {}}}
    """)

EXPECTED = [
    "host Worker_1: is not a valid Kubernetes node name",
    "host Worker_1: ansible_host 'worker1.example.invalid' is not an IP address",
    "host cp2: has the same address 127.0.0.11 as host cp1",
    "slipway_kubernetes_version: 1.20 is not supported",
    "slipway_lb_mode: unknown value 'nginx'",
    "slipway_cni: unknown value 'weave'",
    "slipway_pod_cidr: 127.0.0.0/16 overlaps slipway_service_cidr 127.0.128.0/17",
    "slipway_pod_cidr: 127.0.0.0/16 contains the address of host cp1 (127.0.0.11), cp2 (127.0.0.11)",
]


def test_every_mistake_is_listed_before_any_connection(tmp_path, tool):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(BAD_INVENTORY)
    result = run([tool("ansible-playbook"), "-i", str(inventory), str(ROOT / "site.yml")])
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert f"The inventory has {len(EXPECTED)} problem(s); nothing was changed on any host" in output
    for problem in EXPECTED:
        assert problem in output, problem
    assert "UNREACHABLE" not in output
    assert "unreachable=1" not in output and "ok=0" not in output.split("PLAY RECAP")[-1].split("cp1")[0]
    # The run stopped in the first play: no OS preparation task was even started.
    assert "Prepare the operating system" not in output


def test_the_sample_inventory_is_valid(tmp_path, tool):
    # Only the model: the sample's hosts are documentation addresses that must not be contacted.
    playbook = tmp_path / "model.yml"
    playbook.write_text(textwrap.dedent("""\
        - name: Build the model of the sample inventory
          hosts: k8s_cluster:etcd
          gather_facts: false
          tasks:
            - name: Build it
              slipway.cluster.cluster_model:
              run_once: true
            - name: Show it
              ansible.builtin.debug:
                msg: "{{ slipway_cluster.control_planes | join(',') }} {{ slipway_cluster.nodes.node2.address }} {{ slipway_cluster.endpoint.address }}"
              run_once: true
        """))
    result = run([tool("ansible-playbook"), "-i", str(ROOT / "inventories/sample/hosts.yml"), str(playbook)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "cp1,cp2,cp3 198.51.100.22 127.0.0.1:8443" in result.stdout


def test_external_etcd_without_members_stops_before_any_connection(tmp_path, tool):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(textwrap.dedent("""\
        all:
          vars:
            ansible_port: 1
            ansible_connection: ssh
            slipway_etcd_mode: external
          hosts:
            cp1: {ansible_host: 192.0.2.11}
          children:
            kube_control_plane: {hosts: {cp1: {}}}
            k8s_cluster: {children: {kube_control_plane: {}}}
        """))
    result = run([tool("ansible-playbook"), "-i", str(inventory), str(ROOT / "site.yml")])
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "group etcd: slipway_etcd_mode is external but the etcd group has no host" in output
    assert "UNREACHABLE" not in output
    assert "Prepare the operating system" not in output


def test_an_unreachable_host_is_reported_with_the_problems_of_the_hosts_that_answered(tmp_path, tool):
    # cp1 is dead (nothing listens on port 1); w1 answers (the controller itself) but has the wrong ip.
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(textwrap.dedent(f"""\
        all:
          hosts:
            cp1: {{ansible_host: 127.0.0.1, ansible_port: 1, ansible_connection: ssh}}
            w1:
              ansible_host: 127.0.0.2
              ip: 192.0.2.50
              ansible_connection: local
              ansible_python_interpreter: {VENV_BIN / "python"}
          children:
            kube_control_plane: {{hosts: {{cp1: {{}}}}}}
            kube_node: {{hosts: {{w1: {{}}}}}}
            k8s_cluster: {{children: {{kube_control_plane: {{}}, kube_node: {{}}}}}}
        """))
    result = run([tool("ansible-playbook"), "-i", str(inventory), str(ROOT / "site.yml")])
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "The hosts have" in output and "nothing was changed on any host" in output, output
    assert "host cp1: is unreachable: Failed to connect to the host via ssh" in output, output
    assert "port 1: Connection refused" in output
    assert "host w1: ip 192.0.2.50 is not an address of this host" in output, output
    assert "Prepare the operating system" not in output
