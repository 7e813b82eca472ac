# Unit tests of the day-2 playbooks' own input: settings, the run (-e, --limit), the snapshot on the controller and
# what the API server's nodes say against the request, each refused with what to change.
from __future__ import annotations

import hashlib
import json
import struct

import pytest

from ansible_collections.slipway.cluster.plugins.module_utils._day2 import (
    PLAYBOOK_SETTINGS,
    Run,
    api_problems,
    bolt_problem,
    check_playbook,
    check_snapshot_file,
    words,
)
from ansible_collections.slipway.cluster.plugins.module_utils._lifecycle import running_cluster
from ansible_collections.slipway.cluster.plugins.module_utils._model import build_model
from ansible_collections.slipway.cluster.plugins.module_utils._problems import Collector
from ansible_collections.slipway.cluster.plugins.module_utils._settings import role_defaults_of

GROUPS = {"kube_control_plane": ["cp1", "cp2", "cp3"], "kube_node": ["w1", "w2"]}
HOSTVARS = {"cp1": {"ansible_host": "10.0.0.11"}, "cp2": {"ansible_host": "10.0.0.12"},
            "cp3": {"ansible_host": "10.0.0.13"}, "w1": {"ansible_host": "10.0.0.21"}, "w2": {"ansible_host": "10.0.0.22"}}


def model(groups=None, **settings):
    return build_model(groups or GROUPS, HOSTVARS, settings)


def check(playbook, values=None, the_model=None, **run):
    col = Collector()
    roles = {setting.role for setting in PLAYBOOK_SETTINGS.get(playbook, {}).values() if setting.role}
    run.setdefault("groups", {**GROUPS, "etcd": (the_model or {}).get("etcd_members", [])})
    settings = check_playbook(col, Run(playbook=playbook, values=values or {}, role_defaults=role_defaults_of(roles),
                                       **run), the_model)
    return [str(p) for p in col.problems], settings


def node(name, version="v1.36.5", ready=True, control_plane=False, address=None):
    labels = {"node-role.kubernetes.io/control-plane": ""} if control_plane else {}
    return {"metadata": {"name": name, "labels": labels},
            "status": {"nodeInfo": {"kubeletVersion": version},
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                       "addresses": [{"type": "InternalIP", "address": address or HOSTVARS.get(name, {}).get(
                           "ansible_host", "10.9.9.9")}, {"type": "Hostname", "address": name}]}}


CLUSTER = [node("cp1", control_plane=True), node("cp2", control_plane=True), node("cp3", control_plane=True),
           node("w1"), node("w2")]


def test_good_settings_are_given_back_typed_with_the_roles_defaults():
    found, settings = check("upgrade", {"upgrade_worker_batch": "2", "upgrade_drain_blockers_ignore": "a/b, c/d"})
    assert found == []
    assert settings["upgrade_worker_batch"] == 2
    assert settings["upgrade_drain_blockers_ignore"] == ["a/b", "c/d"]
    # The role's default, from roles/upgrade/defaults/main.yml.
    assert settings["upgrade_drain_timeout"] == 300


@pytest.mark.parametrize("playbook, name, value, message", [
    ("upgrade", "upgrade_drain_timeout", "five", "upgrade_drain_timeout: 'five' is not a whole number; set a whole number from 1 to 86400"),
    ("upgrade", "upgrade_worker_batch", "0", "upgrade_worker_batch: '0' is out of range"),
    ("upgrade", "upgrade_min_certificate_hours", "-1", "upgrade_min_certificate_hours: '-1' is out of range; set a number from 0"),
    ("upgrade", "upgrade_staging_dir", "tmp/x", "upgrade_staging_dir: 'tmp/x' is not an absolute path"),
    ("upgrade", "upgrade_drain_blockers_ignore", "coredns", "'coredns' is not a PodDisruptionBudget as namespace/name"),
    ("remove_node", "remove_node_force", "sure", "remove_node_force: 'sure' is not a boolean; set true or false"),
    ("remove_node", "remove_node_drain_timeout", True, "remove_node_drain_timeout: True is not a whole number"),
    ("certs", "certs_action", "renw", "certs_action: unknown value 'renw'; set one of: check, renew (did you mean renew?)"),
    ("certs", "certs_warn_days", "-3", "certs_warn_days: '-3' is out of range; set a whole number from 0 to 3650"),
    ("certs", "certs_renew_before", "tomorrow", "certs_renew_before: 'tomorrow' is not a time like 2027-01-31T00:00:00Z"),
    ("etcd_backup", "etcd_backup_keep", "0", "etcd_backup_keep: '0' is out of range"),
    ("etcd_backup", "etcd_backup_timer", "daily", "etcd_backup_timer: 'daily' is not a boolean"),
    ("rotate_encryption_key", "rotate_encryption_key_name", "new key!", "rotate_encryption_key_name: 'new key!' is not a key name"),
    ("reset", "reset_confirm", "yess", "reset_confirm: 'yess' is not a boolean"),
    ("scale", "scale_ready_timeout", "1h", "scale_ready_timeout: '1h' is not a whole number"),
])
def test_a_wrong_setting_is_named_with_what_to_set(playbook, name, value, message):
    values = {name: value}
    if playbook == "remove_node":
        values["remove_node_names"] = "w1"
    found, _settings = check(playbook, values)
    assert len(found) == 1 and message in found[0], found


