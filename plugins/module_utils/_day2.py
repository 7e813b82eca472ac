# Private to the slipway.cluster collection: no compatibility promise outside it.
"""The day-2 playbooks' own input, checked before any host is contacted, as the model checks site.yml's.

Each playbook of playbooks/ has its settings (``upgrade_drain_timeout``, ``remove_node_names``, ``certs_action``,
``etcd_snapshot``, ...): PLAYBOOK_SETTINGS gives each its type, its range and its default (the ones a role sets have
their default in that role's defaults/main.yml, which role_defaults reads). check_playbook judges them with the run
itself (``-e`` words Ansible drops, names close to a setting, ``--limit``) and the playbook's rules that need no host
(encryption switched off for a rotation, a snapshot of external etcd for a recovery); check_snapshot_file judges an
etcd snapshot on the controller. api_problems compares what the API server says (its Node objects, read from the
controller) with the request, before the first SSH contact. Pure Python: every refusal is a unit test.
"""

from __future__ import annotations

import datetime
import difflib
import hashlib
import json
import os
import re
import struct
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from ansible_collections.slipway.cluster.plugins.module_utils._problems import Collector
from ansible_collections.slipway.cluster.plugins.module_utils._upgrade import parse_version, upgrade_plan
from ansible_collections.slipway.cluster.plugins.module_utils._values import boolean


@dataclass(frozen=True)
class Setting:
    """One setting of a playbook: its kind, range or choices, and default (None: the role's default)."""

    kind: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    default: Any = None
    required: bool = False
    role: str = ""


def _seconds(default: Any = None, role: str = "") -> Setting:
    """Whole seconds a wait may take, from 1 to a day."""
    return Setting("int", 1, 86400, default=default, role=role)


