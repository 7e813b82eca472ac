"""Tests of lab/lab_fleet.py: docs/fleet.md's prod.yml found on the page and given the lab's values, the spare
nodes read from the inventory lab/lab.py writes, and the Secret of the lab's key."""

import base64
import json
import os
import pathlib

import pytest
import yaml

import lab
import lab_fleet

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

DOCS = pathlib.Path(ROOT, "docs", "fleet.md").read_text(encoding="utf-8")


def test_the_example_is_the_pages_prod_yml():
    doc = lab_fleet.example(DOCS)
    assert doc["kind"] == "SlipwayCluster" and doc["metadata"] == {"name": "prod", "namespace": "fleet"}
    assert doc["spec"]["sshKeySecretRef"] == {"name": lab_fleet.SECRET}
    assert doc["spec"]["artifacts"] == {"source": "bundle", "bundleDir": "/bundle"}
    assert len(doc["spec"]["hosts"]) == 1


def test_a_page_without_the_block_says_so():
    with pytest.raises(lab_fleet.LabFleetError, match="no SlipwayCluster block starting with '# prod.yml'"):
        lab_fleet.example("```yaml\n# prod.yml, a worker added\n  hosts: []\n```\n")


def test_the_lab_values_go_into_the_example_and_the_rest_stays():
    doc = lab_fleet.example(DOCS)
    kubelet = lab.LAB_KUBELET_CONFIGURATION
    lab_doc = lab_fleet.lab_cluster(doc, "10.88.100.16", "1.36.5", kubelet)
    assert lab_doc["spec"]["hosts"] == [dict(doc["spec"]["hosts"][0], address="10.88.100.16")]
    assert lab_doc["spec"]["kubernetesVersion"] == "1.36.5"
    variables = lab_doc["spec"]["variables"]
    # Each variable is a YAML text, as the CRD keeps it; the kubelet's settings read back as the lab's.
    assert yaml.safe_load(variables["control_plane_kubelet_configuration"]) == kubelet
    assert {k: v for k, v in variables.items() if k != "control_plane_kubelet_configuration"} == doc["spec"]["variables"]
    assert {k: v for k, v in lab_doc["spec"].items() if k not in ("hosts", "kubernetesVersion", "variables")} == \
        {k: v for k, v in doc["spec"].items() if k not in ("hosts", "kubernetesVersion", "variables")}
    assert doc["spec"]["hosts"][0]["address"] == "10.0.0.11"  # the page's own document is not changed


def test_an_example_of_two_hosts_is_refused():
    doc = {"metadata": {"name": "x"}, "spec": {"hosts": [{"name": "a"}, {"name": "b"}]}}
    with pytest.raises(lab_fleet.LabFleetError, match="must list one host, not 2"):
        lab_fleet.lab_cluster(doc, "10.88.100.16", "1.37.1", None)


def test_the_spare_nodes_are_read_from_the_inventory_lab_py_writes():
    nodes = {"cp1": lab.Node("cp1", ("kube_control_plane", "etcd"), "10.88.100.11"),
             "w1": lab.Node("w1", ("kube_node",), "10.88.100.12"),
             "t1": lab.Node("t1", ("fleet_hosts",), "10.88.100.13"),
             "t2": lab.Node("t2", ("fleet_hosts",), "10.88.100.14")}
    text = lab.render_inventory(lab.Cluster("lab", "10.88.100.0/24", nodes), pathlib.Path("/k/id"), {})
    inventory = yaml.safe_load(text.split("---\n", 1)[1])
    assert lab_fleet.spare_hosts(inventory) == [("t1", "10.88.100.13"), ("t2", "10.88.100.14")]
    assert lab_fleet.spare_hosts({"all": {"hosts": {}, "children": {"kube_node": {}}}}) == []


@pytest.mark.parametrize("manifest, version", [({"kubernetes_version": "v1.37.1"}, "1.37.1"),
                                               ({"kubernetes_version": "1.36.5"}, "1.36.5")])
def test_the_bundles_release(manifest, version):
    assert lab_fleet.bundle_version(manifest) == version


def test_a_manifest_without_a_release_says_what_to_do():
    with pytest.raises(lab_fleet.LabFleetError, match="build the bundle first"):
        lab_fleet.bundle_version({})


def test_the_secret_holds_the_key_under_the_name_the_jobs_read(tmp_path):
    key = tmp_path / "id_ed25519"
    key.write_bytes(b"-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n")
    secret = lab_fleet.secret_manifest(key)
    assert secret["metadata"] == {"name": "fleet-ssh", "namespace": "fleet"}
    assert base64.b64decode(secret["data"]["ssh-privatekey"]) == key.read_bytes()
    assert json.loads(json.dumps(secret)) == secret


def test_an_inventory_without_spare_nodes_says_how_to_get_one(tmp_path, capsys):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {"cp1": {"ansible_host": "10.88.100.11"}},
                                                 "children": {"kube_control_plane": {"hosts": {"cp1": {}}}}}}))
    assert lab_fleet.main(["--inventory", str(inventory), "--bundle", str(tmp_path)]) == 1
    assert "no node in group fleet_hosts: make lab-fleet starts one" in capsys.readouterr().err


def test_the_file_written_reads_back_and_passes_the_repositorys_yamllint():
    from yamllint import config, linter  # pylint: disable=import-outside-toplevel
    doc = lab_fleet.lab_cluster(lab_fleet.example(DOCS), "10.88.100.16", "1.37.1", lab.LAB_KUBELET_CONFIGURATION)
    text = lab_fleet.render(doc, "t1", "10.88.100.16")
    assert yaml.safe_load(text) == doc
    rules = config.YamlLintConfig(file=os.path.join(ROOT, ".yamllint"))
    assert [str(problem) for problem in linter.run(text, rules)] == []
