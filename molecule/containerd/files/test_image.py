"""Write a busybox image as a docker-archive, with the bundle builder's own image code."""

from __future__ import annotations

import sys

from bundler import dockerarchive, images  # tools/bundle, importable in .venv (pyproject.toml)

REF = "localhost/slipway/verify-busybox:1"


def main(out: str) -> None:
    layer = images.base_layer()
    images.add_busybox(layer, "/bin/busybox", images.busybox_applets("/bin/busybox"))
    dockerarchive.write_image(out, layer, REF, cmd=["sh"])


if __name__ == "__main__":
    main(sys.argv[1])
