"""A SlipwayCluster's spec in the collection's terms, and the operation that brings its hosts to it.

Pure Python, no Kubernetes client: every rule is a unit test (tests/tools/test_fleet_spec.py).

- ``inventory`` / ``settings``: the spec as an Ansible inventory (kubespray's groups) and the
  ``slipway_*`` settings and role variables, exactly what the operation's Job gives the playbook.
- ``preflight``: the collection's own model (plugins/module_utils/_model.py, imported, never copied)
  run over that inventory and those settings; every problem, named by the spec's field.
- ``plan``: the spec the hosts match (the last one applied) against the spec wanted: the next
  operation, and the spec the hosts will match once it succeeded. One step at a time, so that edits
  made while an operation runs are taken up by the next plan (coalesced).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

import yaml
from slipway_operator import collection

GROUP, VERSION = "fleet.slipway.io", "v1alpha1"
CLUSTERS, OPERATIONS = "slipwayclusters", "slipwayoperations"
API_VERSION = f"{GROUP}/{VERSION}"
# kubectl annotate slipwaycluster NAME fleet.slipway.io/adopt=true (playbooks/fleet_adopt.yml writes it): the
# hosts already run this spec (made by site.yml), so the first reconcile records it and runs nothing.
ADOPT_ANNOTATION = f"{GROUP}/adopt"

ROLE_GROUPS = {"control_plane": "kube_control_plane", "worker": "kube_node", "etcd": "etcd",
               "loadbalancer": "loadbalancer"}

# Each playbook of an operation type, and the variables that say what it acts on.
PLAYBOOKS = {"create": "site.yml", "converge": "site.yml", "scale": "scale.yml", "remove-node": "remove_node.yml",
             "upgrade": "upgrade.yml", "renew-certs": "certs.yml", "etcd-backup": "etcd_backup.yml",
             "reset": "reset.yml"}

# Where the model's names of problems are in the spec (the model speaks in inventory terms).
SETTING_FIELDS = {
    "slipway_kubernetes_version": "spec.kubernetesVersion",
    "slipway_pod_cidr": "spec.network.podCIDR",
    "slipway_service_cidr": "spec.network.serviceCIDR",
    "slipway_node_cidr_mask_size": "spec.network.nodeCIDRMaskSize",
    "slipway_dns_domain": "spec.network.dnsDomain",
    "slipway_cni": "spec.network.cni",
    "slipway_lb_mode": "spec.controlPlaneEndpoint.mode",
    "slipway_control_plane_endpoint": "spec.controlPlaneEndpoint.address",
    "slipway_lb_port": "spec.controlPlaneEndpoint.port",
    "slipway_etcd_mode": "spec.etcd.mode",
    "slipway_artifacts_source": "spec.artifacts.source",
    "slipway_artifacts_bundle_dir": "spec.artifacts.bundleDir",
    "slipway_artifacts_mirror_url": "spec.artifacts.mirrorURL",
    "slipway_artifacts_registry_mirror": "spec.artifacts.registryMirror",
    "slipway_hardening": "spec.hardening",
    "slipway_secrets_encryption": "spec.secretsEncryption",
    "slipway_kubesphere_enabled": "spec.kubesphere.enabled",
    "kubesphere_cluster_configuration": "spec.kubesphere.clusterConfiguration",
    "slipway_cluster_name": "metadata.name",
    "group kube_control_plane": "spec.hosts (role control_plane)",
    "group kube_node": "spec.hosts (role worker)",
    "group etcd": "spec.hosts (role etcd)",
    "group loadbalancer": "spec.hosts (role loadbalancer)",
}


def bundle_reader(collections_path: str):
    """The bundle reader of the collection's cluster_model action plugin (its manifest and sha256 checks)."""
    return collection.load(collections_path, "plugins.action.cluster_model").LocalBundle()


# --- the spec as an inventory ----------------------------------------------------------------------------

def _hosts(spec: dict) -> list[dict]:
    return list(spec.get("hosts") or [])


def parse_variables(spec: dict) -> tuple[dict, list[str]]:
    """spec.variables, each value parsed as YAML: (variables, problems)."""
    values, problems = {}, []
    for name, text in sorted((spec.get("variables") or {}).items()):
        try:
            values[name] = yaml.safe_load(text) if isinstance(text, str) else text
        except yaml.YAMLError as exc:
            problems.append(f"spec.variables.{name}: is not YAML ({str(exc).splitlines()[0]}); "
                            "write the value as YAML, e.g. '[]' or '\"text\"'")
    return values, problems


