# The kubesphere role's refusal of a component whose images the nodes lack (tasks/component.yml, "Refuse a component
# whose images the nodes lack"): the images its rendered objects run, the ones the Nodes' status lacks, and the reason,
# rendered the way the role renders them (its defaults and vars, through Ansible's templating), for every component.
from __future__ import annotations

import json
import os
import warnings

import pytest

from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible_collections.slipway.cluster.tests.unit.roles.templating import Templar, load_role_file, trust_as_template

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", "..", ".."))
ROLE = os.path.join(ROOT, "roles", "kubesphere")
# The spec a component needs to be rendered as installed (the log store it writes to).
SPECS = {"common.opensearch": {"common": {"opensearch": {"enabled": True}}}}
# What the bundle holds of KubeSphere when built with it (the model's artifacts.kubesphere_images: full references).
BUNDLE = {"prometheus_operator": "docker.io/kubesphere/prometheus-operator:v0.55.0",
          "prometheus_config_reloader": "docker.io/kubesphere/prometheus-config-reloader:v0.55.0",
          "prometheus": "docker.io/prom/prometheus:v2.39.1", "alertmanager": "docker.io/prom/alertmanager:v0.23.0",
          "node_exporter": "docker.io/prom/node-exporter:v1.3.1",
          "kube_state_metrics": "docker.io/kubesphere/kube-state-metrics:v2.6.0",
          "kube_rbac_proxy": "docker.io/kubesphere/kube-rbac-proxy:v0.11.0", "thanos": "docker.io/thanosio/thanos:v0.31.0",
          "ks_apiserver": "docker.io/kubesphere/ks-apiserver:v3.4.1",
          "ks_controller_manager": "docker.io/kubesphere/ks-controller-manager:v3.4.1",
          "ks_console": "docker.io/kubesphere/ks-console:v3.4.1"}


# Images of a component's table entry that nothing runs when it is installed: the kubectl image ks-apiserver starts a
# web terminal with (kubesphere-config), the curator of the log store not chosen (Elasticsearch's by default), and the
# Fluent Bit sidecar the injector adds to users' pods later (its ConfigMap).
NOT_RUN = {"core": {"ks_kubectl"}, "logging": {"opensearch_curator"}, "logging.logsidecar": {"fluent_bit"}}


def _plugin_loader() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        init_plugin_loader()


_plugin_loader()
LOADER = DataLoader()
ROLE_VARIABLES = {}
for _path in ("defaults/main.yml", "vars/main.yml"):
    ROLE_VARIABLES.update(load_role_file(os.path.join(ROLE, _path), LOADER))
COMPONENTS = sorted(name for name, entry in ROLE_VARIABLES["_kubesphere_components"].items() if "objects_from" not in entry)


def render(component: str, what: str, nodes=(), bundle=None, spec=None, state="present"):
    variables = dict(ROLE_VARIABLES)
    variables.update({
        "kubesphere_plan": {"spec": spec or SPECS.get(component, {}),
                            "plan": [{"name": name, "enabled": True} for name in ("core", component)]},
        "__kubesphere_control_planes": {"resources": [{"metadata": {"name": "cp1"}}]},
        "__kubesphere_nodes": {"resources": list(nodes)},
        # As the check task gives it: core's JWT secret is chosen after the check.
        "_kubesphere_jwt_secret": "",
        "_kubesphere_entry": {"name": component},
        "_kubesphere_state": state,
        "__kubesphere_crds": {"resources": []},
        "kubesphere_bundle_images": bundle or {},
        "ansible_search_path": [ROLE],
    })
    templar = Templar(loader=DataLoader(), variables=variables)
    return json.loads(json.dumps(templar.template(trust_as_template(f"{{{{ {what} }}}}"))))


def node(name: str, *images: str) -> dict:
    return {"metadata": {"name": name}, "status": {"images": [{"names": [image]} for image in images]}}


def refs(keys, bundle=None) -> set[str]:
    images = {**ROLE_VARIABLES["kubesphere_images"], **(bundle or {})}
    return {images[key] for key in keys}


@pytest.mark.parametrize("component", COMPONENTS)
def test_the_images_checked_are_those_its_pods_run(component):
    """Every image of the component's table entry its objects run, found in the rendered objects: none missed by
    the walk (a new field would need it), and none of the images nothing runs at install."""
    entry = ROLE_VARIABLES["_kubesphere_components"][component]
    assert set(render(component, "_kubesphere_run_images")) == refs(set(entry["images"]) - NOT_RUN.get(component, set()))


