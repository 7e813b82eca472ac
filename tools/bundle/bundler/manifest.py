"""manifest.yml: writing, reading and verifying a bundle (the format is in docs/bundle.md).

The manifest is written in a small, fixed YAML subset (block mappings and lists, every string
double-quoted, integers bare) so that any YAML parser reads it and so that this module can read
it back without PyYAML when the interpreter running build.py has none.
"""

import hashlib
import json
import os

FORMAT_VERSION = 1
MANIFEST_NAME = "manifest.yml"
CONTENT_DIRS = ("bin", "images")
# Further Kubernetes releases of the bundle: releases/vX.Y.Z/{bin,images}/, listed in `releases`.
RELEASES_DIR = "releases"
# The conformance suite of a release (build.py --with conformance): <release>/conformance/{bin,images}/,
# listed in the release's `conformance` (binaries and images), apart from the files a cluster runs.
CONFORMANCE = "conformance"

# Top-level keys in the order they are written.
TOP_LEVEL_KEYS = ("format_version", "kubernetes_version", "arch", "backend", "components",
                  "binaries", "images", CONFORMANCE, "releases")
RELEASE_KEYS = ("kubernetes_version", "components", "binaries", "images", CONFORMANCE)
BINARY_KEYS = ("path", "component", "sha256", "size")
IMAGE_KEYS = ("path", "name", "ref", "component", "sha256", "size")


class ManifestError(Exception):
    """manifest.yml is missing or not in the documented format."""


def sha256_file(path, chunk=1 << 20):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while True:
            block = handle.read(chunk)
            if not block:
                break
            digest.update(block)
    return digest.hexdigest()


def file_entry(bundle_dir, relpath, **fields):
    """A binaries/images entry for ``relpath`` with its sha256 and size computed."""
    full = os.path.join(bundle_dir, relpath)
    entry = {"path": relpath}
    entry.update(fields)
    entry["sha256"] = sha256_file(full)
    entry["size"] = os.path.getsize(full)
    return entry


# ---------------------------------------------------------------------------------------------
# writing

