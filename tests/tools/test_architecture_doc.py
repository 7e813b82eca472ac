"""docs/architecture.md's table of the roles (section "The roles") names every role under roles/ once, and every
entry point of its meta/argument_specs.yml other than main once, as internal or for users."""

from __future__ import annotations

import os
import re

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(ROOT, "docs", "architecture.md")
ROLES = sorted(name for name in os.listdir(os.path.join(ROOT, "roles"))
               if os.path.isdir(os.path.join(ROOT, "roles", name)))


def _table() -> dict[str, tuple[list[str], list[str]]]:
    """{role: (internal entry points, entry points for users)} from the section's table."""
    with open(DOC, encoding="utf-8") as handle:
        text = handle.read()
    section = text.split("\n## The roles\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, tuple[list[str], list[str]]] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("| `") or len(cells) != 4:
            continue
        role = cells[0].strip("`")
        assert role not in rows, f"docs/architecture.md names the role {role} twice in The roles"
        rows[role] = (_names(cells[2]), _names(cells[3]))
    return rows


def _names(cell: str) -> list[str]:
    """A cell's entry points: its backticked names, each first or after a comma; a parenthesis after one is a note."""
    return re.findall(r"(?:^|, )`([a-z_]+)`", re.sub(r"\([^)]*\)", "", cell))


TABLE = _table()


def _entry_points(role: str) -> list[str]:
    with open(os.path.join(ROOT, "roles", role, "meta", "argument_specs.yml"), encoding="utf-8") as handle:
        return sorted(name for name in yaml.safe_load(handle)["argument_specs"] if name != "main")


def test_every_role_is_in_the_table_and_no_other():
    assert "fleet" in ROLES and len(ROLES) >= 20
    assert not set(ROLES) - set(TABLE), f"docs/architecture.md, The roles: add {sorted(set(ROLES) - set(TABLE))}"
    assert not set(TABLE) - set(ROLES), f"docs/architecture.md, The roles: no such role {sorted(set(TABLE) - set(ROLES))}"


@pytest.mark.parametrize("role", ROLES)
def test_every_entry_point_is_marked_once(role):
    internal, users = TABLE.get(role, ([], []))
    both = sorted(set(internal) & set(users))
    assert not both, f"docs/architecture.md, The roles: {role}'s {both} is both internal and for users"
    assert sorted(internal + users) == _entry_points(role), (
        f"docs/architecture.md, The roles: {role}'s entry points are {_entry_points(role)} "
        f"(roles/{role}/meta/argument_specs.yml), the table names {sorted(internal + users)}")
