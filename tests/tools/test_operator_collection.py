"""Where slipway-operator, the fleet controller and the fleet's runner find the collection
(operator/slipway_operator/collection.py): one collections path, one loader, used by all three."""

from __future__ import annotations

import argparse
import os
import pathlib

import pytest

from slipway_fleet import __main__ as fleet_main
from slipway_fleet import runner
from slipway_operator import __main__ as operator_main
from slipway_operator import collection

ROOT = pathlib.Path(__file__).resolve().parents[2]
COLLECTIONS = str(ROOT / ".cache" / "collections")
OPERATOR = ROOT / "operator"


def test_the_collection_is_under_the_first_directory_of_the_path():
    assert collection.root(f"/a{os.pathsep}/b") == pathlib.Path("/a/ansible_collections/slipway/cluster")
    assert collection.root(COLLECTIONS).resolve() == ROOT


def test_the_plan_and_the_model_are_the_collections_own_modules():
    planner = collection.planner(COLLECTIONS)
    assert planner.__name__ == "ansible_collections.slipway.cluster.plugins.module_utils._cluster_configuration"
    assert pathlib.Path(planner.__file__).resolve() == ROOT / "plugins" / "module_utils" / "_cluster_configuration.py"
    assert collection.model(COLLECTIONS).__name__ == "ansible_collections.slipway.cluster.plugins.module_utils._model"


@pytest.mark.parametrize("environment, expected", [({}, collection.DEFAULT_COLLECTIONS_PATH),
                                                   ({"ANSIBLE_COLLECTIONS_PATH": "/x:/y"}, "/x:/y")])
def test_every_command_defaults_to_the_same_collections_path(monkeypatch, environment, expected):
    monkeypatch.delenv("ANSIBLE_COLLECTIONS_PATH", raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert operator_main.parse([]).collections_path == expected
    assert fleet_main.parse([]).collections_path == expected
    seen = {}

    def parsed_then_stop(parser, argv=None):
        seen["args"] = argparse.ArgumentParser.parse_known_args(parser, argv)[0]
        raise SystemExit(0)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parsed_then_stop)
    with pytest.raises(SystemExit):
        runner.main([])
    assert seen["args"].collections_path == expected


def test_the_operators_playbook_is_the_collections():
    options = operator_main.parse(["--collections-path", COLLECTIONS])
    assert pathlib.Path(options.playbook) == collection.root(COLLECTIONS) / "playbooks" / "kubesphere.yml"


def test_no_other_module_finds_the_collection_itself():
    """ansible_collections/slipway/cluster and ANSIBLE_COLLECTIONS_PATH's default are named in collection.py only."""
    for path in sorted(OPERATOR.glob("slipway_*/*.py")):
        if path.name == "collection.py":
            continue
        text = path.read_text(encoding="utf-8")
        for needle in ('"ansible_collections"', "ansible_collections.slipway", "/usr/share/ansible/collections",
                       "spec_from_file_location"):
            assert needle not in text, f"{path.relative_to(ROOT)}: {needle} (use slipway_operator.collection)"
