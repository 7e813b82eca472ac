"""roles/fleet: its defaults and argument specs key for key, and its Deployment rendered by Ansible's own templating,
whose command line the controller's parser (operator/slipway_fleet/__main__.py) takes as the settings meant."""

from __future__ import annotations

import json
import os
import warnings

import pytest
import yaml

from slipway_fleet import __main__ as fleet_main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLE = os.path.join(ROOT, "roles", "fleet")


def _yaml(rel: str):
    with open(os.path.join(ROLE, rel), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def test_the_defaults_and_the_argument_specs_agree_key_for_key():
    defaults = _yaml("defaults/main.yml")
    options = _yaml("meta/argument_specs.yml")["argument_specs"]["main"]["options"]
    assert sorted(defaults) == sorted(options)
    # A default computed when the play runs (fleet_image: the bundle's reference) is described, not given as a value.
    literal = {name: value for name, value in defaults.items() if not (isinstance(value, str) and "{{" in value)}
    assert {name: spec["default"] for name, spec in options.items() if "default" in spec} == literal
    assert sorted(set(defaults) - set(literal)) == ["fleet_image"]
    assert all(name.startswith("fleet_") for name in defaults)


def render(**settings) -> dict:
    """The Deployment, rendered from the role's template with its defaults, its vars and ``settings``."""
    return render_template("deployment.yml.j2", **settings)


def controller_of(deployment: dict):
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["/usr/bin/python3.11", "-m", "slipway_fleet"]
    return fleet_main.parse(container["args"]), container


def render_template(name: str, **settings) -> dict:
    """A template of the role rendered with its defaults, its vars and ``settings``, as a document."""
    from ansible.parsing.dataloader import DataLoader  # pylint: disable=import-outside-toplevel
    from ansible.plugins.loader import init_plugin_loader  # pylint: disable=import-outside-toplevel
    from ansible.template import Templar, trust_as_template  # pylint: disable=import-outside-toplevel
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        init_plugin_loader()
    loader = DataLoader()
    variables = {"role_path": ROLE}
    for rel in ("defaults/main.yml", "vars/main.yml"):
        variables.update(loader.load_from_file(os.path.join(ROLE, rel), trusted_as_template=True))
    variables.update(settings)
    with open(os.path.join(ROLE, "templates", name), encoding="utf-8") as handle:
        text = handle.read()
    templar = Templar(loader=loader, variables=variables)
    return json.loads(json.dumps(yaml.safe_load(templar.template(trust_as_template(text)))))


def test_the_defaults_give_the_documented_controller():
    deployment = render()
    options, container = controller_of(deployment)
    assert deployment["metadata"]["namespace"] == "slipway-fleet" and deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "slipway-fleet"
    # One tenant namespace, fleet, watched by default: watching every namespace is an explicit choice.
    assert options.max_parallel == 5 and options.resync == 60 and options.namespaces == ["fleet"]
    assert options.max_parallel_per_namespace == 2
    assert options.jobs.image == container["image"] == "localhost/slipway/operator:0.1.0"
    # The backups from the host path reach the Jobs as the claim the role makes in each watched namespace.
    assert options.jobs.backup_claim == "slipway-fleet-backups" and not options.jobs.bundle_claim
    assert options.jobs.resources == {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"cpu": "2", "memory": "2Gi"}}
    assert options.lease_namespace == "slipway-fleet"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert [volume["name"] for volume in deployment["spec"]["template"]["spec"]["volumes"]] == ["tmp"]


@pytest.mark.parametrize("settings, volume, claim", [
    ({"fleet_bundle_host_path": "/srv/slipway-bundle"}, {"hostPath": {"path": "/srv/slipway-bundle", "type": "Directory"}},
     "slipway-fleet-bundle"),
    ({"fleet_bundle_claim": "bundle"}, {"persistentVolumeClaim": {"claimName": "bundle", "readOnly": True}}, "bundle"),
])
def test_the_bundle_is_read_only_in_the_controller_and_handed_to_the_jobs_as_a_claim(settings, volume, claim):
    deployment = render(fleet_bundle_mount="/bundle", **settings)
    options, container = controller_of(deployment)
    assert {"name": "bundle", **volume} in deployment["spec"]["template"]["spec"]["volumes"]
    assert {"name": "bundle", "mountPath": "/bundle", "readOnly": True} in container["volumeMounts"]
    assert options.jobs.bundle_claim == claim and options.jobs.bundle_mount == "/bundle"