def inventory(spec: dict, exclude: tuple[str, ...] = ()) -> dict:
    """The spec's hosts as a YAML inventory with kubespray's groups (k8s_cluster: control planes and workers)."""
    hosts: dict[str, Any] = {}
    groups: dict[str, dict[str, Any]] = {group: {} for group in ROLE_GROUPS.values()}
    for host in _hosts(spec):
        if host["name"] in exclude:
            continue
        variables = {"ansible_host": host["address"], "ansible_user": host.get("user") or "root",
                     "ansible_port": int(host.get("port") or 22)}
        if host.get("ip"):
            variables["ip"] = host["ip"]
        hosts[host["name"]] = variables
        for role in host.get("roles") or []:
            groups[ROLE_GROUPS[role]][host["name"]] = {}
    children: dict[str, Any] = {group: {"hosts": members} for group, members in groups.items()}
    children["k8s_cluster"] = {"children": {"kube_control_plane": {}, "kube_node": {}}}
    return {"all": {"hosts": hosts, "children": children}}


def settings(spec: dict, name: str) -> dict:
    """The slipway_* settings (and KubeSphere's ClusterConfiguration) the spec's fields give."""
    network = spec.get("network") or {}
    endpoint = spec.get("controlPlaneEndpoint") or {}
    artifacts = spec.get("artifacts") or {}
    kubesphere = spec.get("kubesphere") or {}
    result = {
        "slipway_cluster_name": name,
        "slipway_kubernetes_version": spec.get("kubernetesVersion"),
        "slipway_pod_cidr": network.get("podCIDR", "10.233.64.0/18"),
        "slipway_service_cidr": network.get("serviceCIDR", "10.233.0.0/18"),
        "slipway_node_cidr_mask_size": network.get("nodeCIDRMaskSize", 24),
        "slipway_dns_domain": network.get("dnsDomain", "cluster.local"),
        "slipway_cni": network.get("cni", "flannel"),
        "slipway_lb_mode": endpoint.get("mode", "local_haproxy"),
        "slipway_etcd_mode": (spec.get("etcd") or {}).get("mode", "stacked"),
        "slipway_artifacts_source": artifacts.get("source", "bundle"),
        "slipway_hardening": spec.get("hardening", "cis"),
        "slipway_secrets_encryption": spec.get("secretsEncryption", True),
        "slipway_kubesphere_enabled": bool(kubesphere.get("enabled", False)),
    }
    optional = {"slipway_control_plane_endpoint": endpoint.get("address"), "slipway_lb_port": endpoint.get("port"),
                "slipway_artifacts_bundle_dir": artifacts.get("bundleDir"),
                "slipway_artifacts_mirror_url": artifacts.get("mirrorURL"),
                "slipway_artifacts_registry_mirror": artifacts.get("registryMirror")}
    result.update({key: value for key, value in optional.items() if value not in (None, "")})
    if kubesphere.get("clusterConfiguration"):
        result["kubesphere_cluster_configuration"] = kubesphere["clusterConfiguration"]
    return result


def secret_variable_formats(spec: dict) -> dict[str, str]:
    """{variable: "yaml" | "text"} of spec.secretVariablesFrom: how the runner reads each value from its file."""
    from . import variables as role_variables  # pylint: disable=import-outside-toplevel
    return {entry["variable"]: role_variables.SECRET.get(entry["variable"], "text")
            for entry in spec.get("secretVariablesFrom") or []}


def applied_spec(obj: dict) -> dict | None:
    """The spec the cluster's hosts match (status.appliedSpec, written by the controller), or None."""
    text = ((obj.get("status") or {}).get("appliedSpec") or {}).get("json")
    try:
        value = json.loads(text) if text else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def playbook_vars(spec: dict, name: str) -> dict:
    """Everything the playbook gets as extra variables: the settings, then spec.variables."""
    variables, _problems = parse_variables(spec)
    return {**settings(spec, name), **variables}


# --- preflight: the collection's model ---------------------------------------------------------------------

