"""Which bundle images the artifacts role imports on a node (roles/artifacts/vars/main.yml, _artifacts_node_images).

The role's own variables are evaluated by ansible-playbook for a cluster model of each kind: control-plane images
only on control planes, the operator's image only where the operator runs, KubeSphere's monitoring images (the
model's kubesphere_only: the bundle's kubesphere_* components) only on clusters with KubeSphere or where the
operator, which installs its components, is deployed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, run

IMAGES = {
    "pause": {"ref": "registry.k8s.io/pause:3.10.2", "control_plane_only": False, "kubesphere_only": False},
    "kube-apiserver": {"ref": "registry.k8s.io/kube-apiserver:v1.37.1", "control_plane_only": True,
                       "kubesphere_only": False},
    "slipway-operator": {"ref": "localhost/slipway/operator:0.1.0", "control_plane_only": False,
                         "kubesphere_only": False},
    "prometheus": {"ref": "docker.io/prom/prometheus:v2.39.1", "control_plane_only": False, "kubesphere_only": True},
    "node-exporter": {"ref": "docker.io/prom/node-exporter:v1.3.1", "control_plane_only": False,
                      "kubesphere_only": True},
}
MONITORING = {"prometheus", "node-exporter"}

# (case, node roles, kubesphere_enabled, operator_enabled, artifacts_operator_image, artifacts_operator_kubesphere_images,
#  images expected)
CASES = [
    ("plain-worker", ["worker"], False, False, False, True, {"pause"}),
    ("plain-control-plane", ["control_plane"], False, False, False, True, {"pause", "kube-apiserver"}),
    ("kubesphere-worker", ["worker"], True, False, False, True, {"pause"} | MONITORING),
    ("kubesphere-operator", ["worker"], True, True, False, True, {"pause", "slipway-operator"} | MONITORING),
    ("operator-playbook", ["worker"], False, False, True, True, {"pause", "slipway-operator"} | MONITORING),
    # playbooks/fleet.yml: the operator's image for the fleet's controller and Jobs, without KubeSphere's.
    ("fleet-playbook", ["worker"], False, False, True, False, {"pause", "slipway-operator"}),
    ("fleet-playbook-on-kubesphere", ["worker"], True, False, True, False, {"pause", "slipway-operator"} | MONITORING),
    ("kubesphere-control-plane", ["control_plane"], True, False, False, True, {"pause", "kube-apiserver"} | MONITORING),
]


@pytest.fixture(name="chosen", scope="module")
def fixture_chosen(tmp_path_factory) -> dict[str, set[str]]:
    """{case: the image names _artifacts_node_images holds}, from one ansible-playbook run of a play per case."""
    tmp_path = tmp_path_factory.mktemp("images")
    plays = []
    for case, roles, kubesphere, operator, operator_image, with_kubesphere, _expected in CASES:
        model = {"artifacts": {"source": "bundle", "binaries": [], "images": IMAGES},
                 "nodes": {"localhost": {"kubernetes": True, "roles": roles}},
                 "kubesphere_enabled": kubesphere, "operator_enabled": operator}
        plays.append({
            "name": case,
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "vars": {"slipway_cluster": model, "artifacts_operator_image": operator_image,
                     "artifacts_operator_kubesphere_images": with_kubesphere,
                     "ansible_python_interpreter": "{{ ansible_playbook_python }}"},
            "tasks": [
                {"name": "The artifacts role's variables",
                 "ansible.builtin.include_vars": {"file": str(ROOT / "roles" / "artifacts" / "vars" / "main.yml")}},
                {"name": "Write the images this node gets",
                 "ansible.builtin.copy": {
                     "content": "{{ _artifacts_node_images | map(attribute='key') | sort | to_json }}",
                     "dest": str(tmp_path / f"{case}.json"), "mode": "0644"}},
            ],
        })
    playbook = tmp_path / "images.yml"
    playbook.write_text(yaml.safe_dump(plays, sort_keys=False))
    result = run([str(ROOT / ".venv/bin/ansible-playbook"), "-i", "localhost,", str(playbook)], cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return {case: set(json.loads(Path(tmp_path / f"{case}.json").read_text())) for case, *_rest in CASES}


@pytest.mark.parametrize("case,expected", [(case[0], case[-1]) for case in CASES], ids=[case[0] for case in CASES])
def test_a_node_gets_the_images_its_cluster_runs(chosen, case, expected):
    assert chosen[case] == expected
