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
        slipway_kubernets_version: "1.37.1"
        kube_proxy_mode: ipvs
        cni_flannel_backend: vxlan2
        control_plane_kube_proxy_conntrack_max_per_core: lots
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
    "slipway_kubernets_version: is not a setting of slipway.cluster; did you mean slipway_kubernetes_version?",
    "kube_proxy_mode: 'ipvs' is kubespray's and is not read; slipway.cluster reads control_plane_kube_proxy_mode",
    "control_plane_kube_proxy_conntrack_max_per_core: 'lots' is not auto or a number",
    "group kube_control_plane: etcd has 2 members: quorum is 2 of 2",
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
    # flannel's backend is checked only with flannel: weave is not flannel.
    assert "cni_flannel_backend" not in output


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
                msg: "{{ model.control_planes | join(',') }} {{ model.nodes.node2.address }} {{ model.endpoint.address }}"
              vars:
                # The fact, as Ansible gives it without injecting facts as variables (ansible.cfg).
                model: "{{ ansible_facts.slipway_cluster }}"
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
    # The run stops: nothing says it ignored the host that did not answer.
    assert "UNREACHABLE" not in output and "...ignoring" not in output, output
    assert "host w1: ip 192.0.2.50 is not an address of this host" in output, output
    assert "Prepare the operating system" not in output


def stopped_before_contact(result) -> str:
    """The run failed, and no host was connected to (no fact read, no OS preparation)."""
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "UNREACHABLE" not in output, output
    assert "Read each node's facts" not in output, output
    assert "Prepare the operating system" not in output, output
    return output


GOOD_INVENTORY = textwrap.dedent("""\
    all:
      vars:
        ansible_port: 1
        ansible_connection: ssh
      hosts:
        cp1: {ansible_host: 192.0.2.11}
        w1: {ansible_host: 192.0.2.21}
      children:
        kube_control_plane: {hosts: {cp1: {}}}
        kube_node: {hosts: {w1: {}}}
        k8s_cluster: {children: {kube_control_plane: {}, kube_node: {}}}
    """)


def site(tmp_path, tool, *extra, inventory_text=GOOD_INVENTORY):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(inventory_text)
    return run([tool("ansible-playbook"), "-i", str(inventory), str(ROOT / "site.yml"), *extra])


def test_a_misspelt_setting_names_the_nearest_one_and_a_number_from_e_is_a_number(tmp_path, tool):
    output = stopped_before_contact(site(tmp_path, tool, "-e", "slipway_lb_prot=9443", "-e", "slipway_node_cidr_mask_size=24",
                                         "-e", "slipway_lab_vip=192.0.2.99"))
    assert "The inventory has 1 problem(s)" in output, output
    assert "slipway_lb_prot: is not a setting of slipway.cluster; did you mean slipway_lb_port?" in output


def test_a_wrong_type_is_one_line_of_the_list_not_an_argument_spec_dump(tmp_path, tool):
    output = stopped_before_contact(site(tmp_path, tool, "-e", "slipway_node_cidr_mask_size=big",
                                         "-e", "slipway_kubesphere_enabled=maybe"))
    assert "The inventory has 2 problem(s)" in output, output
    assert "slipway_node_cidr_mask_size: 'big' is not a prefix length; set a number such as 24" in output
    assert "slipway_kubesphere_enabled: 'maybe' is not a boolean; set true or false" in output
    assert "argument spec" not in output.lower().replace("validating arguments against arg spec", "")


def test_settings_a_later_role_would_refuse_stop_the_run_before_contact(tmp_path, tool):
    output = stopped_before_contact(site(
        tmp_path, tool, "-e", "slipway_lb_port=6443", "-e", "cni_flannel_backend=gre",
        "-e", '{"containerd_registry_mirrors": {"docker.io": ["mirror.example:5000"]}}',
        "-e", "kubesphere_cluster_configuration_merge_type=patch"))
    assert "The inventory has 4 problem(s)" in output, output
    for expected in ("slipway_lb_port: is 6443 like slipway_apiserver_port",
                     "cni_flannel_backend: unknown value 'gre'",
                     "containerd_registry_mirrors[docker.io]: 'mirror.example:5000' is not an http:// or https:// URL",
                     "kubesphere_cluster_configuration_merge_type: unknown value 'patch'"):
        assert expected in output, expected


def test_kubesprays_sample_inventory_stops_naming_every_setting_that_would_differ(tool):
    # No k8s_cluster group in it: site.yml adds one, so the workers are checked and group_vars/k8s_cluster applies.
    sample = ROOT / "tests/integration/fixtures/kubespray_sample/inventory.ini"
    output = stopped_before_contact(run([tool("ansible-playbook"), "-i", str(sample), "-e", "ansible_port=1",
                                         str(ROOT / "site.yml")]))
    named = ["etcd_deployment_type", "etcd_kubeadm_enabled", "kube_version", "kube_network_plugin", "kube_proxy_mode",
             "loadbalancer_apiserver_healthcheck_port", "loadbalancer_apiserver_port", "metrics_server_enabled",
             "enable_nodelocaldns", "kube_cert_dir"]
    assert f"The inventory has {len(named)} problem(s)" in output, output
    for name in named:
        assert f"  - {name}: " in output, name
    assert ("kube_version: 'v1.28.3' is kubespray's and is not read; slipway.cluster reads slipway_kubernetes_version "
            "('1.37.1') and slipway.cluster installs 1.36, 1.37, not 1.28") in output
    # The same values as ours are not errors: kube_pods_subnet, cluster_name, container_manager, ...
    for same in ("kube_pods_subnet", "kube_service_addresses", "cluster_name", "dns_domain", "container_manager"):
        assert f"  - {same}: " not in output, same
    # The workers are in k8s_cluster now (the control planes are in etcd too).
    assert "Put every control plane and node in k8s_cluster" in output and "(item=node6)" in output


def test_an_inventory_path_that_does_not_exist_fails(tmp_path, tool):
    missing = tmp_path / "nowhere" / "hosts.yml"
    output = stopped_before_contact(run([tool("ansible-playbook"), "-i", str(missing), str(ROOT / "site.yml")]))
    assert f"The inventory {missing} does not exist: pass the path of yours with -i" in output


def test_an_inventory_without_cluster_hosts_fails(tmp_path, tool):
    output = stopped_before_contact(site(tmp_path, tool, inventory_text="all:\n  hosts:\n    web1: {ansible_host: 192.0.2.5}\n"))
    assert "has no host in kube_control_plane or kube_node" in output


def test_a_cluster_configuration_file_that_is_missing_or_no_cluster_configuration_stops_before_contact(tmp_path, tool):
    wrong = tmp_path / "cc.yml"
    wrong.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ks-installer}\n")
    output = stopped_before_contact(site(tmp_path, tool, "-e", "slipway_kubesphere_enabled=true",
                                         "-e", f"kubesphere_cluster_configuration={wrong}"))
    assert f"kubesphere_cluster_configuration: the file {wrong} is a ConfigMap, not a ClusterConfiguration" in output
    output = stopped_before_contact(site(tmp_path, tool, "-e", "slipway_kubesphere_enabled=true",
                                         "-e", "kubesphere_cluster_configuration=nowhere/cc.yml"))
    assert "kubesphere_cluster_configuration: the file nowhere/cc.yml is not found" in output
