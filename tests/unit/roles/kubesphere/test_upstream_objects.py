# The kubesphere role's objects for the components the lab can only install as objects (ks-apiserver,
# ks-controller-manager, ks-console, OpenSearch, Elasticsearch, Fluent Bit: no image of theirs can be built
# here), compared with facts about KubeSphere 3.4.1's published manifests (tests/unit/fixtures/
# kubesphere-v3.4.1-objects.yaml): per container its image, command and args, ports and volume mounts, the
# pod's volumes and service account, the Services' ports, and the RBAC of core. The objects are rendered the
# way the role renders them (its defaults, its vars and its own list of a component's templates, through
# Ansible's template lookup), so a template the role applies is the template tested.
from __future__ import annotations

import copy
import json
import os
import warnings

import pytest
import yaml

from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible_collections.slipway.cluster.tests.unit.roles.templating import Templar, load_role_file, trust_as_template

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", "..", ".."))
ROLE = os.path.join(ROOT, "roles", "kubesphere")
FACTS_FILE = os.path.join(HERE, "..", "..", "fixtures", "kubesphere-v3.4.1-objects.yaml")
OBJECTS_ONLY = ("core", "common.es", "common.opensearch", "common.fluentbit")
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet")
# The spec each component is rendered with; common.opensearch needs OpenSearch chosen as the log store.
SPECS = {"common.opensearch": {"common": {"opensearch": {"enabled": True}}}}

# ks-apiserver 3.4 caches these kinds before it serves (waitForResourceSync, and the listers its
# authentication, authorization and tenant APIs use): kubesphere/kubesphere pkg/apiserver/apiserver.go,
# e.g. @ 887fab7632379f72b8ccb79a16e39de7a59cb951. (group, version, plural, kind)
KS_APISERVER_KINDS = {
    ("iam.kubesphere.io", "v1alpha2", "users", "User"),
    ("iam.kubesphere.io", "v1alpha2", "globalroles", "GlobalRole"),
    ("iam.kubesphere.io", "v1alpha2", "globalrolebindings", "GlobalRoleBinding"),
    ("iam.kubesphere.io", "v1alpha2", "workspaceroles", "WorkspaceRole"),
    ("iam.kubesphere.io", "v1alpha2", "workspacerolebindings", "WorkspaceRoleBinding"),
    ("iam.kubesphere.io", "v1alpha2", "loginrecords", "LoginRecord"),
    ("iam.kubesphere.io", "v1alpha2", "groups", "Group"),
    ("iam.kubesphere.io", "v1alpha2", "groupbindings", "GroupBinding"),
    ("iam.kubesphere.io", "v1alpha2", "rolebases", "RoleBase"),
    ("tenant.kubesphere.io", "v1alpha1", "workspaces", "Workspace"),
    ("tenant.kubesphere.io", "v1alpha2", "workspacetemplates", "WorkspaceTemplate"),
    ("cluster.kubesphere.io", "v1alpha1", "clusters", "Cluster"),
}