# Settings a role's defaults/main.yml sets (role=...): their default is read from there.
PLAYBOOK_SETTINGS: dict[str, dict[str, Setting]] = {
    "upgrade": {
        "upgrade_drain_timeout": _seconds(role="upgrade"),
        "upgrade_worker_batch": Setting("int", 1, 100000, role="upgrade"),
        "upgrade_drain_blockers_ignore": Setting("budgets", role="upgrade"),
        "upgrade_min_certificate_hours": Setting("number", 0, 87600, role="upgrade"),
        "upgrade_static_pod_timeout": _seconds(role="upgrade"),
        "upgrade_ready_timeout": _seconds(role="upgrade"),
        "upgrade_staging_dir": Setting("path", role="upgrade"),
    },
    "scale": {
        "scale_ready_timeout": _seconds(default=300),
    },
    "remove_node": {
        "remove_node_names": Setting("names", default=[], required=True),
        "remove_node_drain_timeout": _seconds(default=300),
        "remove_node_force": Setting("bool", default=False),
        "remove_node_drain_blockers_ignore": Setting("budgets", default=[]),
        "remove_node_etcd_shrink_ok": Setting("bool", default=False),
    },
    "certs": {
        "certs_action": Setting("choice", choices=("check", "renew"), default="check"),
        "certs_warn_days": Setting("int", 0, 3650, default=30),
        "certs_renew_days": Setting("int", 0, 3650, default=364),
        "certs_renew_before": Setting("date", default=""),
    },
    "etcd_backup": {
        "etcd_backup_keep": Setting("int", 1, 10000, role="etcd"),
        "etcd_backup_timer": Setting("bool", role="etcd"),
        "etcd_backup_timer_schedule": Setting("text", role="etcd"),
        "etcd_backup_timer_keep": Setting("int", 1, 10000, role="etcd"),
    },
    "etcd_restore": {
        "etcd_snapshot": Setting("file", default="", required=True),
        "etcd_restore_ready_timeout": _seconds(default=300),
    },
    "recover_control_plane": {
        "etcd_snapshot": Setting("file", default=""),
    },
    "rotate_encryption_key": {
        "rotate_encryption_key_name": Setting("key_name", default=""),
    },
    "reset": {
        "reset_confirm": Setting("bool", default=False),
        "reset_in_cluster_ok": Setting("bool", default=False),
    },
}
PLAYBOOKS = tuple(PLAYBOOK_SETTINGS) + ("site", "kubesphere", "operator", "fleet", "fleet_adopt")
# The first words of each playbook's settings: a variable that starts so and is no setting is a misspelt one.
PREFIXES: dict[str, tuple[str, ...]] = {
    "upgrade": ("upgrade_",),
    "scale": ("scale_",),
    "remove_node": ("remove_node", "remove_nodes", "removed_node"),
    "certs": ("certs_", "cert_"),
    "etcd_backup": ("etcd_backup",),
    "etcd_restore": ("etcd_restore", "etcd_snapshot", "etcd_snap"),
    "recover_control_plane": ("etcd_snapshot", "etcd_snap", "recover_"),
    "rotate_encryption_key": ("rotate_encryption", "rotate_key", "encryption_key"),
    "reset": ("reset_confirm", "reset_in_cluster", "reset_confim", "reset_force"),
}
# --limit: which groups' hosts each playbook needs in its run, and why it refuses to leave one out. A playbook not
# named here takes --limit as Ansible does and says what it leaves out (scale.yml, certs.yml, etcd_backup.yml, reset).
LIMIT_REFUSED: dict[str, tuple[tuple[str, ...], str]] = {
    "upgrade": (("kube_control_plane", "kube_node", "etcd"),
                "upgrade.yml upgrades the whole cluster in its order (every control plane read and upgraded before any "
                "worker, then external etcd) and a node left out would stay a minor version behind, which the next "
                "upgrade refuses; run it without --limit: a node at the target is not touched again, so a rerun carries "
                "on where a run stopped"),
    "remove_node": (("kube_control_plane", "kube_node", "etcd", "loadbalancer"),
                    "remove_node.yml takes the nodes to remove from remove_node_names and changes the nodes that stay "
                    "too (haproxy's backends, /etc/hosts, etcd's members): with --limit it would remove nothing or leave "
                    "them pointing at a node that is gone; run it without --limit"),
    "etcd_restore": (("etcd", "kube_control_plane"),
                     "a restore stops every API server and restores every etcd member from the same snapshot: a member or "
                     "control plane left out would keep the old data and split the cluster; run it without --limit"),
    "recover_control_plane": (("kube_control_plane", "etcd"),
                              "recover_control_plane.yml counts a control plane that is not in its run as lost and "
                              "deletes its Node: --limit would delete control planes that run; take the lost machines "
                              "out of the inventory instead, and run it without --limit"),
    "rotate_encryption_key": (("kube_control_plane",),
                              "every API server must hold the new key before any writes with it (a Secret it cannot "
                              "read is lost to it): run it without --limit"),
}

# --limit honoured: what the run does within it and leaves out, said before it starts (scale.yml says so itself).
LIMIT_HONOURED: dict[str, tuple[tuple[str, ...], str]] = {
    "certs": (("kube_control_plane", "kube_node", "etcd"),
              "certs.yml lists (and with certs_action=renew renews) the certificates of {kept} only; those of {left} are "
              "neither listed nor renewed"),
    "etcd_backup": (("etcd", "kube_control_plane"),
                    "etcd_backup.yml takes its snapshot from a member of {kept}; the snapshot timer (etcd_backup_timer) "
                    "is not set up on {left}"),
    "reset": (("kube_control_plane", "kube_node", "etcd", "loadbalancer"),
              "reset.yml resets {kept} only; {left} keep their cluster state"),
}

_KEY_NAME = re.compile(r"^[A-Za-z0-9._-]{1,63}$")
_BUDGET = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_NODE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_SAFE_PATH = re.compile(r"^/[A-Za-z0-9._/@%+=,:-]*$")
# bbolt's meta page (etcd's database, which a snapshot is): page id (8 bytes), flags (2: 0x04 is a meta page), count
# (2), overflow (4), then the magic 0xED0CDAED and the version 2, little-endian, in the first page of the file.
BOLT_MAGIC = 0xED0CDAED
BOLT_META_FLAG = 0x04