def test_a_misspelt_setting_names_the_nearest_and_a_close_e_name_too():
    found, _settings = check("remove_node", {"remove_node_names": "w1", "remove_nodes_force": "true", "drain_timeout": 5},
                             given=["drain_timeout"])
    assert "remove_nodes_force: is not a setting of remove_node.yml; did you mean remove_node_force?" in found
    # Not close enough to a setting: a variable of the user's own.
    assert not [p for p in found if p.startswith("drain_timeout")]
    found, _settings = check("etcd_restore", {"etcd_snapshto": "/x.db"}, given=["etcd_snapshto"])
    assert "etcd_snapshto: is not a setting of etcd_restore.yml; did you mean etcd_snapshot?" in found


def test_a_variable_a_role_knows_is_no_misspelt_setting():
    found, _settings = check("upgrade", {"upgrade_plan_extra": 1}, known=frozenset({"upgrade_plan_extra"}))
    assert found == []


def test_words_ansible_dropped_from_e_are_named():
    found, _settings = check("remove_node", {"remove_node_names": "w1"}, raw_params="w2")
    assert any(p.startswith("-e: Ansible read 'w2' as no variable") and "-e remove_node_names=w1,w2" in p for p in found)


def test_names_are_a_list_of_node_names_from_commas_blanks_or_a_list():
    assert words("w1, w2 w3") == ["w1", "w2", "w3"]
    assert check("remove_node", {"remove_node_names": ["w1", "w2"]})[1]["remove_node_names"] == ["w1", "w2"]
    found, _settings = check("remove_node", {"remove_node_names": "W_1"})
    assert found == ["remove_node_names: 'W_1' is not a node name (lowercase letters, digits, '-' and '.'); give the "
                     "names kubectl get nodes shows"]


def test_required_inputs():
    assert check("remove_node")[0] == ["remove_node_names: is not set; name the node(s) to remove: -e "
                                       "remove_node_names=w3 (several: w2,w3)"]
    assert check("remove_node", {"remove_node_names": ""})[0][0].startswith("remove_node_names: is empty")
    assert check("etcd_restore")[0][0].startswith("etcd_snapshot: is not set; name the snapshot to restore")


def test_limit_is_refused_where_the_playbook_needs_every_host():
    found, _settings = check("upgrade", the_model=model(), limit="w1", play_hosts=["w1"])
    assert len(found) == 1 and found[0].startswith("--limit: w1 leaves out cp1, cp2, cp3, w2: upgrade.yml upgrades "
                                                   "the whole cluster"), found
    assert check("upgrade", the_model=model(), limit="all", play_hosts=list(HOSTVARS))[0] == []
    found, _settings = check("remove_node", {"remove_node_names": "w1"}, the_model=model(), limit="w1", play_hosts=["w1"])
    assert found[0].startswith("--limit: w1 leaves out cp1, cp2, cp3, w2: remove_node.yml takes the nodes")
    for playbook in ("etcd_restore", "recover_control_plane", "rotate_encryption_key"):
        found, _settings = check(playbook, {"etcd_snapshot": "/x.db"}, the_model=model(), limit="cp1", play_hosts=["cp1", "w1"])
        assert [p for p in found if p.startswith("--limit: cp1 leaves out cp2, cp3")], (playbook, found)
    # Honoured where the playbook says what it does and leaves out.
    for playbook in ("scale", "certs", "etcd_backup", "reset"):
        assert not [p for p in check(playbook, the_model=model(), limit="w1", play_hosts=["w1"])[0] if "--limit" in p]
    col = Collector()
    check_playbook(col, Run(playbook="certs", values={}, limit="w1", play_hosts=["w1"], groups=GROUPS), model())
    assert [str(w) for w in col.warnings] == ["--limit: w1: certs.yml lists (and with certs_action=renew renews) the "
                                              "certificates of w1 only; those of cp1, cp2, cp3, w2 are neither listed "
                                              "nor renewed"]


