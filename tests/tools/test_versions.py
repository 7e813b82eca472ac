import pytest

from bundler import versions


def test_default_version_has_companions():
    comp = versions.companions(versions.DEFAULT_KUBERNETES_VERSION)
    assert set(comp) == {"crictl", "cni_plugins", "flannel", "flannel_cni_plugin",
                         "metrics_server"}


def test_crictl_follows_the_kubernetes_minor():
    for minor, comp in versions.COMPANIONS.items():
        assert comp["crictl"].startswith("v%s." % minor)


@pytest.mark.parametrize("given, expected", [("v1.37.1", "v1.37.1"), ("1.36.3", "v1.36.3")])
def test_normalize(given, expected):
    assert versions.normalize_kubernetes_version(given) == expected


@pytest.mark.parametrize("bad", ["v1.37", "latest", "v1.37.1-rc.0", "stable-1"])
def test_rejects_non_release_versions(bad):
    with pytest.raises(versions.VersionError):
        versions.parse_kubernetes_version(bad)


def test_staging_version():
    assert versions.staging_version("v1.37.1") == "v0.37.1"


def test_unknown_minor_names_the_file():
    with pytest.raises(versions.VersionError, match="versions.py"):
        versions.companions("v1.20.0")


@pytest.mark.parametrize("debian, upstream", [
    ("1:1.35.0-4+deb12u1+b1", "1.35.0"), ("1.8.9-2", "1.8.9"), ("6.4", "6.4")])
def test_debian_upstream_version(debian, upstream):
    assert versions.debian_upstream_version(debian) == upstream


def _collection_companions():
    """COMPANIONS of the collection's artifact list (plugins/module_utils/_artifacts.py), read as data."""
    import ast
    import os
    path = os.path.join(os.path.dirname(__file__), "..", "..", "plugins", "module_utils", "_artifacts.py")
    with open(path) as handle:
        tree = ast.parse(handle.read())
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == "COMPANIONS":
            return ast.literal_eval(node.value)
    raise AssertionError("COMPANIONS not found in %s" % path)


def test_bundle_and_collection_pin_the_same_versions():
    # The artifacts role's upstream and mirror sources download what the bundle builds: the two
    # lists must not drift apart (the collection also pins the test image, busybox, and etcd, which
    # the bundle reads from kubeadm's source and the collection pins for the upstream source).
    collection = _collection_companions()
    assert set(collection) == set(versions.COMPANIONS)
    for minor, pinned in versions.COMPANIONS.items():
        assert {k: v for k, v in collection[minor].items() if k in pinned} == pinned, minor
        assert set(collection[minor]) - set(pinned) == {"busybox", "etcd"}


def test_bundle_and_collection_pin_the_same_runtime():
    # The artifacts role's upstream and mirror sources download the containerd and runc the bundle builds.
    import ast
    import os
    path = os.path.join(os.path.dirname(__file__), "..", "..", "plugins", "module_utils", "_artifacts.py")
    with open(path) as handle:
        tree = ast.parse(handle.read())
    pinned = next(ast.literal_eval(node.value) for node in tree.body
                  if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == "RUNTIME")
    assert pinned == {"containerd": versions.CONTAINERD["version"], "runc": versions.RUNC["version"]}
