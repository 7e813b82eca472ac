#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0). Ansible expects modules
# to be compatible with the GNU General Public License version 3, and the Apache License 2.0 is.

from __future__ import annotations

DOCUMENTATION = r"""
module: cluster_configuration
short_description: Create the KubeSphere ClusterConfiguration or merge a spec into it
version_added: 0.1.0
author:
  - slipway.cluster developers (@slipway)
description:
  - Creates the ClusterConfiguration resource (C(installer.kubesphere.io/v1alpha1), V(ks-installer) in
    V(kubesphere-system)) that describes which KubeSphere 3.x components a cluster runs, or merges the given spec
    into the existing one.
  - The API is ks-installer's, so an existing C(cluster-configuration.yaml) from KubeSphere 3.x applies unchanged
    with O(src), and a spec stays free form (keys slipway does not know are kept).
  - Only C(spec) and C(metadata.labels) are written; C(status) belongs to M(slipway.cluster.component_status).
  - Nothing is written when the resource already has the wanted spec and labels.
  - Use M(slipway.cluster.cluster_configuration_info) to see what a run would install, reapply or remove.
options:
  definition:
    description:
      - The whole ClusterConfiguration, as a mapping or as YAML text; its C(spec) and C(metadata.labels) are used.
      - YAML text may hold several documents (a whole C(kubesphere-installer.yaml) works); the one of kind
        C(ClusterConfiguration) is used.
      - C(apiVersion), C(kind), C(metadata.name) and C(metadata.namespace), when present, must match the resource
        this task manages.
    type: raw
  spec:
    description:
      - The spec to merge into the resource (or to create it with).
    type: dict
  src:
    description:
      - Path to a YAML file holding the ClusterConfiguration, read like O(definition).
      - The file is read on the host the task runs on; use C(delegate_to) to read it elsewhere, or use
        O(definition) with a P(ansible.builtin.file#lookup) lookup to read it on the controller.
    type: path
  merge_type:
    description:
      - How the given spec combines with the stored one.
      - V(merge) merges it in as a JSON merge patch (RFC 7386) does; mappings merge key by key, a key set to
        null is removed, lists and other values replace the stored ones. Keys not given are kept.
      - V(replace) makes the stored spec exactly the given one.
      - Labels from O(definition) or O(src) are always merged into the stored labels.
    type: str
    choices: [merge, replace]
    default: merge
  name:
    description:
      - Name of the ClusterConfiguration. ks-installer only reads V(ks-installer).
    type: str
    default: ks-installer
  namespace:
    description:
      - Namespace of the ClusterConfiguration. The namespace must exist.
    type: str
    default: kubesphere-system
extends_documentation_fragment:
  - slipway.cluster.k8s_auth
attributes:
  check_mode:
    support: full
    description: Reports whether the resource would be created or changed, and the spec it would have, without writing.
  diff_mode:
    support: full
    description: Shows the spec and labels before and after.
  idempotent:
    support: full
    description: Running the task again with the same input changes nothing.
notes:
  - The ClusterConfiguration CRD must be installed (C(roles/kubesphere/files/clusterconfiguration-crd.yml) of this
    collection, or ks-installer's).
  - Generation, spec and status come from the API server's answer; in check mode they are predicted.
seealso:
  - module: slipway.cluster.cluster_configuration_info
  - module: slipway.cluster.component_status
"""

EXAMPLES = r"""
- name: Apply an existing KubeSphere 3.x cluster-configuration.yaml unchanged
  slipway.cluster.cluster_configuration:
    definition: "{{ lookup('ansible.builtin.file', 'cluster-configuration.yaml') }}"
    kubeconfig: /etc/kubernetes/admin.conf

- name: Switch logging and the events ruler on, keeping everything else
  slipway.cluster.cluster_configuration:
    spec:
      logging:
        enabled: true
      events:
        enabled: true
        ruler:
          enabled: true

- name: Read the file on the first control-plane node and make the stored spec exactly that
  slipway.cluster.cluster_configuration:
    src: /root/cluster-configuration.yaml
    merge_type: replace
  delegate_to: "{{ groups['kube_control_plane'][0] }}"
"""

RETURN = r"""
created:
  description: Whether the resource was created (or would be, in check mode).
  returned: success
  type: bool
  sample: false
spec:
  description: The spec of the resource after the task.
  returned: success
  type: dict
  sample: {logging: {enabled: true, logsidecar: {enabled: true, replicas: 2}}}
status:
  description: The status of the resource, as ks-installer and M(slipway.cluster.component_status) wrote it.
  returned: success
  type: dict
  sample: {core: {status: enabled, enabledTime: "2024-05-01T10:00:00Z"}}
generation:
  description: C(metadata.generation) of the resource after the task (predicted in check mode).
  returned: success
  type: int
  sample: 3
labels:
  description: C(metadata.labels) of the resource after the task.
  returned: success
  type: dict
  sample: {version: v3.4.1}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.slipway.cluster.plugins.module_utils._cluster_configuration_runner import (
    CLUSTER_CONFIGURATION_ARGS,
    run_cluster_configuration,
)


def main() -> None:
    module = AnsibleModule(**CLUSTER_CONFIGURATION_ARGS)
    run_cluster_configuration(module)


if __name__ == "__main__":
    main()
