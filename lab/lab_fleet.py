#!/usr/bin/env python
"""The fleet on the lab cluster (docs/fleet.md, "On the lab"): the last step of `make lab-fleet`.

    lab/lab_fleet.py --inventory inventories/lab/hosts.yml --bundle bundle

After playbooks/fleet.yml made the lab cluster a management cluster, this makes what a user would make by hand
there: the Secret `fleet-ssh` with the lab's SSH key (the key of the inventory's spare nodes) in the namespace
`fleet` (which playbooks/fleet.yml made: fleet_watch_namespaces), and docs/fleet.md's prod.yml with the lab's
values put in: the first spare node's address (group fleet_hosts), the bundle's Kubernetes release, and the
lab's kubelet disk thresholds (the lab's nodes share this machine's disk).
The file goes next to the inventory, to artifacts/fleet/prod.yml, and the commands to apply and watch it are
printed. Run with the controller virtualenv's python, as root; a second run changes nothing.
"""
from __future__ import annotations

import argparse
import base64
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "fleet.md"
NAMESPACE = "fleet"
SECRET = "fleet-ssh"
SPARE_GROUP = "fleet_hosts"
EXAMPLE = "prod.yml"


class LabFleetError(Exception):
    """A problem to report in one line."""


class _IndentedDumper(yaml.SafeDumper):  # pylint: disable=too-many-ancestors
    """Lists indented under their key, as the repository's .yamllint (and ansible-lint, which reads every YAML file
    of the checkout, this one included) wants them."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def render(doc: dict[str, Any], first: str, address: str) -> str:
    """The file written for the user: a comment that says what it is, then the document."""
    return (f"# docs/fleet.md's {EXAMPLE} for the lab ({first} at {address}); written by lab/lab_fleet.py\n---\n"
            + yaml.dump(doc, Dumper=_IndentedDumper, sort_keys=False, width=120))


def example(docs_text: str, name: str = EXAMPLE) -> dict[str, Any]:
    """The YAML block of docs/fleet.md whose first line is `# <name>` (the page's files are marked so)."""
    for block in re.findall(r"```yaml\n(.*?)```", docs_text, flags=re.S):
        first = block.lstrip().splitlines()[0] if block.strip() else ""
        if first.strip() == f"# {name}":
            document = yaml.safe_load(block)
            if isinstance(document, dict) and document.get("kind") == "SlipwayCluster":
                return document
    raise LabFleetError(f"docs/fleet.md has no SlipwayCluster block starting with '# {name}'")


def spare_hosts(inventory: dict[str, Any]) -> list[tuple[str, str]]:
    """(name, address) of the inventory's spare nodes: group fleet_hosts, in the order lab.py wrote them."""
    everything = inventory.get("all") or {}
    group = ((everything.get("children") or {}).get(SPARE_GROUP) or {}).get("hosts") or {}
    hosts = everything.get("hosts") or {}
    return [(name, str((hosts.get(name) or {}).get("ansible_host") or "")) for name in group]


def lab_cluster(doc: dict[str, Any], address: str, version: str, kubelet_configuration: Any) -> dict[str, Any]:
    """docs/fleet.md's example with the lab's values: its one host at `address`, the bundle's release, and the
    lab's kubelet settings among its variables (each value written as YAML: here JSON)."""
    spec = dict(doc["spec"])
    if len(spec.get("hosts") or []) != 1:
        raise LabFleetError(f"the example {doc['metadata']['name']} must list one host, not {len(spec.get('hosts') or [])}")
    spec["hosts"] = [dict(spec["hosts"][0], address=address)]
    spec["kubernetesVersion"] = version
    variables = dict(spec.get("variables") or {})
    if kubelet_configuration:
        variables["control_plane_kubelet_configuration"] = json.dumps(kubelet_configuration, sort_keys=True)
    spec["variables"] = variables
    return {**doc, "spec": spec}


def bundle_version(manifest: dict[str, Any]) -> str:
    version = str(manifest.get("kubernetes_version") or "")
    if not version:
        raise LabFleetError("the bundle's manifest.yml names no kubernetes_version: build the bundle first (make lab-fleet does)")
    return version[1:] if version.startswith("v") else version


def secret_manifest(key_path: Path) -> dict[str, Any]:
    """The Secret the Jobs log in with (kubectl create secret generic fleet-ssh --from-file=ssh-privatekey=KEY)."""
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": SECRET, "namespace": NAMESPACE},
            "data": {"ssh-privatekey": base64.b64encode(key_path.read_bytes()).decode()}}


def kubectl_apply(kubectl: list[str], document: dict[str, Any]) -> str:
    """kubectl apply of one object from stdin; its one-line answer (never the object: a Secret stays out of output)."""
    proc = subprocess.run(kubectl + ["apply", "-f", "-"], input=json.dumps(document), capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        raise LabFleetError(f"kubectl apply of {document['kind']} {document['metadata']['name']} failed: "
                            f"{proc.stderr.strip()}")
    return proc.stdout.strip()


def relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def run(inventory_path: Path, bundle: Path) -> int:
    inventory = yaml.safe_load(inventory_path.read_text(encoding="utf-8")) or {}
    spares = spare_hosts(inventory)
    if not spares or not spares[0][1]:
        raise LabFleetError(f"{inventory_path} has no node in group {SPARE_GROUP}: make lab-fleet starts one "
                            f"(LAB_FLEET_NODES, default t1:{SPARE_GROUP})")
    first, address = spares[0]
    host_vars = (inventory["all"].get("hosts") or {}).get(first) or {}
    key = Path(str(host_vars.get("ansible_ssh_private_key_file") or ""))
    if not key.is_file():
        raise LabFleetError(f"{first}'s SSH key {key} is not a file: run lab/lab.py up (make lab-fleet) again")
    manifest = yaml.safe_load((bundle / "manifest.yml").read_text(encoding="utf-8")) or {}
    lab_vars = inventory["all"].get("vars") or {}
    doc = lab_cluster(example(DOCS.read_text(encoding="utf-8")), address, bundle_version(manifest),
                      lab_vars.get("control_plane_kubelet_configuration"))
    kubeconfig = inventory_path.parent / "artifacts" / "admin.conf"
    if not kubeconfig.is_file():
        raise LabFleetError(f"{kubeconfig} is missing: run site.yml on the lab first (make lab)")
    kubectl = [str(bundle / "bin" / "kubectl"), "--kubeconfig", str(kubeconfig)]
    print(kubectl_apply(kubectl, secret_manifest(key)))
    out = inventory_path.parent / "artifacts" / "fleet" / EXAMPLE
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(doc, first, address), encoding="utf-8")
    env = f"KUBECONFIG={relative(kubeconfig)}"
    tool = f"{relative(bundle)}/bin/kubectl"
    print(f"\nspare lab nodes for SlipwayClusters: {', '.join(f'{name} {ip}' for name, ip in spares)}")
    print(f"wrote {relative(out)}: docs/fleet.md's {EXAMPLE} on {first} ({address}), Kubernetes {doc['spec']['kubernetesVersion']}")
    print("apply it and watch it become Running:")
    print(f"  {env} {tool} apply -f {relative(out)}")
    print(f"  {env} {tool} get slipwayclusters -A --watch")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lab_fleet.py", description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--inventory", required=True, type=Path, help="the lab cluster's inventory (lab.py up's)")
    parser.add_argument("--bundle", required=True, type=Path, help="the bundle directory (its kubectl and manifest)")
    args = parser.parse_args(argv)
    try:
        return run(args.inventory, args.bundle)
    except (LabFleetError, OSError) as error:
        print(f"lab_fleet.py: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
