# Private to the slipway.cluster collection: no compatibility promise outside it.
"""Secrets at rest: the providers and key names of an EncryptionConfiguration, and the steps of a rotation to
a new key (playbooks/rotate_encryption_key.yml, roles/encryption/tasks/rotation.yml).

Pure Python: the playbook reads every control plane's EncryptionConfiguration and hands it here; every decision is a
unit test. Names only in what is returned for the output, never a key.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

# A key name is part of the prefix of every value it encrypts in etcd (k8s:enc:aescbc:v1:NAME:).
_KEY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
ENCRYPTING_PROVIDERS = ("aescbc", "secretbox")


def encryption_provider(config: Any) -> tuple[str, list[dict[str, str]]]:
    """The first provider of the Secrets' EncryptionConfiguration: (type, [{name, secret}]); ('', []) if none."""
    if not isinstance(config, Mapping):
        return "", []
    for resource in config.get("resources") or []:
        if "secrets" not in (resource or {}).get("resources", []):
            continue
        provider = ((resource.get("providers") or [{}])[0]) or {}
        for kind, settings in provider.items():
            keys = [dict(k) for k in ((settings or {}).get("keys") or []) if isinstance(k, Mapping)]
            return str(kind), keys
    return "", []


def encryption_keys(config: Any) -> list[str]:
    """The key names of the first provider, the writing key first; names only, never a key."""
    return [str(key.get("name")) for key in encryption_provider(config)[1]]


def rotation_plan(configs: Mapping[str, Any], rewritten_with: str = "", in_progress: str = "",
                  name: str = "", new_name: str = "") -> dict[str, Any]:
    """The rotation to one new encryption key, as the control planes' configurations stand now.

    ``configs``: {control plane: parsed EncryptionConfiguration, or None when it has none}. ``rewritten_with``: the
    key name the Secrets were last rewritten with (the marker on the first control plane). ``in_progress``: the key
    name a rotation that has not finished is rotating to (its state file), '' when none. ``name``: the key name the
    user asked for ('' for none); ``new_name``: a fresh name to use when neither asks for one.

    Returns {"name", "pending", "problems", "provider", "add", "promote", "remove", "rewrite"}: for each of the three steps the
    key names each control plane must hold, in order (writing key first). The steps are applied in that order, each
    on every control plane before the next, so a run stopped anywhere and run again converges; a finished rotation
    asked again with the same name has nothing to do.
    """
    problems = []
    hosts = sorted(configs)
    missing = [h for h in hosts if not encryption_provider(configs[h])[0]]
    if missing:
        problems.append("%s: no encryption configuration of Secrets; turn slipway_secrets_encryption on with site.yml "
                        "first" % ", ".join(missing))
    kinds = {encryption_provider(configs[h])[0] for h in hosts if h not in missing}
    wrong = sorted(kind for kind in kinds if kind not in ENCRYPTING_PROVIDERS)
    if wrong:
        problems.append("the first provider is %s: only %s keys are rotated here" % (", ".join(wrong),
                                                                                     " or ".join(ENCRYPTING_PROVIDERS)))
    if len(kinds) > 1:
        problems.append("the control planes encrypt with different providers (%s)" % ", ".join(sorted(kinds)))
    if in_progress and name and name != in_progress:
        problems.append("a rotation to key %s was stopped before it finished: run again with "
                        "rotate_encryption_key_name=%s (or without a name) to finish it first" % (in_progress, in_progress))
    target = in_progress or name or new_name
    if not _KEY_NAME.match(target or ""):
        problems.append("key name %r: letters, digits, '.', '_' or '-', at most 63, starting with a letter or digit"
                        % (target or ""))
    plan: dict[str, Any] = {"name": target, "problems": problems, "pending": False, "provider": "".join(sorted(kinds)[:1]),
                            "add": {}, "promote": {}, "remove": {}, "rewrite": False}
    if problems:
        return plan
    for host in hosts:
        keys = encryption_keys(configs[host])
        added = keys if target in keys else keys + [target]
        plan["add"][host] = added
        plan["promote"][host] = [target] + [key for key in added if key != target]
        plan["remove"][host] = [target]
    current = {host: encryption_keys(configs[host]) for host in hosts}
    plan["rewrite"] = rewritten_with != target
    plan["pending"] = bool(in_progress) or plan["rewrite"] or any(current[h] != [target] for h in hosts)
    return plan


def encryption_config_keys(configs: Mapping[str, Any], names: Sequence[str],
                           new_name: str = "", new_secret: str = "") -> list[dict[str, str]]:
    """[{name, secret}] for ``names``, each secret taken from any control plane's configuration that has it, the
    new key's from ``new_secret`` when none has it yet. A name with no secret anywhere raises ValueError."""
    secrets: dict[str, str] = {}
    for config in configs.values():
        for key in encryption_provider(config)[1]:
            secrets.setdefault(str(key.get("name")), str(key.get("secret")))
    if new_name and new_name not in secrets and new_secret:
        secrets[new_name] = new_secret
    unknown = [name for name in names if name not in secrets]
    if unknown:
        raise ValueError("no secret for the key(s) %s" % ", ".join(unknown))
    return [{"name": name, "secret": secrets[name]} for name in names]
