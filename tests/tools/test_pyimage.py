"""The operator image's pieces (tools/bundle/bundler/pyimage.py): the lock file, wheels, scripts, the ref."""

import os
import re
import zipfile

import pytest

from bundler import dockerarchive, pyimage

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_lock_pins_every_package_with_a_hash():
    with open(pyimage.LOCK, encoding="utf-8") as handle:
        entries = pyimage.parse_lock(handle.read())
    names = {pyimage.normalize(name) for name, _version, _hashes in entries}
    for wanted in ("kopf", "ansible-core", "ansible-runner", "kubernetes", "prometheus-client", "aiohttp", "jmespath",
                   "pyyaml", "cryptography", "jinja2", "ansible"):
        assert wanted in names
    assert all(re.fullmatch(r"[0-9a-f]{64}", digest) for _name, _version, hashes in entries for digest in hashes)


def test_the_lock_keeps_the_pins_it_was_made_from():
    with open(pyimage.LOCK, encoding="utf-8") as handle:
        locked = {pyimage.normalize(name): version for name, version, _hashes in pyimage.parse_lock(handle.read())}
    pins = {}
    for path in (pyimage.LOCK_INPUT, os.path.join(pyimage.OPERATOR_DIR, "requirements.txt")):
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                match = re.match(r"^([A-Za-z0-9._-]+)==(\S+)", line.strip())
                if match:
                    pins[pyimage.normalize(match.group(1))] = match.group(2)
    assert pins and all(locked.get(name) == version for name, version in pins.items()), (pins, locked)


def test_a_line_without_a_hash_is_refused():
    with pytest.raises(pyimage.ImageError, match="no --hash"):
        pyimage.parse_lock("kopf==1.45.2\n")
    with pytest.raises(pyimage.ImageError, match="NAME==VERSION"):
        pyimage.parse_lock("kopf>=1 --hash=sha256:" + "a" * 64 + "\n")


def test_console_scripts_from_entry_points():
    text = "[console_scripts]\nansible-playbook = ansible.cli.playbook:main\n\n[other]\nx = y:z\n"
    assert pyimage.console_scripts(text) == {"ansible-playbook": ("ansible.cli.playbook", "main")}
    script = pyimage.script_text("ansible.cli.playbook", "main")
    assert script.startswith("#!/usr/bin/python3.11\n") and "from ansible.cli.playbook import main" in script


def test_a_wheel_is_unpacked_with_its_scripts_and_without_the_pruned_parts(tmp_path):
    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("demo/__init__.py", "VALUE = 1\n")
        archive.writestr("kubernetes/aio/big.py", "pass\n")
        archive.writestr("demo-1.0.dist-info/entry_points.txt", "[console_scripts]\ndemo = demo:main\n")
        archive.writestr("demo-1.0.data/scripts/legacy", "#!python\nprint(1)\n")
    stage = tmp_path / "stage"
    scripts = pyimage.install_wheel(str(wheel), str(stage))
    site = stage / pyimage.SITE_PACKAGES.lstrip("/")
    assert (site / "demo" / "__init__.py").read_text() == "VALUE = 1\n"
    assert not (site / "kubernetes").exists()
    assert scripts == ["demo", "legacy"]
    assert (stage / "usr/bin/legacy").read_text().startswith("#!/usr/bin/python3.11\n")
    assert os.access(stage / "usr/bin/demo", os.X_OK)


def test_an_unsafe_member_is_refused(tmp_path):
    wheel = tmp_path / "bad-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("../evil.py", "pass\n")
    with pytest.raises(pyimage.ImageError, match="unsafe"):
        pyimage.install_wheel(str(wheel), str(tmp_path / "stage"))


@pytest.mark.parametrize("role, name", [("operator", "operator_image"), ("fleet", "fleet_image")])
def test_without_a_bundle_read_the_roles_default_to_the_reference_the_bundle_builds(role, name):
    """Their default is the manifest's reference as the artifacts role recorded it, else this one."""
    with open(os.path.join(ROOT, "roles", role, "defaults", "main.yml"), encoding="utf-8") as handle:
        text = handle.read()
    definition = re.search(r"^%s: >-\n((?:  .*\n)+)" % name, text, re.M).group(1)
    default = re.search(r"\['slipway-operator'\] \| default\('([^']+)'\) \}\}", definition).group(1)
    assert default == pyimage.image_ref() == "localhost/slipway/operator:" + pyimage.galaxy_version()


def test_the_sources_digest_follows_the_collection(tmp_path):
    root = tmp_path / "checkout"
    for rel in ("galaxy.yml", "meta/runtime.yml", "plugins/x.py", "roles/r/tasks/main.yml", "playbooks/p.yml",
                "README.md", "LICENSE", "operator/slipway_operator/app.py", "operator/slipway_fleet/runner.py",
                "operator/requirements.lock"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    seen = {pyimage.sources_digest(str(root))}
    for rel in ("roles/r/tasks/main.yml", "operator/slipway_fleet/runner.py"):
        (root / rel).write_text("changed")
        seen.add(pyimage.sources_digest(str(root)))
    assert len(seen) == 3


def test_the_image_holds_the_operator_and_the_fleet(tmp_path):
    root = tmp_path / "checkout"
    for rel in ("galaxy.yml", "playbooks/site.yml", "operator/slipway_operator/__main__.py",
                "operator/slipway_fleet/__main__.py", "operator/slipway_fleet/runner.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    stage = tmp_path / "stage"
    pyimage.stage_checkout(str(stage), str(root))
    site = stage / pyimage.SITE_PACKAGES.lstrip("/")
    assert (site / "slipway_fleet" / "runner.py").read_text() == "operator/slipway_fleet/runner.py"
    assert (site / "slipway_operator" / "__main__.py").is_file()
    assert (stage / pyimage.COLLECTIONS_ROOT.lstrip("/") / "slipway/cluster/playbooks/site.yml").is_file()


def test_ssh_comes_from_debian_with_the_libraries_it_loads(tmp_path):
    """stage_python copies ssh, scp, sftp and ssh-keyscan (the fleet runner's check of the hosts' keys) and hands them
    to the library resolution (like the interpreter)."""
    deb = tmp_path / "debian"
    for path in ("usr/bin/python3.11",) + tuple(p.lstrip("/") for p in pyimage.SSH_PROGRAMS):
        (deb / path).parent.mkdir(parents=True, exist_ok=True)
        (deb / path).write_bytes(b"\x7fELF" + path.encode())
        os.chmod(deb / path, 0o755)
    (deb / pyimage.STDLIB.lstrip("/") / "os.py").parent.mkdir(parents=True)
    (deb / pyimage.STDLIB.lstrip("/") / "os.py").write_text("pass\n")
    stage = tmp_path / "stage"
    programs = pyimage.stage_python(str(deb), str(stage))
    for path in pyimage.SSH_PROGRAMS:
        assert path in programs
        assert os.access(stage / path.lstrip("/"), os.X_OK)
    assert "openssh-client" in pyimage.DEBIAN_PACKAGES and "/usr/bin/ssh-keyscan" in pyimage.SSH_PROGRAMS


def test_the_images_user_owns_its_home_for_ssh(tmp_path):
    busybox = tmp_path / "busybox"
    busybox.write_bytes(b"busybox")
    layer = pyimage.layer_from_stages([], str(busybox), [])
    assert layer.has(pyimage.HOME)
    entry = layer.entries[dockerarchive._norm(pyimage.HOME)]  # pylint: disable=protected-access
    assert (entry["type"], entry["mode"], entry["uid"], entry["gid"]) == ("dir", 0o700, 65532, 65532)
