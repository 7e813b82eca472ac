"""Which shared libraries an ELF program needs, resolved inside an unpacked root (no ldd).

ldd runs the host's loader against the host's libraries; the image's libraries come from
Debian packages unpacked into a separate root, so the DT_NEEDED entries are read here and
looked up in that root the way the dynamic loader of a Debian amd64 system would.
"""

import os
import posixpath
import struct

ELF_MAGIC = b"\x7fELF"
SHT_DYNAMIC = 6
PT_INTERP = 3
DT_NULL = 0
DT_NEEDED = 1

# The loader's default search path on Debian amd64 (multiarch first).
LIBRARY_DIRS = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64",
                "/lib", "/usr/lib")


class ElfError(Exception):
    pass


def is_elf(path):
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == ELF_MAGIC
    except OSError:
        return False


def read_dynamic(path):
    """(interpreter or None, [DT_NEEDED names]) of a 64-bit little-endian ELF file."""
    with open(path, "rb") as handle:
        data = handle.read()
    if data[:4] != ELF_MAGIC:
        raise ElfError("%s is not an ELF file" % path)
    if data[4] != 2 or data[5] != 1:
        raise ElfError("%s is not a 64-bit little-endian ELF file" % path)
    (e_phoff, e_shoff) = struct.unpack_from("<QQ", data, 0x20)
    (e_phentsize, e_phnum, e_shentsize, e_shnum) = struct.unpack_from("<HHHH", data, 0x36)

    interp = None
    for index in range(e_phnum):
        base = e_phoff + index * e_phentsize
        p_type, _flags, p_offset, _vaddr, _paddr, p_filesz = struct.unpack_from(
            "<IIQQQQ", data, base)
        if p_type == PT_INTERP:
            interp = data[p_offset:p_offset + p_filesz].rstrip(b"\0").decode()

    sections = []
    for index in range(e_shnum):
        base = e_shoff + index * e_shentsize
        (_name, sh_type, _flags, _addr, sh_offset, sh_size, sh_link, _info, _align,
         sh_entsize) = struct.unpack_from("<IIQQQQIIQQ", data, base)
        sections.append((sh_type, sh_offset, sh_size, sh_link, sh_entsize))

    needed = []
    for sh_type, sh_offset, sh_size, sh_link, sh_entsize in sections:
        if sh_type != SHT_DYNAMIC:
            continue
        str_offset = sections[sh_link][1]
        step = sh_entsize or 16
        for base in range(sh_offset, sh_offset + sh_size, step):
            tag, value = struct.unpack_from("<qQ", data, base)
            if tag == DT_NULL:
                break
            if tag == DT_NEEDED:
                end = data.index(b"\0", str_offset + value)
                needed.append(data[str_offset + value:end].decode())
    return interp, needed


def resolve_in_root(root, path, max_links=40):
    """Follow the symlinks of image path ``path`` inside ``root``; return the chain of image
    paths (the path itself, each link, and finally the regular file). Debian packages ship no
    symlinked directories, so only the last element is followed."""
    chain = []
    current = posixpath.normpath(path)
    for _step in range(max_links):
        chain.append(current)
        full = os.path.join(root, current.lstrip("/"))
        if os.path.islink(full):
            target = os.readlink(full)
            if not target.startswith("/"):
                target = posixpath.join(posixpath.dirname(current), target)
            current = posixpath.normpath(target)
            continue
        if os.path.exists(full):
            return chain
        raise ElfError("%s not found in %s" % (current, root))
    raise ElfError("too many symlinks resolving %s in %s" % (path, root))


def find_library(root, name, dirs=LIBRARY_DIRS):
    for directory in dirs:
        candidate = posixpath.join(directory, name)
        if os.path.lexists(os.path.join(root, candidate.lstrip("/"))):
            return candidate
    return None


def closure(root, programs, dirs=LIBRARY_DIRS):
    """Every image path needed to run ``programs`` (image paths inside ``root``): the programs,
    their loader and every shared library they need, recursively, with the symlinks leading to
    them. Raises ElfError naming every library that cannot be found."""
    needed_paths = set()
    missing = []
    queue = list(programs)
    seen = set()
    while queue:
        path = queue.pop()
        if path in seen:
            continue
        seen.add(path)
        chain = resolve_in_root(root, path)
        needed_paths.update(chain)
        real = os.path.join(root, chain[-1].lstrip("/"))
        if not is_elf(real):
            continue
        interp, libs = read_dynamic(real)
        if interp:
            queue.append(interp)
        for lib in libs:
            found = find_library(root, lib, dirs)
            if found is None:
                missing.append("%s (needed by %s)" % (lib, path))
            else:
                queue.append(found)
    if missing:
        raise ElfError("shared libraries not found in the unpacked packages: "
                       + ", ".join(sorted(set(missing))))
    return sorted(needed_paths)
