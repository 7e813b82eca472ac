#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0). Ansible expects modules
# to be compatible with the GNU General Public License version 3, and the Apache License 2.0 is.

from __future__ import annotations

DOCUMENTATION = r"""
module: host_checks
short_description: Check every node's facts against the cluster model and report all problems at once
version_added: 0.1.0
author:
  - slipway.cluster developers (@slipway)
description:
  - Runs on the controller after M(slipway.cluster.node_facts) has read every node. Checks the OS and its
    version, CPUs and memory for the node's role, TCP ports the cluster needs (a port held by the cluster's
    own components, as on a rerun, is fine), that each node really has its model address, that the pod and
    service networks overlap none of the hosts' networks, that a virtual IP lies in the load balancers'
    network, and that clocks are synchronized.
  - With C(slipway_artifacts_source) C(upstream) or C(mirror), checks the release files on the controller before
    any host is changed. Every file of the release has a sha256 pinned in the collection (or in
    C(slipway_artifacts_release_checksums)) for amd64 and arm64, and
    each file of the architectures the nodes have, read from its server, has that sha256 (a mismatch names the
    URL, the pinned and the found sum). A checksum file on the same server is never asked. A file found intact is
    not read again (C($XDG_CACHE_HOME/slipway/release-files.json)); the nodes check the pinned sum again.
  - Fails with every problem in one list, naming the host and what to change. Warns about swap (the
    preinstall role turns it off), cgroup v1, and a supported platform none of the collection's tests runs
    (Ubuntu, aarch64).
  - On success returns the model as the fact C(slipway_cluster) (read as C(ansible_facts.slipway_cluster)), or
    with O(as_fact=false) as RV(model), each node completed with the facts the roles need, so no role reads them
    again.
options:
  model:
    description: The model built by M(slipway.cluster.cluster_model).
    type: dict
    required: true
  facts_var:
    description: Name of the variable each host registered the result of M(slipway.cluster.node_facts) in.
    type: str
    required: true
  hosts:
    description:
      - Hosts to check, for runs limited to part of the inventory (C(--limit)); the others keep their model
        entry without facts. All nodes of the model when not set.
    type: list
    elements: str
  options:
    description:
      - Thresholds and switches. Keys C(min_cpus_control_plane) (default 2), C(min_cpus_worker) (1),
        C(min_memory_mb_control_plane) (1700), C(min_memory_mb_worker) (1024), C(check_time_sync) (true),
        C(check_ports) (true), C(allow_unsupported_os) (false).
    type: dict
    default: {}
  as_fact:
    description:
      - Return the completed model as the fact C(slipway_cluster) (V(true)), or as RV(model) (V(false)) for the
        caller to register and hand on with M(ansible.builtin.set_fact), which Ansible does not clean on every
        host for every task (see M(slipway.cluster.cluster_model)).
    type: bool
    default: true
    version_added: 0.1.0
attributes:
  action:
    support: full
    description: Runs entirely on the controller as an action plugin.
  check_mode:
    support: full
    description: Only reads, so it runs unchanged in check mode.
  diff_mode:
    support: none
    description: Changes nothing.
seealso:
  - module: slipway.cluster.cluster_model
  - module: slipway.cluster.node_facts
"""

EXAMPLES = r"""
- name: Read every node
  slipway.cluster.node_facts:
  register: __preflight_node_facts

- name: Check all nodes together
  slipway.cluster.host_checks:
    model: "{{ slipway_cluster }}"
    facts_var: __preflight_node_facts
    options:
      min_memory_mb_worker: 2048
  run_once: true

- name: Show the first control plane's OS
  ansible.builtin.debug:
    msg: "{{ ansible_facts.slipway_cluster.nodes[ansible_facts.slipway_cluster.first_control_plane].facts.os }}"
  run_once: true
"""

RETURN = r"""
model:
  description: The completed model, as the fact C(slipway_cluster) with O(as_fact=true).
  returned: success and O(as_fact=false)
  type: dict
  version_added: 0.1.0
ansible_facts:
  description: The model with a C(facts) entry per node (C(os), C(os_version), C(arch), C(cgroup_version),
    C(container), C(cap_sys_resource), C(swap_mb), C(kernel_modules)).
  returned: success and O(as_fact=true)
  type: dict
  sample: {slipway_cluster: {nodes: {cp1: {facts: {cgroup_version: 2, cap_sys_resource: true}}}}}
warnings_found:
  description: Conditions that do not stop the run.
  returned: always
  type: list
  elements: str
  sample: ["host cp1: uses cgroup v1; the kubelet runs with failCgroupV1: false ..."]
"""
