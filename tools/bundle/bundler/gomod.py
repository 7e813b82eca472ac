"""Building Go programs of other projects through the Go module proxy.

Each component gets a small generated tools module (go.mod only) that requires the upstream
module at the wanted version and repeats the upstream go.mod's replace and exclude directives,
because those of a dependency are ignored. Replacements that point into the upstream source
tree (``k8s.io/api => ./staging/src/k8s.io/api``, ``go.etcd.io/etcd/api/v3 => ../api``) are
turned into the released module version (``k8s.io/api v0.37.1``, ``go.etcd.io/etcd/api/v3
v3.7.0``). The build list is then chosen by minimal version selection from pinned go.mod
files, so the same versions always give the same dependencies; go.sum is filled in and checked
against the checksum database (reached through the module proxy) on the first build.
"""

import json
import os
import re
import subprocess
from typing import Any

GO_CHUNK_RE = re.compile(r"^go (\d+)\.(\d+)(?:\.(\d+))?$")


class GoError(Exception):
    pass


class GoComponent:
    """One tools module and the programs built from it.

    requires:  [(module, version)] as the module declares itself.
    fetch:     {module: path on the proxy} when the proxy serves it under another path
               (cri-tools declares sigs.k8s.io/cri-tools but is served as
               github.com/kubernetes-sigs/cri-tools).
    programs:  {output name: package import path}.
    local_version: function(module path) -> version for replacements into the source tree.
    pins:      {module: version} for dependencies whose wanted version the module proxy does
               not serve; each becomes a replace directive (and is named in docs/bundle.md).
    main_go:   the text of a main.go in the tools module itself, when the program is not an
               upstream package as it stands (CoreDNS with a chosen plugin set).
    """

    def __init__(self, name, version, requires, programs, ldflags=(), tags=(), fetch=None,
                 local_version=None, source=None, pins=None, env=None, main_go=None):
        self.name = name
        self.version = version
        self.requires = list(requires)
        self.programs = dict(programs)
        self.ldflags = list(ldflags)
        self.tags = list(tags)
        self.fetch = dict(fetch or {})
        self.local_version = local_version
        self.pins = dict(pins or {})
        self.env = dict(env or {})
        self.main_go = main_go
        self.source = source or ", ".join("%s@%s" % pair for pair in self.requires)

    def spec(self):
        """Everything that decides the build's output, for the cache key."""
        return {
            "name": self.name,
            "version": self.version,
            "requires": self.requires,
            "programs": self.programs,
            "ldflags": self.ldflags,
            "tags": self.tags,
            "fetch": self.fetch,
            "pins": self.pins,
            "env": self.env,
            "main_go": self.main_go,
        }

    def module_path(self):
        """The tools module's own path (its main.go, if any, is this package)."""
        return "slipway.invalid/bundle/" + self.name


# ---------------------------------------------------------------------------------------------
# go.mod reading and writing

def _strip_comment(line):
    index = line.find("//")
    return (line[:index] if index >= 0 else line).strip()


def parse_gomod(text):
    """The module path, go version, and replace/exclude directives of a go.mod text.

    Returns {"module": str, "go": str, "replace": [(old, old_version, new, new_version)],
    "exclude": [(module, version)]}; new_version is None for a local path.
    """
    result: dict[str, Any] = {"module": None, "go": None, "replace": [], "exclude": []}
    block = None
    for raw in text.splitlines():
        line = _strip_comment(raw)
        if not line:
            continue
        if block:
            if line == ")":
                block = None
                continue
            _directive(result, block, line)
            continue
        verb, _sep, rest = line.partition(" ")
        rest = rest.strip()
        if rest == "(":
            block = verb
            continue
        if verb == "module":
            result["module"] = rest.strip('"')
        elif verb == "go":
            result["go"] = rest
        else:
            _directive(result, verb, rest)
    return result


