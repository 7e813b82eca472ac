"""Where the slipway.cluster collection is, and its Python: one notion for slipway-operator, the fleet controller and
the fleet's runner.

The collection is ``ansible_collections/slipway/cluster`` under the first directory of a collections path: the
``--collections-path`` option of each of them, by default ANSIBLE_COLLECTIONS_PATH (the image sets it to
/usr/share/ansible/collections; ``make collection`` links the checkout under .cache/collections). The same path is
the playbooks' ANSIBLE_COLLECTIONS_PATH, so the plan and the model the controllers decide with are the code the
playbooks they run execute. Its modules are imported by their collection name, never copied.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path
from types import ModuleType

DEFAULT_COLLECTIONS_PATH = "/usr/share/ansible/collections"
PACKAGE = "ansible_collections.slipway.cluster"


def default_collections_path() -> str:
    """ANSIBLE_COLLECTIONS_PATH, else the image's directory."""
    return os.environ.get("ANSIBLE_COLLECTIONS_PATH", DEFAULT_COLLECTIONS_PATH)


def add_option(parser: argparse.ArgumentParser, text: str | None = "where ansible_collections/slipway/cluster is") -> None:
    """The --collections-path option (the same default in every command)."""
    parser.add_argument("--collections-path", default=default_collections_path(), help=text)


def root(collections_path: str) -> Path:
    """The collection's directory: ansible_collections/slipway/cluster under the path's first directory."""
    return Path(collections_path.split(os.pathsep)[0]) / "ansible_collections" / "slipway" / "cluster"


def load(collections_path: str, name: str) -> ModuleType:
    """The collection's module ``name`` (e.g. ``plugins.module_utils._model``), imported from ``collections_path``."""
    first = collections_path.split(os.pathsep)[0]
    if first not in sys.path:
        sys.path.insert(0, first)
    return importlib.import_module(f"{PACKAGE}.{name}")


def planner(collections_path: str) -> ModuleType:
    """The plan and its component catalogue (plugins/module_utils/_cluster_configuration.py, which the playbook's
    cluster_configuration_info task runs): slipway-operator's."""
    return load(collections_path, "plugins.module_utils._cluster_configuration")


def model(collections_path: str) -> ModuleType:
    """The cluster model (plugins/module_utils/_model.py, which site.yml runs first): the fleet controller's."""
    return load(collections_path, "plugins.module_utils._model")