def words(value: Any) -> list[str]:
    """A list given as a list, or as text separated by commas (-e key=a,b) or blanks (-e '{"key": "a b"}')."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(item).strip() for item in value if str(item).strip()]
    return [item for item in re.split(r"[,\s]+", str(value)) if item]


def _int(col: Collector, name: str, value: Any, setting: Setting, number: bool = False) -> Any:
    what = "a number" if number else "a whole number"
    try:
        if isinstance(value, bool):
            raise ValueError
        parsed = float(str(value).strip()) if number else int(str(value).strip())
    except ValueError:
        col.error(name, f"{value!r} is not {what}; set {what} from {setting.low:g} to {setting.high:g}")
        return None
    if (setting.low is not None and parsed < setting.low) or (setting.high is not None and parsed > setting.high):
        col.error(name, f"{value!r} is out of range; set {what} from {setting.low:g} to {setting.high:g}")
        return None
    return parsed


def _value(col: Collector, name: str, value: Any, setting: Setting) -> Any:
    """The setting's value as the playbook uses it, or None (with the problem said) when it is not one."""
    kind = setting.kind
    if kind in ("int", "number"):
        return _int(col, name, value, setting, number=kind == "number")
    if kind == "bool":
        return boolean(col, name, value)
    if kind == "choice":
        if value in setting.choices:
            return value
        close = difflib.get_close_matches(str(value), setting.choices, n=1, cutoff=0.6)
        col.error(name, f"unknown value {value!r}; set one of: {', '.join(setting.choices)}"
                  + (f" (did you mean {close[0]}?)" if close else ""))
        return None
    if kind == "names":
        if not isinstance(value, (str, list, tuple)):
            col.error(name, f"is a {type(value).__name__}; set the node names, separated by commas (-e {name}=w1,w2)")
            return None
        names = list(dict.fromkeys(words(value)))
        bad = [item for item in names if not _NODE.match(item)]
        if bad:
            col.error(name, f"{', '.join(repr(item) for item in bad)} {'is' if len(bad) == 1 else 'are'} not a node "
                      "name (lowercase letters, digits, '-' and '.'); give the names kubectl get nodes shows")
        return names
    if kind == "budgets":
        if not isinstance(value, (str, list, tuple)):
            col.error(name, f"is a {type(value).__name__}; set PodDisruptionBudgets as namespace/name, separated by "
                      "commas, or all")
            return None
        budgets = words(value)
        bad = [item for item in budgets if item != "all" and not _BUDGET.match(item)]
        if bad:
            col.error(name, f"{', '.join(repr(item) for item in bad)} {'is' if len(bad) == 1 else 'are'} not a "
                      "PodDisruptionBudget as namespace/name (e.g. kube-system/coredns) or all")
        return budgets
    if kind == "path":
        if not isinstance(value, str) or not _SAFE_PATH.match(value):
            col.error(name, f"{value!r} is not an absolute path without blanks, quotes or shell characters; set one "
                      "such as /var/lib/slipway/upgrade")
            return None
        return value
    if kind == "text":
        if not isinstance(value, str) or not value.strip() or "\n" in value:
            col.error(name, f"{value!r} is not one line of text")
            return None
        return value
    if kind == "date":
        if value in ("", None):
            return ""
        try:
            datetime.datetime.strptime(str(value).strip(), "%Y-%m-%dT%H:%M:%SZ")
        except ValueError:
            col.error(name, f"{value!r} is not a time like 2027-01-31T00:00:00Z (UTC)")
            return None
        return str(value).strip()
    if kind == "key_name":
        if value in ("", None):
            return ""
        if not isinstance(value, str) or not _KEY_NAME.match(value):
            col.error(name, f"{str(value)[:80]!r} is not a key name: use letters, digits, '.', '_' and '-', at most 63 "
                      "characters (it names the key in the encryption configuration)")
            return None
        return value
    if kind == "file":
        if value in ("", None):
            return ""
        if not isinstance(value, str):
            col.error(name, f"is a {type(value).__name__}; set the path of a file on the controller")
            return None
        return value
    raise ValueError(f"unknown kind {kind}")