def test_the_bundles_images_are_the_ones_checked_when_it_has_them():
    assert set(render("monitoring", "_kubesphere_run_images", bundle=BUNDLE)) == {
        BUNDLE[key] for key in ("prometheus_operator", "prometheus_config_reloader", "prometheus", "alertmanager",
                                "node_exporter", "kube_state_metrics", "kube_rbac_proxy")}


def test_the_log_store_chosen_picks_the_curator():
    spec = {"common": {"opensearch": {"enabled": True}}}
    assert render("logging", "_kubesphere_run_images", spec=spec) == [ROLE_VARIABLES["kubesphere_images"]["opensearch_curator"]]


def test_the_registry_and_tag_of_spec_are_the_images_checked():
    spec = {"local_registry": "registry.example:5000", "dev_tag": "v3.4.1-patch"}
    assert set(render("core", "_kubesphere_run_images", spec=spec)) == {
        "registry.example:5000/kubesphere/ks-apiserver:v3.4.1-patch", "registry.example:5000/kubesphere/ks-console:v3.4.1-patch",
        "registry.example:5000/kubesphere/ks-controller-manager:v3.4.1-patch"}


def test_nodes_that_hold_every_image_leave_nothing_to_refuse():
    images = render("monitoring", "_kubesphere_run_images", bundle=BUNDLE)
    nodes = [node("cp1", *images), node("w1", *images)]
    assert render("monitoring", "_kubesphere_missing_images", nodes=nodes, bundle=BUNDLE) == []


def test_a_bundle_without_kubesphere_says_to_build_it_with_kubesphere():
    """make lab without KubeSphere: the bundle holds none of its images, so the nodes have none."""
    reason = render("monitoring", "_kubesphere_images_refusal", nodes=[node("cp1", "registry.k8s.io/pause:3.10")])
    assert reason.startswith("kubesphere_image_pull_policy is Never (nothing is pulled) and the nodes lack images it runs. "
                             "Not in the bundle the cluster was made from: ")
    for image in ("kubesphere/prometheus-operator:v0.55.1 (on no node)", "prom/prometheus:v2.39.1 (on no node)",
                  "kubesphere/kube-rbac-proxy:v0.11.0 (on no node)"):
        assert image in reason
    assert 'make lab LAB_VARS="slipway_kubesphere_enabled=true"' in reason
    assert "make bundle" in reason and "In the bundle" not in reason and "Built by no" not in reason
    assert reason.endswith("Left out of kubesphere_wait, the component is applied as objects only.")


def test_the_bundles_images_not_imported_say_what_imports_them():
    images = render("alerting", "_kubesphere_run_images", bundle=BUNDLE)
    assert images == [BUNDLE["thanos"]]
    reason = render("alerting", "_kubesphere_images_refusal", nodes=[node("cp1", *images), node("w1")], bundle=BUNDLE)
    assert ("In the bundle but not imported on the nodes: docker.io/thanosio/thanos:v0.31.0 (not on w1); "
            "playbooks/operator.yml imports the bundle's KubeSphere images on every node") in reason
    assert "Not in the bundle" not in reason and "make lab" not in reason


def test_images_no_bundle_builds_say_how_else_the_nodes_get_them():
    reason = render("events", "_kubesphere_images_refusal", nodes=[node("cp1")], bundle=BUNDLE)
    assert "Built by no slipway bundle: kubesphere/kube-events-exporter:v0.6.0 (on no node); import them on every node" in reason
    assert "kubesphere_image_pull_policy: IfNotPresent" in reason
    assert "make bundle" not in reason and "In the bundle" not in reason


@pytest.mark.parametrize("component", COMPONENTS)
def test_every_component_can_be_removed(component):
    """What "Delete the component's objects" deletes: its objects but those of kinds the cluster does not serve (a
    component without CRDs of its own has none such; the log store moved to OpenSearch removes common.es)."""
    deleted = render(component, "_kubesphere_docs | reverse | rejectattr('kind', 'in', _kubesphere_unserved_kinds) | list",
                     state="absent")
    crds = ROLE_VARIABLES["_kubesphere_components"][component].get("crds", [])
    assert deleted or crds, "a component without CRDs of its own deletes its objects"
