"""Write a busybox image as a docker-archive, with the bundle builder's own image code."""

from __future__ import annotations

import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "bundle"))

from bundler import dockerarchive, images  # noqa: E402  pylint: disable=wrong-import-position

REF = "localhost/slipway/verify-busybox:1"


def main(out: str) -> None:
    layer = images.base_layer()
    images.add_busybox(layer, "/bin/busybox", images.busybox_applets("/bin/busybox"))
    dockerarchive.write_image(out, layer, REF, cmd=["sh"])


if __name__ == "__main__":
    main(sys.argv[1])
