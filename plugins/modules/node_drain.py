#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0). Ansible expects modules
# to be compatible with the GNU General Public License version 3, and the Apache License 2.0 is.

from __future__ import annotations

DOCUMENTATION = r"""
module: node_drain
short_description: Drain, cordon or uncordon a Kubernetes node, retrying evictions PodDisruptionBudgets refuse
version_added: 0.1.0
author:
  - slipway.cluster developers (@slipway)
description:
  - Cordons the node (C(spec.unschedulable=true)) unless it is cordoned already, then, for O(state=drained),
    moves its pods away the way C(kubectl drain) does.
  - Mirror pods (the copies of a kubelet's static pods) and pods of a DaemonSet are left alone. Pods that already
    terminated (phase C(Succeeded) or C(Failed)) are deleted. Pods without a controller, and pods with C(emptyDir)
    volumes when O(delete_emptydir_data=false), are refused unless allowed, and the module then fails naming them
    before it evicts anything.
  - Every other pod is evicted through the C(policy/v1) Eviction API, so PodDisruptionBudgets are honoured. An
    eviction the API server refuses with HTTP 429 (a PodDisruptionBudget that selects the pod allows no disruption
    now) is tried again every 2 seconds, and the evicted pods are waited for until they are gone (deleted, or
    replaced by a pod of the same name with another uid), both within O(timeout).
  - When O(timeout) passes with pods still blocking, the module fails with a message that names every such pod as
    C(namespace/name) with the PodDisruptionBudgets that select it (C(namespace/name)), and returns them in
    RV(blocking). The node stays cordoned. With O(force=true) it deletes those pods instead (no eviction, so no
    PodDisruptionBudget is asked) and returns them in RV(forced); it does not wait for them to go.
  - Unlike M(kubernetes.core.k8s_drain), an eviction refused by a PodDisruptionBudget is retried instead of
    failing the task at once, and a failure says which pods and PodDisruptionBudgets block.
  - A node that does not exist fails the module with C(node NAME not found), whatever O(state).
options:
  name:
    description:
      - Name of the node.
    type: str
    required: true
  state:
    description:
      - V(drained) cordons the node and moves its pods away.
      - V(cordoned) only marks the node unschedulable; its pods stay.
      - V(uncordoned) makes the node schedulable again.
    type: str
    choices: [drained, cordoned, uncordoned]
    default: drained
  timeout:
    description:
      - Seconds during which refused evictions are retried and evicted pods waited for, in all.
      - With V(0), each eviction is tried once and the evicted pods must be gone at the first look (as with
        O(grace_period=0)).
    type: int
    default: 300
  force:
    description:
      - Also evict pods that have no controller (nothing will recreate them; a warning names them).
      - Delete the pods that still block when O(timeout) passes, without their PodDisruptionBudgets' consent,
        instead of failing.
    type: bool
    default: false
  grace_period:
    description:
      - Seconds each pod is given to terminate, passed in the DeleteOptions of the evictions and deletions.
      - When not set, each pod's own C(terminationGracePeriodSeconds) applies. V(0) deletes at once.
    type: int
  delete_emptydir_data:
    description:
      - Evict pods with C(emptyDir) volumes, whose data is then lost.
      - With V(false), such pods are refused and the module fails naming them.
    type: bool
    default: true
extends_documentation_fragment:
  - slipway.cluster.k8s_auth
attributes:
  check_mode:
    support: full
    description: Reports the cordon and the pods it would delete and evict (RV(deleted), RV(evicted)), and changes
      nothing. Whether PodDisruptionBudgets would let the evictions through is not predicted.
  diff_mode:
    support: none
    description: The results say what changed (RV(cordoned), RV(evicted), RV(deleted), RV(forced)); there is no diff.
  idempotent:
    support: full
    description: A drained node (cordoned, with only DaemonSet and mirror pods) is left as it is.
notes:
  - Runs where the admin kubeconfig is, typically on the controller (C(delegate_to) V(localhost)).
seealso:
  - module: kubernetes.core.k8s_drain
  - name: Safely Drain a Node
    description: Kubernetes documentation on draining and PodDisruptionBudgets.
    link: https://kubernetes.io/docs/tasks/administer-cluster/safely-drain-node/
"""

