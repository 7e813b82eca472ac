# KubeSphere shipped closed (docs/security.md), as the kubesphere role renders it (its defaults and vars, through
# Ansible's templating): the JWT secret in a Secret that ks-apiserver reads through its environment and in no ConfigMap,
# which JWT secret is kept (spec's, the Secret's, the one an earlier version left in kubesphere-config), when an
# installed core is applied again because an earlier version left it open, and the names of the console's certificate.
from __future__ import annotations

import base64
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
JWT_ENV = "KUBESPHERE_AUTHENTICATION_JWTSECRET"


def _plugin_loader() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        init_plugin_loader()


_plugin_loader()
ROLE_VARIABLES = {}
for _path in ("defaults/main.yml", "vars/main.yml"):
    ROLE_VARIABLES.update(load_role_file(os.path.join(ROLE, _path)))


def render(what: str, component: str = "core", spec=None, **extra):
    variables = dict(ROLE_VARIABLES)
    variables.update({
        "kubesphere_plan": {"spec": spec or {}, "plan": [{"name": "core", "enabled": True}]},
        "__kubesphere_control_planes": {"resources": [{"metadata": {"name": "cp1"}}]},
        "_kubesphere_jwt_secret": "unit-test-jwt-secret",
        "_kubesphere_entry": {"name": component},
        "_kubesphere_state": "present",
        "ansible_search_path": [ROLE],
    })
    variables.update(extra)
    templar = Templar(loader=DataLoader(), variables=variables)
    return json.loads(json.dumps(templar.template(trust_as_template(f"{{{{ {what} }}}}"))))


def core_objects(**extra) -> dict:
    return {(obj["kind"], obj["metadata"]["name"]): obj for obj in render("_kubesphere_docs", **extra)}


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def config_map(jwt: str | None) -> dict:
    authentication = {} if jwt is None else {"jwtSecret": jwt}
    return {"data": {"kubesphere.yaml": yaml.safe_dump({"authentication": authentication})}}


def found(*resources) -> dict:
    return {"resources": list(resources)}


# --- the JWT secret -------------------------------------------------------------------------------------------

def test_no_configmap_the_role_renders_holds_the_jwt_secret():
    for obj in render("_kubesphere_docs"):
        if obj["kind"] == "ConfigMap":
            assert "unit-test-jwt-secret" not in json.dumps(obj), obj["metadata"]["name"]
    config = yaml.safe_load(core_objects()[("ConfigMap", "kubesphere-config")]["data"]["kubesphere.yaml"])
    # Named, empty: ks-apiserver's loader (viper) replaces from the environment only the keys its file names.
    assert config["authentication"]["jwtSecret"] == ""


def test_ks_apiserver_reads_the_jwt_secret_from_its_secret_through_its_environment():
    container = core_objects()[("Deployment", "ks-apiserver")]["spec"]["template"]["spec"]["containers"][0]
    env = {item["name"]: item for item in container["env"]}
    assert env[JWT_ENV]["valueFrom"] == {"secretKeyRef": {"name": "kubesphere-jwt-secret", "key": "jwtSecret"}}
    assert ROLE_VARIABLES["_kubesphere_jwt_secret_env"] == JWT_ENV


@pytest.mark.parametrize("spec,secret,legacy,chosen", [
    ({"authentication": {"jwtSecret": "from-spec"}}, "from-secret", "from-configmap", "from-spec"),
    ({}, "from-secret", "from-configmap", "from-secret"),
    # an install by an earlier version: its secret moves to the Secret, so the sessions stay valid
    ({}, None, "from-configmap", "from-configmap"),
])
def test_the_jwt_secret_kept(spec, secret, legacy, chosen):
    stored = found({"data": {"jwtSecret": b64(secret)}}) if secret else found()
    assert render("_kubesphere_jwt_secret_choice", spec=spec, __kubesphere_jwt_stored=stored,
                  __kubesphere_stored_config=found(config_map(legacy))) == chosen


def test_a_new_jwt_secret_is_random_when_none_is_kept():
    first, second = (render("_kubesphere_jwt_secret_choice", __kubesphere_jwt_stored=found(),
                            __kubesphere_stored_config=found(config_map(""))) for dummy in range(2))
    assert len(first) == 32 and first.isalnum() and first != second


# --- an installed core an earlier version left open, applied again ---------------------------------------------

