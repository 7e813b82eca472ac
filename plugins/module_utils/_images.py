# Private to the slipway.cluster collection: no compatibility promise outside it.
"""Which container images a component's objects run, and which of them the cluster's nodes lack.

With ``imagePullPolicy: Never`` a pod starts only where its image is already in the node's container runtime. The
kubelet reports those images in ``status.images`` of its Node (every name of each: tags and digests, fully
qualified as containerd names them), which whoever reads Nodes sees: the playbook and slipway-operator's pod alike.
The kubesphere role compares the images of a component's rendered objects with those lists before it applies
anything (docs/kubesphere.md, "What the nodes must hold").

Pure Python: every decision is a unit test.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

# The kubelet's default nodeStatusMaxImages: it reports at most this many images of a node, the largest first, so a
# node that reports this many may hold more than it lists, and an image it does not list is not known to be missing.
NODE_STATUS_MAX_IMAGES = 50
# Images that objects name outside an ``image`` field: prometheus-operator's config reloader, which it adds as a
# sidecar to every Prometheus and Alertmanager pod it makes.
IMAGE_FLAGS = ("--prometheus-config-reloader=",)
# Kinds whose data are strings that may mention images without running them (kubesphere-config's kubectl image).
NOT_RUN_KINDS = ("ConfigMap", "Secret")
DOCKER_HUB = "docker.io"


def normalize(ref: str) -> str:
    """An image reference in the form containerd stores and the kubelet reports: registry, path, and a tag or digest.

    As Docker and containerd read references: the first component is a registry only when it has a dot or a colon,
    is ``localhost``, or has an upper case letter; else the image is Docker Hub's, whose one-component names are under
    ``library/``; no tag means ``latest``; with a digest, the tag is not part of the stored name.
    """
    text = str(ref).strip()
    name, _sep, digest = text.partition("@")
    slash, colon = name.rfind("/"), name.rfind(":")
    repository, tag = (name[:colon], name[colon + 1:]) if colon > slash else (name, "")
    first, sep, rest = repository.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost" or first != first.lower()):
        registry, path = first, rest
    else:
        registry, path = DOCKER_HUB, repository
    if registry in ("index.docker.io", "registry-1.docker.io"):
        registry = DOCKER_HUB
    if registry == DOCKER_HUB and "/" not in path:
        path = "library/" + path
    if digest:
        return f"{registry}/{path}@{digest}"
    return f"{registry}/{path}:{tag or 'latest'}"


def _walk(value: Any, found: list[str]) -> None:
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key == "image" and isinstance(item, str):
                if item.strip():
                    found.append(item.strip())
            elif key in ("args", "command") and isinstance(item, list):
                found.extend(arg.split("=", 1)[1].strip() for arg in item
                             if isinstance(arg, str) and arg.startswith(IMAGE_FLAGS) and arg.split("=", 1)[1].strip())
            else:
                _walk(item, found)
    elif isinstance(value, list):
        for item in value:
            _walk(item, found)


def object_images(objects: Iterable[Any]) -> list[str]:
    """The images the objects run, sorted, each once: every ``image`` field at any depth (the containers and init
    containers of pod templates, CronJobs' jobs, and the ``spec.image`` of custom resources an operator turns into
    pods: Prometheus, Alertmanager, ThanosRuler, FluentBit), and the images given by the flags of IMAGE_FLAGS.
    ConfigMaps and Secrets run nothing."""
    found: list[str] = []
    for obj in objects or ():
        if isinstance(obj, Mapping) and obj.get("kind") not in NOT_RUN_KINDS:
            _walk(obj, found)
    return sorted(set(found))


def missing_images(nodes: Sequence[Mapping[str, Any]], images: Iterable[str]) -> list[dict[str, Any]]:
    """The images some node lacks, by the nodes' ``status.images``: for each, in the order given, ``image`` (as given),
    ``nodes`` (the names of the nodes that lack it, sorted), ``on_no_node`` (every node lacks it) and ``where``
    (``on no node``, or ``not on`` and the nodes, for a message).

    A node that reports NODE_STATUS_MAX_IMAGES images or more may hold more than it lists: it lacks nothing. Without
    nodes nothing is missing (no node would run the image either).
    """
    reports = []
    for node in nodes or ():
        listed = ((node.get("status") or {}).get("images")) or []
        names = {normalize(name) for image in listed for name in (image.get("names") or [])}
        reports.append((str((node.get("metadata") or {}).get("name", "")), len(listed) >= NODE_STATUS_MAX_IMAGES, names))
    result = []
    for image in dict.fromkeys(str(each).strip() for each in images or ()):
        wanted = normalize(image)
        lacking = sorted(name for name, truncated, names in reports if not truncated and wanted not in names)
        if lacking:
            on_no_node = len(lacking) == len(reports)
            result.append({"image": image, "nodes": lacking, "on_no_node": on_no_node,
                           "where": "on no node" if on_no_node else "not on " + ", ".join(lacking)})
    return result