def test_rules_of_the_playbooks_on_the_model():
    found, _settings = check("rotate_encryption_key", the_model=model(slipway_secrets_encryption=False))
    assert found[0].startswith("slipway_secrets_encryption: is false: Secrets are not encrypted at rest, so there is "
                               "no key to rotate")
    groups = {**GROUPS, "etcd": ["w1", "w2", "cp1"]}
    found, _settings = check("recover_control_plane", {"etcd_snapshot": "/x.db"}, the_model=model(groups, slipway_etcd_mode="external"))
    assert found[0].startswith("etcd_snapshot: is set, but this cluster's etcd is external")
    found, _settings = check("remove_node", {"remove_node_names": "cp1,cp2,cp3"}, the_model=model())
    assert found[0].startswith("remove_node_names: would remove the last control plane (cp1, cp2, cp3)")


def bolt(size=8192):
    """The first page of a bbolt database as etcd writes it: a meta page, magic, version 2."""
    page = bytearray(size)
    struct.pack_into("<QHHI", page, 0, 0, 0x04, 0, 0)
    struct.pack_into("<II", page, 16, 0xED0CDAED, 2)
    return bytes(page)


def snapshot(tmp_path, content=None, record=True, cluster="slipway", **record_fields):
    path = tmp_path / "etcd-slipway-20261201T000000Z.db"
    content = bolt() if content is None else content
    path.write_bytes(content)
    if record:
        fields = {"cluster": cluster, "etcd_mode": "stacked", "ca_sha256": "c" * 64,
                  "sha256": hashlib.sha256(content).hexdigest(), **record_fields}
        (tmp_path / (path.name + ".json")).write_text(json.dumps(fields))
    return path


def snapshot_problems(path, etcdutl=None):
    col = Collector()
    found = check_snapshot_file(col, "etcd_snapshot", str(path), "slipway", "stacked", etcdutl)
    return [str(p) for p in col.problems], found


