# Private to the slipway.cluster collection: no compatibility promise outside it.
"""Whether a running cluster still runs older settings than site.yml's: drift of a settings tree, of the
control planes' static pod flags and of kubeadm's ClusterConfiguration.

Pure Python: site.yml reads the control planes' static pod manifests, the kubelets' /var/lib/kubelet/config.yaml and
kubeadm's ConfigMaps and hands them here; every decision is a unit test.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

# Go's time.Duration text (kubeadm writes 5m as 5m0s): a number and a unit, repeated.
_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h))+$")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


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
