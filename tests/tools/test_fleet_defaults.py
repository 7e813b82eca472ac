"""The defaults of the slipway_* settings have one home, the collection's settings schema
(plugins/module_utils/_settings.py DEFAULT_SETTINGS, which roles/preflight/meta/argument_specs.yml documents key for
key). The fleet repeats some of them twice: as the SlipwayCluster schema's ``default:`` (operator/crds, applied by the
API server) and as spec.py's fallback for a field left out. Both copies are read here, for every field of
spec.SETTING_FIELDS that names a slipway_* setting, and must agree with each other and with the home. The CRD's
``enum:`` of such a field repeats the setting's choices, which the preflight argument spec documents (a unit test
ties those to the model's): they must be the same values."""

from __future__ import annotations

import os
from typing import Any

import pytest
import yaml

from slipway_fleet import spec as fleet
from slipway_operator import collection

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CRD = os.path.join(ROOT, "operator", "crds", "fleet.slipway.io.yml")

HOME = collection.load(os.path.join(ROOT, ".cache", "collections"), "plugins.module_utils._settings").DEFAULT_SETTINGS
with open(os.path.join(ROOT, "roles", "preflight", "meta", "argument_specs.yml"), encoding="utf-8") as _handle:
    OPTIONS = yaml.safe_load(_handle)["argument_specs"]["main"]["options"]

# The fleet's own defaults, different from the collection's on purpose, each with its reason. A Job runs the
# playbook offline from the fleet's bundle mount (spec.artifacts.bundleDir, tenancy.py's bundle rule), where a
# person running site.yml gets the official releases.
FLEET_OWN = {"slipway_artifacts_source": "bundle"}

# Every slipway_* setting whose field is in the spec (slipway_cluster_name is metadata.name: no default to copy).
SETTINGS = sorted(name for name, where in fleet.SETTING_FIELDS.items()
                  if name.startswith("slipway_") and where.startswith("spec."))
_ABSENT = object()


def _cluster_schema() -> dict:
    with open(CRD, encoding="utf-8") as handle:
        items = yaml.safe_load(handle)["items"]
    [crd] = [item for item in items if item["spec"]["names"]["kind"] == "SlipwayCluster"]
    [version] = crd["spec"]["versions"]
    return version["schema"]["openAPIV3Schema"]


SCHEMA = _cluster_schema()


def _field(where: str) -> tuple[dict, bool]:
    """The schema of a field (spec.network.podCIDR) and whether the API server requires it."""
    schema, required = SCHEMA, True
    for part in where.split("."):
        required = required and part in schema.get("required", [])
        schema = schema["properties"][part]
    return schema, required


def _crd_default(name: str) -> Any:
    return _field(fleet.SETTING_FIELDS[name])[0].get("default", _ABSENT)


def _spec_py_default(name: str) -> Any:
    """What spec.py gives the playbook for the field when the spec leaves it out."""
    value = fleet.settings({}, "x").get(name, _ABSENT)
    return _ABSENT if value is None else value


def test_every_mapped_setting_is_a_field_of_the_crd_and_a_setting_of_the_home():
    assert "slipway_pod_cidr" in SETTINGS and len(SETTINGS) >= 16
    for name in SETTINGS:
        assert name in HOME, f"{name} (spec.SETTING_FIELDS) is no setting of _settings.DEFAULT_SETTINGS"
        _field(fleet.SETTING_FIELDS[name])  # a KeyError names a field the CRD does not have


@pytest.mark.parametrize("name", SETTINGS)
def test_the_fleets_copies_of_a_default_agree_with_the_home(name):
    where = fleet.SETTING_FIELDS[name]
    crd, spec_py = _crd_default(name), _spec_py_default(name)
    shown = {value: "no default" for value in (crd, spec_py) if value is _ABSENT}
    assert crd == spec_py, (f"{where} ({name}): the CRD's default is {shown.get(crd, repr(crd))}, spec.py's is "
                            f"{shown.get(spec_py, repr(spec_py))}; make them the same")
    if crd is _ABSENT:
        # No copy: the field is required, or the playbook gets no value and the collection's default applies.
        assert _field(where)[1] or name not in fleet.settings({}, "x"), (
            f"{where} ({name}): spec.py gives a value the CRD neither defaults nor requires")
        return
    wanted = FLEET_OWN.get(name, HOME[name])
    assert crd == wanted, (f"{where} ({name}): the fleet's default is {crd!r}, the collection's "
                           f"(plugins/module_utils/_settings.py) is {HOME[name]!r}; change the CRD and spec.py to "
                           f"{wanted!r}, or name the difference and its reason in FLEET_OWN")


def test_a_fleet_own_default_still_differs_from_the_home():
    for name, value in FLEET_OWN.items():
        assert name in SETTINGS and HOME[name] != value, (
            f"{name}: the collection's default is now the fleet's ({value!r}); remove it from FLEET_OWN")


@pytest.mark.parametrize("name", SETTINGS)
def test_the_crds_enum_is_the_settings_choices(name):
    where = fleet.SETTING_FIELDS[name]
    enum, choices = _field(where)[0].get("enum"), OPTIONS[name].get("choices")
    assert (enum is None) == (choices is None) and sorted(enum or []) == sorted(choices or []), (
        f"{where} ({name}): the CRD's enum is {enum}, the setting's choices (roles/preflight/meta/argument_specs.yml) "
        f"are {choices}; make the CRD's enum the choices")
