#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0). Ansible expects modules
# to be compatible with the GNU General Public License version 3, and the Apache License 2.0 is.

from __future__ import annotations

DOCUMENTATION = r"""
module: drain_check
short_description: Say, before any node is touched, which PodDisruptionBudgets would stop planned drains for good
version_added: 0.1.0
author:
  - slipway.cluster developers (@slipway)
description:
  - Reads the cluster's Nodes, Pods and PodDisruptionBudgets once and plays the drains of O(nodes) through in their
    order, the way M(slipway.cluster.node_drain) would do them, without changing anything.
  - The pods a drain would evict are those M(slipway.cluster.node_drain) evicts; mirror pods and DaemonSet pods stay
    and pods that already terminated are deleted, so they block nothing.
  - An evicted pod's replacement runs again only on a node that is not cordoned, not being drained (the nodes of the
    same batch included) and not removed, whose C(NoSchedule) and C(NoExecute) taints it tolerates (the control
    plane's taint among them) and whose labels match its C(nodeSelector) and required node affinity. CPU and memory
    requests, pod (anti-)affinity and topology spread constraints are not taken into account.
  - A PodDisruptionBudget lets an eviction through while its healthy pods outnumber the pods it needs healthy,
    computed as Kubernetes' disruption controller does (C(minAvailable) as a number against the pods it selects;
    C(minAvailable) in percent and C(maxUnavailable) against the controllers' scale, percentages rounded up). An
    unready pod may be evicted while the budget is not disrupted (always, with C(unhealthyPodEvictionPolicy)
    V(AlwaysAllow)), a Pending pod always, a pod that two budgets select never.
  - Every budget that would refuse an eviction for good is returned in RV(blockers) with the node, the pods, why,
    and what to change. The module does not fail on them; the playbook that calls it decides (see the examples).
  - A budget that selects no pod, or no pod a drain evicts, blocks nothing.
options:
  nodes:
    description:
      - The nodes to drain, in order. An item that is a list names nodes drained together (a batch), which then
        cannot take each other's pods.
      - Every node must exist in the cluster.
    type: list
    elements: raw
    required: true
  after:
    description:
      - What becomes of a node after its turn.
      - V(uncordoned) - it is back and schedulable, and takes pods of the later drains (C(playbooks/upgrade.yml)).
      - V(removed) - it is gone, with the pods a drain would have left on it (C(playbooks/remove_node.yml)).
    type: str
    choices: [uncordoned, removed]
    default: uncordoned
  ignore:
    description:
      - PodDisruptionBudgets, as C(namespace/name), whose blocking is accepted; they are returned in RV(ignored)
        instead of RV(blockers), and a warning names each.
      - V(all) (or V(true)) accepts every blocking budget.
      - A name that is no PodDisruptionBudget of the cluster fails the module.
    type: list
    elements: str
    default: []
  force:
    description:
      - The drain's O(slipway.cluster.node_drain#module:force). Without it a drain refuses pods that have no
        controller, and each such pod is in RV(blockers) (cause V(no controller), no budget; only O(ignore=all) lets
        it through). With it they are evicted and, nothing recreating them, counted gone.
    type: bool
    default: false
extends_documentation_fragment:
  - slipway.cluster.k8s_auth
attributes:
  check_mode:
    support: full
    description: The module only reads; it returns the same in check mode.
  diff_mode:
    support: none
    description: Nothing is changed, so there is no diff.
  idempotent:
    support: full
    description: Read-only; the module never reports a change.
notes:
  - Runs where the admin kubeconfig is, typically on the controller (C(delegate_to) V(localhost)).
  - Reads the whole cluster's Pods once; on a very large cluster that list is the cost of the check.
seealso:
  - module: slipway.cluster.node_drain
  - name: Specifying a Disruption Budget for your Application
    description: Kubernetes documentation on PodDisruptionBudgets, how percentages round and unhealthy pods.
    link: https://kubernetes.io/docs/tasks/run-application/configure-pdb/
"""

