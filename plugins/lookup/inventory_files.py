# -*- coding: utf-8 -*-
# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0). Ansible expects modules
# to be compatible with the GNU General Public License version 3, and the Apache License 2.0 is.
"""Name the inventory file and line of a YAML error, before Ansible reads the inventory's variables.

Ansible reports a YAML error in group_vars/ or host_vars/ without the file's name or line ("YAML parsing
failed: ..."). This lookup finds the files Ansible would read beside the inventory sources and the playbook,
and names each one that does not parse, with the line and column.
"""

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

import os
from typing import Iterable

import yaml

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

# Files Ansible's host_group_vars plugin reads: no extension, .yml, .yaml or .json; hidden files are skipped.
VARIABLE_EXTENSIONS = ("", ".yml", ".yaml", ".json")
INVENTORY_EXTENSIONS = (".yml", ".yaml")
_VAULT_HEADER = "$ANSIBLE_VAULT"


class _AnyTagLoader(yaml.SafeLoader):  # pylint: disable=too-many-ancestors
    """PyYAML's safe loader that takes Ansible's tags (!vault, !unsafe) as plain values."""


def _any_tag(loader, _suffix, node):
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    return loader.construct_scalar(node)


_AnyTagLoader.add_multi_constructor("!", _any_tag)


def yaml_problem(path: str, text: str, variables: bool = True) -> str | None:
    """Why ``text`` (the content of ``path``) is not what Ansible can read, with the line and column; None when it is."""
    if text.lstrip().startswith(_VAULT_HEADER):
        return None
    try:
        data = yaml.load(text, Loader=_AnyTagLoader)  # nosec B506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "somewhere"
        context = ""
        if err.context and err.context_mark and err.context_mark is not mark:
            context = f" ({err.context} on line {err.context_mark.line + 1}, column {err.context_mark.column + 1})"
        return f"{path} {where}: {err.problem or err}{context}; fix the YAML there (Ansible's own message names no file)"
    except yaml.YAMLError as err:
        return f"{path}: {str(err).splitlines()[0]}; fix the YAML there (Ansible's own message names no file)"
    if variables and data is not None and not isinstance(data, dict):
        return f"{path}: holds a {type(data).__name__}, not a mapping of variables; write variable: value lines"
    return None


def variable_files(base: str) -> list[str]:
    """The files under base/group_vars and base/host_vars that Ansible reads, sorted."""
    found = []
    for kind in ("group_vars", "host_vars"):
        top = os.path.join(base, kind)
        for directory, subdirs, files in os.walk(top):
            subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))
            for name in sorted(files):
                if not name.startswith(".") and os.path.splitext(name)[1] in VARIABLE_EXTENSIONS:
                    found.append(os.path.join(directory, name))
    return found


def inventory_problems(sources: Iterable[str], playbook_dir: str = "") -> list[str]:
    """Every YAML problem in the inventory sources' YAML files and in the group_vars and host_vars beside the sources
    and the playbook, one line each. A source with a comma is a host list, not a path; a missing one is skipped."""
    bases: list[str] = []
    checked: list[tuple[str, bool]] = []
    for source in sources or []:
        source = str(source)
        if "," in source or not os.path.exists(source):
            continue
        if os.path.isdir(source):
            bases.append(source)
            for name in sorted(os.listdir(source)):
                path = os.path.join(source, name)
                if os.path.isfile(path) and os.path.splitext(name)[1] in INVENTORY_EXTENSIONS:
                    checked.append((path, False))
        else:
            bases.append(os.path.dirname(source) or ".")
            if os.path.splitext(source)[1] in INVENTORY_EXTENSIONS:
                checked.append((source, False))
    if playbook_dir:
        bases.append(str(playbook_dir))
    for base in dict.fromkeys(os.path.abspath(base) for base in bases):
        checked.extend((path, True) for path in variable_files(base))
    problems = []
    for path, variables in dict.fromkeys(checked):
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError) as err:
            problems.append(f"{path}: cannot be read ({err})")
            continue
        problem = yaml_problem(path, text, variables)
        if problem:
            problems.append(problem)
    return problems


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
