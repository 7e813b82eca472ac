"""Facts only as ansible_facts['name']: no injected fact variable (ansible_hostname, ansible_default_ipv4, ...) in the
collection, the scenarios and the tools, and no run of the checkout that injects them.

ansible-core 2.20 deprecates facts injected as top-level variables (INJECT_FACTS_AS_VARS) and 2.24 removes them. The
checkout's ansible.cfg, the Molecule scenarios' configuration and the operator's runs set inject_facts_as_vars to
false, so every playbook run proves the collection works without them; this reads the files, so a fact name that only
a lab scenario would reach is caught in a second, without a cluster.
"""

from __future__ import annotations

import io
import re
import subprocess
import tokenize
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]

# The facts of ansible.builtin.setup (ansible-core 2.19, Debian 12 and 13, every subset, ansible_ prefixed as Ansible
# injects them), and those of collectors that report only where their source exists (ssh host keys, systemd,
# facter, ohai). Not here: ansible_local, which Ansible gives as a variable whether it injects facts or not.
FACTS = frozenset("""
    ansible_all_ipv4_addresses ansible_all_ipv6_addresses ansible_apparmor ansible_architecture ansible_bios_date
    ansible_bios_vendor ansible_bios_version ansible_board_asset_tag ansible_board_name ansible_board_serial
    ansible_board_vendor ansible_board_version ansible_chassis_asset_tag ansible_chassis_serial ansible_chassis_vendor
    ansible_chassis_version ansible_cmdline ansible_date_time ansible_default_ipv4 ansible_default_ipv6
    ansible_device_links ansible_devices ansible_distribution ansible_distribution_file_parsed
    ansible_distribution_file_path ansible_distribution_file_variety ansible_distribution_major_version
    ansible_distribution_minor_version ansible_distribution_release ansible_distribution_version ansible_dns
    ansible_domain ansible_effective_group_id ansible_effective_user_id ansible_env ansible_facter
    ansible_fibre_channel_wwn ansible_fips ansible_form_factor ansible_fqdn ansible_hostname ansible_hostnqn
    ansible_interfaces ansible_is_chroot ansible_iscsi_iqn ansible_kernel ansible_kernel_version ansible_loadavg
    ansible_locally_reachable_ips ansible_lsb ansible_lvm ansible_machine ansible_machine_id ansible_memfree_mb
    ansible_memory_mb ansible_memtotal_mb ansible_mounts ansible_nodename ansible_ohai ansible_os_family
    ansible_pkg_mgr ansible_proc_cmdline ansible_processor ansible_processor_cores ansible_processor_count
    ansible_processor_nproc ansible_processor_threads_per_core ansible_processor_vcpus ansible_product_name
    ansible_product_serial ansible_product_uuid ansible_product_version ansible_python ansible_python_version
    ansible_real_group_id ansible_real_user_id ansible_selinux ansible_selinux_python_present ansible_service_mgr
    ansible_ssh_host_key_dsa_public ansible_ssh_host_key_dsa_public_keytype ansible_ssh_host_key_ecdsa_public
    ansible_ssh_host_key_ecdsa_public_keytype ansible_ssh_host_key_ed25519_public
    ansible_ssh_host_key_ed25519_public_keytype ansible_ssh_host_key_rsa_public ansible_ssh_host_key_rsa_public_keytype
    ansible_swapfree_mb ansible_swaptotal_mb ansible_system ansible_system_capabilities
    ansible_system_capabilities_enforced ansible_system_vendor ansible_systemd ansible_uptime_seconds ansible_user_dir
    ansible_user_gecos ansible_user_gid ansible_user_id ansible_user_shell ansible_user_uid
    ansible_userspace_architecture ansible_userspace_bits ansible_virtualization_role ansible_virtualization_tech_guest
    ansible_virtualization_tech_host ansible_virtualization_type
""".split())
# setup's fact of each network interface, named after it: ansible_eth0, ansible_ens3, ansible_cni0, ansible_flannel_1...
INTERFACE = re.compile(r"ansible_(lo|eth\d+|(en|wl)(o\d+|s\d+\w*|p\d+\w*|x[0-9a-f]{12})|bond\d+|br\d+|docker\d+|"
                       r"podman\d+|cni\w*|flannel_\d+|veth\w+|vxlan\w*|tunl?\d+|ifb\d+|virbr\d+|kube_ipvs\d+|"
                       r"nodelocaldns|cali\w+|dummy\d+)")
