# Private to the slipway.cluster collection: no compatibility promise outside it.
"""etcd snapshots: their names, which to keep, and whether one may be restored (etcd_backup.yml,
etcd_restore.yml, recover_control_plane.yml, the etcd role).

Pure Python: the playbooks read the snapshots and their records and hand them here; every refusal is a unit test.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

_STAMP = re.compile(r"^\d{8}T\d{6}Z$")


def snapshot_name(cluster: str, stamp: str) -> str:
    """The file name of a snapshot of ``cluster`` taken at ``stamp`` (``YYYYMMDDTHHMMSSZ``, UTC)."""
    if not _STAMP.match(stamp):
        raise ValueError(f"snapshot time {stamp!r} is not YYYYMMDDTHHMMSSZ")
    return f"etcd-{cluster}-{stamp}.db"


def snapshots_to_prune(names: Sequence[str], cluster: str, keep: int) -> list[str]:
    """The snapshots of ``cluster`` among ``names`` (file names) beyond the newest ``keep``, oldest first.

    Only names that snapshot_name() makes for this cluster count: another cluster's snapshots and any
    other file stay. ``keep`` below 1 keeps one (the snapshot just taken is never removed).
    """
    pattern = re.compile(r"^etcd-" + re.escape(cluster) + r"-(\d{8}T\d{6}Z)\.db$")
    ours = sorted((match.group(1), name) for name in names if (match := pattern.match(str(name).rsplit("/", 1)[-1])))
    keep = max(int(keep), 1)
    return [name for _stamp, name in ours[:-keep]] if len(ours) > keep else []


def initial_cluster(members: Sequence[str], peer_urls: Mapping[str, str]) -> str:
    """etcd's ``--initial-cluster`` for ``members`` (in order): ``name=peer URL`` pairs."""
    missing = [member for member in members if not peer_urls.get(member)]
    if missing:
        raise ValueError("no peer URL for " + ", ".join(missing))
    return ",".join(f"{member}={peer_urls[member]}" for member in members)


def restore_problems(
    snapshot: str,
    found: Mapping[str, Any],
    metadata: Mapping[str, Any] | None,
    cluster: str,
    etcd_mode: str,
    ca_sha256: Mapping[str, str | None],
) -> list[str]:
    """Why ``snapshot`` may not be restored into this cluster; empty when it may.

    ``found``: the snapshot on the controller (``exists``, ``sha256``); ``metadata``: its ``.json`` file as
    etcd_backup.yml wrote it (None when missing); ``ca_sha256``: control plane -> sha256 of its
    /etc/kubernetes/pki/ca.crt (None when the control plane has none or did not answer).
    """
    if not found.get("exists"):
        return [f"{snapshot} does not exist on the controller: give the path of a snapshot etcd_backup.yml took"
                " (-e etcd_snapshot=<inventory dir>/backups/etcd-<cluster>-<time>.db; a relative path is read from the"
                " directory ansible-playbook runs in)"]
    if metadata is None:
        return [f"{snapshot}.json, the snapshot's record (its sha256 and the cluster it was taken from), is missing:"
                " without it the snapshot can be checked neither for damage nor for its cluster; restore only snapshots"
                " etcd_backup.yml took, with the .json beside them"]
    problems = []
    recorded = str(metadata.get("sha256") or "")
    if not recorded:
        problems.append(f"{snapshot}.json records no sha256: the snapshot cannot be checked for damage")
    elif recorded != found.get("sha256"):
        problems.append(f"{snapshot} is damaged: its sha256 is {found.get('sha256')}, but it was {recorded} when it was taken"
                        f" ({snapshot}.json); restore another snapshot")
    if metadata.get("cluster") != cluster:
        problems.append(f"{snapshot} is a snapshot of cluster {metadata.get('cluster')!r}, not of {cluster!r} (slipway_cluster_name)")
    if metadata.get("etcd_mode") not in (None, etcd_mode):
        problems.append(f"{snapshot} was taken from {metadata.get('etcd_mode')} etcd, but this cluster's etcd is {etcd_mode}")
    wanted = str(metadata.get("ca_sha256") or "")
    if not wanted:
        problems.append(f"{snapshot}.json records no cluster CA: it cannot be told which cluster the snapshot belongs to")
    else:
        missing = sorted(host for host, value in ca_sha256.items() if not value)
        others = sorted(host for host, value in ca_sha256.items() if value and value != wanted)
        if missing:
            problems.append("no cluster CA (/etc/kubernetes/pki/ca.crt) on " + ", ".join(missing)
                            + ": a restore needs the control planes of the cluster the snapshot was taken from")
        if others:
            problems.append(f"{snapshot} is from another cluster: its cluster CA has the sha256 {wanted}, but the CA of "
                            + ", ".join(others) + " is another (/etc/kubernetes/pki/ca.crt): a snapshot holds the"
                            " cluster's objects, service account tokens and secrets, which only its own cluster can use")
    return problems


def restored_already(sha256: str, records: Mapping[str, Mapping[str, Any] | None]) -> bool:
    """Whether every etcd member's restore record names the snapshot with ``sha256`` (a rerun: nothing to do)."""
    return bool(records) and all((record or {}).get("sha256") == sha256 for record in records.values())
