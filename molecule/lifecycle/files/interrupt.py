#!/usr/bin/env python
"""Run a playbook and kill it once a play has started a given number of times, for the lifecycle scenario's upgrade.

    interrupt.py --inventory DIR --playbook playbooks/upgrade.yml --play 'Upgrade the control planes' --starts 2 \
                 --log LOG [--extra KEY=VALUE ...]

With `serial: 1` Ansible starts a play again for every host: the second start of the control planes' play means the
first control plane is done and the second is about to begin. The whole process group of ansible-playbook is killed
there, as an operator's Ctrl-C or a lost controller would. Prints one JSON line; exits non-zero when the play never
started that often (the playbook ended or failed first).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--inventory", required=True)
    parser.add_argument("--playbook", required=True)
    parser.add_argument("--play", required=True)
    parser.add_argument("--starts", type=int, default=2)
    parser.add_argument("--log", required=True, type=Path)
    parser.add_argument("--extra", action="append", default=[])
    args = parser.parse_args()
    argv = [str(Path(sys.executable).with_name("ansible-playbook")), "-i", args.inventory, str(ROOT / args.playbook)]
    for extra in args.extra:
        argv += ["-e", extra]
    args.log.parent.mkdir(parents=True, exist_ok=True)
    seen = 0
    killed = False
    with args.log.open("w", encoding="utf-8") as log:
        proc = subprocess.Popen(argv, cwd=ROOT, text=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1"})
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            if line.startswith(f"PLAY [{args.play}"):
                seen += 1
                if seen >= args.starts:
                    os.killpg(proc.pid, signal.SIGKILL)
                    killed = True
                    break
        proc.wait()
    print(json.dumps({"killed": killed, "play_starts": seen, "rc": proc.returncode, "log": str(args.log)}))
    return 0 if killed else 1


if __name__ == "__main__":
    sys.exit(main())