SECRET = {"metadata": {"name": "kubesphere-jwt-secret"}}
HTTPS = {"spec": {"ports": [{"name": "https", "port": 443}]}}
HTTP = {"spec": {"ports": [{"name": "nginx", "port": 80}]}}


def open_reads(config, secret, service) -> dict:
    return {"results": [{"resources": [obj] if obj else []} for obj in (config, secret, service)]}


def plan(recorded_by="slipway") -> dict:
    return {"spec": {}, "actions": {"uninstall": [], "install": [], "reapply": []},
            "plan": [{"name": "core", "enabled": True, "status": "enabled", "action": "none", "recorded_by": recorded_by},
                     {"name": "monitoring", "enabled": True, "status": "enabled", "action": "none",
                      "recorded_by": recorded_by}]}


@pytest.mark.parametrize("reads,tls,reapplied", [
    (open_reads(config_map(""), SECRET, HTTPS), True, []),
    (open_reads(config_map(""), SECRET, HTTP), False, []),
    (open_reads(config_map("left-in-the-configmap"), SECRET, HTTPS), True, ["core"]),
    (open_reads(config_map(""), None, HTTPS), True, ["core"]),
    (open_reads(config_map(""), SECRET, HTTP), True, ["core"]),
    (open_reads(config_map(""), SECRET, HTTPS), False, ["core"]),
], ids=["closed", "plain-http-asked-for", "jwt-in-configmap", "no-jwt-secret", "console-on-http", "console-tls-off"])
def test_an_installed_core_left_open_is_applied_again(reads, tls, reapplied):
    work = render("_kubesphere_work", kubesphere_plan=plan(), __kubesphere_core_open=reads, kubesphere_console_tls=tls)
    assert [entry["name"] for entry in work] == reapplied


def test_a_core_ks_installer_recorded_is_not_taken_over():
    reads = open_reads(config_map("ks-installer-s"), None, HTTP)
    assert render("_kubesphere_work", kubesphere_plan=plan("ks-installer"), __kubesphere_core_open=reads) == []


def test_nothing_is_applied_again_when_the_reads_were_skipped():
    skipped = {"results": [{"skipped": True, "item": {}} for dummy in range(3)]}
    assert render("_kubesphere_work", kubesphere_plan=plan(), __kubesphere_core_open=skipped) == []


# --- the console's certificate ----------------------------------------------------------------------------------

NODES = found(
    {"status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.11"}, {"type": "Hostname", "address": "cp1"}]}},
    {"status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.12"}, {"type": "Hostname", "address": "w1"},
                              {"type": "InternalIP", "address": "fd00::12"}]}})
SANS = sorted(["DNS:cp1", "DNS:console.example.com", "DNS:ks-console", "DNS:ks-console.kubesphere-system",
               "DNS:ks-console.kubesphere-system.svc", "DNS:w1", "IP:10.0.0.11", "IP:10.0.0.12", "IP:10.9.8.7",
               "IP:fd00::12"])


def test_the_certificate_is_for_every_node_the_service_and_the_names_given():
    assert render("_kubesphere_console_tls_sans", __kubesphere_console_nodes=NODES,
                  kubesphere_console_tls_names=["console.example.com", "10.9.8.7"]) == SANS


def tls_secret(labels, sans) -> dict:
    return found({"metadata": {"labels": labels, "annotations": {"slipway.io/subject-alt-names": ",".join(sans)}}})


OURS = {"app.kubernetes.io/managed-by": "slipway"}


@pytest.mark.parametrize("stored,tls,wanted", [
    (found(), True, True),
    (found(), False, False),
    (tls_secret(OURS, SANS), True, False),
    (tls_secret(OURS, SANS + ["DNS:a-node-that-left"]), True, False),
    (tls_secret(OURS, [name for name in SANS if name != "DNS:w1"]), True, True),
    # a certificate the user gives is kept, whatever it names
    (tls_secret({}, []), True, False),
], ids=["missing", "tls-off", "current", "more-names", "a-node-joined", "given-by-the-user"])
def test_when_the_certificate_is_made(stored, tls, wanted):
    assert render("_kubesphere_console_cert_wanted", __kubesphere_console_nodes=NODES, kubesphere_console_tls=tls,
                  kubesphere_console_tls_names=["console.example.com", "10.9.8.7"],
                  __kubesphere_console_tls_found=stored) is wanted


# --- OpenSearch's basic auth ------------------------------------------------------------------------------------

OPENSEARCH = {"common": {"opensearch": {"enabled": True}}}
EXTERNAL = {"common": {"opensearch": {"enabled": True, "externalOpensearchHost": "search.example.com"}}}


