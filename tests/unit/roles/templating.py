"""The role tests' templating: the installed ansible-core's own Templar, on every release meta/runtime.yml admits.

ansible-core 2.19 renders a string as a template only when it is marked trusted (``trust_as_template``); the
releases before it (2.16 to 2.18) render every string, and have no such marker. tests/ansible-core.sh runs these
tests on each release.
"""

from __future__ import annotations

from ansible.parsing.dataloader import DataLoader
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


__all__ = ["Templar", "load_role_file", "trust_as_template"]
