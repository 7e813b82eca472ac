"""The results of the steps and the one table that sets them side by side.

Every figure comes from a run: its wall time and the PLAY RECAP of its own output (bench.cluster's
parser). A step that failed carries the end of its output instead of a time, and the table says
"failed" with that reason: it never shows a figure for it.
"""
from __future__ import annotations

import dataclasses
import datetime
import os
from collections.abc import Sequence

STEPS = ("create", "rerun", "scale", "remove", "upgrade", "reset")
STEP_TITLES = {
    "create": "create (5 nodes)",
    "rerun": "no-op rerun",
    "scale": "add one worker",
    "remove": "remove that worker",
    "upgrade": "upgrade one minor",
    "reset": "reset",
}
INSTALLERS = ("slipway", "kubespray")
REASON_LINES = 12


@dataclasses.dataclass
class StepResult:
    installer: str
    step: str
    seconds: float | None = None  # None: not timed (failed, or not run)
    recap: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)
    error: str = ""  # the end of the output of a failed step, or why it did not run
    failed_requests: int | None = None  # the upgrade's client loop
    requests: int | None = None
    ran: bool = True  # False: not run, because an earlier step it needs failed

    @property
    def ok(self) -> bool:
        return self.seconds is not None and not self.error

    @property
    def changed(self) -> int:
        return sum(c.get("changed", 0) for c in self.recap.values())

    def per_host(self) -> dict[str, int]:
        """Task results per host: ok + skipped + failed (+ unreachable, rescued, ignored are part of those)."""
        return {host: c.get("ok", 0) + c.get("skipped", 0) + c.get("failed", 0) for host, c in self.recap.items()}


def failure(installer: str, step: str, output: str, reason: str) -> StepResult:
    """A failed step: the reason and the last lines of its output, no time."""
    tail = [line for line in output.rstrip().splitlines() if line.strip()][-REASON_LINES:]
    return StepResult(installer, step, None, {}, "\n".join([reason, *tail]))


def ratio(kubespray: StepResult | None, slipway: StepResult | None) -> str:
    """kubespray's time over slipway's: above 1, slipway is faster. Only for two timed steps."""
    if not (kubespray and slipway and kubespray.ok and slipway.ok) or not slipway.seconds:
        return "–"
    assert kubespray.seconds is not None  # for mypy: ok implies a time
    return f"{kubespray.seconds / slipway.seconds:.2f}"


def _time(result: StepResult | None) -> str:
    if result is None or not result.ran:
        return "not run"
    if not result.ok:
        return "**failed**"
    return f"{result.seconds:.0f} s"


def _results(result: StepResult | None) -> str:
    """Task results per node, as min–max over the cluster's nodes with the changed count: '72–109 (0 changed)'.

    The controller's own plays (localhost: slipway's inventory checks, kubespray's remove-node confirmation) are
    no node of the cluster: they stay in host_table, not in the range, which would otherwise start at their 1 to 3.
    """
    if result is None or not result.recap:
        return "–"
    per_host = result.per_host()
    counts = sorted(n for host, n in per_host.items() if host != "localhost") or sorted(per_host.values())
    spread = f"{counts[0]}" if counts[0] == counts[-1] else f"{counts[0]}–{counts[-1]}"
    return f"{spread} ({result.changed} changed)"


def _requests(result: StepResult | None) -> str:
    if result is None or result.failed_requests is None:
        return ""
    return f"; {result.failed_requests} of {result.requests} requests failed"


def table(results: Sequence[StepResult]) -> str:
    """One Markdown table: per step, both installers' times, the ratio and their task results per host."""
    by = {(r.installer, r.step): r for r in results}
    lines = ["| step | slipway | kubespray | kubespray / slipway | task results per host, slipway | "
             "task results per host, kubespray |",
             "| --- | ---: | ---: | ---: | --- | --- |"]
    for step in STEPS:
        ours, theirs = by.get(("slipway", step)), by.get(("kubespray", step))
        if ours is None and theirs is None:
            continue
        lines.append(f"| {STEP_TITLES[step]} | {_time(ours)} | {_time(theirs)} | {ratio(theirs, ours)} | "
                     f"{_results(ours)}{_requests(ours)} | {_results(theirs)}{_requests(theirs)} |")
    return "\n".join(lines)


def host_table(results: Sequence[StepResult]) -> str:
    """Every run's PLAY RECAP per host, as bench.cluster prints it, for the record."""
    lines = ["| installer | step | host | ok | changed | skipped | failed | task results |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in results:
        for host, c in sorted(r.recap.items()):
            lines.append(f"| {r.installer} | {r.step} | {host} | {c.get('ok', 0)} | {c.get('changed', 0)} | "
                         f"{c.get('skipped', 0)} | {c.get('failed', 0)} | {r.per_host()[host]} |")
    return "\n".join(lines)


def failures(results: Sequence[StepResult]) -> str:
    """Each failed step with its reason, exactly as the run printed it."""
    blocks = []
    for r in results:
        if r.error and r.ran:
            body = "\n".join(f"    {line}" for line in r.error.splitlines())
            blocks.append(f"- {r.installer}, {STEP_TITLES.get(r.step, r.step)}: failed\n\n{body}\n")
    return "\n".join(blocks)


@dataclasses.dataclass(frozen=True)
class Machine:
    cores: int
    memory_gib: float

    @staticmethod
    def here() -> Machine:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        return Machine(os.cpu_count() or 0, pages / 2**30)


def document(results: Sequence[StepResult], *, when: datetime.datetime, machine: Machine, slipway_commit: str,
             kubespray_commit: str, load: dict[str, tuple[float, float]], versions: tuple[str, str]) -> str:
    """The section for docs/performance.md: date, machine, commits, load averages, the tables, the failures."""
    loads = "; ".join(f"{name} {start:.1f} at the start, {end:.1f} at the end" for name, (start, end) in load.items())
    parts = [
        f"### {when:%Y-%m-%d %H:%M} UTC, `make compare`",
        "",
        f"{machine.cores} cores, {machine.memory_gib:.0f} GiB; slipway {slipway_commit}, kubespray {kubespray_commit}; "
        f"Kubernetes {versions[0]}, upgraded to {versions[1]}. Load average (1 min): {loads or 'not read'}.",
        "",
        table(results),
        "",
    ]
    failed = failures(results)
    if failed:
        parts += ["Steps that failed, with the end of their output:", "", failed]
    parts += ["Task results per host of every run (from each run's PLAY RECAP):", "", host_table(results), ""]
    return "\n".join(parts)
