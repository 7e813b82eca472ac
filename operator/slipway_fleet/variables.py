"""The role variables a SlipwayCluster may set (spec.variables), the ones refused with the reason, and the secrets.

Pure Python, no Ansible: every name is a unit test (tests/tools/test_fleet_variables.py), which also holds every
option of every role's meta/argument_specs.yml to exactly one of the three tables.

Each variable becomes an extra variable of the playbook in the operation's Job, a pod of the management cluster that
holds the cluster's SSH key, the bundle and a ServiceAccount token, and is Ansible's controller (``localhost``). The
value reaches Ansible marked unsafe (never templated), so what a variable can do is what the roles do with it. The
rule: a tenant's variable acts on the tenant's hosts and cluster only, never on the Job's side.

- ``ACCEPTED``: what the hosts and the cluster get: flags, timeouts, images, registries, kernel settings, packages,
  and the directories and programs of the nodes (the hosts are the tenant's own).
- ``REFUSED``: each with the reason a tenant reads. Files and directories of the Job (a source the Job copies or looks
  up, a kubeconfig, a snapshot, the backup directory) and what decides where a play runs; what the fleet or a day-2
  playbook sets for an operation (an extra variable would override it); the spec's own fields (``slipway_*``); the
  roles of the management cluster (``fleet_*``, ``operator_*``); the preflight's bookkeeping; the facts the roles
  set; kubespray's names.
- ``SECRET``: variables whose values are secrets: never in spec.variables, only from a Secret named in
  spec.secretVariablesFrom, mounted into the Job as a file; ``yaml`` or ``text`` says how the file is read.
- ``problems``: every problem of spec.variables and spec.secretVariablesFrom at once, each naming the field.
"""

from __future__ import annotations

import difflib
from typing import Any, Iterable, Mapping

# spec.py imports this module only inside its functions: no import cycle.
from .spec import SETTING_FIELDS

