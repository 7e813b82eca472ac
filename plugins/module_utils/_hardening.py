# Private to the slipway.cluster collection: no compatibility promise outside it.
"""Whether a running cluster still runs older settings than site.yml's, and the steps of an encryption key rotation.

Pure Python: site.yml reads the control planes' static pod manifests, the kubelets' /var/lib/kubelet/config.yaml and
kubeadm's ConfigMaps; playbooks/rotate_encryption_key.yml reads every control plane's EncryptionConfiguration. They
hand them here; every decision is a unit test.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

# Go's time.Duration text (kubeadm writes 5m as 5m0s): a number and a unit, repeated.
_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h))+$")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
# A key name is part of the prefix of every value it encrypts in etcd (k8s:enc:aescbc:v1:NAME:).
_KEY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
ENCRYPTING_PROVIDERS = ("aescbc", "secretbox")


def _seconds(value: Any) -> float | None:
    """Seconds of a Go duration text (``5m``, ``5m0s``, ``1h30m``); None for anything else."""
    if not isinstance(value, str) or not _DURATION.match(value):
        return None
    return sum(float(number) * _UNITS[unit] for number, unit in _DURATION_PART.findall(value))


def _same(actual: Any, wanted: Any) -> bool:
    if actual == wanted:
        return True
    seconds = _seconds(actual), _seconds(wanted)
    return None not in seconds and seconds[0] == seconds[1]


def settings_drift(actual: Any, wanted: Any, path: str = "") -> list[str]:
    """Every setting of ``wanted`` that ``actual`` does not hold, as ``a.b.c: actual != wanted``.

    Mappings are compared key by key (keys only in ``actual`` are kubeadm's or the kubelet's defaults and do not
    count), anything else by value; durations by their length (kubeadm writes ``5m`` as ``5m0s``). A key missing
    from ``actual`` holds a wanted zero value (0, false, empty): kubeadm leaves zero values out (``readOnlyPort: 0``).
    """
    if isinstance(wanted, Mapping):
        if not isinstance(actual, Mapping):
            return ["%s: %s != %s" % (path or ".", _show(actual), _show(wanted))]
        drift: list[str] = []
        for key in sorted(wanted, key=str):
            where = "%s.%s" % (path, key) if path else str(key)
            if key not in actual:
                if not wanted[key]:
                    continue
                drift.append("%s: missing != %s" % (where, _show(wanted[key])))
            else:
                drift.extend(settings_drift(actual[key], wanted[key], where))
        return drift
    if _same(actual, wanted):
        return []
    return ["%s: %s != %s" % (path or ".", _show(actual), _show(wanted))]


def _show(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _flags(command: Sequence[Any]) -> dict[str, str]:
    flags = {}
    for word in command or []:
        word = str(word)
        if word.startswith("--"):
            name, _sep, value = word[2:].partition("=")
            flags[name] = value
    return flags


def static_pod_drift(manifests: Mapping[str, Any], wanted: Mapping[str, Any]) -> dict[str, list[str]]:
    """What each control plane component's running manifest lacks of the wanted flags and volumes.

    ``manifests``: {component: parsed static Pod manifest}; a component without a manifest is left out (nothing
    runs to reconfigure). ``wanted``: {component: {"args": {flag: value}, "volumes": [kubeadm extraVolume]}}.
    Returns {component: [difference, ...]} for the components that differ only.
    """
    drift = {}
    for component in sorted(wanted):
        pod = (manifests or {}).get(component)
        if not isinstance(pod, Mapping):
            continue
        spec = pod.get("spec") or {}
        container = ((spec.get("containers") or [{}])[0]) or {}
        flags = _flags(list(container.get("command") or []) + list(container.get("args") or []))
        problems = []
        for flag, value in sorted((wanted[component].get("args") or {}).items()):
            if flag not in flags:
                problems.append("--%s missing" % flag)
            elif flags[flag] != str(value):
                problems.append("--%s=%s, not %s" % (flag, _show(flags[flag]), _show(value)))
        volumes = {v.get("name"): ((v.get("hostPath") or {}).get("path")) for v in spec.get("volumes") or []}
        mounts = {m.get("name"): m.get("mountPath") for m in container.get("volumeMounts") or []}
        for volume in wanted[component].get("volumes") or []:
            name = volume.get("name")
            if volumes.get(name) != volume.get("hostPath") or mounts.get(name) != volume.get("mountPath"):
                problems.append("volume %s (%s) not mounted" % (name, volume.get("hostPath")))
        if problems:
            drift[component] = problems
    return drift


def _extra_args(section: Any) -> dict[str, str]:
    """kubeadm's extraArgs: a list of {name, value} (v1beta4) or a mapping (v1beta3)."""
    args = (section or {}).get("extraArgs") if isinstance(section, Mapping) else None
    if isinstance(args, Mapping):
        return {str(k): str(v) for k, v in args.items()}
    return {str(a.get("name")): str(a.get("value", "")) for a in args or [] if isinstance(a, Mapping)}


def cluster_configuration_drift(config: Any, wanted: Mapping[str, Any]) -> list[str]:
    """What kubeadm's ClusterConfiguration (the kubeadm-config ConfigMap, parsed) lacks of the wanted settings.

    ``wanted``: {apiServer | controllerManager | scheduler: {"args": {flag: value}, "volumes": [extraVolume]}}.
    An empty result means the ConfigMap holds every wanted flag and volume (new control planes, upgrades and
    ``kubeadm upgrade node`` then render the same manifests).
    """
    if not isinstance(config, Mapping):
        return ["no ClusterConfiguration"]
    drift = []
    for section in sorted(wanted):
        have = _extra_args(config.get(section))
        for flag, value in sorted((wanted[section].get("args") or {}).items()):
            if have.get(flag) != str(value):
                drift.append("%s --%s: %s != %s" % (section, flag, _show(have.get(flag, "missing")), _show(value)))
        volumes = {v.get("name"): v for v in (config.get(section) or {}).get("extraVolumes") or []}
        for volume in wanted[section].get("volumes") or []:
            have_volume = volumes.get(volume.get("name")) or {}
            if (have_volume.get("hostPath"), have_volume.get("mountPath")) != (volume.get("hostPath"), volume.get("mountPath")):
                drift.append("%s volume %s missing" % (section, volume.get("name")))
    return drift


# -- Secrets at rest: rotating the encryption key (playbooks/rotate_encryption_key.yml) --

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
    secrets = {}
    for config in configs.values():
        for key in encryption_provider(config)[1]:
            secrets.setdefault(str(key.get("name")), str(key.get("secret")))
    if new_name and new_name not in secrets and new_secret:
        secrets[new_name] = new_secret
    unknown = [name for name in names if name not in secrets]
    if unknown:
        raise ValueError("no secret for the key(s) %s" % ", ".join(unknown))
    return [{"name": name, "secret": secrets[name]} for name in names]
