#!/usr/bin/env python
"""Fail on a deprecation warning of this collection's in an Ansible run's output.

tests/ansible-core.sh molecule runs a scenario from one ansible-core release and passes its whole output here, with the
logs of the playbook runs its steps made (molecule/resources/files/stage.py writes each to a file of its own). Each
`[DEPRECATION WARNING]` is read with the lines that follow it up to the next blank line (where ansible-core 2.19 and
newer print the warning's `Origin:` file); a warning is ours when that text names a file of the checkout (outside its
.venv) or the collection `slipway.cluster`. Ours are printed and make the exit status 1; the others (from ansible-core
itself or another collection) are counted and named, not failed on, since no change here removes them.

Usage: tests/deprecations.py CHECKOUT OUTPUT_FILE [LOG_FILE...]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

MARKER = "[DEPRECATION WARNING]"
# The most lines a warning's text takes here: its message, Origin:, the source excerpt and the advice.
WINDOW = 16
# Colour codes, should a run have forced them on, and the frame Molecule draws around each playbook's output.
ANSI = re.compile(r"\x1b\[[0-9;]*m")
FRAME = re.compile(r"^\s*[\u2502\u250c\u2514]\s?")


def warnings(text: str) -> list[str]:
    """Each deprecation warning of the output, with the lines that belong to it."""
    lines = [FRAME.sub("", line) for line in ANSI.sub("", text).splitlines()]
    found = []
    for index, line in enumerate(lines):
        if MARKER not in line:
            continue
        block = [line[line.index(MARKER):]]
        for following in lines[index + 1:index + WINDOW]:
            if not following.strip() or MARKER in following:
                break
            block.append(following)
        found.append("\n".join(block))
    return found


def ours(warning: str, checkout: str) -> bool:
    """A warning that names a file of the checkout (its virtualenv's packages are not ours) or this collection."""
    if "slipway.cluster" in warning:
        return True
    prefix = checkout.rstrip("/") + "/"
    return any(not rest.startswith(".venv/") for rest in re.findall(re.escape(prefix) + r"(\S*)", warning))


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    checkout = argv[1]
    found = [warning for name in argv[2:] for warning in warnings(Path(name).read_text(encoding="utf-8", errors="replace"))]
    mine = [warning for warning in found if ours(warning, checkout)]
    others = sorted({warning.splitlines()[0] for warning in found if not ours(warning, checkout)})
    for warning in mine:
        print(warning + "\n", file=sys.stderr)
    print(f"deprecation warnings: {len(mine)} of this collection's, {len(found) - len(mine)} of others"
          + ("".join(f"\n  {line}" for line in others)))
    if mine:
        print("Each warning above names the file and line to change (its Origin:).", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
