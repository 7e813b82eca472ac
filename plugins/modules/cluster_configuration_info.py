#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0). Ansible expects modules
# to be compatible with the GNU General Public License version 3, and the Apache License 2.0 is.

from __future__ import annotations

DOCUMENTATION = r"""
module: cluster_configuration_info
short_description: Read the KubeSphere ClusterConfiguration and plan what each component needs
version_added: 0.1.0
author:
  - slipway.cluster developers (@slipway)
description:
  - Reads the ClusterConfiguration resource (C(installer.kubesphere.io/v1alpha1), V(ks-installer) in
    V(kubesphere-system)) and returns a plan with one entry per KubeSphere 3.x component, nested ones included,
    saying whether spec enables it, its current status, the action a run takes and why.
  - 'The components, with the status key each one has (ks-installer''s): V(metrics_server) (C(metricsServer)),
    V(common.redis) (C(redis)), V(common.openldap) (C(openldap)), V(common.minio) (C(minio)), V(common.es) (C(es)),
    V(common.opensearch) (C(opensearch)), V(common.fluentbit) (C(fluentbit)), V(core), V(monitoring),
    V(multicluster), V(openpitrix), V(network.topology), V(alerting), V(auditing), V(devops), V(events),
    V(events.ruler), V(logging), V(logging.logsidecar), V(servicemesh), V(edgeruntime),
    V(edgeruntime.kubeedge) and V(gatekeeper). They come in install order.'
  - V(core) and V(monitoring) are always installed, as ks-installer does. A nested component (V(events.ruler),
    V(logging.logsidecar), V(edgeruntime.kubeedge)) is on only when its own switch and its parent are on.
    V(common.*) follow ks-installer's rules, for example V(common.openldap) and V(common.minio) come with
    V(devops), the log store and V(common.fluentbit) with V(logging), V(events) or V(auditing).
  - 'Actions: V(install) when on and the status is missing, V(failed) (a retry), V(disabled) or unknown;
    V(reapply) when on and enabled by slipway with a spec hash that differs from the hash of the component''s spec
    section now; V(uninstall) when off (or its parent is off) and the status is V(enabled) or V(failed);
    V(none) otherwise. A status entry ks-installer wrote (it has no C(slipway) record) counts as enabled and
    current; a nested component ks-installer installs inside its parent without a status of its own
    (V(logging.logsidecar), V(edgeruntime.kubeedge)) counts as installed while its parent''s entry is one
    ks-installer wrote.'
  - A component's spec section is its key in spec (for example C(spec.devops)) without its children's keys;
    V(monitoring) also owns C(spec.etcd) and C(spec.common.monitoring); V(core) owns everything no other component
    claims, so every spec edit reapplies exactly the components it concerns. C(spec.local_registry),
    C(spec.namespace_override) and C(spec.persistence) (where images come from, the default storage class) count
    in every component's section, so changing one of them reapplies every installed component.
  - Sections of spec that have an C(enabled) switch but are no component slipway installs (unknown keys, or keys an
    earlier KubeSphere release used, like C(kubeedge)) get an entry with RV(plan[].supported=false) and
    action V(none), and the reason says what to do.
options:
  spec:
    description:
      - Plan for this spec instead of the stored one, against the stored status (or no status when the resource
        does not exist yet), for example the spec a M(slipway.cluster.cluster_configuration) task in check mode
        predicted.
    type: dict
  name:
    description:
      - Name of the ClusterConfiguration.
    type: str
    default: ks-installer
  namespace:
    description:
      - Namespace of the ClusterConfiguration.
    type: str
    default: kubesphere-system
extends_documentation_fragment:
  - slipway.cluster.k8s_auth
attributes:
  check_mode:
    support: full
    description: The module only reads, so it runs unchanged in check mode.
  diff_mode:
    support: N/A
    description: The module changes nothing, so there is nothing to show.
  idempotent:
    support: full
    description: The module changes nothing.
seealso:
  - module: slipway.cluster.cluster_configuration
  - module: slipway.cluster.component_status
"""

