"""The role tests' templating: the installed ansible-core's own Templar, on every release meta/runtime.yml admits.

ansible-core 2.19 renders a string as a template only when it is marked trusted (``trust_as_template``); the
releases before it (2.16 to 2.18) render every string, and have no such marker. tests/ansible-core.sh runs these
tests on each release.
"""

from __future__ import annotations

import os
import warnings

from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar

try:
    from ansible.template import trust_as_template
    _MARKS_TRUST = True
except ImportError:  # ansible-core 2.16 to 2.18: every string is a template.
    _MARKS_TRUST = False

    def trust_as_template(value):
        """The string itself: before ansible-core 2.19 nothing needs marking."""
        return value


def load_role_file(path: str, loader: DataLoader | None = None):
    """A role's YAML file (vars/, defaults/) as Ansible loads it: its strings are templates, as in a play."""
    loader = loader or DataLoader()
    if _MARKS_TRUST:
        return loader.load_from_file(path, trusted_as_template=True)
    return loader.load_from_file(path)


def role_variables(role_dir: str) -> dict:
    """A role's defaults/main.yml, then its vars/main.yml over them, as a play of the role sees them (the collection's
    plugins loadable, for the filters they name)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        init_plugin_loader()
    loader = DataLoader()
    variables: dict = {}
    for path in ("defaults/main.yml", "vars/main.yml"):
        variables.update(load_role_file(os.path.join(role_dir, path), loader))
    return variables


__all__ = ["Templar", "load_role_file", "role_variables", "trust_as_template"]
