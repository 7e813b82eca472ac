# Private to the slipway.cluster collection: no compatibility promise outside it.
"""Repair decisions: etcd snapshots (names, what to keep, whether one may be restored), certificate
expiry, and which control plane brings back a cluster that lost the majority of its control planes.

Pure Python: the playbooks (etcd_backup.yml, etcd_restore.yml, certs.yml, recover_control_plane.yml)
read files, certificates and the running cluster and hand them here; every refusal is a unit test.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
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


def _parse_time(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    text = str(value).strip()
    for fmt in ("%Y%m%d%H%M%SZ", "%Y-%m-%dT%H:%M:%SZ", "%b %d %H:%M:%S %Y GMT"):
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def cert_report(certificates: Sequence[Mapping[str, Any]], now: Any, warn_days: int) -> dict[str, Any]:
    """Each certificate's expiry judged against ``now``: ``ok``, ``warning`` (fewer than ``warn_days`` left) or ``expired``.

    ``certificates``: ``host``, ``name`` (what it is) and ``not_after`` (``YYYYMMDDHHMMSSZ`` as x509_certificate_info
    gives it, or ISO 8601); or ``host``, ``name`` and ``missing`` (the paths looked at) for an expected certificate
    that no file holds, which is a ``missing`` warning. Returns ``certificates`` (each with ``days_left`` and ``state``,
    soonest first, the missing ones last), ``lines`` (a table), ``warnings`` and ``errors`` (one sentence each).
    """
    current = _parse_time(now)
    judged = []
    missing = []
    for cert in certificates:
        if cert.get("missing") is not None and not cert.get("not_after"):
            missing.append({**cert, "not_after": "", "days_left": None, "state": "missing"})
            continue
        not_after = _parse_time(cert["not_after"])
        left = not_after - current
        state = "expired" if left.total_seconds() <= 0 else "warning" if left < timedelta(days=int(warn_days)) else "ok"
        judged.append({**cert, "not_after": not_after.strftime("%Y-%m-%dT%H:%M:%SZ"), "days_left": left.days, "state": state})
    judged.sort(key=lambda cert: (cert["not_after"], cert["host"], cert["name"]))
    missing.sort(key=lambda cert: (cert["host"], cert["name"]))
    judged += missing
    width = max([len(cert["host"]) for cert in judged] + [4])
    name_width = max([len(cert["name"]) for cert in judged] + [11])
    lines = [f"{'HOST':<{width}}  {'CERTIFICATE':<{name_width}}  EXPIRES               DAYS LEFT  STATE"]
    lines += [f"{cert['host']:<{width}}  {cert['name']:<{name_width}}  {cert['not_after'] or '-':<20}  "
              f"{'-' if cert['days_left'] is None else cert['days_left']:>9}  {cert['state']}" for cert in judged]
    warnings = [f"{cert['host']}: {cert['name']} expires on {cert['not_after']}, in {cert['days_left']} days"
                f" (fewer than certs_warn_days, {int(warn_days)}): renew with -e certs_action=renew"
                for cert in judged if cert["state"] == "warning"]
    warnings += [f"{cert['host']}: {cert['name']} is missing: no file at {' or '.join(cert['missing'])}" for cert in missing]
    errors = [f"{cert['host']}: {cert['name']} expired on {cert['not_after']}" for cert in judged if cert["state"] == "expired"]
    return {"certificates": judged, "lines": lines, "warnings": warnings, "errors": errors}


def renew_due(certificates: Sequence[Mapping[str, Any]], expiring_before: Any) -> list[str]:
    """The hosts holding a certificate that expires before ``expiring_before``, in the order first seen (a missing one,
    without ``not_after``, is no reason to renew)."""
    limit = _parse_time(expiring_before)
    hosts: list[str] = []
    for cert in certificates:
        if not cert.get("not_after"):
            continue
        if _parse_time(cert["not_after"]) < limit and cert["host"] not in hosts:
            hosts.append(cert["host"])
    return hosts


def recover_plan(
    model: Mapping[str, Any],
    answering: Sequence[str],
    members: Mapping[str, Mapping[str, Any]],
    snapshot: str = "",
) -> dict[str, Any]:
    """Which control plane brings the cluster back, and how.

    ``answering``: the inventory's control planes that answered; ``members``: control plane -> what it holds
    of stacked etcd or, with external etcd, etcd member -> the same (``data``: its data directory holds a
    member, ``ca``: it holds the cluster CA, for control planes). ``snapshot``: a snapshot to restore
    instead of a surviving member's data. Returns ``host`` (the control plane brought back), ``etcd_host``
    (where etcd starts anew), ``source`` (``member`` or ``snapshot``) and ``problems``.
    """
    problems: list[str] = []
    control_planes = list(model["control_planes"])
    stacked = model.get("etcd_mode", "stacked") == "stacked"
    alive = [host for host in control_planes if host in answering and (members.get(host) or {}).get("ca")]
    plan: dict[str, Any] = {"host": "", "etcd_host": "", "source": "snapshot" if snapshot else "member", "problems": problems}
    if not alive:
        problems.append("no control plane of the inventory (" + ", ".join(control_planes) + ") answers with the cluster's"
                        " certificates (/etc/kubernetes/pki/ca.crt): recovery brings the API back on a surviving control"
                        " plane; list one first in kube_control_plane")
        return plan
    plan["host"] = alive[0]
    etcd_hosts = [alive[0]] if stacked else [host for host in model.get("etcd_members", []) if host in answering]
    if not snapshot:
        with_data = [host for host in etcd_hosts if (members.get(host) or {}).get("data")]
        if not with_data:
            problems.append("no surviving etcd member holds data (" + (", ".join(etcd_hosts) or "none answers") + "):"
                            " recover from a snapshot with -e etcd_snapshot=FILE")
        else:
            plan["etcd_host"] = with_data[0]
    elif etcd_hosts:
        plan["etcd_host"] = etcd_hosts[0]
    else:
        problems.append("no etcd member answers to restore the snapshot on")
    return plan
