#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0). Ansible expects modules
# to be compatible with the GNU General Public License version 3, and the Apache License 2.0 is.

from __future__ import annotations

DOCUMENTATION = r"""
module: kernel_modules
short_description: Load kernel modules now and at boot, counting built-in modules as loaded
version_added: 0.1.0
author:
  - slipway.cluster developers (@slipway)
description:
  - Loads each module that is neither loaded nor built into the kernel with C(modprobe), and lists the
    loadable ones in a C(modules-load.d) file so they load at boot.
  - A module built into the kernel (listed in C(modules.builtin), under C(/sys/module) on kernels without
    module support, or C(=y) in the kernel configuration) counts as loaded and is never probed or persisted,
    so the module is idempotent on such kernels, where M(community.general.modprobe) fails or always
    reports a change.
options:
  names:
    description: Modules that must be loaded.
    type: list
    elements: str
    required: true
  persist_file:
    description:
      - File in C(/etc/modules-load.d) listing the loadable modules, so they load at boot.
      - Removed when no module needs loading at boot.
    type: path
    default: /etc/modules-load.d/slipway.conf
attributes:
  check_mode:
    support: full
    description: Reports which modules would be loaded and whether the boot file would change.
  diff_mode:
    support: full
    description: Shows the boot file before and after.
"""

EXAMPLES = r"""
- name: Make sure the modules Kubernetes needs are there
  slipway.cluster.kernel_modules:
    names: [overlay, br_netfilter]
"""

RETURN = r"""
states:
  description: State of each module before the task, C(loaded), C(builtin), C(available) or C(missing).
  returned: always
  type: dict
  sample: {overlay: builtin, br_netfilter: available}
loaded:
  description: Modules this task loaded (or would load in check mode).
  returned: always
  type: list
  elements: str
  sample: [br_netfilter]
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.slipway.cluster.plugins.module_utils._kernel import module_states


def _read(path: str):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def run(module: AnsibleModule) -> dict:
    names = module.params["names"]
    path = module.params["persist_file"]
    states = module_states(names)
    missing = [name for name, state in states.items() if state == "missing"]
    if missing:
        module.fail_json(
            msg=f"kernel module(s) {', '.join(missing)} are neither built in nor installed on this kernel; "
            "install the kernel's extra modules package or boot a kernel that has them",
            states=states,
        )
    to_load = [name for name, state in states.items() if state == "available"]
    loadable = [name for name, state in states.items() if state in ("available", "loaded")]
    for name in to_load:
        if not module.check_mode:
            module.run_command([module.get_bin_path("modprobe", required=True), name], check_rc=True)
    before = _read(path)
    after = "".join(f"{name}\n" for name in loadable) if loadable else None
    file_changed = before != after
    if file_changed and not module.check_mode:
        if after is None:
            os.remove(path)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.slipway-tmp"
            with open(tmp, "w", encoding="utf-8") as handle:
                handle.write(after)
            module.atomic_move(tmp, path)
    result = {"changed": bool(to_load) or file_changed, "states": states, "loaded": to_load}
    if module._diff:
        result["diff"] = {"before_header": path, "after_header": path, "before": before or "", "after": after or ""}
    return result


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "names": {"type": "list", "elements": "str", "required": True},
            "persist_file": {"type": "path", "default": "/etc/modules-load.d/slipway.conf"},
        },
        supports_check_mode=True,
    )
    module.exit_json(**run(module))


if __name__ == "__main__":
    main()
