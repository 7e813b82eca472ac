import os
import shutil
import subprocess

import pytest

from bundler import elf

HOST_LS = shutil.which("ls")


def test_reads_needed_libraries_of_a_host_program():
    interp, needed = elf.read_dynamic(os.path.realpath(HOST_LS))
    assert interp == "/lib64/ld-linux-x86-64.so.2"
    assert "libc.so.6" in needed


def test_static_program_needs_nothing(tmp_path):
    source = tmp_path / "s.c"
    source.write_text("int main(void) { return 0; }\n")
    program = str(tmp_path / "s")
    subprocess.run(["gcc", "-static", "-Os", "-o", program, str(source)], check=True)
    assert elf.read_dynamic(program) == (None, [])


def test_not_elf(tmp_path):
    path = tmp_path / "script"
    path.write_text("#!/bin/sh\n")
    assert not elf.is_elf(str(path))
    with pytest.raises(elf.ElfError):
        elf.read_dynamic(str(path))


def fake_root(tmp_path, with_libc=True):
    """A root holding the host's ls and its real libraries, laid out like Debian packages."""
    root = str(tmp_path / "root")
    os.makedirs(os.path.join(root, "usr/bin"))
    shutil.copy(os.path.realpath(HOST_LS), os.path.join(root, "usr/bin/ls"))
    _interp, needed = elf.read_dynamic(os.path.realpath(HOST_LS))
    libdir = os.path.join(root, "lib/x86_64-linux-gnu")
    os.makedirs(libdir)
    os.makedirs(os.path.join(root, "lib64"))
    queue = list(needed) + ["ld-linux-x86-64.so.2"]
    seen = set()
    while queue:
        name = queue.pop()
        if name in seen or (name == "libc.so.6" and not with_libc):
            continue
        seen.add(name)
        host = os.path.realpath(os.path.join("/lib/x86_64-linux-gnu", name))
        real = os.path.basename(host)
        if not os.path.exists(os.path.join(libdir, real)):
            shutil.copy(host, os.path.join(libdir, real))
        if real != name:
            os.symlink(real, os.path.join(libdir, name))
        queue.extend(elf.read_dynamic(host)[1])
    os.symlink("/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
               os.path.join(root, "lib64/ld-linux-x86-64.so.2"))
    return root


def test_closure_follows_loader_libraries_and_symlinks(tmp_path):
    root = fake_root(tmp_path)
    paths = elf.closure(root, ["/usr/bin/ls"])
    assert "/usr/bin/ls" in paths
    assert "/lib64/ld-linux-x86-64.so.2" in paths
    assert "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" in paths
    assert "/lib/x86_64-linux-gnu/libc.so.6" in paths
    for path in paths:
        assert os.path.lexists(os.path.join(root, path.lstrip("/")))


def test_closure_names_missing_libraries(tmp_path):
    root = fake_root(tmp_path, with_libc=False)
    with pytest.raises(elf.ElfError, match=r"libc\.so\.6 \(needed by /usr/bin/ls\)"):
        elf.closure(root, ["/usr/bin/ls"])
