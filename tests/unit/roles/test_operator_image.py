"""The operator's and the fleet's image is the one the bundle's manifest names (issue 44): the reference the artifacts
role recorded in artifacts_images, on the deploying host or on the cluster's first node; without a bundle read, the
image this collection release builds."""

from __future__ import annotations

import os
import warnings

import pytest

from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible_collections.slipway.cluster.tests.unit.roles.templating import Templar, load_role_file, trust_as_template

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
BUNDLE_REF = "registry.example.org/slipway/operator:0.1.0-rebuilt"
BUILT = "localhost/slipway/operator:0.1.0"


def image(role: str, name: str, **variables) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        init_plugin_loader()
    defaults = load_role_file(os.path.join(ROOT, "roles", role, "defaults", "main.yml"), DataLoader())
    everything = {**defaults, "groups": {"k8s_cluster": ["cp1", "w1"]}, "inventory_hostname": "localhost",
                  "hostvars": {"cp1": {}, "w1": {}, "localhost": {}}, **variables}
    return Templar(loader=DataLoader(), variables=everything).template(trust_as_template("{{ %s }}" % name))


@pytest.mark.parametrize("role, name", [("operator", "operator_image"), ("fleet", "fleet_image")])
def test_the_deploying_host_s_record_of_the_bundle_wins(role, name):
    assert image(role, name, inventory_hostname="cp1",
                 artifacts_images={"slipway-operator": BUNDLE_REF, "pause": "registry.k8s.io/pause:3.10.2"}) == BUNDLE_REF


@pytest.mark.parametrize("role, name", [("operator", "operator_image"), ("fleet", "fleet_image")])
def test_from_the_controller_the_first_node_s_record_is_read(role, name):
    assert image(role, name, hostvars={"cp1": {"artifacts_images": {"slipway-operator": BUNDLE_REF}},
                                       "w1": {}, "localhost": {}}) == BUNDLE_REF


@pytest.mark.parametrize("role, name", [("operator", "operator_image"), ("fleet", "fleet_image")])
def test_without_a_bundle_the_release_s_own_image(role, name):
    assert image(role, name) == BUILT
    assert image(role, name, artifacts_images={"pause": "registry.k8s.io/pause:3.10.2"}) == BUILT
    assert image(role, name, groups={}, hostvars={"localhost": {}}) == BUILT
