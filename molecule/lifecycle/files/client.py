#!/usr/bin/env python
"""A client that requests a URL every INTERVAL seconds and counts the failures, for the lifecycle scenario.

    client.py --url http://10.88.100.11:30080/ --out FILE [--interval 0.2] [--max-seconds 3600] [--timeout 30]

Bounded: it stops by itself after --max-seconds, after --give-up-after seconds of nothing but failures
(the lab is gone: a scenario that failed half-way), or as soon as FILE.stop exists. After every request it
rewrites FILE with {"requests": N, "failures": N, "last_failure": "...", "slowest": S, "slowest_at": "...",
"slow": N, "running": true|false}: a request fails when it is refused, reset, answered wrongly or not answered
within --timeout; "slowest" is the longest a successful answer took and "slow" counts answers over a second.

The timeout only tells an answer that never comes from a slow one: 30 s. The lab's nodes share two cores and one
disk; while an upgrade copies and imports hundreds of MB of images and binaries into five nodes at once, a healthy
pod's answer took over 2 s (with 2 s, 10 of 6,013 and 8 of 6,693 requests timed out in `make test`, all but one
during that copying and importing) and, with other work on the machine (load average 60 to 85), over 5 s (8 of 5,313
with 5 s, all while the interrupted upgrade imported the target's images and staged its binaries on five nodes). How
long an answer takes is not what the scenario judges: a request fails when it is refused, reset or answered wrongly,
or not answered at all. A node that stops answering or a pod that disappears still fails requests (a connection to a
backend that is gone is refused or reset, or hangs past the timeout); slow answers show in "slowest" and "slow".
"""
from __future__ import annotations

import argparse
import json
import time
import urllib.request
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--interval", type=float, default=0.2)
    parser.add_argument("--max-seconds", type=float, default=3600)
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--give-up-after", type=float, default=300.0)
    args = parser.parse_args()
    stop = args.out.with_name(args.out.name + ".stop")
    stop.unlink(missing_ok=True)
    state = {"url": args.url, "requests": 0, "failures": 0, "last_failure": "", "failed_at": [], "first_failures": [],
             "slowest": 0.0, "slowest_at": "", "slow": 0, "running": True}
    deadline = time.monotonic() + args.max_seconds
    last_success = time.monotonic()
    while time.monotonic() < deadline and not stop.exists() and time.monotonic() - last_success < args.give_up_after:
        started = time.monotonic()
        state["requests"] += 1
        try:
            with urllib.request.urlopen(args.url, timeout=args.timeout) as answer:  # http to a lab node
                body = answer.read()
                if answer.status != 200 or not body.startswith(b"hello"):
                    raise OSError(f"status {answer.status}, body {body[:40]!r}")
            last_success = time.monotonic()
            took = last_success - started
            if took > 1.0:
                state["slow"] += 1
            if took > state["slowest"]:
                state["slowest"], state["slowest_at"] = round(took, 3), time.strftime("%H:%M:%S")
        except OSError as error:
            state["failures"] += 1
            state["last_failure"] = str(error)
            state["failed_at"] = (state["failed_at"] + [time.strftime("%H:%M:%S")])[-20:]
            if len(state["first_failures"]) < 20:
                state["first_failures"].append(f"{time.strftime('%H:%M:%S')} {error}")
        tmp = args.out.with_name(args.out.name + ".tmp")
        tmp.write_text(json.dumps(state), encoding="utf-8")
        tmp.replace(args.out)
        time.sleep(max(0.0, args.interval - (time.monotonic() - started)))
    state["running"] = False
    args.out.write_text(json.dumps(state), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