@dataclass
class Run:
    """What the run itself says: the playbook, its settings as given, the words of -e Ansible dropped, the names
    given with -e, --limit and the hosts it leaves in the play."""

    playbook: str
    values: Mapping[str, Any]
    known: frozenset = frozenset()
    given: Sequence[str] = ()
    raw_params: Any = None
    limit: str = ""
    play_hosts: Sequence[str] = ()
    role_defaults: Mapping[str, Any] = field(default_factory=dict)
    groups: Mapping[str, Any] = field(default_factory=dict)


def settings_of(playbook: str, role_defaults: Mapping[str, Any]) -> dict[str, Any]:
    """Each setting of ``playbook`` with its default."""
    return {name: (role_defaults.get(name) if setting.role else setting.default)
            for name, setting in PLAYBOOK_SETTINGS.get(playbook, {}).items()}


def check_playbook(col: Collector, run: Run, model: Mapping[str, Any] | None) -> dict[str, Any]:
    """The playbook's settings, the run and the rules that need no host; return the settings as the playbook uses
    them. ``model``: the cluster model (None when it has problems: the rules that need it are left for then)."""
    schema = PLAYBOOK_SETTINGS.get(run.playbook, {})
    wanted = settings_of(run.playbook, run.role_defaults)
    result: dict[str, Any] = {}
    for name, setting in schema.items():
        value = run.values.get(name, wanted[name])
        if value is None:
            value = wanted[name]
        checked = _value(col, name, value, setting)
        result[name] = checked if checked is not None else wanted[name]
    _check_names(col, run, schema)
    if run.raw_params not in (None, ""):
        dropped = " ".join(words(run.raw_params))
        col.error("-e", f"Ansible read '{dropped}' as no variable (-e takes key=value words separated by blanks: a "
                  "value with blanks is cut at the first one); separate a list with commas (-e remove_node_names=w1,w2) "
                  "or quote it as JSON (-e '{\"remove_node_names\": [\"w1\", \"w2\"]}')")
    if run.playbook == "remove_node" and "remove_node_names" in run.values and not result["remove_node_names"]:
        col.error("remove_node_names", "is empty; set it to the node(s) to remove, e.g. -e remove_node_names=w3")
    elif run.playbook == "remove_node" and "remove_node_names" not in run.values:
        col.error("remove_node_names", "is not set; name the node(s) to remove: -e remove_node_names=w3 (several: "
                  "w2,w3)")
    if run.playbook == "etcd_restore" and not result["etcd_snapshot"]:
        col.error("etcd_snapshot", "is not set; name the snapshot to restore: -e etcd_snapshot=<inventory dir>/backups/"
                  "etcd-<cluster>-<time>.db (etcd_backup.yml takes them)")
    _check_limit(col, run)
    if model is not None:
        _check_rules(col, run, model, result)
    return result


def _check_names(col: Collector, run: Run, schema: Mapping[str, Setting]) -> None:
    """A variable that starts like this playbook's settings, or a -e name close to one, that is no setting."""
    ours = list(schema)
    for name in sorted(run.values):
        if name in schema or name in run.known or name.startswith("_"):
            continue
        if name.startswith(PREFIXES.get(run.playbook, ())) or (name in run.given and difflib.get_close_matches(
                name, ours, n=1, cutoff=0.75)):
            close = difflib.get_close_matches(name, ours, n=1, cutoff=0.5)
            hint = f"did you mean {close[0]}?" if close else f"its settings are {', '.join(ours) or 'none'}"
            col.error(name, f"is not a setting of {run.playbook}.yml; {hint}")


