# The shape of plugins/module_utils, read from the source: the modules import each other at the top only (no
# function-local import that would hide a cycle) and without a cycle.
from __future__ import annotations

import ast
import os

import pytest

COLLECTION = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
MODULE_UTILS = os.path.join(COLLECTION, "plugins", "module_utils")
PACKAGE = "ansible_collections.slipway.cluster.plugins.module_utils"


def modules() -> list[str]:
    return sorted(name[:-3] for name in os.listdir(MODULE_UTILS) if name.endswith(".py") and name != "__init__.py")


def parse(name: str) -> ast.Module:
    with open(os.path.join(MODULE_UTILS, name + ".py"), encoding="utf-8") as handle:
        return ast.parse(handle.read(), name)


def imported(node: ast.AST) -> list[str]:
    """The modules an import statement names (for `from PACKAGE import _x`, the module PACKAGE._x)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.module:
        if node.module == PACKAGE:
            return [f"{PACKAGE}.{alias.name}" for alias in node.names]
        return [node.module]
    return []


def collection_imports(tree: ast.AST) -> list[tuple[str, ast.AST]]:
    found = []
    for node in ast.walk(tree):
        for module in imported(node):
            if module.startswith(PACKAGE + "."):
                found.append((module[len(PACKAGE) + 1:].split(".")[0], node))
    return found


def graph() -> dict[str, set[str]]:
    return {name: {module for module, _node in collection_imports(parse(name))} for name in modules()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    found: list[list[str]] = []
    state: dict[str, str] = {}

    def visit(name: str, path: list[str]) -> None:
        state[name] = "open"
        for target in sorted(edges.get(name, ())):
            if state.get(target) == "open":
                found.append(path[path.index(target):] + [target] if target in path else [name, target])
            elif target not in state:
                visit(target, path + [target])
        state[name] = "done"

    for name in sorted(edges):
        if name not in state:
            visit(name, [name])
    return found


def test_the_module_utils_import_each_other():
    assert sum(len(targets) for targets in graph().values()) >= 10


def test_no_import_cycle_between_the_module_utils():
    assert cycles(graph()) == []


@pytest.mark.parametrize("edges, expected", [
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, [["a", "b", "c", "a"]]),
    ({"a": {"a"}}, [["a", "a"]]),
    ({"a": {"b", "c"}, "b": {"c"}, "c": set()}, []),
])
def test_cycles_are_found(edges, expected):
    assert cycles(edges) == expected


@pytest.mark.parametrize("name", modules())
def test_the_collection_is_imported_at_the_top_of_the_module_only(name):
    tree = parse(name)
    top = {id(node) for node in tree.body}
    top |= {id(inner) for node in tree.body if isinstance(node, ast.Try) for inner in node.body}
    inner = [node.lineno for _module, node in collection_imports(tree) if id(node) not in top]
    assert inner == [], f"{name}.py imports the collection inside a function or class at lines {inner}"


def test_each_module_utils_file_exists_that_another_imports():
    missing = {target for targets in graph().values() for target in targets} - set(modules())
    assert not missing
