"""The etcd role's preflight on fake members: which hosts join a running cluster, and every refusal.

The role's real preflight tasks run against hosts on a local connection whose certificates, data
directories and etcd.env live under a temporary directory; etcdctl is a script that answers with
the member list and health given by each test. Nothing here touches a real etcd.
"""

from __future__ import annotations

import base64
import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, VENV_BIN, run

HOSTS = ("cp1", "cp2", "cp3", "cp4")
CERTS = ("ca.crt", "ca.key", "server.crt", "peer.crt", "healthcheck-client.crt")
FOUNDED = ["ETCD_INITIAL_CLUSTER=cp1=https://10.0.0.1:2380,cp2=https://10.0.0.2:2380,cp3=https://10.0.0.3:2380",
           "ETCD_INITIAL_CLUSTER_STATE=new", "ETCD_INITIAL_CLUSTER_TOKEN=lab-etcd"]

PLAYBOOK = textwrap.dedent("""\
    - name: Run the etcd role's preflight on fake members
      hosts: all
      gather_facts: false
      vars:
        slipway_cluster:
          name: lab
          etcd_mode: external
          etcd_members: "{{ members }}"
          control_planes: [cp1, cp2, cp3]
          artifacts: {binaries: [{name: etcd, sha256: "0123"}]}
          nodes:
            cp1: {address: 10.0.0.1, url_host: 10.0.0.1}
            cp2: {address: 10.0.0.2, url_host: 10.0.0.2}
            cp3: {address: 10.0.0.3, url_host: 10.0.0.3}
            cp4: {address: 10.0.0.4, url_host: 10.0.0.4}
      tasks:
        - name: Run the preflight
          block:
            - name: Run the etcd role's preflight
              ansible.builtin.include_role:
                name: slipway.cluster.etcd
                tasks_from: preflight
                public: true

            - name: Show what it decided
              ansible.builtin.debug:
                msg: "DECIDED {{ {'joining': _etcd_joining, 'with_data': _etcd_with_data, 'ca_host': _etcd_ca_host} | to_json }}"
              run_once: true

            - name: Show each member's etcd.env
              ansible.builtin.debug:
                msg: "ENV {{ inventory_hostname }} {{ lookup('ansible.builtin.template', env_template) | b64encode }}"
              vars:
                env_template: "{{ playbook_dir }}/../roles/etcd/templates/etcd.env.j2"
              when: inventory_hostname in members
          rescue:
            - name: Show why it stopped
              ansible.builtin.debug:
                msg: "REFUSED {{ ansible_failed_result.msg }}"
              run_once: true
    """)

ETCDCTL = textwrap.dedent("""\
    #!/bin/sh
    here=$(dirname "$0")
    case "$*" in
      "member list --write-out=json") cat "$here/members.json"; exit "$(cat "$here/members.rc")";;
      "endpoint health --cluster --write-out=json") cat "$here/health.json"; exit 1;;
    esac
    exit 2
    """)


def member(number: int, started: bool = True) -> dict[str, Any]:
    entry: dict[str, Any] = {"ID": 1000 + number, "peerURLs": [f"https://10.0.0.{number}:2380"]}
    if started:
        entry.update(name=f"cp{number}", clientURLs=[f"https://10.0.0.{number}:2379"])
    return entry


def health(*numbers: int, sick: tuple[int, ...] = ()) -> list[dict[str, Any]]:
    return [{"endpoint": f"https://10.0.0.{n}:2379", "health": n not in sick} for n in numbers]


