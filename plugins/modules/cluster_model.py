#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0). Ansible expects modules
# to be compatible with the GNU General Public License version 3, and the Apache License 2.0 is.

from __future__ import annotations

DOCUMENTATION = r"""
module: cluster_model
short_description: Build and validate the model of the cluster from the inventory, on the controller
version_added: 0.1.0
author:
  - slipway.cluster developers (@slipway)
description:
  - Turns the inventory groups (C(kube_control_plane), C(kube_node), C(etcd), C(loadbalancer), compatible
    with kubespray) and the cluster-wide C(slipway_*) settings into one normalized model, with nodes and their
    roles and addresses, the control plane endpoint, versions, networks.
  - Every problem found is reported at once, in one list naming the variable or host and what to change,
    and the task fails before any host is contacted. The module never connects to a host.
  - Returns the model as the fact C(slipway_cluster). Used with C(run_once), the fact reaches every host of the play.
  - Ansible gives a fact as C(ansible_facts.slipway_cluster); as the top-level variable C(slipway_cluster) only while
    it injects facts as variables (C(inject_facts_as_vars), deprecated by ansible-core 2.20). The collection's roles
    read the variable C(slipway_cluster), so hand the model to them with O(as_fact=false) and
    M(ansible.builtin.set_fact).
  - The C(slipway_*) settings are read from the variables of the host the task runs for; O(settings) overrides them.
options:
  settings:
    description:
      - C(slipway_*) settings that take precedence over the variables of the same name.
      - Known settings are C(slipway_cluster_name), C(slipway_kubernetes_version), C(slipway_dns_domain),
        C(slipway_pod_cidr), C(slipway_service_cidr), C(slipway_node_cidr_mask_size), C(slipway_lb_mode),
        C(slipway_lb_port), C(slipway_apiserver_port), C(slipway_control_plane_endpoint), C(slipway_cni),
        C(slipway_etcd_mode), C(slipway_etcd_even_members_ok), C(slipway_artifacts_source), C(slipway_artifacts_bundle_dir),
        C(slipway_artifacts_mirror_url), C(slipway_artifacts_mirror_insecure_http), C(slipway_artifacts_release_checksums),
        C(slipway_artifacts_registry_mirror), C(slipway_kubesphere_enabled),
        C(slipway_operator_enabled), C(slipway_hardening) and C(slipway_secrets_encryption). docs/preflight.md
        describes each.
      - With C(slipway_artifacts_source=bundle) the bundle's manifest.yml is read and every file's sha256 checked
        on the controller; a relative C(slipway_artifacts_bundle_dir) is relative to the inventory directory.
      - With C(slipway_artifacts_source=upstream) a C(slipway_kubernetes_version) that is not a release the collection
        knows of is refused, with no network access; with C(mirror) the controller asks the mirror for the release's
        kubeadm (HEAD, then GET), and a mirror that does not answer the controller is a warning only.
      - Cluster-wide settings are read once, from the host the task runs for. A C(slipway_*) setting, or a role
        variable the model checks, whose value differs between the hosts (set in host_vars or in the group_vars of
        another group than C(all)) is a problem naming it and the hosts.
    type: dict
    default: {}
  exclude:
    description:
      - Hosts to leave out of the model as if the inventory did not list them, for the cluster as it is after
        they are removed (C(playbooks/remove_node.yml) points the remaining load balancers at what is left).
      - A name the inventory does not have is ignored here; the caller checks names.
    type: list
    elements: str
    default: []
    version_added: 0.1.0
  as_fact:
    description:
      - Return the model as the fact C(slipway_cluster) (V(true)), or as RV(model) (V(false)) for the caller to
        register and hand on with M(ansible.builtin.set_fact).
      - Ansible copies and cleans every host's facts for every task; a model of a thousand nodes as a fact makes
        each task cost in proportion to the cluster's size on each host. The preflight role uses V(false).
    type: bool
    default: true
    version_added: 0.1.0
  scope:
    description:
      - V(cluster) checks the inventory and the settings and returns the model.
      - V(settings) checks the settings and role variables alone, for a playbook that runs without an inventory
        (C(playbooks/operator.yml) against a kubeconfig of the controller); it returns no model.
    type: str
    choices: [cluster, settings]
    default: cluster
    version_added: 0.1.0
attributes:
  action:
    support: full
    description: Runs entirely on the controller as an action plugin.
  check_mode:
    support: full
    description: Only reads the inventory, so it runs unchanged in check mode.
  diff_mode:
    support: none
    description: Changes nothing.
seealso:
  - module: slipway.cluster.host_checks
"""

EXAMPLES = r"""
- name: Validate the inventory before touching any host
  slipway.cluster.cluster_model:
  run_once: true

- name: Show the model's control planes
  ansible.builtin.debug:
    msg: "{{ ansible_facts.slipway_cluster.control_planes }}"
  run_once: true

- name: Validate the inventory, for the roles
  slipway.cluster.cluster_model:
    as_fact: false
  register: __site_model
  run_once: true

- name: Give every host the model the roles read
  ansible.builtin.set_fact:
    slipway_cluster: "{{ __site_model.model }}"
  run_once: true

- name: Validate with an explicit version
  slipway.cluster.cluster_model:
    settings:
      slipway_kubernetes_version: 1.37.1
      slipway_lb_mode: vip
      slipway_control_plane_endpoint: 10.0.0.250
  run_once: true
"""

RETURN = r"""
model:
  description: The model, as in RV(ansible_facts.slipway_cluster).
  returned: success and O(as_fact=false)
  type: dict
  version_added: 0.1.0
ansible_facts:
  description: The model, as the fact C(slipway_cluster) (read as C(ansible_facts.slipway_cluster)).
  returned: success and O(as_fact=true)
  type: dict
  contains:
    slipway_cluster:
      description:
        - The normalized cluster. Keys include C(kubernetes_version), C(pod_cidr), C(service_cidr),
          C(cluster_dns_ip), C(endpoint) (C(mode), C(host), C(port), C(address), C(url), C(external_url), C(vip),
          C(lb_hosts), C(vrrp_router_id) with C(vip)), C(control_planes), C(first_control_plane), C(workers),
          C(etcd_members), C(etcd_pki_dir) and C(etcd_certs_dir) (where the members keep etcd's certificates),
          C(hardening), C(secrets_encryption) and C(nodes) (per host C(name), C(address), C(url_host) (the address in
          brackets when it is IPv6, for URLs), C(roles), and for a control plane C(api_url), its own API server).
      type: dict
      returned: success
      sample:
        kubernetes_version: 1.37.1
        first_control_plane: cp1
        endpoint: {mode: local_haproxy, host: 127.0.0.1, port: 8443, address: "127.0.0.1:8443"}
        nodes: {cp1: {name: cp1, address: 10.0.0.11, url_host: 10.0.0.11, roles: [control_plane, etcd], kubernetes: true}}
"""
