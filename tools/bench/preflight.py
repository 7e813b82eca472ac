"""Time preflight's first stage at fleet size, with generated inventories and no host contacted.

For each size N (default 10, 100 and 1,000 hosts: 3 control planes, the rest workers, documentation
addresses, ssh to a closed port so a connection would fail at once), prints the wall time of:

- model: the cluster model of a valid inventory (the day-2 playbooks' first step, the preflight
  role's `model` entry point, as scale.yml and remove_node.yml use it);
- problems: site.yml on the same inventory with three mistakes (a misspelt setting, a wrong type, a
  kubespray setting that differs), until it stops with its list of problems, before any connection;
- then each day-2 playbook of playbooks/ on the same inventory with the same mistakes, until it stops with its
  list, before any connection (second table).

Both are whole ansible-playbook runs (start-up and inventory parsing included). Figures for
docs/performance.md; `make bench-preflight` runs it.

    python -m bench.preflight [--sizes 10,100,1000] [--keep DIR] [--playbooks upgrade,scale,...|none]
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MISTAKES = {"slipway_lb_mod": "vip", "slipway_node_cidr_mask_size": "big", "kube_network_plugin": "calico"}
MODEL_PLAYBOOK = """\
- name: Build the model, as the day-2 playbooks do first
  hosts: k8s_cluster:etcd:loadbalancer
  gather_facts: false
  tasks:
    - name: Validate the inventory and settings into the cluster model
      ansible.builtin.import_role:
        name: slipway.cluster.preflight
        tasks_from: model
        rolespec_validate: false
"""
# The day-2 playbooks timed on the inventory with mistakes (playbooks/NAME.yml), each with the input it needs.
DAY2 = {
    "upgrade": [], "scale": [], "remove_node": ["-e", "remove_node_names=w1"], "reset": ["-e", "reset_confirm=yes"],
    "certs": [], "etcd_backup": [], "etcd_restore": ["-e", "etcd_snapshot=/nonexistent/etcd.db"],
    "recover_control_plane": [], "rotate_encryption_key": [],
}


def inventory(size: int, mistakes: bool) -> str:
    """A YAML inventory of size hosts; 10.64.0.0/10 holds them, outside the default pod and service networks."""
    lines = ["all:", "  vars:", "    ansible_connection: ssh", "    ansible_port: 1",
             "    slipway_pod_cidr: 10.0.0.0/12", "    slipway_node_cidr_mask_size: 24"]
    if mistakes:
        lines[-1:] = [f"    {key}: {value}" for key, value in MISTAKES.items()]
    lines.append("  hosts:")
    for index in range(size):
        name = f"cp{index + 1}" if index < 3 else f"w{index - 2}"
        lines.append(f"    {name}: {{ansible_host: 10.{64 + index // 62500}.{index // 250 % 250}.{index % 250 + 1}}}")
    lines += ["  children:", "    kube_control_plane:", "      hosts:"]
    lines += [f"        cp{index + 1}: {{}}" for index in range(min(3, size))]
    lines += ["    kube_node:", "      hosts:"]
    lines += [f"        w{index - 2}: {{}}" for index in range(3, size)]
    lines += ["    k8s_cluster:", "      children: {kube_control_plane: {}, kube_node: {}}"]
    return "\n".join(lines) + "\n"


def addresses_unique(text: str) -> bool:
    found = [line.split("ansible_host: ")[1] for line in text.splitlines() if "ansible_host: " in line]
    return len(found) == len(set(found))


def timed(args: list[str]) -> tuple[str, subprocess.CompletedProcess]:
    """Wall time and CPU time (user + system, ansible-playbook and its workers): on a busy machine the
    wall time grows with the load, the CPU time does not."""
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    result = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return f"{wall:.1f} s ({cpu:.1f} s CPU)", result


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.preflight", description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--keep", help="write the inventories and logs to this directory")
    parser.add_argument("--playbooks", default=",".join(DAY2), help="the day-2 playbooks to time, or none")
    args = parser.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-preflight-"))
    work.mkdir(parents=True, exist_ok=True)
    (work / "model.yml").write_text(MODEL_PLAYBOOK)
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print("| hosts | model (valid inventory) | site.yml's list of problems (3 mistakes) |")
    print("|---:|---:|---:|")
    failed = False
    for size in (int(text) for text in args.sizes.split(",")):
        good, bad = work / f"hosts-{size}.yml", work / f"bad-{size}.yml"
        good.write_text(inventory(size, mistakes=False))
        bad.write_text(inventory(size, mistakes=True))
        assert addresses_unique(good.read_text())
        model_time, model = timed([str(BIN / "ansible-playbook"), "-i", str(good), str(work / "model.yml")])
        problems_time, problems = timed([str(BIN / "ansible-playbook"), "-i", str(bad), str(ROOT / "site.yml")])
        (work / f"model-{size}.log").write_text(model.stdout + model.stderr)
        (work / f"problems-{size}.log").write_text(problems.stdout + problems.stderr)
        ok_model = model.returncode == 0
        ok_problems = problems.returncode != 0 and "The inventory has 3 problem(s)" in problems.stdout + problems.stderr
        failed |= not (ok_model and ok_problems)
        print(f"| {size} | {model_time}{'' if ok_model else ' (FAILED)'} "
              f"| {problems_time}{'' if ok_problems else ' (unexpected result)'} |", flush=True)
    day2 = [name for name in args.playbooks.split(",") if name and name != "none"]
    if day2:
        sizes = [int(text) for text in args.sizes.split(",")]
        print()
        print("| playbook | " + " | ".join(f"{size} hosts" for size in sizes) + " |")
        print("|---|" + "---:|" * len(sizes))
        for name in day2:
            cells = []
            for size in sizes:
                took, result = timed([str(BIN / "ansible-playbook"), "-i", str(work / f"bad-{size}.yml"),
                                      str(ROOT / "playbooks" / f"{name}.yml"), *DAY2[name]])
                (work / f"{name}-{size}.log").write_text(result.stdout + result.stderr)
                output = result.stdout + result.stderr
                ok = result.returncode != 0 and "problem(s); nothing was changed" in output and "UNREACHABLE" not in output
                failed |= not ok
                cells.append(f"{took}{'' if ok else ' (unexpected result)'}")
            print(f"| {name}.yml | " + " | ".join(cells) + " |", flush=True)
    if failed:
        print(f"Some run did not end as expected; logs in {work}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