def play(tmp_path: Path, tool, hosts: dict[str, set[str]], members: list[str], listed: Any = None,
         healthy: Any = None, list_rc: int = 0, admin_conf: bool = False, limit: str | None = None) -> dict[str, Any]:
    """Lay out each host's files (hosts: name -> {"certs", "data"}), run the preflight, return what it printed."""
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "etcdctl").write_text(ETCDCTL)
    (fake_bin / "etcdctl").chmod(0o755)
    (fake_bin / "members.json").write_text(json.dumps({"members": listed or []}) if list_rc == 0 else "")
    (fake_bin / "members.rc").write_text(str(list_rc))
    (fake_bin / "health.json").write_text(json.dumps(healthy or []))
    for name, holds in hosts.items():
        base = tmp_path / "fs" / name
        (base / "pki" / "etcd").mkdir(parents=True)
        (base / "etc").mkdir()
        (base / "data").mkdir()
        if "certs" in holds:
            for cert in CERTS:
                (base / "pki" / "etcd" / cert).write_text(f"{cert}\n")
        if "data" in holds:
            (base / "data" / "member").mkdir()
            (base / "etc" / "etcd.env").write_text("\n".join(FOUNDED) + f"\nETCD_INITIAL_ADVERTISE_PEER_URLS=was-{name}\n")
    admin = tmp_path / "admin.conf"
    if admin_conf:
        admin.write_text("kubeconfig\n")
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(textwrap.dedent(f"""\
        all:
          vars:
            ansible_connection: local
            ansible_python_interpreter: {VENV_BIN / 'python'}
            etcd_pki_dir: "{tmp_path}/fs/{{{{ inventory_hostname }}}}/pki"
            etcd_data_dir: "{tmp_path}/fs/{{{{ inventory_hostname }}}}/data"
            etcd_config_dir: "{tmp_path}/fs/{{{{ inventory_hostname }}}}/etc"
            etcd_bin_dir: "{fake_bin}"
          hosts: {{{", ".join(f"{name}: {{}}" for name in HOSTS)}}}
        """))
    (tmp_path / "playbooks").mkdir()
    playbook = tmp_path / "playbooks" / "preflight.yml"
    playbook.write_text(PLAYBOOK.replace("{{ playbook_dir }}/../roles", str(ROOT / "roles")))
    extra = {"members": members, "_etcd_admin_conf": str(admin)}
    limit = limit or ",".join(dict.fromkeys(members + ["cp1", "cp2", "cp3"]))
    args = [tool("ansible-playbook"), "-i", str(inventory), str(playbook), "-e", json.dumps(extra), "--limit", limit]
    result = run(args, env={"ANSIBLE_CALLBACK_RESULT_FORMAT": "json"})
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    found: dict[str, Any] = {"env": {}, "refused": None}
    for line in output.splitlines():
        match = re.match(r'\s*"msg": (".*")\s*$', line)
        if not match:
            continue
        kind, _space, rest = json.loads(match.group(1)).partition(" ")
        if kind == "DECIDED":
            found["decided"] = json.loads(rest)
        elif kind == "ENV":
            name, text = rest.split(" ", 1)
            found["env"][name] = dict(
                row.split("=", 1) for row in base64.b64decode(text).decode().splitlines() if row.startswith("ETCD_INITIAL_"))
        elif kind == "REFUSED":
            found["refused"] = " ".join(rest.split())
    return found


def test_a_new_cluster_starts_with_every_member(tmp_path, tool):
    found = play(tmp_path, tool, {"cp1": set(), "cp2": set(), "cp3": set()}, ["cp1", "cp2", "cp3"])
    assert found["refused"] is None
    assert found["decided"] == {"joining": [], "with_data": [], "ca_host": "cp1"}
    for name in ("cp1", "cp2", "cp3"):
        assert found["env"][name] == {
            "ETCD_INITIAL_CLUSTER": FOUNDED[0].split("=", 1)[1],
            "ETCD_INITIAL_CLUSTER_STATE": "new",
            "ETCD_INITIAL_CLUSTER_TOKEN": "lab-etcd",
            "ETCD_INITIAL_ADVERTISE_PEER_URLS": f"https://10.0.0.{name[-1]}:2380",
        }


@pytest.mark.parametrize("stale", [True, False], ids=["stale-entry", "entry-removed"])
def test_a_member_whose_data_is_gone_joins_and_the_others_keep_their_settings(tmp_path, tool, stale):
    listed = [member(1), member(2)] + ([member(3)] if stale else [])
    found = play(tmp_path, tool, {"cp1": {"certs", "data"}, "cp2": {"certs", "data"}, "cp3": {"certs"}},
                 ["cp1", "cp2", "cp3"], listed, health(1, 2, 3, sick=(3,)))
    assert found["refused"] is None
    assert found["decided"] == {"joining": ["cp3"], "with_data": ["cp1", "cp2"], "ca_host": "cp1"}
    # Members that hold data keep what their etcd.env has, down to a value the role would not write.
    assert found["env"]["cp1"]["ETCD_INITIAL_ADVERTISE_PEER_URLS"] == "was-cp1"
    assert found["env"]["cp2"]["ETCD_INITIAL_CLUSTER_STATE"] == "new"
    assert found["env"]["cp3"] == {
        "ETCD_INITIAL_CLUSTER": "cp1=https://10.0.0.1:2380,cp2=https://10.0.0.2:2380,cp3=https://10.0.0.3:2380",
        "ETCD_INITIAL_CLUSTER_STATE": "existing",
        "ETCD_INITIAL_CLUSTER_TOKEN": "lab-etcd",
        "ETCD_INITIAL_ADVERTISE_PEER_URLS": "https://10.0.0.3:2380",
    }