def load_facts() -> dict:
    with open(FACTS_FILE, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


FACTS = load_facts()


def _plugin_loader() -> None:
    with warnings.catch_warnings():
        # Under ansible-test units (or with the collection on PYTHONPATH) the collection finder is already
        # configured: the plugin loader says so and uses it.
        warnings.simplefilter("ignore", UserWarning)
        init_plugin_loader()


def _role_variables() -> dict:
    loader = DataLoader()
    variables = {}
    for path in ("defaults/main.yml", "vars/main.yml"):
        variables.update(load_role_file(os.path.join(ROLE, path), loader))
    return variables


def render(component: str, what: str = "_kubesphere_docs", control_planes: int = 1, **settings) -> list[dict]:
    """The role's rendering of one component: `what` of vars/main.yml with the component as the entry, and the role
    options given in settings over its defaults."""
    variables = _role_variables()
    variables.update(settings)
    spec = SPECS.get(component, {})
    variables.update({
        "kubesphere_plan": {"spec": spec, "plan": [{"name": name, "enabled": True} for name in ("core", component)]},
        "__kubesphere_control_planes": {"resources": [{"metadata": {"name": f"cp{n + 1}"}} for n in range(control_planes)]},
        "_kubesphere_jwt_secret": "unit-test-jwt-secret",
        "_kubesphere_entry": {"name": component},
        "ansible_search_path": [ROLE],
    })
    templar = Templar(loader=DataLoader(), variables=variables)
    # Plain data, as the kubernetes.core modules receive it.
    return json.loads(json.dumps(templar.template(trust_as_template(f"{{{{ {what} }}}}"))))


_plugin_loader()
RENDERED = {component: render(component) for component in OBJECTS_ONLY}


def find(component: str, kind: str, name: str, namespace: str | None = None) -> dict:
    for obj in RENDERED[component]:
        meta = obj["metadata"]
        if obj["kind"] == kind and meta["name"] == name and meta.get("namespace") == namespace:
            return obj
    raise AssertionError(f"{component} renders no {kind} {namespace}/{name}")


# --- the facts' forms ----------------------------------------------------------------------------------------

def port_fact(port: dict) -> str:
    prefix = f"{port['name']}:" if port.get("name") else ""
    return f"{prefix}{port['containerPort']}/{port.get('protocol', 'TCP')}"


def mount_fact(mount: dict) -> str:
    text = mount["mountPath"]
    if mount.get("subPath"):
        text += f" subPath={mount['subPath']}"
    if mount.get("readOnly"):
        text += " ro"
    return text


def volume_fact(volume: dict) -> str:
    if "configMap" in volume:
        return f"configMap:{volume['configMap']['name']}"
    if "secret" in volume:
        return f"secret:{volume['secret']['secretName']}"
    if "hostPath" in volume:
        return f"hostPath:{volume['hostPath']['path']}"
    if "emptyDir" in volume:
        return "emptyDir"
    raise AssertionError(f"a volume of a kind the facts do not describe: {volume}")


def service_port_fact(port: dict) -> str:
    prefix = f"{port['name']}:" if port.get("name") else ""
    text = f"{prefix}{port['port']}->{port.get('targetPort', port['port'])}/{port.get('protocol', 'TCP')}"
    if port.get("nodePort"):
        text += f" nodePort={port['nodePort']}"
    return text


def rules_fact(rules: list[dict]) -> set[tuple]:
    """What RBAC rules grant, one (API group, resource, resource name, verb) or (URL, verb) at a time: how the
    grants are spread over rules, and their order, carry no meaning."""
    grants = set()
    for rule in rules:
        for verb in rule["verbs"]:
            grants.update(("url", url, verb) for url in rule.get("nonResourceURLs", []))
            grants.update(("resource", group, resource, name, verb)
                          for group in rule.get("apiGroups", []) for resource in rule.get("resources", [])
                          for name in rule.get("resourceNames") or ["*any*"])
    return grants


def workload_facts(obj: dict) -> dict:
    """The facts of one rendered Deployment or StatefulSet, in the fixture's forms."""
    pod = obj["spec"]["template"]["spec"]
    volumes = {volume["name"]: volume_fact(volume) for volume in pod.get("volumes", [])}
    volumes.update({claim["metadata"]["name"]: "claim" for claim in obj["spec"].get("volumeClaimTemplates", [])})
    return {
        "serviceAccountName": pod.get("serviceAccountName"),
        "containers": {
            container["name"]: {
                "image": container["image"],
                "command": container.get("command", []),
                "args": container.get("args", []),
                "ports": [port_fact(port) for port in container.get("ports", [])],
                "volumeMounts": {mount["name"]: mount_fact(mount) for mount in container.get("volumeMounts", [])},
            } for container in pod["containers"]},
        "volumes": volumes,
    }


def object_id(entry: dict) -> str:
    return "/".join(part for part in (entry["kind"], entry.get("namespace"), entry["name"]) if part)


# --- what slipway differs in on purpose ----------------------------------------------------------------------

MISSING = object()


def get_path(data: dict, path: str):
    for key in path.split("."):
        if not isinstance(data, dict) or key not in data:
            return MISSING
        data = data[key]
    return data


def set_path(data: dict, path: str, value) -> None:
    *parents, last = path.split(".")
    for key in parents:
        data = data.setdefault(key, {})
    if value is None:
        data.pop(last, None)
    else:
        data[last] = value


def expected(entry: dict) -> dict:
    """The facts of an object with slipway's deliberate differences applied."""
    wanted = copy.deepcopy(entry)
    for difference in FACTS["deliberate"]:
        if difference["object"] == object_id(entry):
            set_path(wanted, difference["fact"], difference["ours"])
    return wanted


def compared(facts: dict, wanted: dict) -> dict:
    """Of rendered facts, the keys the fixture states (per container too); the rest is not compared."""
    result = {key: facts[key] for key in ("serviceAccountName", "volumes") if key in wanted}
    result["containers"] = {name: {key: value for key, value in container.items() if key in wanted["containers"].get(name, {})}
                            for name, container in facts["containers"].items()}
    return result


def stated(wanted: dict) -> dict:
    return {key: wanted[key] for key in ("serviceAccountName", "volumes", "containers") if key in wanted}


# --- the tests -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("entry", FACTS["workloads"], ids=object_id)
def test_workload_matches_kubesphere_3_4_1(entry):
    obj = find(entry["component"], entry["kind"], entry["name"], entry["namespace"])
    wanted = expected(entry)
    assert compared(workload_facts(obj), wanted) == stated(wanted), entry["source"]


@pytest.mark.parametrize("entry", FACTS["services"], ids=lambda entry: f"Service/{entry['namespace']}/{entry['name']}")
def test_service_matches_kubesphere_3_4_1(entry):
    obj = find(entry["component"], "Service", entry["name"], entry["namespace"])
    wanted = expected({"kind": "Service", **entry})
    assert obj["spec"].get("type", "ClusterIP") == wanted["type"], entry["source"]
    assert [service_port_fact(port) for port in obj["spec"]["ports"]] == wanted["ports"], entry["source"]


def test_the_console_without_tls_is_kubesphere_s():
    """kubesphere_console_tls false: KubeSphere 3.4.1's ks-console Deployment and Service, with no TLS front."""
    objects = {(obj["kind"], obj["metadata"]["name"]): obj for obj in render("core", kubesphere_console_tls=False)}
    entry = next(entry for entry in FACTS["workloads"] if object_id(entry) == "Deployment/kubesphere-system/ks-console")
    plain = copy.deepcopy(entry)
    for difference in FACTS["deliberate"]:
        if difference["object"] == object_id(entry) and "tls" not in difference["fact"]:
            set_path(plain, difference["fact"], difference["ours"])
    assert compared(workload_facts(objects[("Deployment", "ks-console")]), plain) == stated(plain)
    service = next(entry for entry in FACTS["services"] if entry["name"] == "ks-console")
    assert [service_port_fact(port) for port in objects[("Service", "ks-console")]["spec"]["ports"]] == service["ports"]
    assert "tls-front.js" not in objects[("ConfigMap", "ks-console-config")]["data"]


@pytest.mark.parametrize("entry", FACTS["fluentbits"], ids=lambda entry: f"FluentBit/{entry['namespace']}/{entry['name']}")
def test_fluent_bit_matches_kubesphere_3_4_1(entry):
    spec = find(entry["component"], "FluentBit", entry["name"], entry["namespace"])["spec"]
    assert spec["image"] == entry["image"], entry["source"]
    assert volume_fact(spec["positionDB"]) == entry["positionDB"], entry["source"]


@pytest.mark.parametrize("entry", FACTS["rbac"], ids=object_id)
def test_rbac_matches_kubesphere_3_4_1(entry):
    obj = find(entry["component"], entry["kind"], entry["name"], entry.get("namespace"))
    wanted = expected(entry)
    if "rules" in wanted:
        assert rules_fact(obj["rules"]) == rules_fact(wanted["rules"]), entry["source"]
    if "secrets" in wanted:
        assert [secret["name"] for secret in obj.get("secrets", [])] == wanted["secrets"], entry["source"]
    if "roleRef" in wanted:
        assert f"{obj['roleRef']['kind']}/{obj['roleRef']['name']}" == wanted["roleRef"], entry["source"]
        subjects = ["/".join(part for part in (subject["kind"], subject.get("namespace"), subject["name"]) if part)
                    for subject in obj["subjects"]]
        assert subjects == wanted["subjects"], entry["source"]


@pytest.mark.parametrize("difference", FACTS["deliberate"], ids=lambda difference: f"{difference['object']}:{difference['fact']}")
def test_every_deliberate_difference_is_real(difference):
    """An entry that no longer differs from KubeSphere 3.4.1 has to go: the list says what differs, no more."""
    entries = [entry for group in ("workloads", "rbac") for entry in FACTS[group] if object_id(entry) == difference["object"]]
    entries += [entry for entry in FACTS["services"] if object_id({"kind": "Service", **entry}) == difference["object"]]
    assert len(entries) == 1, f"{difference['object']} is no object of the facts"
    upstream = get_path(entries[0], difference["fact"])
    ours = MISSING if difference["ours"] is None else difference["ours"]
    assert upstream != ours, "not a difference"
    assert difference["reason"].strip()


def test_every_workload_of_the_objects_only_components_is_compared():
    rendered = {f"{obj['kind']}/{obj['metadata'].get('namespace')}/{obj['metadata']['name']}"
                for component in OBJECTS_ONLY for obj in RENDERED[component] if obj["kind"] in WORKLOAD_KINDS}
    assert rendered == {object_id(entry) for entry in FACTS["workloads"]}


def test_core_installs_kubesphere_s_own_crds_with_those_ks_apiserver_caches_before_it_serves():
    crds = render("core", "_kubesphere_crd_docs")
    # and prometheus-operator's, which ks-apiserver caches too (PrometheusRules) and monitoring installs after core
    assert {crd["spec"]["group"] for crd in crds} >= {"monitoring.coreos.com", "iam.kubesphere.io"}
    crds = [crd for crd in crds if crd["spec"]["group"] != "monitoring.coreos.com"]
    assert len(crds) == 34, "the 34 CRDs of KubeSphere 3.4.1's ks-core chart"
    found = set()
    for crd in crds:
        spec = crd["spec"]
        assert crd["metadata"]["name"] == f"{spec['names']['plural']}.{spec['group']}"
        assert crd["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "slipway"
        for version in spec["versions"]:
            assert version["schema"]["openAPIV3Schema"]["type"] == "object", crd["metadata"]["name"]
            if version["served"] and version["storage"]:
                found.add((spec["group"], version["name"], spec["names"]["plural"], spec["names"]["kind"]))
        assert "description" not in json.dumps(spec["versions"][0]["schema"]).replace('"description": {', "")
    assert KS_APISERVER_KINDS <= found, KS_APISERVER_KINDS - found


def test_the_built_in_global_roles_are_bound_as_kubesphere_binds_them():
    roles = {obj["metadata"]["name"] for obj in RENDERED["core"] if obj["kind"] == "GlobalRole"}
    bound = {obj["roleRef"]["name"] for obj in RENDERED["core"] if obj["kind"] == "GlobalRoleBinding"}
    assert roles == {"anonymous", "authenticated", "pre-registration", "platform-admin", "platform-regular",
                     "platform-self-provisioner"}
    # and the first user, admin, is a platform-admin (ks-core's role-templates.yaml)
    assert bound == {"anonymous", "authenticated", "pre-registration", "platform-admin"}
    assert {entry["name"] for entry in FACTS["rbac"] if entry["kind"] == "GlobalRole"} == roles, "every role is compared"


def test_ks_apiserver_runs_one_replica_where_the_others_follow_the_control_planes():
    """ks-apiserver's token cache is in memory without KubeSphere's Redis: a second replica refuses the tokens of the
    first (the console's login looped on the 5-node lab). The controller manager and the console keep one per
    control plane, with their anti-affinity; ks-apiserver has none to keep."""
    objects = {(obj["kind"], obj["metadata"]["name"]): obj for obj in render("core", control_planes=3)}
    assert objects[("Deployment", "ks-apiserver")]["spec"]["replicas"] == 1
    assert "podAntiAffinity" not in objects[("Deployment", "ks-apiserver")]["spec"]["template"]["spec"]["affinity"]
    for name in ("ks-controller-manager", "ks-console"):
        assert objects[("Deployment", name)]["spec"]["replicas"] == 3
        assert "podAntiAffinity" in objects[("Deployment", name)]["spec"]["template"]["spec"]["affinity"]