NAME = re.compile(r"(?<!\w)ansible_\w+")
# Files that name facts of software other than ours, as it ships them: kubespray's sample inventory (its download
# URLs use kubespray's facts) and kubespray's fact cache in the tests of tools/compare. The changelog is history.
OTHERS = ("changelogs/", "tests/integration/fixtures/kubespray_sample/", "tests/tools/test_compare.py",
          "tests/tools/test_injected_facts.py",
          # ansible-core's own deprecation of a playbook reading an injected fact, as tests/deprecations.py reads it.
          "tests/tools/test_deprecations.py")


def injected(name: str) -> bool:
    return name in FACTS or INTERFACE.fullmatch(name) is not None


def _strings(text: str) -> list[tuple[int, int]]:
    """The spans of a Python source's strings: what Ansible may read of it (an inline playbook, a key of
    task_vars), not its identifiers."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return [(starts[token.start[0] - 1] + token.start[1], starts[token.end[0] - 1] + token.end[1])
            for token in tokenize.generate_tokens(io.StringIO(text).readline) if token.type == tokenize.STRING]


def problems(path: str, text: str) -> list[str]:
    """`path:line: name` and the name to use instead, for every injected fact variable of ``text``."""
    hits = [(match.start(), match.group()) for match in NAME.finditer(text) if injected(match.group())]
    if hits and path.endswith(".py"):
        spans = _strings(text)
        hits = [(at, name) for at, name in hits if any(start <= at < end for start, end in spans)]
    return [f"{path}:{text.count(chr(10), 0, at) + 1}: {name} is an injected fact; read ansible_facts['{name[8:]}'] "
            f"(hostvars[host]['ansible_facts']['{name[8:]}'] for another host's)" for at, name in hits]


def checkout_files() -> list[str]:
    """The files git would ship, tracked and new (as tests/ansible-test.sh copies them)."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True,
                            check=True).stdout.decode().split("\0")
    return sorted(path for path in listed if path and not path.startswith(OTHERS) and (ROOT / path).is_file())


def test_nothing_reads_an_injected_fact():
    found = []
    for path in checkout_files():
        try:
            text = (ROOT / path).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        found += problems(path, text)
    assert not found, "\n".join(found)


@pytest.mark.parametrize("line", [
    "msg: \"{{ ansible_hostname }}\"",
    "when: ansible_distribution_major_version | int >= 12",
    "address: \"{{ hostvars[item].ansible_default_ipv4.address }}\"",
    "address: \"{{ hostvars[item]['ansible_default_ipv4']['address'] }}\"",
    "mtu: \"{{ ansible_eth0.mtu }}\"",
    "mtu: \"{{ ansible_flannel_1.mtu }}\"",
])
def test_an_injected_fact_is_named(line):
    assert len(problems("roles/x/tasks/main.yml", line)) == 1


def test_an_injected_fact_in_a_python_string_is_named():
    source = 'ARCH = task_vars.get("ansible_architecture")\nPLAY = """\n- debug: {msg: "{{ ansible_fqdn }}"}\n"""\n'
    assert [problem.split(":")[1] for problem in problems("plugins/action/x.py", source)] == ["1", "3"]


def test_a_python_name_is_no_variable():
    assert problems("tests/integration/test_x.py", "def ansible_env(kube_api):\n    return ansible_env\n") == []


@pytest.mark.parametrize("line", [
    "msg: \"{{ ansible_facts['hostname'] }} {{ ansible_facts.default_ipv4.address }}\"",
    "address: \"{{ hostvars[item]['ansible_facts']['default_ipv4']['address'] }}\"",
    "ansible_host: 10.0.0.1",
    "ansible_python_interpreter: \"{{ ansible_playbook_python }}\"",
    "when: not ansible_check_mode and ansible_loop.first and ansible_version.full is version('2.16', '>=')",
    "user: \"{{ ansible_user }}\" {{ ansible_ssh_private_key_file }} {{ ansible_become_user }}",
    "{{ ansible_play_hosts_all }} {{ ansible_limit }} {{ ansible_local }} {{ ansible_managed }}",
    "from ansible_collections.slipway.cluster.plugins.module_utils import _model",
])
def test_a_variable_that_is_no_fact_is_not_named(line):
    assert problems("roles/x/tasks/main.yml", line) == []


