#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0). Ansible expects modules
# to be compatible with the GNU General Public License version 3, and the Apache License 2.0 is.

from __future__ import annotations

DOCUMENTATION = r"""
module: component_status
short_description: Record a KubeSphere component as enabled, failed or disabled in the ClusterConfiguration
version_added: 0.1.0
author:
  - slipway.cluster developers (@slipway)
description:
  - Writes the status entry of one component of the ClusterConfiguration resource (C(installer.kubesphere.io/v1alpha1),
    V(ks-installer) in V(kubesphere-system)), in a layout ks-installer reads too.
  - 'The entry lives at ks-installer''s key, for example C(status.logging), C(status.metricsServer),
    C(status.redis) for V(common.redis), or nested under the parent''s entry, for example C(status.events.ruler) and
    C(status.logging.logsidecar). It holds:'
  - C(status), ks-installer's field, V(enabled), V(failed) or V(disabled).
  - C(enabledTime), ks-installer's field, the time this entry was written, in RFC 3339 UTC (V(2024-05-01T10:00:00Z)).
  - C(slipway.specHash), the sha256 of the component's spec section that was applied (or attempted, for V(failed));
    a V(disabled) entry has none. M(slipway.cluster.cluster_configuration_info) compares it with the spec now to
    decide whether to reapply.
  - C(slipway.reason), the reason given with O(reason) (always there for V(failed)).
  - Other keys of the entry, such as ks-installer's C(status.core.version) and the entries of nested components, are
    kept.
  - Writes through the status subresource when the CRD has one (slipway's CRD), else on the resource itself
    (ks-installer's CRD); the module finds out from the API server each run.
  - Writes nothing when the entry already has this status, spec hash and reason, so C(enabledTime) keeps its value.
    An entry ks-installer wrote (without C(slipway)) is rewritten once, to record the spec hash.
options:
  component:
    description:
      - The component, as M(slipway.cluster.cluster_configuration_info) names it.
    type: str
    required: true
    choices:
      - metrics_server
      - common.redis
      - common.openldap
      - common.minio
      - common.es
      - common.opensearch
      - common.fluentbit
      - core
      - monitoring
      - multicluster
      - openpitrix
      - network.topology
      - alerting
      - auditing
      - devops
      - events
      - events.ruler
      - logging
      - logging.logsidecar
      - servicemesh
      - edgeruntime
      - edgeruntime.kubeedge
      - gatekeeper
  status:
    description:
      - V(enabled) after the component was installed or reapplied.
      - V(failed) when installing it failed; a later plan retries it while it is on, and removes what was left
        once it is switched off.
      - V(disabled) after it was uninstalled.
    type: str
    required: true
    choices: [enabled, failed, disabled]
  reason:
    description:
      - Why, in words; required with O(status=failed), recorded as C(slipway.reason).
    type: str
  spec_hash:
    description:
      - The spec hash to record, normally RV(slipway.cluster.cluster_configuration_info#module:plan[].spec_hash) of
        the plan the run acted on, so an edit made while the component was being installed is noticed next run.
      - When not set, the hash of the component's spec section as stored now.
      - Ignored with O(status=disabled).
    type: str
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
    description: Reports whether the entry would change and what it would hold, without writing.
  diff_mode:
    support: full
    description: Shows the component's status entry before and after.
  idempotent:
    support: full
    description: Running the task again with the same status, reason and spec changes nothing.
notes:
  - The ClusterConfiguration must exist; M(slipway.cluster.cluster_configuration) creates it.
seealso:
  - module: slipway.cluster.cluster_configuration_info
  - module: slipway.cluster.cluster_configuration
"""

EXAMPLES = r"""
- name: Record logging as installed, with the spec hash the plan acted on
  slipway.cluster.component_status:
    component: logging
    status: enabled
    spec_hash: "{{ (__kubesphere_plan.plan | selectattr('name', 'equalto', 'logging') | first).spec_hash }}"

- name: Record a failed install of the events ruler, so the next run retries it
  slipway.cluster.component_status:
    component: events.ruler
    status: failed
    reason: "helm upgrade ks-events timed out"

- name: Record DevOps as removed
  slipway.cluster.component_status:
    component: devops
    status: disabled
    kubeconfig: /etc/kubernetes/admin.conf
"""

RETURN = r"""
component:
  description: The component written.
  returned: success
  type: str
  sample: events.ruler
status_path:
  description: Where its entry lives.
  returned: success
  type: str
  sample: status.events.ruler
status_subresource:
  description: Whether the entry was written through the status subresource (else on the resource itself).
  returned: success
  type: bool
  sample: true
spec_hash:
  description: The spec hash recorded, null with O(status=disabled).
  returned: success
  type: str
  sample: 5d41402abc4b2a76b9719d911017c5925d41402abc4b2a76b9719d911017c592
previous:
  description: The entry before the task, null when there was none.
  returned: success
  type: dict
  sample: {status: enabled, enabledTime: "2023-06-21T12:27:11CST"}
entry:
  description: The entry after the task (what it would be, in check mode).
  returned: success
  type: dict
  sample:
    status: failed
    enabledTime: "2024-05-01T10:00:00Z"
    slipway:
      specHash: 5d41402abc4b2a76b9719d911017c5925d41402abc4b2a76b9719d911017c592
      reason: helm upgrade ks-events timed out
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.slipway.cluster.plugins.module_utils._cluster_configuration_runner import (
    COMPONENT_STATUS_ARGS,
    run_component_status,
)


def main() -> None:
    module = AnsibleModule(**COMPONENT_STATUS_ARGS)
    run_component_status(module)


if __name__ == "__main__":
    main()