@dataclass
class Preflight:
    """The model's verdict on a spec: the problems (none: passed) and the warnings."""

    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    model: dict | None = None

    @property
    def passed(self) -> bool:
        return not self.problems

    def message(self) -> str:
        if self.passed:
            return "the model and preflight accept the spec" + (f"; warnings: {'; '.join(self.warnings)}" if self.warnings else "")
        return f"{len(self.problems)} problem(s), no host touched: " + "; ".join(self.problems)


def _where(where: str) -> str:
    if where in SETTING_FIELDS:
        return f"{SETTING_FIELDS[where]} ({where})"
    if where.startswith("host "):
        return f"spec.hosts[{where[len('host '):]}]"
    if not where.startswith(("slipway_", "group ")) and where.replace("_", "").isalnum():
        return f"spec.variables.{where}"
    return where


def preflight(spec: dict, name: str, model_module, bundle=None, exclude: tuple[str, ...] = (),  # pylint: disable=too-many-arguments
              bundle_mount: str = "/bundle") -> Preflight:
    """What a tenant may ask (tenancy.py: no template, the fleet's bundle; variables.py: the role variables a
    tenant may set, secrets from Secrets only), then the collection's model (build_model, as playbooks/site.yml's
    first stage runs it) over the spec. ``bundle``: the controller's reader (tenancy.FleetBundle)."""
    from . import tenancy, variables as role_variables  # pylint: disable=import-outside-toplevel
    variables, problems = parse_variables(spec)
    problems = tenancy.templates(spec) + tenancy.configuration_secrets(spec) + tenancy.bundle_dir(spec, bundle_mount) \
        + problems + role_variables.problems(
        variables, [entry["variable"] for entry in spec.get("secretVariablesFrom") or []])
    inv = inventory(spec)
    groups = {group: list(body.get("hosts") or {}) for group, body in inv["all"]["children"].items()}
    groups["k8s_cluster"] = list(dict.fromkeys(groups["kube_control_plane"] + groups["kube_node"]))
    hostvars = {host: {key: value for key, value in variables_.items() if key in ("ip", "ansible_host")}
                for host, variables_ in inv["all"]["hosts"].items()}
    given = {**settings(spec, name), **variables}
    try:
        model = model_module.build_model(groups, hostvars, given, bundle=bundle, exclude=exclude, check_k8s_cluster=True)
    except model_module.ModelError as exc:
        return Preflight(problems + [f"{_where(p.where)}: {p.message}" for p in exc.problems],
                         [f"{_where(w.where)}: {w.message}" for w in exc.warnings])
    if problems:
        return Preflight(problems, list(model["warnings"]))
    return Preflight([], list(model["warnings"]), model)


# --- the diff: which operation -------------------------------------------------------------------------

def _version(text: str | None) -> tuple[int, ...] | None:
    try:
        parts = tuple(int(part) for part in str(text).split("."))
    except ValueError:
        return None
    return parts if len(parts) == 3 else None


def _roles(spec: dict) -> dict[str, tuple[str, ...]]:
    return {host["name"]: tuple(sorted(host.get("roles") or [])) for host in _hosts(spec)}


@dataclass
class Plan:
    """The next operation (None: the hosts match the spec), what it acts on, and the spec the hosts
    match once it succeeded; or a refusal (the spec cannot be reached by any operation)."""

    type: str | None = None
    hosts: list[str] = field(default_factory=list)
    kubernetes_version: str = ""
    target: dict | None = None
    refused: str = ""
    # The spec the playbook runs with (its inventory and settings): the target, except for remove-node and
    # reset, whose playbooks need the hosts they remove in the inventory.
    run_spec: dict | None = None

    def __post_init__(self):
        if self.run_spec is None and self.target is not None:
            self.run_spec = self.target