def _directive(result, verb, rest):
    if verb == "replace":
        left, arrow, right = rest.partition("=>")
        if not arrow:
            raise GoError("bad replace directive: %s" % rest)
        left = left.split()
        right = right.split()
        old, old_version = left[0], (left[1] if len(left) > 1 else None)
        new, new_version = right[0], (right[1] if len(right) > 1 else None)
        result["replace"].append((old, old_version, new, new_version))
    elif verb == "exclude":
        parts = rest.split()
        result["exclude"].append((parts[0], parts[1]))


# The directory etcd's go.mod replaces forbidden modules with (`replace go.etcd.io/etcd => ./FORBIDDEN_DEPENDENCY`).
FORBIDDEN_DEPENDENCY = "FORBIDDEN_DEPENDENCY"


def is_local_path(target):
    return target.startswith("./") or target.startswith("../") or target.startswith("/")


def go_version_key(text):
    match = re.match(r"^(?:go)?(\d+)\.(\d+)(?:\.(\d+))?", text or "")
    if not match:
        return (0, 0, 0)
    return tuple(int(part or 0) for part in match.groups())


def tools_gomod(component, upstream_gomods):
    """The text of the tools go.mod for ``component``.

    upstream_gomods: {module: go.mod text} of every module in component.requires.
    """
    go_line = "1.21"
    replaces: dict = {}
    excludes = set()
    for module, _version in component.requires:
        parsed = parse_gomod(upstream_gomods[module])
        if parsed["go"] and go_version_key(parsed["go"]) > go_version_key(go_line):
            go_line = parsed["go"]
        for old, old_version, new, new_version in parsed["replace"]:
            if is_local_path(new) and os.path.basename(new.rstrip("/")) == FORBIDDEN_DEPENDENCY:
                # etcd >= 3.6 guards modules it must never depend on (the old go.etcd.io/etcd, its
                # tests) with a replace into a directory that does not exist: not a dependency.
                continue
            if is_local_path(new):
                if component.local_version is None:
                    raise GoError("%s replaces %s with the local path %s; the component %s "
                                  "does not say which released version stands for it"
                                  % (module, old, new, component.name))
                new, new_version = old, component.local_version(old)
            key = (old, old_version)
            value = (new, new_version)
            if key in replaces and replaces[key] != value:
                raise GoError("conflicting replacements of %s: %s and %s"
                              % (old, replaces[key], value))
            replaces[key] = value
        for pair in parsed["exclude"]:
            excludes.add(pair)
    for module, version in component.pins.items():
        for key in [key for key in replaces if key[0] == module]:
            del replaces[key]
        replaces[(module, None)] = (module, version)
    for module, fetch_path in component.fetch.items():
        version = dict(component.requires)[module]
        replaces[(module, None)] = (fetch_path, version)

    lines = ["// Generated by tools/bundle (slipway.cluster bundle builder): builds %s."
             % component.source,
             "module %s" % component.module_path(), "", "go %s" % go_line, ""]
    lines.append("require (")
    for module, version in component.requires:
        lines.append("\t%s %s" % (module, version))
    lines.append(")")
    if replaces:
        lines.extend(["", "replace ("])
        for (old, old_version), (new, new_version) in sorted(
                replaces.items(), key=lambda item: item[0][0]):
            left = old + (" " + old_version if old_version else "")
            right = new + (" " + new_version if new_version else "")
            lines.append("\t%s => %s" % (left, right))
        lines.append(")")
    if excludes:
        lines.extend(["", "exclude ("])
        for module, version in sorted(excludes):
            lines.append("\t%s %s" % (module, version))
        lines.append(")")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# ldflags

def x_flags(package, values):
    """``-X package.key=value`` for each (key, value); values must not contain spaces."""
    flags = []
    for key, value in values:
        if " " in value or "'" in value or '"' in value:
            raise GoError("ldflags value %r has quotes or spaces" % value)
        flags.append("-X %s.%s=%s" % (package, key, value))
    return flags


