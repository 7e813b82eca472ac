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