def _check_limit(col: Collector, run: Run) -> None:
    """--limit where the playbook needs every host of some groups (from the inventory's groups: said with the model's
    problems too)."""
    if not run.limit or run.playbook not in {**LIMIT_REFUSED, **LIMIT_HONOURED}:
        return
    needed, why = {**LIMIT_REFUSED, **LIMIT_HONOURED}[run.playbook]
    hosts = list(dict.fromkeys(host for group in needed for host in (run.groups.get(group) or [])))
    left_out = [host for host in hosts if host not in run.play_hosts]
    if not left_out:
        return
    if run.playbook in LIMIT_REFUSED:
        col.error("--limit", f"{run.limit} leaves out {_nodes_named(left_out)}: {why}")
    else:
        kept = [host for host in hosts if host in run.play_hosts]
        col.warn("--limit", f"{run.limit}: " + why.format(kept=_nodes_named(kept) or "no host", left=_nodes_named(left_out)))


def _check_rules(col: Collector, run: Run, model: Mapping[str, Any], settings: Mapping[str, Any]) -> None:
    """The playbook's own rules on the model, which need no host."""
    if run.playbook == "rotate_encryption_key" and not model.get("secrets_encryption"):
        col.error("slipway_secrets_encryption", "is false: Secrets are not encrypted at rest, so there is no key to "
                  "rotate; set slipway_secrets_encryption: true and run site.yml to encrypt them first")
    if run.playbook == "recover_control_plane" and settings.get("etcd_snapshot") and model.get("etcd_mode") == "external":
        col.error("etcd_snapshot", "is set, but this cluster's etcd is external: recover_control_plane.yml starts "
                  "stacked etcd anew on a surviving control plane; restore external etcd with playbooks/etcd_restore.yml "
                  "-e etcd_snapshot=FILE, then run this playbook without etcd_snapshot")
    if run.playbook == "remove_node":
        names = settings.get("remove_node_names") or []
        if names and set(model["control_planes"]) <= set(names):
            col.error("remove_node_names", f"would remove the last control plane ({', '.join(model['control_planes'])}); "
                      "a cluster needs one: add a control plane with playbooks/scale.yml first, or tear the cluster "
                      "down with playbooks/reset.yml")


