"""Cached build steps: a step's output is reused while its inputs are unchanged.

A step's key is the sha256 of its inputs (versions, flags, the builder source files it
depends on). Its output directory carries the key in `.stamp`; a step whose stamp matches is not
run again. Outputs are written to a temporary directory first, so an interrupted step leaves
no stamp behind. Two builds sharing one cache (two checkouts' `make test` at once) take a step's
lock in turn: the second finds the first's output and reuses it instead of deleting it mid-way.
"""

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import sys
import threading
import time

STAMP = ".stamp"


def digest(value):
    """sha256 of a JSON-able value (sorted keys)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def files_digest(paths):
    """sha256 over the names and contents of files (the builder's own sources)."""
    hasher = hashlib.sha256()
    for path in sorted(paths):
        hasher.update(os.path.basename(path).encode() + b"\0")
        with open(path, "rb") as handle:
            hasher.update(handle.read())
        hasher.update(b"\0")
    return hasher.hexdigest()


class Steps:
    def __init__(self, cache_dir, out=sys.stdout):
        self.cache_dir = cache_dir
        self.root = os.path.join(cache_dir, "steps")
        self.out = out
        self.started = time.monotonic()
        self.ran = []
        self.reused = []
        self._say_lock = threading.Lock()
        os.makedirs(self.root, exist_ok=True)

    def say(self, message):
        """One line of progress; steps in several threads say whole lines."""
        with self._say_lock:
            self.out.write("[%5.0fs] %s\n" % (time.monotonic() - self.started, message))
            self.out.flush()

    def path(self, name):
        return os.path.join(self.root, name)

    def stamp_of(self, name):
        try:
            with open(os.path.join(self.path(name), STAMP), encoding="utf-8") as handle:
                return handle.read().strip()
        except OSError:
            return None

    @contextlib.contextmanager
    def _locked(self, name):
        """Hold step ``name``'s lock (a file beside its output) across processes."""
        with open(self.path(name) + ".lock", "a", encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def run(self, name, key, produce):
        """Return the output directory of step ``name``; run ``produce(tmpdir)`` unless an
        output with the same key exists."""
        final = self.path(name)
        # Under the lock, so that an output another build is making is waited for, then reused.
        with self._locked(name):
            if self.stamp_of(name) == key:
                self.reused.append(name)
                return final
            tmp = final + ".tmp"
            for stale in (tmp, final):
                if os.path.lexists(stale):
                    shutil.rmtree(stale)
            os.makedirs(tmp)
            begun = time.monotonic()
            produce(tmp)
            with open(os.path.join(tmp, STAMP), "w", encoding="utf-8") as handle:
                handle.write(key + "\n")
            os.replace(tmp, final)
        self.ran.append((name, time.monotonic() - begun))
        return final