def kubernetes_version_ldflags(git_version, build_date, git_commit=""):
    """The version stamp Kubernetes' own build (hack/lib/version.sh) sets, for both packages
    that carry it; kubeadm compares gitVersion with the cluster's, and every `--version` prints
    it."""
    match = re.match(r"^v(\d+)\.(\d+)\.", git_version)
    if not match:
        raise GoError("not a Kubernetes-style version: %s" % git_version)
    values = [
        ("gitVersion", git_version),
        ("gitMajor", match.group(1)),
        ("gitMinor", match.group(2)),
        ("gitCommit", git_commit),
        ("gitTreeState", "clean"),
        ("buildDate", build_date),
    ]
    return (x_flags("k8s.io/component-base/version", values)
            + x_flags("k8s.io/client-go/pkg/version", values))


# ---------------------------------------------------------------------------------------------
# the go command

def default_exec_name(package):
    """The file name `go build -o DIR/` gives a main package (cmd/go's DefaultExecName)."""
    parts = package.rstrip("/").split("/")
    if len(parts) > 1 and re.match(r"^v[2-9][0-9]*$", parts[-1]):
        return parts[-2]
    return parts[-1]


class Go:
    """Runs the go command with the settings every bundle build uses."""

    def __init__(self, go="go", run=subprocess.run, environ=None):
        self.go = go
        self.run = run
        self.environ = dict(os.environ if environ is None else environ)
        self._version = None

    def version(self):
        if self._version is None:
            out = self.run([self.go, "env", "GOVERSION"], check=True, capture_output=True,
                           text=True, env=self.env()).stdout.strip()
            self._version = out
        return self._version

    def env(self, extra=None):
        env = dict(self.environ)
        env["GOTOOLCHAIN"] = "local"
        env["GOWORK"] = "off"
        env["CGO_ENABLED"] = "0"
        env["GOOS"] = "linux"
        env["GOARCH"] = "amd64"
        env["GOFLAGS"] = "-mod=mod -buildvcs=false"
        if self._version is not None and go_version_key(self._version) >= (1, 27, 0):
            env["GOEXPERIMENT"] = jsonv2_off(env.get("GOEXPERIMENT", ""))
        if extra:
            env.update(extra)
        return env

    def download(self, module, version, workdir):
        """`go mod download -json module@version` -> its JSON (Dir, GoMod, Info, ...)."""
        env = self.env()
        env.pop("GOFLAGS")
        proc = self.run([self.go, "mod", "download", "-json", "%s@%s" % (module, version)],
                        cwd=workdir, capture_output=True, text=True, env=env, check=False)
        try:
            info = json.loads(proc.stdout or "{}")
        except ValueError:
            info = {}
        if proc.returncode != 0 or info.get("Error"):
            raise GoError("go mod download %s@%s failed: %s"
                          % (module, version, info.get("Error") or proc.stderr.strip()))
        return info

    def build(self, workdir, packages, outdir, ldflags, tags=(), log=None, env=None):
        self.version()
        cmd = [self.go, "build", "-trimpath", "-ldflags", " ".join(ldflags)]
        if tags:
            cmd += ["-tags", ",".join(tags)]
        cmd += ["-o", outdir.rstrip("/") + "/"] + list(packages)
        proc = self.run(cmd, cwd=workdir, env=self.env(env), stdout=log, stderr=log,
                        check=False)
        if proc.returncode != 0:
            raise GoError("go build failed in %s (exit %d): %s"
                          % (workdir, proc.returncode, " ".join(cmd)))
        return cmd


def jsonv2_off(goexperiment):
    """Go >= 1.27 turns the jsonv2 experiment on, which breaks kube-openapi (/openapi/v2)."""
    parts = [part for part in goexperiment.split(",") if part and part != "jsonv2"]
    if "nojsonv2" not in parts:
        parts.append("nojsonv2")
    return ",".join(parts)


def module_time(info_path):
    """The commit time the proxy records for a module version (``Time`` of its .info), used as
    the reproducible build date."""
    with open(info_path, encoding="utf-8") as handle:
        return json.load(handle)["Time"]