def check_snapshot_file(col: Collector, name: str, path: str, cluster: str, etcd_mode: str,
                        etcdutl_status: Callable[[str], tuple[bool, str]] | None = None) -> dict[str, Any]:
    """The snapshot on the controller, for what it is: a file (not a directory, not its own record), with its record
    beside it, whole (its sha256), of this cluster, and an etcd database (bbolt's header; ``etcdutl snapshot status``
    when the controller has etcdutl). Returns what the playbook copies: path, sha256, the record."""
    found: dict[str, Any] = {"path": path, "exists": False, "sha256": "", "metadata": None}
    how = " (a relative path is read from the directory ansible-playbook runs in)"
    if path.endswith(".json") and os.path.isfile(path[:-len(".json")]):
        col.error(name, f"{path} is the record of the snapshot {path[:-len('.json')]}, not the snapshot: give the "
                  f"snapshot itself, -e {name}={path[:-len('.json')]}")
        return found
    if os.path.isdir(path):
        listed = sorted(entry for entry in os.listdir(path) if entry.endswith(".db"))
        col.error(name, f"{path} is a directory, not a snapshot file: give one of its snapshots"
                  + (f" ({', '.join(listed[-3:])}, the newest last)" if listed else " (it holds none: etcd_backup.yml "
                     "writes etcd-<cluster>-<time>.db)"))
        return found
    if not os.path.exists(path):
        col.error(name, f"{path} does not exist on the controller: give the path of a snapshot etcd_backup.yml took"
                  f" (-e {name}=<inventory dir>/backups/etcd-<cluster>-<time>.db){how}")
        return found
    if not os.path.isfile(path):
        col.error(name, f"{path} is not a regular file; give the path of a snapshot etcd_backup.yml took")
        return found
    try:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            head = handle.read(4096)
            digest.update(head)
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as err:
        col.error(name, f"{path} cannot be read on the controller ({err.strerror}); check its permissions")
        return found
    found.update(exists=True, sha256=digest.hexdigest())
    record = path + ".json"
    if not os.path.isfile(record):
        col.error(name, f"{record}, the snapshot's record (its sha256 and the cluster it was taken from), is missing: "
                  "without it the snapshot can be checked neither for damage nor for its cluster; restore only "
                  "snapshots etcd_backup.yml took, with the .json beside them")
    else:
        try:
            with open(record, encoding="utf-8") as handle:
                metadata = json.load(handle)
            if not isinstance(metadata, dict):
                raise ValueError("not a mapping")
        except (OSError, ValueError) as err:
            col.error(name, f"{record}, the snapshot's record, is not what etcd_backup.yml writes ({err}); restore a "
                      "snapshot with its own record")
        else:
            found["metadata"] = metadata
            recorded = str(metadata.get("sha256") or "")
            if not recorded:
                col.error(name, f"{record} records no sha256: the snapshot cannot be checked for damage")
            elif recorded != found["sha256"]:
                col.error(name, f"{path} is damaged: its sha256 is {found['sha256']}, but it was {recorded} when it was "
                          f"taken ({record}); restore another snapshot")
            if metadata.get("cluster") != cluster:
                col.error(name, f"{path} is a snapshot of cluster {metadata.get('cluster')!r}, not of {cluster!r} "
                          "(slipway_cluster_name)")
            if metadata.get("etcd_mode") not in (None, etcd_mode):
                col.error(name, f"{path} was taken from {metadata.get('etcd_mode')} etcd, but this cluster's etcd is "
                          f"{etcd_mode}")
            if not str(metadata.get("ca_sha256") or ""):
                col.error(name, f"{record} records no cluster CA: it cannot be told which cluster the snapshot belongs to")
    why = bolt_problem(head)
    if why:
        col.error(name, f"{path} is not an etcd snapshot: {why}; give a snapshot etcd_backup.yml took")
    elif etcdutl_status is not None:
        good, said = etcdutl_status(path)
        if not good:
            col.error(name, f"{path} is not a snapshot etcdutl can read: etcdutl snapshot status says {said}; restore "
                      "another snapshot")
    return found


def bolt_problem(head: bytes) -> str:
    """Why the first bytes of a file are not a bbolt database (an etcd snapshot), or ''."""
    if len(head) < 32:
        return f"it has {len(head)} bytes, fewer than an etcd database's first page"
    flags = struct.unpack_from("<H", head, 8)[0]
    magic, version = struct.unpack_from("<II", head, 16)
    if flags != BOLT_META_FLAG or magic != BOLT_MAGIC:
        return "it does not start with a bbolt meta page (an etcd database's first bytes)"
    if version != 2:
        return f"its bbolt format is version {version}, not 2"
    return ""


def version_text(version: tuple[int, int, int]) -> str:
    return "%d.%d.%d" % version


def _nodes_named(names: Sequence[str]) -> str:
    return ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")