# --- the model, which the roles read as the variable slipway_cluster -----------------------------------------------

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MODEL_ACTIONS = ("slipway.cluster.cluster_model", "slipway.cluster.host_checks")
PLAYS = ["site.yml"] + sorted(str(path.relative_to(ROOT)) for pattern in (
    "playbooks/*.yml", "roles/*/tasks/*.yml", "roles/*/handlers/*.yml", "molecule/*/*.yml", "molecule/*/tasks/*.yml")
    for path in ROOT.glob(pattern))


def _tasks(node: Any) -> Iterator[dict]:
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item)
    elif isinstance(node, dict):
        yield node
        for value in node.values():
            if isinstance(value, (list, dict)):
                yield from _tasks(value)


def model_facts(path: str, document: Any) -> list[str]:
    """The tasks of ``document`` that return the model as a fact: the roles would not see it as slipway_cluster."""
    found = []
    for task in _tasks(document):
        for action in MODEL_ACTIONS:
            if action not in task:
                continue
            args = task[action] or {}
            if args.get("as_fact") is not False and args.get("scope") != "settings":
                found.append(f"{path}: task {task.get('name', action)!r} returns the model as the fact "
                             "slipway_cluster, which only ansible_facts.slipway_cluster reaches: set as_fact: false, "
                             "register the result and hand its model on with ansible.builtin.set_fact")
    return found


def test_the_model_reaches_the_roles_as_a_variable():
    found = []
    for path in PLAYS:
        found += model_facts(path, yaml.load((ROOT / path).read_text(encoding="utf-8"), Loader=LOADER))
    assert not found, "\n".join(found)


def test_a_model_returned_as_a_fact_is_named():
    document = [{"name": "Validate", "slipway.cluster.cluster_model": {"playbook": "remove_node"}},
                {"name": "Settings", "slipway.cluster.cluster_model": {"scope": "settings"}},
                {"block": [{"name": "Check", "slipway.cluster.host_checks": {"model": {}, "as_fact": False}},
                           {"name": "Default", "slipway.cluster.cluster_model": None}]}]
    assert [problem.split("'")[1] for problem in model_facts("play.yml", document)] == ["Validate", "Default"]


# --- the runs: none injects facts -----------------------------------------------------------------------------------

def test_the_checkouts_ansible_cfg_injects_no_facts():
    from ansible.config.manager import ConfigManager  # pylint: disable=import-outside-toplevel
    assert ConfigManager(conf_file=str(ROOT / "ansible.cfg")).get_config_value("INJECT_FACTS_AS_VARS") is False


# The setting, or its environment variable, given a true value anywhere (a config file, an env of a test or a tool).
TURNED_ON = re.compile(r"(ANSIBLE_INJECT_FACTS_AS_VARS|inject_facts_as_vars)[\"']?\s*[:=,]\s*[\"']?(true|yes|on|1)\b",
                       re.I)


def test_no_file_turns_the_injection_on():
    found = [f"{path}: {match.group(0)}" for path in checkout_files()
             if (ROOT / path).suffix in (".py", ".yml", ".yaml", ".cfg", ".ini", ".sh", "")
             for match in TURNED_ON.finditer((ROOT / path).read_text(encoding="utf-8", errors="replace"))]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("text", ['env = {"ANSIBLE_INJECT_FACTS_AS_VARS": "True"}', "inject_facts_as_vars = yes",
                                  "      inject_facts_as_vars: true", "ANSIBLE_INJECT_FACTS_AS_VARS=1 make lab"])
def test_turning_it_on_is_found(text):
    assert TURNED_ON.search(text)


def test_the_scenarios_inject_no_facts():
    base = yaml.safe_load((ROOT / ".config/molecule/config.yml").read_text(encoding="utf-8"))
    assert base["ansible"]["cfg"]["defaults"]["inject_facts_as_vars"] is False
    for path in sorted(ROOT.glob("molecule/*/molecule.yml")):
        scenario = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        defaults = ((scenario.get("ansible") or {}).get("cfg") or {}).get("defaults") or {}
        env = (scenario.get("provisioner") or {}).get("env") or {}
        assert defaults.get("inject_facts_as_vars", False) is False, path
        assert str(env.get("ANSIBLE_INJECT_FACTS_AS_VARS", "false")).lower() in ("false", "0", "no"), path
