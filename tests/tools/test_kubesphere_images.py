"""The kubesphere role's list of the KubeSphere images slipway's bundle builds (_kubesphere_bundle_builds in
roles/kubesphere/vars/main.yml), which its refusal of a component whose images the nodes lack reads to say what gives
them (the bundle with KubeSphere, or nothing slipway builds): the builder's own lists (tools/bundle/bundler/versions.py)."""

import os

import yaml

from bundler import versions

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_role_names_exactly_the_images_the_bundle_builds():
    with open(os.path.join(ROOT, "roles", "kubesphere", "vars", "main.yml"), encoding="utf-8") as handle:
        listed = yaml.safe_load(handle)["_kubesphere_bundle_builds"]
    built = {name.replace("-", "_") for name in (*versions.KUBESPHERE_MONITORING_IMAGES, *versions.KUBESPHERE_CORE_IMAGES)}
    assert sorted(listed) == listed, "kept sorted"
    assert set(listed) == built