ACCEPTED = frozenset("""
    artifacts_binary_staging_dir artifacts_cni_plugins artifacts_download_dir artifacts_image_staging_dir

    cni_flannel_backend cni_flannel_backend_options cni_flannel_cni_plugin_image cni_flannel_image
    cni_flannel_resources cni_image_replacements cni_kubectl_bin cni_manifest_dir cni_ready_timeout

    containerd_binary containerd_config_dir containerd_crictl_timeout containerd_insecure_registries
    containerd_max_concurrent_downloads containerd_registry_mirrors containerd_restrict_oom_score_adj
    containerd_root_dir containerd_runc_binary containerd_sandbox_image containerd_snapshotter containerd_socket
    containerd_stats_collect_period containerd_systemd_cgroup

    control_plane_addons_dir control_plane_anonymous_paths control_plane_api_timeout
    control_plane_apiserver_extra_args control_plane_audit_log_dir control_plane_audit_log_maxage
    control_plane_audit_log_maxbackup control_plane_audit_log_maxsize control_plane_cert_sans
    control_plane_certs_auto_renew control_plane_certs_auto_renew_calendar control_plane_certs_auto_renew_offset
    control_plane_controller_manager_extra_args control_plane_coredns_upstreams control_plane_encryption_provider
    control_plane_etcd_extra_args control_plane_ignore_preflight_errors control_plane_join_config
    control_plane_join_token_ttl control_plane_kube_proxy_configuration
    control_plane_kube_proxy_conntrack_max_per_core control_plane_kube_proxy_mode control_plane_kubeadm_bin
    control_plane_kubeadm_config control_plane_kubectl_bin control_plane_kubelet_configuration
    control_plane_kubelet_pod_pids_limit control_plane_kubelet_seccomp_default control_plane_root_kubeconfig
    control_plane_scheduler_extra_args control_plane_static_pod_timeout control_plane_tls_cipher_suites

    encryption_kubectl_bin

    etcd_backup_remote_dir etcd_backup_timer etcd_backup_timer_keep etcd_backup_timer_schedule etcd_bin_dir
    etcd_config_dir etcd_data_dir etcd_extra_args etcd_health_retries etcd_kubeadm_bin etcd_pki_dir

    kubesphere_admin_secret kubesphere_cluster_configuration_merge_type kubesphere_console_tls
    kubesphere_console_tls_names kubesphere_console_tls_secret kubesphere_fail_on_component_failure
    kubesphere_image_pull_policy kubesphere_images kubesphere_python_packages kubesphere_reapply kubesphere_replicas
    kubesphere_version kubesphere_wait kubesphere_wait_timeout

    loadbalancer_apt_cache_valid_time loadbalancer_haproxy_balance loadbalancer_haproxy_check_fall
    loadbalancer_haproxy_check_interval loadbalancer_haproxy_check_rise loadbalancer_haproxy_health_path
    loadbalancer_haproxy_health_port loadbalancer_haproxy_maxconn loadbalancer_haproxy_packages
    loadbalancer_haproxy_timeout_connect loadbalancer_haproxy_timeout_tunnel loadbalancer_keepalived_advert_int
    loadbalancer_keepalived_check_script loadbalancer_keepalived_interface loadbalancer_keepalived_packages
    loadbalancer_keepalived_preempt loadbalancer_keepalived_virtual_router_id loadbalancer_keepalived_wait_timeout

    metrics_server_extra_args metrics_server_image metrics_server_kubectl_bin metrics_server_kubelet_insecure_tls
    metrics_server_kubelet_preferred_address_types metrics_server_manifest_dir metrics_server_metric_resolution
    metrics_server_ready_timeout metrics_server_replicas metrics_server_resources

    node_cri_socket node_ignore_preflight_errors node_join_token_ttl node_kubeadm_bin node_kubeadm_config_dir
    node_kubelet_bin node_kubelet_extra_args node_serving_certificate_timeout

    preflight_allow_unsupported_os preflight_check_ports preflight_check_time_sync preflight_connect_timeout
    preflight_etcdctl_bin
    preflight_kernel_modules preflight_min_cpus_control_plane preflight_min_cpus_worker
    preflight_min_memory_mb_control_plane preflight_min_memory_mb_worker

    preinstall_apt_cache_valid_time preinstall_extra_packages preinstall_extra_sysctls preinstall_kernel_modules
    preinstall_manage_etc_hosts preinstall_packages preinstall_set_hostname preinstall_swap_off preinstall_sysctl_file
    preinstall_sysctls

    reset_containerd_images reset_containerd_root_dir reset_cri_socket reset_extra_paths reset_interfaces
    reset_iptables_chain_prefixes reset_kubeadm_bin reset_nftables_tables reset_paths reset_services
    reset_tunnel_interfaces

    summary_etcd_certificates summary_kubeadm_bin summary_kubectl_bin

    upgrade_drain_blockers_ignore upgrade_drain_timeout upgrade_min_certificate_hours upgrade_ready_timeout
    upgrade_staging_dir upgrade_static_pod_timeout upgrade_worker_batch

    certs_renew_before certs_renew_days certs_warn_days
    remove_node_drain_blockers_ignore remove_node_drain_timeout remove_node_force
    scale_ready_timeout
""".split())

# How the file of a Secret's key is read: YAML for a mapping or a list, the text as it is for a string.
SECRET: dict[str, str] = {
    "containerd_registry_auths": "yaml",
    "loadbalancer_keepalived_auth_pass": "text",
}

# The spec's fields that give the slipway_* settings (spec.py's table, whose metadata.name and group rows are not
# settings a variable could name), and the settings no field gives.
_FIELDS = {name: field for name, field in SETTING_FIELDS.items() if name.startswith("slipway_") and name != "slipway_cluster_name"}
_NO_FIELD = {
    "slipway_cluster_name": "is the SlipwayCluster's name (metadata.name)",
    "slipway_apiserver_port": "has no field in the spec: a SlipwayCluster's API servers listen on 6443",
    "slipway_etcd_even_members_ok": "has no field in the spec: give etcd an odd number of members (1, 3 or 5)",
    "slipway_operator_enabled": "has no field in the spec: the fleet does not deploy slipway-operator",
    "slipway_artifacts_mirror_insecure_http": "has no field in the spec: a SlipwayCluster's spec.artifacts.mirrorURL "
                                              "is an https:// server",
    "slipway_artifacts_release_checksums": "has no field in the spec: a SlipwayCluster installs a release whose sums "
                                           "the collection pins, or from spec.artifacts.source bundle",
}