def _scalar(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if value is None:
        return "null"
    return json.dumps(str(value))


def _emit(value, indent, lines):
    pad = " " * indent
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                lines.append("%s%s:" % (pad, key))
                _emit(item, indent + 2, lines)
            elif isinstance(item, dict):
                lines.append("%s%s: {}" % (pad, key))
            elif isinstance(item, list):
                lines.append("%s%s: []" % (pad, key))
            else:
                lines.append("%s%s: %s" % (pad, key, _scalar(item)))
    elif isinstance(value, list):
        for item in value:
            if not isinstance(item, dict) or not item:
                raise ManifestError("manifest lists hold mappings only, got %r" % (item,))
            sub: list[str] = []
            _emit(item, indent + 2, sub)
            sub[0] = pad + "- " + sub[0][indent + 2:]
            lines.extend(sub)
    else:
        raise ManifestError("cannot write %r at the top of a manifest" % (value,))


def dump(manifest):
    """The text of manifest.yml for ``manifest`` (a dict with TOP_LEVEL_KEYS)."""
    ordered = {}
    for key in TOP_LEVEL_KEYS:
        if key in manifest:
            ordered[key] = manifest[key]
    for key in manifest:
        if key not in ordered:
            ordered[key] = manifest[key]
    ordered["binaries"] = [_order(entry, BINARY_KEYS) for entry in manifest.get("binaries", [])]
    ordered["images"] = [_order(entry, IMAGE_KEYS) for entry in manifest.get("images", [])]
    if manifest.get(CONFORMANCE):
        ordered[CONFORMANCE] = _conformance_ordered(manifest[CONFORMANCE])
    if manifest.get("releases"):
        ordered["releases"] = [_release_ordered(release) for release in manifest["releases"]]
    lines = ["# slipway.cluster artifact bundle; format: docs/bundle.md"]
    _emit(ordered, 0, lines)
    return "\n".join(lines) + "\n"


def _release_ordered(release):
    ordered = _order(release, RELEASE_KEYS)
    ordered["binaries"] = [_order(entry, BINARY_KEYS) for entry in release.get("binaries", [])]
    ordered["images"] = [_order(entry, IMAGE_KEYS) for entry in release.get("images", [])]
    if release.get(CONFORMANCE):
        ordered[CONFORMANCE] = _conformance_ordered(release[CONFORMANCE])
    return ordered


def _conformance_ordered(section):
    return {"binaries": [_order(entry, BINARY_KEYS) for entry in section.get("binaries", [])],
            "images": [_order(entry, IMAGE_KEYS) for entry in section.get("images", [])]}


def entries(release):
    """Every file entry of one release: its binaries and images, then its conformance suite's."""
    suite = release.get(CONFORMANCE) or {}
    return (list(release["binaries"]) + list(release["images"])
            + list(suite.get("binaries") or []) + list(suite.get("images") or []))


def releases(data):
    """Every Kubernetes release of a loaded manifest: the top-level one first, then `releases`."""
    return [data] + list(data.get("releases") or [])


def _order(entry, keys):
    ordered = {key: entry[key] for key in keys if key in entry}
    for key in sorted(entry):
        if key not in ordered:
            ordered[key] = entry[key]
    return ordered


def write(bundle_dir, manifest):
    path = os.path.join(bundle_dir, MANIFEST_NAME)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(dump(manifest))
    os.replace(tmp, path)
    return path


# ---------------------------------------------------------------------------------------------
# reading

def _parse_scalar(text, where):
    text = text.strip()
    if text.startswith('"'):
        try:
            return json.loads(text)
        except ValueError as exc:
            raise ManifestError("%s: bad string %s (%s)" % (where, text, exc))
    if text in ("{}",):
        return {}
    if text in ("[]",):
        return []
    if text in ("true", "false"):
        return text == "true"
    if text in ("null", "~", ""):
        return None
    try:
        return int(text)
    except ValueError:
        return text


def parse_subset(text):
    """Read the YAML subset that dump() writes (no PyYAML needed)."""
    rows = []
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        rows.append((indent, stripped, number))

    def block(pos, indent):
        if pos >= len(rows):
            return None, pos
        if rows[pos][1].startswith("- "):
            return seq(pos, indent)
        return mapping(pos, indent)

    def mapping(pos, indent, result=None):
        result = {} if result is None else result
        while pos < len(rows):
            row_indent, body, number = rows[pos]
            if row_indent < indent:
                break
            if row_indent > indent or body.startswith("- "):
                raise ManifestError("line %d: unexpected indentation" % number)
            key, sep, rest = body.partition(":")
            if not sep:
                raise ManifestError("line %d: expected 'key: value'" % number)
            key = key.strip()
            rest = rest.strip()
            pos += 1
            if rest:
                result[key] = _parse_scalar(rest, "line %d" % number)
            elif pos < len(rows) and rows[pos][0] > indent:
                result[key], pos = block(pos, rows[pos][0])
            elif pos < len(rows) and rows[pos][0] == indent and rows[pos][1].startswith("- "):
                result[key], pos = seq(pos, indent)
            else:
                result[key] = None
        return result, pos

    def seq(pos, indent):
        result = []
        while pos < len(rows):
            row_indent, body, number = rows[pos]
            if row_indent != indent or not body.startswith("- "):
                break
            # Re-read "- key: value" as the first row of a mapping indented by two more.
            rows[pos] = (indent + 2, body[2:].lstrip(), number)
            item, pos = mapping(pos, indent + 2)
            result.append(item)
        return result, pos

    data, pos = block(0, rows[0][0] if rows else 0)
    if pos != len(rows):
        raise ManifestError("line %d: unexpected content" % rows[pos][2])
    return data if data is not None else {}


def loads(text):
    try:
        import yaml  # optional: only this reader needs it
    except ImportError:
        return parse_subset(text)
    return yaml.safe_load(text)


def load(bundle_dir):
    path = os.path.join(bundle_dir, MANIFEST_NAME)
    if not os.path.isfile(path):
        raise ManifestError("%s: no such file (not a bundle directory?)" % path)
    with open(path, encoding="utf-8") as handle:
        data = loads(handle.read())
    validate(data)
    return data


def validate(data):
    """Raise ManifestError naming every field that is missing or of the wrong kind."""
    problems = []
    if not isinstance(data, dict):
        raise ManifestError("manifest.yml must be a mapping")
    for key in ("kubernetes_version", "arch", "backend"):
        if not isinstance(data.get(key), str) or not data.get(key):
            problems.append("%s: missing or not a string" % key)
    if data.get("format_version") != FORMAT_VERSION:
        problems.append("format_version: expected %d, got %r"
                        % (FORMAT_VERSION, data.get("format_version")))
    _validate_release(data, "", "", problems)
    extra = data.get("releases", [])
    if not isinstance(extra, list):
        problems.append("releases: not a list")
        extra = []
    seen = {data.get("kubernetes_version")}
    for index, release in enumerate(extra):
        where = "releases[%d]." % index
        if not isinstance(release, dict):
            problems.append("releases[%d]: not a mapping" % index)
            continue
        version = release.get("kubernetes_version")
        if not isinstance(version, str) or not version:
            problems.append("%skubernetes_version: missing or not a string" % where)
        elif version in seen:
            problems.append("%skubernetes_version: %s is in the bundle twice" % (where, version))
        seen.add(version)
        _validate_release(release, where, "%s/%s/" % (RELEASES_DIR, version), problems)
    if problems:
        raise ManifestError("manifest.yml is not valid:\n  " + "\n  ".join(problems))


def _validate_release(data, where, prefix, problems):
    """One release's components, binaries and images; ``prefix`` is where its files must be."""
    if not isinstance(data.get("components"), dict):
        problems.append("%scomponents: missing or not a mapping" % where)
    _validate_files(data, where, prefix, problems)
    suite = data.get(CONFORMANCE)
    if suite is not None:
        if not isinstance(suite, dict):
            problems.append("%s%s: not a mapping" % (where, CONFORMANCE))
        else:
            _validate_files(suite, "%s%s." % (where, CONFORMANCE), "%s%s/" % (prefix, CONFORMANCE),
                            problems)


def _validate_files(data, where, prefix, problems):
    for section, keys in (("binaries", BINARY_KEYS), ("images", IMAGE_KEYS)):
        items = data.get(section)
        if not isinstance(items, list):
            problems.append("%s%s: missing or not a list" % (where, section))
            continue
        for index, entry in enumerate(items):
            if not isinstance(entry, dict):
                problems.append("%s%s[%d]: not a mapping" % (where, section, index))
                continue
            for key in keys:
                if key not in entry:
                    problems.append("%s%s[%d] (%s): no %s"
                                    % (where, section, index, entry.get("path", "?"), key))
            path = entry.get("path")
            if isinstance(path, str) and not _inside(path, prefix):
                problems.append("%s%s[%d]: path %r leaves the bundle or is outside %sbin/ and "
                                "%simages/" % (where, section, index, path, prefix, prefix))


def _inside(relpath, prefix=""):
    norm = os.path.normpath(relpath)
    if os.path.isabs(relpath) or norm.startswith(".."):
        return False
    if prefix:
        if not norm.startswith(os.path.normpath(prefix) + os.sep):
            return False
        norm = norm[len(os.path.normpath(prefix)) + 1:]
    return norm.split(os.sep, 1)[0] in CONTENT_DIRS


# ---------------------------------------------------------------------------------------------
# verifying

def verify(bundle_dir, quick=False):
    """Recheck every file of the bundle; return a list of problems (empty when all is well).

    ``quick`` compares sizes only (used to decide that a finished bundle is untouched).
    """
    data = load(bundle_dir)
    problems = []
    listed = set()
    listed_entries = []
    for release in releases(data):
        listed_entries.extend(entries(release))
    for entry in listed_entries:
        relpath = os.path.normpath(entry["path"])
        listed.add(relpath)
        full = os.path.join(bundle_dir, relpath)
        if not os.path.isfile(full):
            problems.append("MISSING %s: listed in %s but not in the bundle"
                            % (entry["path"], MANIFEST_NAME))
            continue
        size = os.path.getsize(full)
        if size != entry["size"]:
            problems.append("SIZE %s: %s says %d bytes, file has %d"
                            % (entry["path"], MANIFEST_NAME, entry["size"], size))
            if quick:
                continue
        if quick:
            continue
        actual = sha256_file(full)
        if actual != entry["sha256"]:
            problems.append("MISMATCH %s: %s says sha256 %s, file has sha256 %s"
                            % (entry["path"], MANIFEST_NAME, entry["sha256"], actual))
    for top in CONTENT_DIRS + (RELEASES_DIR, CONFORMANCE):
        root = os.path.join(bundle_dir, top)
        for dirpath, _dirs, files in os.walk(root):
            for name in files:
                rel = os.path.relpath(os.path.join(dirpath, name), bundle_dir)
                if rel not in listed:
                    problems.append("UNLISTED %s: in the bundle but not in %s"
                                    % (rel, MANIFEST_NAME))
    return sorted(problems)
