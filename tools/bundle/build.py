"""Build the slipway.cluster artifact bundle, or verify one.

    python3 tools/bundle/build.py [--backend source|download] [--kubernetes-version vX.Y.Z]
                                  [--out DIR] [--cache-dir DIR]
    python3 tools/bundle/build.py verify DIR

The format and both backends are described in docs/bundle.md.
"""

import sys

from bundler.cli import main  # the script's own folder, first on sys.path

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
