"""Container images as docker-archive tars, with no registry and no daemon.

An archive holds one layer tar, an image config JSON and manifest.json with the image's full
reference in RepoTags (the layout `docker save` writes). `ctr -n k8s.io images import`,
`docker load` and `podman load` all read it.

Everything is reproducible: entries sorted, owners root (unless a directory is given another
owner), every mtime FIXED_MTIME, JSON with sorted keys; the same inputs give byte-identical archives.
"""

import hashlib
import io
import json
import os
import stat
import tarfile
import tempfile

FIXED_MTIME = 0
CREATED = "1970-01-01T00:00:00Z"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class LayerError(Exception):
    pass


def _norm(path):
    path = path.strip("/")
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        raise LayerError("bad path in layer: %r" % path)
    return "/".join(parts)


class Layer:
    """The files of one image layer, written as a deterministic tar."""

    def __init__(self):
        self.entries = {}

    # --- adding -------------------------------------------------------------------------------
    def _parents(self, path):
        parts = path.split("/")[:-1]
        for index in range(1, len(parts) + 1):
            parent = "/".join(parts[:index])
            entry = self.entries.get(parent)
            if entry is None:
                self.entries[parent] = {"type": "dir", "mode": 0o755}
            elif entry["type"] != "dir":
                raise LayerError("%s is not a directory (needed for %s)" % (parent, path))

    def _put(self, path, entry, replace):
        path = _norm(path)
        old = self.entries.get(path)
        if old is not None and not replace and old != entry:
            raise LayerError("%s is added twice with different content" % path)
        self._parents(path)
        self.entries[path] = entry
        return path

    def add_dir(self, path, mode=0o755, uid=0, gid=0):
        """A directory; owned by root unless uid/gid say otherwise (a program's data directory
        that its non-root user writes, like Prometheus's /prometheus)."""
        path = _norm(path)
        entry = self.entries.get(path)
        if entry is not None and entry["type"] != "dir":
            raise LayerError("%s exists and is not a directory" % path)
        self._parents(path)
        self.entries[path] = {"type": "dir", "mode": mode}
        if uid or gid:
            self.entries[path].update(uid=uid, gid=gid)
        return path

    def add_file(self, path, source=None, data=None, mode=None, replace=False):
        """A regular file from ``source`` (a path) or ``data`` (bytes)."""
        if (source is None) == (data is None):
            raise LayerError("add_file(%s): give exactly one of source and data" % path)
        if mode is None:
            if source is not None:
                mode = 0o755 if os.stat(source).st_mode & 0o111 else 0o644
            else:
                mode = 0o644
        entry = {"type": "file", "mode": mode}
        if source is not None:
            entry["source"] = os.path.abspath(source)
        else:
            entry["data"] = bytes(data)
        return self._put(path, entry, replace)

    def add_symlink(self, path, target, replace=False):
        return self._put(path, {"type": "symlink", "target": target, "mode": 0o777}, replace)

    def add_from_root(self, root, path, replace=False):
        """Copy ``path`` (absolute in the image) from an unpacked tree ``root`` keeping symlinks."""
        full = os.path.join(root, _norm(path))
        info = os.lstat(full)
        if stat.S_ISLNK(info.st_mode):
            return self.add_symlink(path, os.readlink(full), replace=replace)
        if stat.S_ISDIR(info.st_mode):
            return self.add_dir(path, stat.S_IMODE(info.st_mode))
        if stat.S_ISREG(info.st_mode):
            return self.add_file(path, source=full, mode=stat.S_IMODE(info.st_mode),
                                 replace=replace)
        raise LayerError("%s in %s is neither file, directory nor symlink" % (path, root))

    def has(self, path):
        return _norm(path) in self.entries

    def paths(self):
        return sorted(self.entries)

    # --- writing ------------------------------------------------------------------------------
    def write(self, fileobj):
        """Write the layer as an uncompressed tar to ``fileobj``."""
        with tarfile.open(fileobj=fileobj, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for path in sorted(self.entries):
                entry = self.entries[path]
                info = tarfile.TarInfo(path)
                info.mtime = FIXED_MTIME
                info.uid = entry.get("uid", 0)
                info.gid = entry.get("gid", 0)
                info.uname = info.gname = ""
                info.mode = entry["mode"]
                if entry["type"] == "dir":
                    info.type = tarfile.DIRTYPE
                    tar.addfile(info)
                elif entry["type"] == "symlink":
                    info.type = tarfile.SYMTYPE
                    info.linkname = entry["target"]
                    tar.addfile(info)
                elif "data" in entry:
                    info.size = len(entry["data"])
                    tar.addfile(info, io.BytesIO(entry["data"]))
                else:
                    info.size = os.path.getsize(entry["source"])
                    with open(entry["source"], "rb") as handle:
                        tar.addfile(info, handle)


def split_ref(ref):
    """``registry.k8s.io/pause:3.10`` -> (``registry.k8s.io/pause``, ``3.10``)."""
    slash = ref.rfind("/")
    colon = ref.rfind(":")
    if colon <= slash or "@" in ref:
        raise ValueError("image reference %r has no tag (name:tag)" % ref)
    return ref[:colon], ref[colon + 1:]


def image_config(diff_id, entrypoint=None, cmd=None, env=None, user=None, workdir="/",
                 labels=None, arch="amd64"):
    """The OCI/docker image config for a single-layer image."""
    config = {"Env": list(env) if env else ["PATH=" + DEFAULT_PATH], "WorkingDir": workdir}
    if entrypoint:
        config["Entrypoint"] = list(entrypoint)
    if cmd:
        config["Cmd"] = list(cmd)
    if user:
        config["User"] = user
    if labels:
        config["Labels"] = dict(labels)
    return {
        "architecture": arch,
        "os": "linux",
        "created": CREATED,
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created": CREATED, "created_by": "slipway.cluster bundle builder"}],
    }


def _json_bytes(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def _add_bytes(tar, name, data):
    info = tarfile.TarInfo(name)
    info.mtime = FIXED_MTIME
    info.mode = 0o644
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def write_image(out_path, layer, ref, **config_args):
    """Write ``layer`` as a docker-archive image named ``ref``; return its config digest."""
    repo, tag = split_ref(ref)
    out_dir = os.path.dirname(os.path.abspath(out_path))
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryFile(dir=out_dir) as layer_file:
        layer.write(layer_file)
        layer_file.seek(0)
        digest = hashlib.sha256()
        for block in iter(lambda: layer_file.read(1 << 20), b""):
            digest.update(block)
        layer_hex = digest.hexdigest()
        config = image_config("sha256:" + layer_hex, **config_args)
        config_bytes = _json_bytes(config)
        config_hex = hashlib.sha256(config_bytes).hexdigest()
        manifest = [{"Config": config_hex + ".json", "RepoTags": [ref],
                     "Layers": [layer_hex + "/layer.tar"]}]
        repositories = {repo: {tag: layer_hex}}
        tmp_out = out_path + ".tmp"
        with open(tmp_out, "wb") as raw:
            with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
                info = tarfile.TarInfo(layer_hex)
                info.type = tarfile.DIRTYPE
                info.mtime = FIXED_MTIME
                info.mode = 0o755
                tar.addfile(info)
                info = tarfile.TarInfo(layer_hex + "/layer.tar")
                info.mtime = FIXED_MTIME
                info.mode = 0o644
                info.size = layer_file.tell()
                layer_file.seek(0)
                tar.addfile(info, layer_file)
                _add_bytes(tar, config_hex + ".json", config_bytes)
                _add_bytes(tar, "manifest.json", _json_bytes(manifest))
                _add_bytes(tar, "repositories", _json_bytes(repositories))
        os.replace(tmp_out, out_path)
    return "sha256:" + config_hex


def _regular_file(tar, name):
    handle = tar.extractfile(name)
    if handle is None:
        raise ValueError("%s is not a regular file of the archive" % name)
    return handle


def read_image(path):
    """(manifest.json entries, config dict, layer member names) of a docker-archive."""
    with tarfile.open(path) as tar:
        manifest = json.load(_regular_file(tar, "manifest.json"))
        config = json.load(_regular_file(tar, manifest[0]["Config"]))
        layer = tarfile.open(fileobj=_regular_file(tar, manifest[0]["Layers"][0]))
        names = layer.getnames()
    return manifest, config, names
