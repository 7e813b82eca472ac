# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Name the inventory file and line of a YAML error, before Ansible reads the inventory's variables."""

from __future__ import annotations

DOCUMENTATION = r"""
name: inventory_files
version_added: 0.1.0
author: slipway.cluster developers (@slipway)
short_description: Fail naming the file, line and column of every YAML error in the inventory's files
description:
  - Reads the YAML inventory sources (C(.yml), C(.yaml)) and every file of C(group_vars/) and C(host_vars/) beside
    them and beside the playbook, as Ansible's C(host_group_vars) plugin would, and fails with one line per file that
    does not parse (its path, line and column, and what is wrong), or that holds no mapping of variables.
  - Ansible's own message for such a file (C(YAML parsing failed) ...) names no file. Used in the name of the first
    play of every playbook (C(playbooks/inventory.yml)), which is rendered before Ansible reads any variable file.
  - Vault-encrypted files and Ansible's tags (C(!vault), C(!unsafe)) are accepted as they are.
  - Returns one empty string when every file parses, so it can end a play's name.
options:
  _terms:
    description:
      - Inventory sources to check. Without any, the run's C(ansible_inventory_sources).
    type: list
    elements: str
    required: false
  playbook_dir:
    description: The playbook's directory, whose C(group_vars/) and C(host_vars/) Ansible reads too. Defaults to the run's.
    type: str
"""

EXAMPLES = r"""
- name: "Check the inventory{{ lookup('slipway.cluster.inventory_files') }}"
  hosts: localhost
  gather_facts: false
  tasks: []
"""

RETURN = r"""
_raw:
  description: One empty string when every file parses; otherwise the lookup fails with every problem.
  type: list
  elements: str
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.slipway.cluster.plugins.module_utils._inventory_files import inventory_problems


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        variables = variables or {}
        sources = list(terms) or list(variables.get("ansible_inventory_sources") or [])
        playbook_dir = self.get_option("playbook_dir") or variables.get("playbook_dir") or ""
        problems = inventory_problems(sources, playbook_dir)
        if problems:
            raise AnsibleLookupError(
                f"The inventory's files have {len(problems)} problem(s); nothing was changed on any host:\n"
                + "\n".join(f"  - {problem}" for problem in problems))
        return [""]