def test_a_backup_claim_wins_and_the_other_settings_reach_the_controller():
    options, _container = controller_of(render(
        fleet_backup_claim="snapshots", fleet_max_parallel=12, fleet_watch_namespaces=["fleet", "edge"],
        fleet_image="registry.example/slipway:1", fleet_image_pull_policy="Always", fleet_backoff_limit=1,
        fleet_active_deadline_seconds=600, fleet_resync_seconds=30, fleet_max_parallel_per_namespace=3,
        fleet_job_limits={"cpu": "1", "memory": "1Gi"}))
    assert options.jobs.backup_claim == "snapshots"
    assert options.max_parallel == 12 and options.namespaces == ["fleet", "edge"] and options.resync == 30
    assert options.max_parallel_per_namespace == 3 and options.jobs.resources["limits"] == {"cpu": "1", "memory": "1Gi"}
    assert (options.jobs.image, options.jobs.image_pull_policy) == ("registry.example/slipway:1", "Always")
    assert (options.jobs.backoff_limit, options.jobs.active_deadline) == (1, 600)
    options, _container = controller_of(render(fleet_backup_host_path=""))
    assert not options.jobs.backup_claim
    options, _container = controller_of(render(fleet_watch_every_namespace=True))
    assert options.namespaces == [], "every namespace: no --namespace"


def test_a_watched_namespace_gets_pod_security_the_controllers_rights_and_its_claims():
    items = render_template("namespace.yml.j2", _fleet_tenant="team-a", fleet_bundle_host_path="/srv/slipway-bundle")["items"]
    kinds = [(item["kind"], item["metadata"]["name"]) for item in items]
    assert kinds == [("Namespace", "team-a"), ("RoleBinding", "slipway-fleet"),
                     ("PersistentVolume", "slipway-fleet-bundle-team-a"), ("PersistentVolumeClaim", "slipway-fleet-bundle"),
                     ("PersistentVolume", "slipway-fleet-backups-team-a"), ("PersistentVolumeClaim", "slipway-fleet-backups")]
    assert items[0]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    assert items[1]["roleRef"]["name"] == "slipway-fleet-namespace" and items[1]["metadata"]["namespace"] == "team-a"
    assert items[2]["spec"]["hostPath"] == {"path": "/srv/slipway-bundle", "type": "Directory"}
    assert items[2]["spec"]["accessModes"] == ["ReadOnlyMany"] and items[2]["spec"]["claimRef"]["namespace"] == "team-a"
    assert items[4]["spec"]["hostPath"]["path"] == "/var/lib/slipway-fleet/backups/team-a"
    claims_only = render_template("namespace.yml.j2", _fleet_tenant="team-a", fleet_backup_claim="mine",
                                  fleet_namespace_pod_security="")["items"]
    assert [item["kind"] for item in claims_only] == ["Namespace", "RoleBinding"]
    assert "labels" not in claims_only[0]["metadata"]


def test_the_role_applies_operator_s_own_crds_admission_and_rbac():
    for key in ("_fleet_crds", "_fleet_rbac", "_fleet_rbac_tenant", "_fleet_admission"):
        path = _yaml("vars/main.yml")[key].replace("{{ role_path }}", ROLE)
        assert os.path.isfile(path), path
        assert yaml.safe_load(open(path, encoding="utf-8"))["kind"] == "List"  # pylint: disable=consider-using-with
    every = _yaml("vars/main.yml")["_fleet_rbac_every_namespace"].replace("{{ role_path }}", ROLE)
    assert yaml.safe_load(open(every, encoding="utf-8"))["kind"] == "ClusterRoleBinding"  # pylint: disable=consider-using-with