def plan(wanted: dict, applied: dict | None, deleting: bool = False, adopt: bool = False, created: bool = False) -> Plan:
    """The next step from ``applied`` (the spec the hosts match, None before the first create) to ``wanted``.

    Removals first (remove-node), then the version (upgrade), then additions (scale), then any other setting
    (converge: site.yml again). Each step's target is ``applied`` changed by that step only; the next plan
    starts from it, so edits made meanwhile are planned after it, in one operation each.
    """
    if deleting:
        if wanted.get("deletionPolicy", "Reset") == "Keep" or not (created or applied is not None):
            return Plan(type=None)
        # Every host an operation may have touched: the spec's, and those applied but not removed yet (an
        # operation that failed halfway leaves hosts of both).
        spec = copy.deepcopy(wanted)
        names = {host["name"] for host in _hosts(spec)}
        spec["hosts"] = _hosts(spec) + [host for host in _hosts(applied or {}) if host["name"] not in names]
        return Plan(type="reset", hosts=[host["name"] for host in _hosts(spec)], run_spec=spec)
    if applied is None:
        if adopt:
            return Plan(type="adopt", target=copy.deepcopy(wanted))
        return Plan(type="create", hosts=[host["name"] for host in _hosts(wanted)], target=copy.deepcopy(wanted))

    old_roles, new_roles = _roles(applied), _roles(wanted)
    changed_roles = sorted(name for name in old_roles.keys() & new_roles.keys() if old_roles[name] != new_roles[name])
    if changed_roles:
        return Plan(refused=f"spec.hosts: the roles of {', '.join(changed_roles)} changed; a node keeps its roles: remove "
                            "it (one edit), wait for Running, then add it back with the new roles (another edit)")
    old_hosts = {host["name"]: host for host in _hosts(applied)}
    new_hosts = {host["name"]: host for host in _hosts(wanted)}
    moved = sorted(name for name in old_hosts.keys() & new_hosts.keys()
                   if (old_hosts[name].get("ip") or old_hosts[name]["address"]) != (new_hosts[name].get("ip") or new_hosts[name]["address"]))
    if moved:
        return Plan(refused=f"spec.hosts: the address of {', '.join(moved)} changed; a node keeps its address: remove it, "
                            "wait for Running, then add the machine back under its new address")

    removed = [name for name in old_hosts if name not in new_hosts]
    if removed:
        target = copy.deepcopy(applied)
        target["hosts"] = [host for host in _hosts(applied) if host["name"] not in removed]
        return Plan(type="remove-node", hosts=removed, target=target, run_spec=copy.deepcopy(applied))

    old_version, new_version = _version(applied.get("kubernetesVersion")), _version(wanted.get("kubernetesVersion"))
    if old_version and new_version and new_version != old_version:
        if new_version < old_version:
            return Plan(refused=f"spec.kubernetesVersion: {wanted['kubernetesVersion']} is older than the cluster's "
                                f"{applied['kubernetesVersion']}; kubeadm cannot downgrade: set {applied['kubernetesVersion']} back")
        if new_version[0] != old_version[0] or new_version[1] > old_version[1] + 1:
            return Plan(refused=f"spec.kubernetesVersion: {wanted['kubernetesVersion']} is more than one minor after the "
                                f"cluster's {applied['kubernetesVersion']}; set {old_version[0]}.{old_version[1] + 1}.x first")
        target = copy.deepcopy(applied)
        target["kubernetesVersion"] = wanted["kubernetesVersion"]
        return Plan(type="upgrade", kubernetes_version=wanted["kubernetesVersion"],
                    hosts=[host["name"] for host in _hosts(applied)], target=target)

    added = [name for name in new_hosts if name not in old_hosts]
    if added:
        target = copy.deepcopy(applied)
        target["hosts"] = _hosts(applied) + [new_hosts[name] for name in added]
        return Plan(type="scale", hosts=added, target=target)

    if _comparable(applied) != _comparable(wanted):
        return Plan(type="converge", hosts=list(new_hosts), target=copy.deepcopy(wanted))
    return Plan(type=None)


def _comparable(spec: dict) -> str:
    """The spec as the hosts see it: deletionPolicy, the SSH key's Secret and the pinned host keys are the
    controller's business."""
    keep = {key: value for key, value in spec.items() if key not in ("deletionPolicy", "sshKeySecretRef")}
    keep["hosts"] = [{k: v for k, v in host.items() if k != "hostKeys"} for host in keep.get("hosts") or []]
    return json.dumps(keep, sort_keys=True)


def operation_vars(op_type: str, hosts: list[str], target_spec: dict, name: str) -> dict:
    """The playbook's extra variables for an operation: the settings of the spec it acts on, and the
    variables that say what it does (the hosts to remove, the confirmation of a reset, certs_action)."""
    variables = playbook_vars(target_spec, name)
    if op_type == "remove-node":
        variables["remove_node_names"] = list(hosts)
    elif op_type == "reset":
        variables["reset_confirm"] = "yes"
    elif op_type == "renew-certs":
        variables["certs_action"] = "renew"
    return variables