# kubespray's names that the model knows (plugins/module_utils/_kubespray.py), each with what a SlipwayCluster sets
# instead: a field, a variable, or nothing ("": slipway.cluster has no such setting).
_KUBESPRAY = {
    "kube_version": "spec.kubernetesVersion", "kube_pods_subnet": "spec.network.podCIDR",
    "kube_service_addresses": "spec.network.serviceCIDR", "kube_network_node_prefix": "spec.network.nodeCIDRMaskSize",
    "kube_network_plugin": "spec.network.cni", "cluster_name": "spec.network.dnsDomain",
    "dns_domain": "spec.network.dnsDomain", "etcd_deployment_type": "spec.etcd.mode",
    "etcd_kubeadm_enabled": "spec.etcd.mode", "files_repo": "spec.artifacts.mirrorURL",
    "registry_host": "spec.artifacts.registryMirror", "loadbalancer_apiserver": "spec.controlPlaneEndpoint",
    "apiserver_loadbalancer_domain_name": "spec.controlPlaneEndpoint.address",
    "loadbalancer_apiserver_localhost": "spec.controlPlaneEndpoint.mode",
    "loadbalancer_apiserver_port": "spec.controlPlaneEndpoint.port",
    "kube_proxy_mode": "control_plane_kube_proxy_mode", "upstream_dns_servers": "control_plane_coredns_upstreams",
    "supplementary_addresses_in_ssl_keys": "control_plane_cert_sans",
    "loadbalancer_apiserver_healthcheck_port": "loadbalancer_haproxy_health_port",
    "containerd_registries_mirrors": "containerd_registry_mirrors", "containerd_registries": "containerd_registry_mirrors",
    "containerd_registry_auth": "containerd_registry_auths", "auto_renew_certificates": "control_plane_certs_auto_renew",
    **dict.fromkeys("""
        kube_apiserver_port loadbalancer_apiserver_type container_manager dns_mode kube_image_repo gcr_image_repo
        docker_image_repo quay_image_repo github_image_repo kube_config_dir kube_cert_dir bin_dir kubeconfig_localhost
        metrics_server_enabled enable_nodelocaldns kube_proxy_strict_arp kube_encrypt_secret_data
        enable_dual_stack_networks kube_network_plugin_multus kata_containers_enabled kubernetes_audit
        podsecuritypolicy_enabled persistent_volumes_enabled deploy_netchecker dashboard_enabled helm_enabled
        registry_enabled local_path_provisioner_enabled local_volume_provisioner_enabled cephfs_provisioner_enabled
        rbd_provisioner_enabled ingress_nginx_enabled ingress_alb_enabled cert_manager_enabled metallb_enabled
        argocd_enabled krew_enabled http_proxy https_proxy""".split(), ""),
}


def _kubespray(use: str) -> str:
    if use.startswith("spec."):
        return f"is kubespray's name; a SlipwayCluster sets {use} instead"
    if use in SECRET:
        return f"is kubespray's name; give {use} in spec.secretVariablesFrom from a Secret instead"
    if use:
        return f"is kubespray's name; set {use} instead"
    return "is kubespray's, which slipway.cluster does not read: leave it out (docs/kubespray.md says what it does instead)"


def _each(names: str, reason: str) -> dict[str, str]:
    return dict.fromkeys(names.split(), reason)


_JOB_KUBECONFIG = ("is the admin kubeconfig in the Job (the Ansible controller), which the fleet places itself "
                   "and keeps in the Secret <name>-kubeconfig")
_OPERATION = "is set by the fleet for an operation"
_ENTRY_INPUT = "is set by the playbooks themselves where a step needs it (an extra variable would override them)"
_NOT_RUN = "belongs to a playbook the fleet does not run for a SlipwayCluster"

