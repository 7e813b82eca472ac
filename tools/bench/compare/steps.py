"""The six steps of each installer as commands, and running them: time, PLAY RECAP, or the reason it failed."""
from __future__ import annotations

import dataclasses
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bench.compare.report import StepResult, failure

Recap = Callable[[str], dict[str, dict[str, int]]]


@dataclasses.dataclass(frozen=True)
class Command:
    argv: list[str]
    cwd: Path
    env: dict[str, str]


def slipway_commands(step: str, *, playbook: str, inventory: Path, root: Path, env: dict[str, str], added: str,
                     version: str) -> list[Command]:
    """slipway's playbooks for a step (the same ones bench.cluster times)."""
    base = [playbook, "-i", str(inventory)]
    argv = {
        "create": [*base, "site.yml"],
        "rerun": [*base, "site.yml"],
        "scale": [*base, "playbooks/scale.yml"],
        "remove": [*base, "playbooks/remove_node.yml", "-e", f"remove_node_names={added}"],
        "upgrade": [*base, "playbooks/upgrade.yml", "-e", f"slipway_kubernetes_version={version}"],
        "reset": [*base, "playbooks/reset.yml", "-e", "reset_confirm=yes"],
    }[step]
    return [Command(argv, root, env)]


def kubespray_commands(step: str, *, playbook: str, inventory: Path, source: Path, env: dict[str, str], added: str,
                       extra: Path) -> list[Command]:
    """kubespray's playbooks for a step, run from its tree as its docs say (become root, extra vars file).

    Adding a node is facts.yml without a limit, then scale.yml limited to the new node
    (docs/operations/nodes.md: "Before using --limit run playbook facts.yml without the limit")."""
    base = [playbook, "-i", str(inventory), "--become", "--become-user=root", "-e", f"@{extra}"]
    steps = {
        "create": [[*base, "cluster.yml"]],
        "rerun": [[*base, "cluster.yml"]],
        "scale": [[*base, "playbooks/facts.yml"], [*base, "scale.yml", f"--limit={added}"]],
        "remove": [[*base, "remove-node.yml", "-e", f"node={added}", "-e", "skip_confirmation=yes"]],
        "upgrade": [[*base, "upgrade-cluster.yml"]],
        # reset.yml's check reads reset_confirmation (skip_confirmation only skips its prompt), as its CI runs it
        "reset": [[*base, "reset.yml", "-e", "reset_confirmation=yes"]],
    }[step]
    return [Command(argv, source, env) for argv in steps]


def merge(recaps: Sequence[dict[str, dict[str, int]]]) -> dict[str, dict[str, int]]:
    """The task results of several runs of one step, summed per host."""
    total: dict[str, dict[str, int]] = {}
    for counts in recaps:
        for host, values in counts.items():
            into = total.setdefault(host, {})
            for key, value in values.items():
                into[key] = into.get(key, 0) + value
    return total


def run_step(installer: str, step: str, commands: Sequence[Command], log: Path, recap: Recap,
             clock: Callable[[], float] = time.monotonic,
             execute: Callable[[Command], tuple[int, str]] | None = None) -> StepResult:
    """Run a step's commands in order: the time of all of them and their PLAY RECAPs, or the failure.

    A command that exits non-zero, or prints no PLAY RECAP, fails the step with the end of its output."""
    execute = execute or _execute
    log.parent.mkdir(parents=True, exist_ok=True)
    outputs, recaps = [], []
    started = clock()
    for command in commands:
        code, output = execute(command)
        outputs.append(f"$ {' '.join(command.argv)}\n{output}")
        log.write_text("\n".join(outputs), encoding="utf-8")
        if code != 0:
            return failure(installer, step, output, f"{_playbook(command)} exited {code} (log {log}):")
        counts = recap(output)
        if not counts:
            return failure(installer, step, output, f"no PLAY RECAP in the output (log {log}):")
        recaps.append(counts)
    return StepResult(installer, step, clock() - started, merge(recaps))


def _playbook(command: Command) -> str:
    """The playbook of a command line: the first .yml argument that is no option's value."""
    argv = command.argv
    for index, arg in enumerate(argv):
        if arg.endswith(".yml") and not arg.startswith("@") and (index == 0 or argv[index - 1] not in ("-i", "-e")):
            return arg
    return argv[0]


def _execute(command: Command) -> tuple[int, str]:
    proc = subprocess.run(command.argv, cwd=command.cwd, env=command.env, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, check=False)
    return proc.returncode, proc.stdout
