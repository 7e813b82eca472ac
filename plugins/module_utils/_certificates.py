# Private to the slipway.cluster collection: no compatibility promise outside it.
"""Certificate expiry: which certificates expire when, and which hosts must renew (playbooks/certs.yml).

Pure Python: the playbook reads the certificates and hands them here; every decision is a unit test.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from typing import Any, Mapping, Sequence

# A section of a read of several files: "== NAME" on its own line, then the file's text (a certificate's PEM first).
_PEM_SECTION = re.compile(r"^== ([^\n]+)\n(-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----)", re.MULTILINE)


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


def pem_sections(text: str) -> list[list[str]]:
    """The certificates of a read of several files, as ``[name, pem]`` pairs in the order read.

    ``text`` is what a shell loop over the files prints: ``== NAME`` on a line of its own, then the file's contents.
    A section counts when its first line after the name begins a certificate; its first certificate is taken (a
    kubelet's file holds its key after it). A name followed by nothing (a missing file, whose error went to stderr)
    or by something else is left out.
    """
    return [[name, pem] for name, pem in _PEM_SECTION.findall(text or "")]


# A file certs.yml expected and found nowhere: "!! NAME=PATH[,PATH...]" on a line of its own.
_MISSING = re.compile(r"^!! ([^=\n]+)=(.*)$", re.MULTILINE)


def _pem_not_after(pem: str) -> str:
    """A PEM certificate's end of validity as ``YYYYMMDDHHMMSSZ`` (as community.crypto's x509_certificate_info gives it)."""
    # Imported here: the controller's filters need cryptography (community.crypto needs it too), modules never do.
    from cryptography import x509  # pylint: disable=import-outside-toplevel

    cert = x509.load_pem_x509_certificate(pem.encode())
    not_after = getattr(cert, "not_valid_after_utc", None) or cert.not_valid_after
    return not_after.strftime("%Y%m%d%H%M%SZ")


def _stdout(read: Any) -> str:
    """What a registered command printed: a skipped or absent read prints nothing."""
    if isinstance(read, Mapping):
        return str(read.get("stdout") or "")
    return str(read or "")


def _is_etcd(name: str) -> bool:
    return name.startswith("etcd") or name == "apiserver-etcd-client"


def cert_list(hosts: Sequence[str], kubeadm_reads: Sequence[Any], pem_reads: Sequence[Any],
              admin_pem: str) -> list[dict[str, Any]]:
    """Every certificate the certs role read, as ``cert_report`` takes them: the admin kubeconfig's first.

    ``hosts`` and the two read lists go together, one entry per host: what ``kubeadm certs check-expiration --output
    json`` printed (its ``certificates`` and ``certificateAuthorities``; one kubeadm reports ``missing`` is left out),
    and what the read of the kubelet's and external etcd's files printed (``== NAME`` then the file, or ``!! NAME=PATHS``
    for a file found nowhere). Each entry is a registered result (its ``stdout``), a string, or nothing (a skipped
    read). ``admin_pem`` is the admin kubeconfig's client certificate (host ``controller``).
    kubeadm's entries carry ``kubeadm`` (a certificate or kubeconfig that ``kubeadm certs renew`` renews, not a CA) and
    ``renewable`` (kubeadm signs it from a CA it holds); the files' entries carry ``etcd`` (external etcd's).
    """
    found: list[dict[str, Any]] = [{"host": "controller", "name": "admin kubeconfig", "not_after": _pem_not_after(admin_pem)}]
    if not len(hosts) == len(kubeadm_reads) == len(pem_reads):
        raise ValueError(f"cert_list: {len(hosts)} hosts, {len(kubeadm_reads)} kubeadm reads and {len(pem_reads)}"
                         " file reads: give one read of each kind per host")
    for host, kubeadm, pem_read in zip(hosts, kubeadm_reads, pem_reads):
        kubeadm_text = _stdout(kubeadm)
        if kubeadm_text:
            parsed = json.loads(kubeadm_text)
            for cert in list(parsed.get("certificates") or []) + list(parsed.get("certificateAuthorities") or []):
                if cert.get("missing"):
                    continue
                name = cert["name"]
                found.append({"host": host, "name": name, "not_after": cert["expirationDate"],
                              "kubeadm": name.endswith(".conf") or not name.endswith("ca"),
                              "renewable": not cert.get("externallyManaged") and "caName" in cert})
        text = _stdout(pem_read)
        for name, pem in pem_sections(text):
            found.append({"host": host, "name": name, "not_after": _pem_not_after(pem), "etcd": _is_etcd(name)})
        for name, paths in _MISSING.findall(text):
            found.append({"host": host, "name": name, "missing": paths.split(","), "etcd": _is_etcd(name)})
    return found