EXAMPLES = r"""
- name: Plan the KubeSphere components
  slipway.cluster.cluster_configuration_info:
    kubeconfig: /etc/kubernetes/admin.conf
  register: __kubesphere_plan

- name: Show what this run installs, reapplies and removes
  ansible.builtin.debug:
    msg: "{{ __kubesphere_plan.actions }}"

- name: Install logging when the plan says so
  ansible.builtin.include_tasks: logging.yml
  when: "'logging' in __kubesphere_plan.actions.install + __kubesphere_plan.actions.reapply"
"""

RETURN = r"""
crd_installed:
  description: Whether the API server serves the ClusterConfiguration resource.
  returned: success
  type: bool
  sample: true
status_subresource:
  description: Whether the CRD has a status subresource (slipway's does, ks-installer's does not).
  returned: success
  type: bool
  sample: true
exists:
  description: Whether the ClusterConfiguration exists.
  returned: success
  type: bool
  sample: true
spec:
  description: The spec planned for (O(spec) when given, else the stored one).
  returned: success
  type: dict
  sample: {devops: {enabled: true}}
status:
  description: The stored status.
  returned: success
  type: dict
  sample: {core: {status: enabled, enabledTime: "2023-06-21T12:27:11CST", version: v3.3.2}}
labels:
  description: C(metadata.labels) of the resource.
  returned: success
  type: dict
  sample: {version: v3.3.2}
generation:
  description: C(metadata.generation) of the resource, null when it does not exist.
  returned: success
  type: int
  sample: 4
plan:
  description:
    - One entry per component in install order, then one per unsupported section of spec.
    - Empty when the resource does not exist and O(spec) is not given.
  returned: success
  type: list
  elements: dict
  contains:
    name:
      description: Component name, for example V(logging.logsidecar) or V(common.redis).
      type: str
      sample: logging.logsidecar
    parent:
      description: The parent of a nested component, else null.
      type: str
      sample: logging
    supported:
      description: Whether slipway installs this component.
      type: bool
      sample: true
    enabled:
      description: Whether spec wants the component installed (for a nested one, its parent too).
      type: bool
      sample: true
    status:
      description: The current status (V(enabled), V(failed), V(disabled), something else ks-installer wrote, or null).
      type: str
      sample: enabled
    action:
      description: What a run does with it.
      type: str
      choices: [install, reapply, uninstall, none]
      sample: reapply
    reason:
      description: Why, in words.
      type: str
      sample: spec.logging.logsidecar.enabled is true; its spec section changed since it was applied
    spec_hash:
      description: sha256 of the component's spec section now; pass it to M(slipway.cluster.component_status).
      type: str
      sample: 0b9e6c1f0d8f4f0e8b3c7f5c2d0a9e3b1c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f
    applied_spec_hash:
      description: The spec hash recorded when the status was last written by slipway, else null.
      type: str
      sample: 5d41402abc4b2a76b9719d911017c5925d41402abc4b2a76b9719d911017c592
    recorded_by:
      description: Who wrote the status, V(slipway) or V(ks-installer), null when there is none.
      type: str
      sample: slipway
    enabled_time:
      description: C(enabledTime) of the status entry as written (ks-installer wrote its own time format).
      type: str
      sample: "2024-05-01T10:00:00Z"
    status_path:
      description: Where the entry lives, for example V(status.logging.logsidecar) or V(status.metricsServer).
      type: str
      sample: status.logging.logsidecar
actions:
  description: Component names by action; V(install) and V(reapply) in install order, V(uninstall) in reverse.
  returned: success
  type: dict
  contains:
    install:
      description: Components to install.
      type: list
      elements: str
    reapply:
      description: Components to apply again because their spec section changed.
      type: list
      elements: str
    uninstall:
      description: Components to remove, children before their parents.
      type: list
      elements: str
    none:
      description: Components left as they are.
      type: list
      elements: str
  sample: {install: [core, monitoring], reapply: [], uninstall: [], none: [alerting]}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.slipway.cluster.plugins.module_utils._cluster_configuration_runner import (
    CLUSTER_CONFIGURATION_INFO_ARGS,
    run_cluster_configuration_info,
)


def main() -> None:
    module = AnsibleModule(**CLUSTER_CONFIGURATION_INFO_ARGS)
    run_cluster_configuration_info(module)


if __name__ == "__main__":
    main()