def api_problems(model: Mapping[str, Any], running: Mapping[str, Any], playbook: str,
                 settings: Mapping[str, Any] | None = None, play_hosts: Sequence[str] = (),
                 limit: str = "") -> list[str]:
    """What the API server's Node objects already say against the request, before any host is contacted.

    ``running``: running_cluster() of the Node objects; ``settings``: check_playbook's settings; ``play_hosts``:
    the hosts of the run (--limit applied)."""
    settings = settings or {}
    nodes = running.get("nodes") or {}
    problems: list[str] = []
    if playbook == "upgrade":
        # The kubelets' versions stand for the static pods' until the control planes are read: every problem found
        # from them alone is one the full plan finds too.
        kubelets = {name: {component: node.get("version", "").lstrip("v") for component in
                           ("kube-apiserver", "kube-controller-manager", "kube-scheduler")}
                    for name, node in nodes.items()}
        problems.extend(upgrade_plan(model, running, static_pods=kubelets,
                                     worker_batch=settings.get("upgrade_worker_batch", 1))["problems"])
    if playbook in ("upgrade", "scale", "remove_node"):
        problems.extend(_identity_problems(model, running, playbook, settings))
    if playbook == "scale":
        problems.extend(_scale_problems(model, running))
    if playbook == "remove_node":
        problems.extend(_removal_problems(model, running, settings))
    if playbook == "reset" and limit:
        in_cluster = [host for host in play_hosts if host in nodes]
        if in_cluster and not settings.get("reset_in_cluster_ok"):
            problems.append(f"--limit {limit} resets {_nodes_named(in_cluster)}, "
                            f"{'a node' if len(in_cluster) == 1 else 'nodes'} of the running cluster (the API server "
                            "lists them): the cluster would keep their Node objects and etcd members and wait for them; "
                            f"take them out with playbooks/remove_node.yml -e remove_node_names={','.join(in_cluster)}, "
                            "which drains and resets them, or, to reset them anyway, add -e reset_in_cluster_ok=true")
    return problems


_WHAT_ADDRESS_DOES = {
    "upgrade": "upgrade.yml would drain the Node and upgrade the machine at the inventory's address, another one",
    "scale": "a machine replaced under an old node's name would not be added (the cluster has the name) and the old "
             "Node would stay",
    "remove_node": "remove_node.yml would drain the Node and reset the machine at the inventory's address, another one",
}
_WHAT_TO_DO = {
    "upgrade": "correct ip:/ansible_host to the Node's address, or remove the old node with playbooks/remove_node.yml",
    "scale": "remove the old node first (playbooks/remove_node.yml -e remove_node_names={name}), then run scale.yml, "
             "or correct ip:/ansible_host",
    "remove_node": "correct ip:/ansible_host to the Node's address, or take {name} out of the inventory's groups to "
                   "remove the Node without touching a machine",
}


def _identity_problems(model: Mapping[str, Any], running: Mapping[str, Any], playbook: str,
                       settings: Mapping[str, Any]) -> list[str]:
    """A host the cluster has under its name, but at another address or in another role than the inventory says."""
    problems = []
    nodes = running.get("nodes") or {}
    if playbook == "remove_node":
        # The model of what stays: the hosts to remove are left out of it, their addresses kept.
        hosts = {name: {"address": address, "roles": [], "kubernetes": True}
                 for name, address in (model.get("excluded_addresses") or {}).items()
                 if name in (settings.get("remove_node_names") or [])}
    else:
        hosts = dict(model["nodes"])
    for name, node in hosts.items():
        known = nodes.get(name)
        if known is None or not node.get("kubernetes"):
            continue
        if known.get("addresses") and node["address"] not in known["addresses"]:
            problems.append(f"host {name}: the inventory gives it the address {node['address']}, but the cluster's Node "
                            f"{name} has {', '.join(known['addresses'])}: {_WHAT_ADDRESS_DOES[playbook]}; "
                            + _WHAT_TO_DO[playbook].format(name=name))
        control_plane = "control_plane" in node["roles"]
        if playbook != "remove_node" and control_plane != bool(known.get("control_plane")):
            problems.append(
                f"host {name}: the inventory makes it a {'control plane' if control_plane else 'worker'} "
                f"({'kube_control_plane' if control_plane else 'kube_node only'}), but the cluster's Node {name} is "
                f"{'a worker (no node-role.kubernetes.io/control-plane label)' if control_plane else 'a control plane'}: "
                f"{playbook}.yml would treat it as what it is not; put it in "
                f"{'kube_node only' if control_plane else 'kube_control_plane (and etcd with stacked etcd)'}, as it runs")
    return problems