REFUSED: dict[str, str] = {
    # Files and directories on the Job's side, and what decides where a play runs.
    "cni_manifest_src": "is a file the Job (the Ansible controller) would read and apply to the cluster; a SlipwayCluster "
                        "cannot give a manifest: use spec.network.cni flannel or none",
    "control_plane_audit_policy_src": "is a file the Job (the Ansible controller) would read and copy to the control "
                                      "planes; leave it out for the collection's audit policy",
    "kubesphere_cluster_configuration": "is set by spec.kubesphere.clusterConfiguration (here a text would be a file the "
                                        "Job reads): write the ClusterConfiguration's spec there",
    "control_plane_kubeconfig_dest": "is where the Job (the Ansible controller) writes the admin kubeconfig; the fleet "
                                     "keeps it in the Secret <name>-kubeconfig",
    "control_plane_fetch_kubeconfig": "would keep the admin kubeconfig from the Job, which the fleet needs for the Secret "
                                      "<name>-kubeconfig and every later operation",
    **_each("node_kubeconfig preflight_kubeconfig reset_controller_kubeconfig summary_kubeconfig", _JOB_KUBECONFIG),
    "kubesphere_kubeconfig": "is a kubeconfig in the Job and would run KubeSphere's play there (localhost); the "
                             "components are installed through the first control plane's /etc/kubernetes/admin.conf",
    "kubesphere_bundle_images": "is read only without a cluster model (playbooks/kubesphere.yml without an inventory); "
                                "the fleet's runs take the bundle's images from the model",
    "etcd_backup_dir": "is the Job's snapshot directory, which the fleet sets for each etcd-backup operation",
    "etcd_backup_keep": "decides which snapshots the Job deletes from the fleet's backup storage, which the management "
                        "cluster's administrator keeps",
    "etcd_snapshot_kubernetes_version": "is written into each snapshot's record in the fleet's backup storage; "
                                        "playbooks/upgrade.yml sets it",
    "etcd_restore_snapshot": f"is a snapshot file in the Job and {_NOT_RUN} (etcd_restore.yml)",
    "etcd_snapshot": f"is a snapshot file in the Job and {_NOT_RUN} (etcd_restore.yml, recover_control_plane.yml)",
    # What the fleet and the day-2 playbooks set for an operation.
    "remove_node_names": f"{_OPERATION}: take the hosts out of spec.hosts to remove them",
    "reset_confirm": f"{_OPERATION}: deleting a SlipwayCluster with deletionPolicy Reset resets its hosts",
    "certs_action": f"{_OPERATION}: a SlipwayOperation of type renew-certs renews the certificates",
    **_each("artifacts_only control_plane_join_new_only control_plane_static_pods control_plane_static_pods_state "
            "etcd_renew_stamp preflight_read_etcd", _ENTRY_INPUT),
    **_each("preflight_api_required preflight_playbook preflight_reachable_hosts preflight_reachable_why",
            "is set by the playbook that runs the preflight; the fleet runs each playbook as it is written"),
    "preflight_inventory_required": "is set by the playbooks that also run without an inventory; a SlipwayCluster's "
                                    "runs always have one",
    **_each("artifacts_operator_image artifacts_operator_kubesphere_images",
            "is set by playbooks/operator.yml and playbooks/fleet.yml, which deploy into a management cluster"),
    **_each("etcd_restore_sha256 etcd_restore_stamp etcd_restore_members etcd_restore_ready_timeout",
            f"{_NOT_RUN} (etcd_restore.yml, recover_control_plane.yml)"),
    **_each("encryption_rotation_step rotate_encryption_key_name",
            f"{_NOT_RUN} (rotate_encryption_key.yml)"),
    # The roles and playbooks of the management cluster.
    **_each("""fleet_active_deadline_seconds fleet_backoff_limit fleet_backup_claim fleet_backup_host_path
            fleet_bundle_claim fleet_bundle_host_path fleet_bundle_mount fleet_image fleet_image_pull_policy
            fleet_kubeconfig fleet_max_parallel fleet_metrics_port fleet_replicas fleet_resync_seconds
            fleet_watch_namespaces fleet_watch_every_namespace fleet_namespace_pod_security
            fleet_max_parallel_per_namespace fleet_job_requests fleet_job_limits""",
            "configures the fleet controller (playbooks/fleet.yml), which the management cluster's administrator deploys"),
    **_each("""fleet_adopt_deletion_policy fleet_adopt_dest fleet_adopt_kubeconfig fleet_adopt_name fleet_adopt_namespace
            fleet_adopt_ssh_secret fleet_adopt_variables""",
            "is a setting of playbooks/fleet_adopt.yml, which an administrator runs with the cluster's inventory"),
    **_each("""operator_debounce_seconds operator_image operator_image_pull_policy operator_kubeconfig
            operator_kubesphere_vars operator_metrics_port operator_replicas operator_resync_seconds""",
            "configures slipway-operator, which the fleet does not deploy"),
    # The preflight's bookkeeping of what the roles write.
    **_each("preflight_state_blocks preflight_state_contents preflight_state_paths preflight_state_secret_paths "
            "preflight_state_users",
            "is the collection's list of what the preflight reads on each host, kept in step with what the roles write"),
    "preflight_containerd_address": "follows containerd_socket: set that instead",
    "encryption_provider": "follows control_plane_encryption_provider: set that instead",
    # The facts the roles set while they run.
    **_each("""artifacts_images containerd_config_result containerd_unit_result control_plane_kubelet_wanted
            control_plane_static_pod_changes encryption_apiserver encryption_rotation encryption_rotation_restart
            etcd_client_copied etcd_snapshot_taken kubesphere_plan metrics_server_objects node_kubelet_conf node_serving_ca
            preflight_node_facts preflight_running slipway_cluster upgrade_plan""",
            "is a fact the roles set while they run; an extra variable would take its place"),
    # The spec's own fields, and kubespray's names.
    **{name: f"is set by {field}: write it there" for name, field in _FIELDS.items()},
    **_NO_FIELD,
    **{name: _kubespray(use) for name, use in _KUBESPRAY.items()},
}