def test_a_good_snapshot_passes_with_its_sha256(tmp_path):
    path = snapshot(tmp_path)
    found, info = snapshot_problems(path, etcdutl=lambda _path: (True, ""))
    assert found == []
    assert info["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest() and info["metadata"]["cluster"] == "slipway"


def test_a_directory_is_named_a_directory_with_its_snapshots(tmp_path):
    snapshot(tmp_path)
    found, _info = snapshot_problems(tmp_path)
    assert found == [f"etcd_snapshot: {tmp_path} is a directory, not a snapshot file: give one of its snapshots "
                     "(etcd-slipway-20261201T000000Z.db, the newest last)"]


def test_the_record_given_as_the_snapshot_names_the_snapshot(tmp_path):
    path = snapshot(tmp_path)
    found, _info = snapshot_problems(str(path) + ".json")
    assert found == [f"etcd_snapshot: {path}.json is the record of the snapshot {path}, not the snapshot: give the "
                     f"snapshot itself, -e etcd_snapshot={path}"]


def test_random_bytes_with_a_record_are_not_a_snapshot(tmp_path):
    found, _info = snapshot_problems(snapshot(tmp_path, content=b"etcd snapshot " * 4096))
    assert len(found) == 1 and "is not an etcd snapshot: it does not start with a bbolt meta page" in found[0], found
    assert bolt_problem(b"short") == "it has 5 bytes, fewer than an etcd database's first page"


def test_etcdutl_is_asked_when_the_controller_has_it(tmp_path):
    asked = []
    found, _info = snapshot_problems(snapshot(tmp_path), etcdutl=lambda path: (asked.append(path), (False, "invalid database"))[1])
    assert asked and found[0].endswith("etcdutl snapshot status says invalid database; restore another snapshot")


def test_damaged_missing_record_other_cluster(tmp_path):
    found, _info = snapshot_problems(snapshot(tmp_path, record=True, sha256="0" * 64))
    assert [p for p in found if "is damaged: its sha256 is" in p]
    (tmp_path / "etcd-slipway-20261201T000000Z.db.json").unlink()
    found, _info = snapshot_problems(tmp_path / "etcd-slipway-20261201T000000Z.db")
    assert found[0].endswith(".db.json, the snapshot's record (its sha256 and the cluster it was taken from), is missing: "
                             "without it the snapshot can be checked neither for damage nor for its cluster; restore "
                             "only snapshots etcd_backup.yml took, with the .json beside them")
    found, _info = snapshot_problems(snapshot(tmp_path / ".." / tmp_path.name, cluster="elsewhere"))
    assert [p for p in found if "is a snapshot of cluster 'elsewhere', not of 'slipway'" in p]
    found, _info = snapshot_problems(tmp_path / "nothing.db")
    assert found[0].startswith(f"etcd_snapshot: {tmp_path}/nothing.db does not exist on the controller")


def test_upgrade_knows_from_the_api_a_downgrade_a_jump_and_nodes_either_side_lacks():
    running = running_cluster([node("cp1", "v1.37.2", control_plane=True), node("cp2", control_plane=True),
                               node("cp3", control_plane=True), node("w1"), node("w9")])
    found = api_problems(model(), running, "upgrade", {"upgrade_worker_batch": 1})
    joined = "\n".join(found)
    assert "node cp1 runs kubelet 1.37.2, kube-apiserver 1.37.2" in joined and "does not downgrade" in joined
    assert "w2 is in the inventory but not in the cluster" in joined
    assert "the cluster has w9, which the inventory lacks" in joined
    running = running_cluster([node(name, "v1.35.9", control_plane=name.startswith("cp")) for name in HOSTVARS])
    found = api_problems(model(), running, "upgrade", {})
    assert any("run 1.35.9: one minor version at a time, so upgrade to the newest 1.36 release first" in p for p in found)
    # One minor up, every node Ready and known: nothing said before the hosts are read.
    assert api_problems(model(), running_cluster(CLUSTER), "upgrade", {}) == []


def test_scale_refuses_another_version_a_replaced_machine_and_a_new_first_control_plane():
    running = running_cluster([node("cp1", control_plane=True), node("cp2", control_plane=True),
                               node("cp3", control_plane=True), node("w1", address="10.0.0.99")])
    found = api_problems(model(), running, "scale", {})
    assert found[1].startswith("slipway_kubernetes_version is 1.37.1, the version new nodes join at, but the cluster "
                               "runs cp1, cp2, cp3, w1 at 1.36.5: w2 would join at another version than the cluster's; "
                               "set slipway_kubernetes_version: 1.36.5"), found
    assert ("host w1: the inventory gives it the address 10.0.0.21, but the cluster's Node w1 has 10.0.0.99: a machine "
            "replaced under an old node's name") in found[0], found
    assert api_problems(model(slipway_kubernetes_version="1.36.5"), running_cluster(CLUSTER), "scale", {}) == []
    running = running_cluster([node("cp2", control_plane=True), node("cp3", control_plane=True)])
    found = api_problems(model(slipway_kubernetes_version="1.36.5"), running, "scale", {})
    assert found == ["cp1, the first host of kube_control_plane, is not a node of the cluster (cp2, cp3): new hosts "
                     "join through the first control plane, so list a running one first"]


def test_a_node_the_cluster_knows_at_another_address_or_in_another_role():
    running = running_cluster([node("cp1", control_plane=True), node("cp2"), node("cp3", control_plane=True),
                               node("w1", control_plane=True), node("w2", address="10.0.0.98")])
    found = api_problems(model(), running, "upgrade", {})
    assert ("host cp2: the inventory makes it a control plane (kube_control_plane), but the cluster's Node cp2 is a "
            "worker (no node-role.kubernetes.io/control-plane label): upgrade.yml would treat it as what it is not; put "
            "it in kube_node only, as it runs") in found, found
    assert ("host w1: the inventory makes it a worker (kube_node only), but the cluster's Node w1 is a control plane: "
            "upgrade.yml would treat it as what it is not; put it in kube_control_plane (and etcd with stacked etcd), as "
            "it runs") in found
    assert [p for p in found if p.startswith("host w2: the inventory gives it the address 10.0.0.22, but the cluster's "
                                             "Node w2 has 10.0.0.98: upgrade.yml would drain the Node and upgrade the "
                                             "machine at the inventory's address, another one")]
    removal = build_model(GROUPS, HOSTVARS, {}, exclude=["w2"])
    assert removal["excluded_addresses"] == {"w2": "10.0.0.22"}
    found = api_problems(removal, running, "remove_node", {"remove_node_names": ["w2"]})
    assert found == ["host w2: the inventory gives it the address 10.0.0.22, but the cluster's Node w2 has 10.0.0.98: "
                     "remove_node.yml would drain the Node and reset the machine at the inventory's address, another "
                     "one; correct ip:/ansible_host to the Node's address, or take w2 out of the inventory's groups to "
                     "remove the Node without touching a machine"]


def test_remove_node_refuses_before_contact():
    removal = build_model(GROUPS, HOSTVARS, {}, exclude=["cp1", "cp2"])
    assert removal["excluded"] == ["cp1", "cp2"]
    found = api_problems(removal, running_cluster(CLUSTER), "remove_node", {"remove_node_names": ["cp1", "cp2"]})
    assert found == ["remove_node_names: removes 2 of the 3 control planes (cp1, cp2), and with them their etcd "
                     "members: etcd would keep 1 (cp3), fewer than its quorum of 2 today, and survive no failure; remove "
                     "one at a time and add control planes back (playbooks/scale.yml), or set remove_node_etcd_shrink_ok: "
                     "true if you mean it"]
    # One of three: etcd keeps its quorum (remove_node.yml warns of the even count).
    assert api_problems(build_model(GROUPS, HOSTVARS, {}, exclude=["cp2"]), running_cluster(CLUSTER), "remove_node",
                        {"remove_node_names": ["cp2"]}) == []
    assert api_problems(removal, running_cluster(CLUSTER), "remove_node",
                        {"remove_node_names": ["cp1", "cp2"], "remove_node_etcd_shrink_ok": True}) == []
    removal = build_model(GROUPS, HOSTVARS, {}, exclude=["w3"])
    found = api_problems(removal, running_cluster(CLUSTER[:4] + [node("w2", ready=False)]), "remove_node",
                         {"remove_node_names": ["w3"]})
    assert found[0] == ("remove_node_names: 'w3' is neither a node of the cluster nor a host of the inventory "
                        "(nodes: cp1, cp2, cp3, w1, w2); check the name")
    assert found[1].startswith("remove_node_names: node(s) w2 not Ready")
    # A node of the inventory that the cluster no longer has: a rerun of a removal, not an unknown name.
    removal = build_model(GROUPS, HOSTVARS, {}, exclude=["w2"])
    assert api_problems(removal, running_cluster(CLUSTER[:4]), "remove_node", {"remove_node_names": ["w2"]}) == []


def test_reset_with_limit_refuses_nodes_of_the_running_cluster():
    found = api_problems(model(), running_cluster(CLUSTER), "reset", {}, play_hosts=["w1"], limit="w1")
    assert found[0].startswith("--limit w1 resets w1, a node of the running cluster (the API server lists them)")
    assert "remove_node.yml -e remove_node_names=w1" in found[0] and "-e reset_in_cluster_ok=true" in found[0]
    assert api_problems(model(), running_cluster(CLUSTER[:4]), "reset", {}, play_hosts=["w2"], limit="w2") == []
    assert api_problems(model(), running_cluster(CLUSTER), "reset", {"reset_in_cluster_ok": True},
                        play_hosts=["w1"], limit="w1") == []


def test_the_schema_agrees_with_the_roles_argument_specs():
    import pathlib

    import yaml
    specs = yaml.safe_load((pathlib.Path(__file__).parents[4] / "roles/upgrade/meta/argument_specs.yml").read_text())
    types = {"int": "int", "number": "float", "budgets": "list", "path": "path"}
    for entry in specs["argument_specs"].values():
        for name, option in (entry.get("options") or {}).items():
            setting = PLAYBOOK_SETTINGS["upgrade"][name]
            assert setting.role == "upgrade", name
            assert option["type"] in (types[setting.kind], "int" if setting.kind == "number" else ""), name


def test_the_playbooks_import_the_preflight_role_without_per_host_validation():
    # Validated on every host, the preflight role's argument spec cost 35 ms a host before the model's one check:
    # 37 s of a 1,000-host refusal (docs/performance.md). The model checks the settings once per run instead.
    import pathlib

    import yaml
    imports = []

    def walk(tasks, where):
        for task in tasks or []:
            for block in ("block", "rescue", "always"):
                walk(task.get(block), where)
            role = task.get("ansible.builtin.import_role") or task.get("ansible.builtin.include_role")
            if role and role.get("name") == "slipway.cluster.preflight" and role.get("tasks_from") != "inventory":
                imports.append((where, role.get("tasks_from"), role.get("rolespec_validate")))

    for path in sorted((pathlib.Path(__file__).parents[4] / "playbooks").glob("*.yml")):
        for play in yaml.safe_load(path.read_text()) or []:
            walk(play.get("tasks"), path.name)
    assert len(imports) >= 15, imports
    assert [entry for entry in imports if entry[2] is not False] == []