def _scale_problems(model: Mapping[str, Any], running: Mapping[str, Any]) -> list[str]:
    problems = []
    nodes = running.get("nodes") or {}
    target = parse_version(model.get("kubernetes_version"))
    new = [name for name, node in model["nodes"].items() if node.get("kubernetes") and name not in nodes]
    others: dict[str, list[str]] = {}
    for name, node in sorted(nodes.items()):
        parsed = parse_version(node.get("version"))
        if parsed is not None and target is not None and parsed != target:
            others.setdefault(version_text(parsed), []).append(name)
    if new and others and target is not None:
        runs = "; ".join(f"{_nodes_named(names)} at {version}" for version, names in sorted(others.items()))
        newest = max(others, key=lambda v: parse_version(v) or (0, 0, 0))
        problems.append(f"slipway_kubernetes_version is {version_text(target)}, the version new nodes join at, but the cluster "
                        f"runs {runs}: {_nodes_named(new)} would join at another version than the cluster's; set "
                        f"slipway_kubernetes_version: {newest} (the cluster's), or upgrade the cluster first "
                        f"(playbooks/upgrade.yml -e slipway_kubernetes_version={version_text(target)}) and then add the nodes")
    first = model["first_control_plane"]
    if first in new:
        running_cps = sorted(n for n, node in nodes.items() if node.get("control_plane"))
        problems.append(f"{first}, the first host of kube_control_plane, is not a node of the cluster "
                        f"({', '.join(running_cps) or ', '.join(sorted(nodes)) or 'none'}): new hosts join through the "
                        "first control plane, so list a running one first")
    return problems


def _removal_problems(model: Mapping[str, Any], running: Mapping[str, Any], settings: Mapping[str, Any]) -> list[str]:
    problems = []
    nodes = running.get("nodes") or {}
    names = list(settings.get("remove_node_names") or [])
    unknown = [name for name in names if name not in nodes and name not in model["nodes"]
               and name not in model.get("excluded", [])]
    if unknown:
        problems.append(f"remove_node_names: {', '.join(repr(n) for n in unknown)} "
                        f"{'is' if len(unknown) == 1 else 'are'} neither a node of the cluster nor a host of the "
                        f"inventory (nodes: {_nodes_named(sorted(nodes)) or 'none'}); check the name")
    control_planes = [name for name, node in nodes.items() if node.get("control_plane")] or \
        [name for name in model["control_planes"] if name in nodes]
    leaving = [name for name in names if name in control_planes]
    staying = [name for name in control_planes if name not in names]
    if leaving and not staying:
        problems.append(f"remove_node_names: would remove the last control plane ({', '.join(leaving)}); a cluster "
                        "needs one: add a control plane with playbooks/scale.yml first, or tear the cluster down with "
                        "playbooks/reset.yml")
    # Stacked etcd: a member per control plane, removed one after another. Fewer left than today's quorum is more than
    # one step at a time can take safely (3 -> 1, 5 -> 2): between the removals etcd survives no failure.
    elif model.get("etcd_mode") == "stacked" and leaving and len(staying) < len(control_planes) // 2 + 1 \
            and not settings.get("remove_node_etcd_shrink_ok"):
        problems.append(f"remove_node_names: removes {len(leaving)} of the {len(control_planes)} control planes "
                        f"({', '.join(leaving)}), and with them their etcd members: etcd would keep {len(staying)} "
                        f"({', '.join(staying)}), fewer than its quorum of {len(control_planes) // 2 + 1} today, and "
                        f"survive no failure; remove one at a time and add control planes back (playbooks/scale.yml), "
                        "or set remove_node_etcd_shrink_ok: true if you mean it")
    not_ready = sorted(name for name, node in nodes.items() if not node.get("ready") and name not in names)
    if not_ready and not settings.get("remove_node_force"):
        problems.append(f"remove_node_names: node(s) {', '.join(not_ready)} not Ready: removing another node now could "
                        "leave too little running; bring them back first, or set remove_node_force: true")
    return problems
