#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0). Ansible expects modules
# to be compatible with the GNU General Public License version 3, and the Apache License 2.0 is.

from __future__ import annotations

DOCUMENTATION = r"""
module: kubectl_apply
short_description: Apply a manifest file with kubectl server-side apply, changed only when the cluster changes
version_added: 0.1.0
author:
  - slipway.cluster developers (@slipway)
description:
  - Compares the objects of a manifest file with the cluster using C(kubectl diff --server-side) (a dry-run
    server-side apply), and runs C(kubectl apply --server-side) only when they differ. So a task reports a change
    exactly when the cluster changes, unlike a plain C(kubectl apply --server-side), which reports every object
    as applied.
  - Needs only C(kubectl) and a kubeconfig on the host the task runs on, for example a control plane with
    C(/etc/kubernetes/admin.conf); no Python library. This is what the roles of this collection use to install
    the pod network, CoreDNS settings and metrics-server on air-gapped clusters.
  - When the manifest creates a namespace or a custom resource definition that its other objects need,
    C(kubectl diff) cannot compare those objects yet; the manifest then counts as changed and is applied.
  - Objects are never deleted; an object removed from the manifest stays in the cluster.
options:
  src:
    description:
      - Path of the manifest file (YAML or JSON, several documents allowed) on the host the task runs on.
    type: path
    required: true
  kubeconfig:
    description:
      - Path of the kubeconfig file kubectl uses. Empty uses kubectl's own default (E(KUBECONFIG), C(~/.kube/config)).
    type: path
    default: /etc/kubernetes/admin.conf
  field_manager:
    description:
      - Name under which server-side apply records the fields this task owns.
    type: str
    default: slipway
  force_conflicts:
    description:
      - Take over fields another manager owns, for example the C(Corefile) that C(kubeadm) wrote into the
        C(coredns) ConfigMap. Without it such a conflict fails the task.
    type: bool
    default: false
  kubectl:
    description:
      - The kubectl program. A bare name is looked up on E(PATH) and in C(/usr/local/bin).
    type: str
    default: kubectl
attributes:
  check_mode:
    support: full
    description: Runs only C(kubectl diff) and reports whether the apply would change the cluster.
  diff_mode:
    support: full
    description: Returns the output of C(kubectl diff) (Secrets masked by kubectl) as the prepared diff.
notes:
  - C(kubectl diff) runs the C(diff) program; Debian and Ubuntu have it in the essential package C(diffutils).
"""

EXAMPLES = r"""
- name: Install the pod network from a rendered manifest
  slipway.cluster.kubectl_apply:
    src: /etc/kubernetes/addons/flannel.yml

- name: Take over CoreDNS's configuration from kubeadm
  slipway.cluster.kubectl_apply:
    src: /etc/kubernetes/addons/coredns-config.yml
    force_conflicts: true
"""

RETURN = r"""
state:
  description:
    - V(same) when the cluster already matched the manifest, V(different) when it did not, V(unknown) when
      kubectl could not compare because the manifest creates a namespace or kind its objects need.
  returned: always
  type: str
  sample: different
applied:
  description: What C(kubectl apply) printed, one line per object; empty when nothing was applied.
  returned: always
  type: list
  elements: str
  sample: ["daemonset.apps/kube-flannel-ds serverside-applied"]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.slipway.cluster.plugins.module_utils._kubectl_apply import KubectlApply, KubectlError


def run(module: AnsibleModule) -> dict:
    params = module.params
    kubectl = params["kubectl"]
    if "/" not in kubectl:
        kubectl = module.get_bin_path(kubectl, required=True, opt_dirs=["/usr/local/bin"])
    applier = KubectlApply(
        run=lambda argv: module.run_command(list(argv), environ_update={"LC_ALL": "C"}),
        kubectl=kubectl,
        src=params["src"],
        kubeconfig=params["kubeconfig"] or None,
        field_manager=params["field_manager"],
        force_conflicts=params["force_conflicts"],
    )
    try:
        outcome = applier.run_apply(module.check_mode)
    except KubectlError as err:
        module.fail_json(msg=str(err))
    result = {"changed": outcome.changed, "state": outcome.state, "applied": outcome.applied}
    if module._diff and outcome.changed:
        result["diff"] = {"prepared": outcome.diff}
    return result


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "src": {"type": "path", "required": True},
            "kubeconfig": {"type": "path", "default": "/etc/kubernetes/admin.conf"},
            "field_manager": {"type": "str", "default": "slipway"},
            "force_conflicts": {"type": "bool", "default": False},
            "kubectl": {"type": "str", "default": "kubectl"},
        },
        supports_check_mode=True,
    )
    module.exit_json(**run(module))


if __name__ == "__main__":
    main()