# Where a tenant finds the names, for a name that is no variable at all.
_DOCUMENTED = ("the variables a SlipwayCluster takes are listed in docs/fleet.md, and each role's in "
               "ansible-doc -t role slipway.cluster.ROLE")


def _shown(name: str) -> str:
    return name if len(name) <= 100 else name[:100] + "..."


def _unknown(name: str, secret: bool) -> str:
    """Why a name of spec.variables (secret false) or spec.secretVariablesFrom (true) that no table holds is refused."""
    if name.startswith("ansible_"):
        return "is an Ansible connection variable: spec.hosts gives the address, user and port"
    if name.startswith("slipway_"):
        return "is not a setting of slipway.cluster: the spec's fields give the slipway_* settings"
    if name.startswith("_"):
        return "is internal to a role"
    what = "a secret variable" if secret else "a role variable"
    close = difflib.get_close_matches(name, sorted(SECRET if secret else ACCEPTED | SECRET.keys()), n=1)
    if not close:
        return f"is not {what} of slipway.cluster; {_DOCUMENTED}"
    note = " (a secret: give it in spec.secretVariablesFrom)" if close[0] in SECRET and not secret else ""
    return f"is not {what} of slipway.cluster; did you mean {close[0]}{note}?"


def problems(variables: Mapping[str, Any], secret_variables: Iterable[str] = ()) -> list[str]:
    """Every problem of spec.variables (its names) and of the variables of spec.secretVariablesFrom (in their order)."""
    found = []
    for name in sorted(variables):
        if name in SECRET:
            found.append(f"spec.variables.{_shown(name)}: is a secret: give it in spec.secretVariablesFrom from a Secret")
        elif name not in ACCEPTED:
            found.append(f"spec.variables.{_shown(name)}: {REFUSED.get(name) or _unknown(name, secret=False)}")
    first: dict[str, int] = {}
    for index, name in enumerate(secret_variables):
        where = f"spec.secretVariablesFrom[{index}].variable: {_shown(name)}"
        if name in first:
            found.append(f"{where} is given already by spec.secretVariablesFrom[{first[name]}]; give each once")
        elif name in SECRET:
            first[name] = index
        elif name in ACCEPTED:
            found.append(f"{where} is no secret: write it in spec.variables")
        else:
            found.append(f"{where} {REFUSED.get(name) or _unknown(name, secret=True)}")
    return found
