"""Tests of lab/lab.py's firewall chain: the lab's traffic to private addresses that are not the lab's is refused on
this machine, so that a ClusterIP port nobody serves cannot be answered by the machine's uplink (docs/conformance.md)."""

import ipaddress
import subprocess

import pytest

import lab


class FakeIptables:
    """iptables as a set of (chain, rule) pairs: -S/-C ask, -N/-A/-I add, everything else fails."""

    def __init__(self, chains=(), rules=()):
        self.chains = set(chains) | {"FORWARD"}
        self.rules = list(rules)
        self.calls = []

    def __call__(self, argv, check, capture_output, text):
        assert argv[:2] == ["iptables", "-w"] and not check
        self.calls.append(argv[2:])
        verb, rest = argv[2], argv[3:]
        ok = True
        if verb == "-S":
            ok = rest[-1] in self.chains
        elif verb == "-N":
            self.chains.add(rest[0])
        elif verb == "-C":
            ok = (rest[0], tuple(rest[1:])) in self.rules
        elif verb == "-A":
            self.rules.append((rest[0], tuple(rest[1:])))
        elif verb == "-I":
            self.rules.insert(0, (rest[0], tuple(rest[2:])))
        else:
            ok = False
        return subprocess.CompletedProcess(argv, 0 if ok else 1, "", "")


def test_the_chain_and_its_jump_are_made_once():
    fake = FakeIptables()
    notes = lab.keep_offline(run=fake)
    assert len(notes) == 2 and "SLIPWAY-LAB" in notes[0]
    assert fake.rules[0] == ("FORWARD", ("-j", "SLIPWAY-LAB")), "the lab's chain comes first in FORWARD"
    assert [rule for chain, rule in fake.rules if chain == "SLIPWAY-LAB"] == [tuple(r) for r in lab.firewall_rules()]
    again = FakeIptables(fake.chains, fake.rules)
    assert lab.keep_offline(run=again) == []
    assert not [call for call in again.calls if call[0] in ("-N", "-A", "-I")]


def test_the_lab_passes_and_the_cluster_networks_are_refused():
    first, *refused = lab.firewall_rules()
    assert first == ["-s", lab.LAB_CIDR, "-d", lab.LAB_CIDR, "-j", "RETURN"]
    assert all(rule[-4:] == ["-j", "REJECT", "--reject-with", "icmp-net-unreachable"] for rule in refused)
    lab_net = ipaddress.ip_network(lab.LAB_CIDR)
    assert all(subnet.subnet_of(lab_net) for subnet in lab.SUBNETS)
    # The collection's default Service and pod networks (and the lab's) are inside the refused ranges.
    private = [ipaddress.ip_network(cidr) for cidr in lab.PRIVATE_CIDRS]
    for cidr in ("10.233.0.0/18", "10.233.64.0/18"):
        assert any(ipaddress.ip_network(cidr).subnet_of(net) for net in private)


def test_a_machine_without_iptables_rights_is_told_what_the_lab_needs():
    def refuse(argv, check, capture_output, text):
        return subprocess.CompletedProcess(argv, 1, "", "denied")

    with pytest.raises(lab.LabError, match="the lab needs root and iptables"):
        lab.keep_offline(run=refuse)