def log_store_password(spec, stored=None):
    secret = found({"data": {"password": b64(stored)}}) if stored else found()
    return render("_kubesphere_log_store_password_choice", component="common.opensearch", spec=spec,
                  __kubesphere_log_store_stored=secret)


def test_the_built_in_opensearch_gets_a_password_of_its_own_not_admin():
    first, second = log_store_password(OPENSEARCH), log_store_password(OPENSEARCH)
    assert len(first) == 24 and first.isalnum() and first != second and first != "admin"
    assert any(c.islower() for c in first) and any(c.isupper() for c in first) and any(c.isdigit() for c in first)


@pytest.mark.parametrize("spec,stored,chosen", [
    ({"common": {"opensearch": {"enabled": True, "basicAuth": {"password": "from-spec"}}}}, "stored", "from-spec"),
    # a running OpenSearch keeps the password it made its admin user with (admin, by an earlier version's default)
    (OPENSEARCH, "admin", "admin"),
    # an external store's password is the user's: none is made up for it
    (EXTERNAL, None, ""),
])
def test_the_log_store_password_kept(spec, stored, chosen):
    assert log_store_password(spec, stored) == chosen


def test_opensearch_makes_its_admin_user_from_the_secret_and_no_object_holds_the_password():
    password = "Unit-Test-Log-Store-1"
    docs = [obj for component in ("common.opensearch", "common.fluentbit", "logging")
            for obj in render("_kubesphere_docs", component=component, spec=OPENSEARCH,
                              _kubesphere_log_store_password=password)]
    assert password not in json.dumps(docs)
    assert not [obj for obj in docs if obj["kind"] == "Secret"], "the Secret is tasks/log_store_secret.yml's"
    for name in ("opensearch-cluster-master", "opensearch-cluster-data"):
        pod = next(obj for obj in docs if obj["kind"] == "StatefulSet" and obj["metadata"]["name"] == name)["spec"]["template"]["spec"]
        init = next(container for container in pod["initContainers"] if container["name"] == "internal-users")
        assert {item["name"]: item["valueFrom"]["secretKeyRef"] for item in init["env"]} == {
            "LOG_STORE_USERNAME": {"name": "log-store-basic-auth", "key": "username"},
            "LOG_STORE_PASSWORD": {"name": "log-store-basic-auth", "key": "password"}}
        assert "hash.sh -env LOG_STORE_PASSWORD" in init["command"][-1]
        mounts = {mount["mountPath"]: mount for mount in pod["containers"][0]["volumeMounts"]}
        assert mounts["/usr/share/opensearch/config/opensearch-security/internal_users.yml"]["subPath"] == "internal_users.yml"
    outputs = [obj for obj in docs if obj["kind"] == "ClusterOutput"]
    assert outputs and all(obj["spec"]["opensearch"]["httpPassword"]["valueFrom"]["secretKeyRef"]["name"]
                           == "log-store-basic-auth" for obj in outputs)


def test_the_spec_defaults_hold_no_well_known_password():
    assert ROLE_VARIABLES["_kubesphere_spec_defaults"]["common"]["opensearch"]["basicAuth"]["password"] == ""


@pytest.mark.parametrize("tls,ports", [(True, [("https", 443, 8443, 30880)]), (False, [("nginx", 80, 8000, 30880)])])
def test_the_console_service_is_moved_to_the_ports_its_template_renders(tls, ports):
    rendered = render("_kubesphere_console_ports", kubesphere_console_tls=tls)
    assert [(port["name"], port["port"], port["targetPort"], port["nodePort"]) for port in rendered] == ports


def config_hash(config: str, version: str) -> str:
    return render("_kubesphere_config_hash", __kubesphere_config={"result": {"data": {"kubesphere.yaml": config}}},
                  __kubesphere_jwt_secret={"result": {"metadata": {"resourceVersion": version}}})


def test_ks_apiserver_restarts_when_the_jwt_secret_s_secret_changed_not_otherwise():
    """ks-apiserver reads the JWT secret from its environment at its start: a new version of the Secret (spec's
    jwtSecret changed) restarts it, as a change of kubesphere-config does; the same ones keep the annotation."""
    assert config_hash("a: 1", "7") == config_hash("a: 1", "7")
    assert config_hash("a: 1", "7") != config_hash("a: 1", "8")
    assert config_hash("a: 1", "7") != config_hash("a: 2", "7")