EXAMPLES = r"""
- name: Drain the node, waiting up to 10 minutes for its PodDisruptionBudgets
  slipway.cluster.node_drain:
    name: w2
    timeout: 600
    kubeconfig: "{{ inventory_dir }}/artifacts/admin.conf"
  delegate_to: localhost

- name: Drain the node for good, deleting what still blocks after 2 minutes
  slipway.cluster.node_drain:
    name: w2
    timeout: 120
    force: true
    grace_period: 30
    kubeconfig: "{{ inventory_dir }}/artifacts/admin.conf"
  delegate_to: localhost
  register: __drain

- name: Say which pods were deleted without their PodDisruptionBudgets' consent
  ansible.builtin.debug:
    msg: "{{ __drain.forced }}"
  when: __drain.forced | length > 0

- name: Cordon the node only
  slipway.cluster.node_drain:
    name: w2
    state: cordoned
    kubeconfig: "{{ inventory_dir }}/artifacts/admin.conf"
  delegate_to: localhost

- name: Make the node schedulable again
  slipway.cluster.node_drain:
    name: w2
    state: uncordoned
    kubeconfig: "{{ inventory_dir }}/artifacts/admin.conf"
  delegate_to: localhost
"""

RETURN = r"""
node:
  description: The node's name.
  returned: always
  type: str
  sample: w2
cordoned:
  description: Whether the node is cordoned when the module ends (in check mode, would be).
  returned: always
  type: bool
  sample: true
evicted:
  description:
    - C(namespace/name) of the pods evicted (in check mode, to evict), in the order of the node's pod list.
    - A pod evicted that was still terminating at the timeout is in RV(forced) too when O(force=true).
  returned: always
  type: list
  elements: str
  sample: [default/web-7d4b9c-x2x8k, monitoring/prometheus-0]
deleted:
  description: C(namespace/name) of the pods that had already terminated, deleted without eviction (in check mode,
    to delete).
  returned: always
  type: list
  elements: str
  sample: [batch/report-28843-abcde]
forced:
  description: C(namespace/name) of the pods deleted without eviction because they still blocked at the timeout
    (O(force=true)).
  returned: always
  type: list
  elements: str
  sample: [default/web-7d4b9c-x2x8k]
skipped:
  description: Pods left on the node, DaemonSet and mirror pods.
  returned: always
  type: list
  elements: dict
  contains:
    namespace:
      description: Namespace of the pod.
      type: str
      sample: kube-system
    name:
      description: Name of the pod.
      type: str
      sample: kube-proxy-7xk2p
    reason:
      description: Why it stays.
      type: str
      choices: [daemonset, mirror]
      sample: daemonset
blocking:
  description:
    - Pods that still blocked when O(timeout) passed; with O(force=true) they were deleted (see RV(forced)),
      otherwise the module failed.
    - Empty when nothing blocked.
  returned: always
  type: list
  elements: dict
  contains:
    namespace:
      description: Namespace of the pod.
      type: str
      sample: default
    name:
      description: Name of the pod.
      type: str
      sample: web-0
    reason:
      description: V(eviction refused) (HTTP 429 to the last try) or V(still terminating) (evicted, not gone yet).
      type: str
      choices: [eviction refused, still terminating]
      sample: eviction refused
    pdbs:
      description: C(namespace/name) of the PodDisruptionBudgets that select the pod (for a refused eviction).
      type: list
      elements: str
      sample: [default/web]
    message:
      description: What the API server answered to the last eviction, for a refused one.
      type: str
      sample: Cannot evict pod as it would violate the pod's disruption budget.
refused:
  description: Pods the drain may not evict, which made the module fail before it evicted anything.
  returned: when such pods are on the node
  type: list
  elements: dict
  contains:
    namespace:
      description: Namespace of the pod.
      type: str
      sample: default
    name:
      description: Name of the pod.
      type: str
      sample: debug
    reason:
      description: V(unmanaged) (no controller, see O(force)) or V(emptydir) (see O(delete_emptydir_data)).
      type: str
      choices: [unmanaged, emptydir]
      sample: unmanaged
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.slipway.cluster.plugins.module_utils._drain_runner import (
    NODE_DRAIN_ARGS,
    run_node_drain,
)


def main() -> None:
    module = AnsibleModule(**NODE_DRAIN_ARGS)
    run_node_drain(module)


if __name__ == "__main__":
    main()