EXAMPLES = r"""
- name: Check the drains of an upgrade, control planes one at a time, then the workers two by two
  slipway.cluster.drain_check:
    nodes: [cp1, cp2, cp3, [w1, w2], [w3]]
    kubeconfig: "{{ inventory_dir }}/artifacts/admin.conf"
  delegate_to: localhost
  register: __drain_check

- name: Stop before any change when a budget would block
  ansible.builtin.fail:
    msg: "{{ __drain_check.blockers | map(attribute='message') | list }}"
  when: __drain_check.blockers | length > 0

- name: Check the removal of w2 and w3, accepting that shop/cache blocks
  slipway.cluster.drain_check:
    nodes: [w2, w3]
    after: removed
    ignore: [shop/cache]
    kubeconfig: "{{ inventory_dir }}/artifacts/admin.conf"
  delegate_to: localhost
"""

RETURN = r"""
blockers:
  description: Every PodDisruptionBudget that would refuse an eviction for good, one entry per budget and drain; empty
    when every drain can finish.
  returned: always
  type: list
  elements: dict
  contains:
    node:
      description: The node (or nodes, comma-separated) whose drain would not finish.
      type: str
      sample: w1
    nodes:
      description: The same, as a list.
      type: list
      elements: str
      sample: [w1]
    step:
      description: The item of O(nodes) (the batch) being drained.
      type: list
      elements: str
      sample: [w1]
    budgets:
      description: C(namespace/name) of the PodDisruptionBudget (two or more for V(several budgets), none for
        V(no controller)).
      type: list
      elements: str
      sample: [default/web]
    pods:
      description: C(namespace/name) of the pods whose eviction would be refused.
      type: list
      elements: str
      sample: [default/web-7d4b9c-x2x8k]
    cause:
      description: Why, in short.
      type: str
      choices: [budget allows no eviction, unhealthy pods, nowhere to run, several budgets, invalid budget, no controller]
      sample: nowhere to run
    why:
      description: The budget's numbers and, for V(nowhere to run), every other node and why it cannot take the pods.
      type: str
      sample: "minAvailable: 1, so it needs 1 healthy of 2 pods and has 2; once evicted, default/web-a has nowhere
        to run (cp1, cp2, cp3: taint node-role.kubernetes.io/control-plane:NoSchedule not tolerated; w1: being drained)"
    fix:
      description: What to change so that the drain finishes.
      type: str
      sample: add a node these pods can run on (a worker, ...), or drain another node first that makes room ...
    message:
      description: One line with all of the above.
      type: str
      sample: "node w1: PodDisruptionBudget default/web would refuse the eviction of default/web-b (nowhere to run): ..."
ignored:
  description: The entries O(ignore) accepted, shaped like RV(blockers).
  returned: always
  type: list
  elements: dict
  sample: []
drains:
  description: Per item of O(nodes), what its drain would do.
  returned: always
  type: list
  elements: dict
  contains:
    nodes:
      description: The nodes drained together.
      type: list
      elements: str
      sample: [w1]
    evict:
      description: C(namespace/name) of the pods it would evict.
      type: list
      elements: str
      sample: [default/web-a, default/web-b]
    pending:
      description: The evicted pods whose replacement would find no node then (C(pod) and C(why)); they stay Pending
        until a node takes them, which blocks no drain when their budget allows it.
      type: list
      elements: dict
      sample: [{pod: default/lonely, why: "cp1: taint node-role.kubernetes.io/control-plane:NoSchedule not tolerated"}]
problems:
  description: What is wrong with the input (nodes not in the cluster, O(ignore) naming no budget); the module fails
    when there are any.
  returned: always
  type: list
  elements: str
  sample: []
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.slipway.cluster.plugins.module_utils._drain_runner import (
    DRAIN_CHECK_ARGS,
    run_drain_check,
)


def main() -> None:
    module = AnsibleModule(**DRAIN_CHECK_ARGS)
    run_drain_check(module)


if __name__ == "__main__":
    main()
