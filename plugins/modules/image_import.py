#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0). Ansible expects modules
# to be compatible with the GNU General Public License version 3, and the Apache License 2.0 is.

from __future__ import annotations

DOCUMENTATION = r"""
module: image_import
short_description: Import every image archive of one tar file into containerd, in one round-trip
version_added: 0.1.0
author:
  - slipway.cluster developers (@slipway)
description:
  - Reads a tar file whose members are image archives (each one a file that C(ctr images import) reads, such as the
    bundle's C(images/*.tar)) and imports each member with C(ctr images import), written beside the tar file only
    while it is imported.
  - One task instead of a copy, an import and a removal per image; the lookup P(slipway.cluster.pack#lookup)
    makes such a file on the controller.
  - Removes the tar file once every member is imported, so a node keeps no copy of the images besides containerd's.
    When an import fails, the file is kept, and a rerun with the same file imports what is still missing.
options:
  src:
    description: The tar file of image archives on the node.
    type: path
    required: true
  namespace:
    description: containerd's namespace to import into (the kubelet's is C(k8s.io)).
    type: str
    default: k8s.io
  address:
    description: containerd's socket.
    type: path
    default: /run/containerd/containerd.sock
  ctr:
    description: The C(ctr) program, by name on the C(PATH) or by path.
    type: str
    default: ctr
  remove:
    description: Remove O(src) once every member is imported.
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    description:
      - Lists the archives that would be imported, and imports and removes nothing. When O(src) is not there yet (a
        copy before it did not run in check mode), reports a change without naming the archives.
  diff_mode:
    support: none
    description: Images have no text to compare.
notes:
  - A member whose name does not end in C(.tar) is skipped and named in RV(skipped).
"""

EXAMPLES = r"""
- name: Copy the missing images in one file
  ansible.builtin.copy:
    src: "{{ lookup('slipway.cluster.pack', missing_images, member_suffix='.tar') }}"
    dest: /var/lib/slipway/images/images.tar
    mode: "0600"

- name: Import them into the kubelet's namespace
  slipway.cluster.image_import:
    src: /var/lib/slipway/images/images.tar
"""

RETURN = r"""
imported:
  description: The members imported (or, in check mode, that would be), by name.
  returned: always
  type: list
  elements: str
  sample: [kube-apiserver.tar, pause.tar]
refs:
  description: The image references C(ctr) reported as unpacked.
  returned: always
  type: list
  elements: str
  sample: [registry.k8s.io/pause:3.10.2]
skipped:
  description: Members that are not image archives.
  returned: always
  type: list
  elements: str
  sample: []
"""

import os
import re
import tarfile
import tempfile
from typing import Any

from ansible.module_utils.basic import AnsibleModule

# ctr images import prints "unpacking REF (sha256:...)...done" for each image of an archive.
_UNPACKED = re.compile(r"^unpacking (\S+) \(")


def members(path: str) -> tuple[list, list]:
    """(image archives, other members) of the tar file, in its order."""
    images: list[str] = []
    others: list[str] = []
    with tarfile.open(path, mode="r:") as outer:
        for member in outer.getmembers():
            if not member.isfile():
                continue
            (images if member.name.endswith(".tar") else others).append(member.name)
    return images, others


def import_member(module: AnsibleModule, outer: tarfile.TarFile, member: tarfile.TarInfo, argv: list) -> list:
    """Write one member beside the tar file, import it with ctr and remove it; the references ctr unpacked."""
    source = outer.extractfile(member)
    if source is None:
        module.fail_json(msg=f"{member.name} in {module.params['src']} cannot be read")
        return []
    fd, path = tempfile.mkstemp(dir=os.path.dirname(module.params["src"]), prefix=".import-", suffix=".tar")
    try:
        with os.fdopen(fd, "wb") as handle:
            for block in iter(lambda: source.read(1 << 20), b""):
                handle.write(block)
        rc, out, err = module.run_command(argv + [path])
    finally:
        os.unlink(path)
    if rc != 0:
        module.fail_json(msg=f"ctr could not import {member.name} of {module.params['src']}: {err.strip() or out.strip()}",
                         rc=rc, stdout=out, stderr=err)
    return [match.group(1) for match in (_UNPACKED.match(line) for line in out.splitlines()) if match]


def run(module: AnsibleModule) -> dict[str, Any]:
    params = module.params
    src = params["src"]
    if not os.path.isfile(src):
        if module.check_mode:
            # The copy before this task did not run in check mode: what it would bring is not known here.
            return {"changed": True, "imported": [], "refs": [], "skipped": [],
                    "msg": f"{src} is not there yet; its archives would be imported"}
        module.fail_json(msg=f"{src} is not there: copy the tar file of image archives first")
    try:
        images, others = members(src)
    except tarfile.TarError as err:
        module.fail_json(msg=f"{src} is not a readable tar file ({err}); copy it again")
    refs: list[str] = []
    result: dict[str, Any] = {"changed": bool(images), "imported": images, "refs": refs, "skipped": others}
    if module.check_mode:
        return result
    ctr = params["ctr"] if os.sep in params["ctr"] else module.get_bin_path(params["ctr"], required=True)
    argv = [ctr, "--address", params["address"], "--namespace", params["namespace"], "images", "import"]
    with tarfile.open(src, mode="r:") as outer:
        for name in images:
            refs.extend(import_member(module, outer, outer.getmember(name), argv))
    if params["remove"]:
        os.unlink(src)
        result["changed"] = True
    return result


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "src": {"type": "path", "required": True},
            "namespace": {"type": "str", "default": "k8s.io"},
            "address": {"type": "path", "default": "/run/containerd/containerd.sock"},
            "ctr": {"type": "str", "default": "ctr"},
            "remove": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    module.exit_json(**run(module))


if __name__ == "__main__":
    main()