def test_a_new_host_joins_with_the_ca_of_the_first_member(tmp_path, tool):
    hosts = {"cp1": {"certs", "data"}, "cp2": {"certs", "data"}, "cp3": {"certs", "data"}, "cp4": set()}
    found = play(tmp_path, tool, hosts, ["cp1", "cp2", "cp3", "cp4"], [member(1), member(2), member(3)], health(1, 2, 3))
    assert found["refused"] is None
    assert found["decided"] == {"joining": ["cp4"], "with_data": ["cp1", "cp2", "cp3"], "ca_host": "cp1"}
    assert found["env"]["cp4"]["ETCD_INITIAL_CLUSTER"] == (
        "cp1=https://10.0.0.1:2380,cp2=https://10.0.0.2:2380,cp3=https://10.0.0.3:2380,cp4=https://10.0.0.4:2380")


def test_a_replaced_first_member_gets_the_ca_of_another(tmp_path, tool):
    found = play(tmp_path, tool, {"cp1": set(), "cp2": {"certs", "data"}, "cp3": {"certs", "data"}},
                 ["cp1", "cp2", "cp3"], [member(2), member(3)], health(2, 3))
    assert found["refused"] is None
    assert found["decided"] == {"joining": ["cp1"], "with_data": ["cp2", "cp3"], "ca_host": "cp2"}


def test_an_entry_added_by_a_stopped_run_is_used(tmp_path, tool):
    listed = [member(1), member(2), member(3, started=False)]
    found = play(tmp_path, tool, {"cp1": {"certs", "data"}, "cp2": {"certs", "data"}, "cp3": {"certs"}},
                 ["cp1", "cp2", "cp3"], listed, health(1, 2))
    assert found["refused"] is None
    assert found["env"]["cp3"]["ETCD_INITIAL_CLUSTER"] == (
        "cp1=https://10.0.0.1:2380,cp2=https://10.0.0.2:2380,cp3=https://10.0.0.3:2380")


REPLACE = {"cp1": {"certs", "data"}, "cp2": {"certs", "data"}, "cp3": {"certs"}}


@pytest.mark.parametrize(("kwargs", "expected"), [
    pytest.param(
        {"listed": [member(1), member(2), member(3)], "healthy": health(1, 2, 3, sick=(2, 3))},
        ["etcd member cp2 (ID 3ea, https://10.0.0.2:2379) is not healthy",
         "only 1 of its 3 members is healthy, fewer than the 2 a quorum needs"],
        id="quorum-would-be-lost"),
    pytest.param(
        {"list_rc": 1},
        ["cp3 would join the running etcd cluster of cp1, cp2, but no member answered etcdctl member list"],
        id="no-answer"),
    pytest.param(
        {"listed": [member(1), member(3)], "healthy": health(1, 3)},
        ["cp2 holds data of another etcd cluster (it is no member of this one)"],
        id="data-of-another-cluster"),
    pytest.param(
        {"listed": [member(1), member(2), {"ID": 1009, "peerURLs": ["https://10.0.0.9:2380"]}], "healthy": health(1, 2)},
        ["etcd member 3f1 (https://10.0.0.9:2380) was added but never started and is no host of the etcd group"],
        id="unknown-unstarted-member"),
    pytest.param(
        {"listed": [member(1), member(2), {**member(3), "name": "old"}], "healthy": health(1, 2, 3)},
        ["etcd member old (ID 3eb) has the peer URL https://10.0.0.3:2380 of cp3"],
        id="peer-url-taken"),
])
def test_a_member_is_not_added_when(tmp_path, tool, kwargs, expected):
    found = play(tmp_path, tool, REPLACE, ["cp1", "cp2", "cp3"], **kwargs)
    assert found["refused"], found
    for text in expected:
        assert text in found["refused"]
    assert found["refused"].endswith("Nothing was changed.")


def test_a_new_cluster_is_not_started_under_a_cluster_that_ran(tmp_path, tool):
    found = play(tmp_path, tool, {"cp1": {"certs"}, "cp2": {"certs"}, "cp3": {"certs"}}, ["cp1", "cp2", "cp3"],
                 admin_conf=True)
    assert "No etcd member holds data, but kubeadm init has run on cp1, cp2, cp3" in found["refused"]
    assert "etcdutl snapshot restore" in found["refused"]


def test_a_new_cluster_needs_every_member_in_the_play(tmp_path, tool):
    found = play(tmp_path, tool, {"cp1": set(), "cp2": set(), "cp3": set()}, ["cp1", "cp2", "cp3"], limit="cp1,cp2")
    assert "cp3 is not in it and may hold the running cluster's data" in found["refused"]
