"""Tests of lab/lab.py's firewall chain: the lab's traffic to private addresses that are not the lab's nor this
machine's resolvers is refused here, so that a ClusterIP port nobody serves cannot be answered by the machine's uplink
(docs/conformance.md), while the nodes still resolve the registries' names."""

import ipaddress
import subprocess

import pytest

import lab


class FakeIptables:
    """iptables with its chains as ordered rule lists: -S lists, -C asks, -N/-F/-A/-I change, the rest fails."""

    def __init__(self, chains=None):
        self.chains = {"FORWARD": []} if chains is None else {name: list(rules) for name, rules in chains.items()}
        self.calls = []

    def __call__(self, argv, check, capture_output, text):
        assert argv[:2] == ["iptables", "-w"] and not check
        self.calls.append(argv[2:])
        verb, rest = argv[2], argv[3:]
        out, ok = "", True
        if verb == "-S":
            ok = rest[0] in self.chains
            out = "".join("-A %s %s\n" % (rest[0], " ".join(rule)) for rule in self.chains.get(rest[0], []))
            out = ("-N %s\n" % rest[0] + out) if ok else ""
        elif verb == "-N":
            self.chains[rest[0]] = []
        elif verb == "-F":
            self.chains[rest[0]] = []
        elif verb == "-C":
            ok = list(rest[1:]) in self.chains[rest[0]]
        elif verb == "-A":
            self.chains[rest[0]].append(list(rest[1:]))
        elif verb == "-I":
            self.chains[rest[0]].insert(int(rest[1]) - 1, list(rest[2:]))
        else:
            ok = False
        return subprocess.CompletedProcess(argv, 0 if ok else 1, out, "")

    def changes(self):
        return [call for call in self.calls if call[0] in ("-N", "-F", "-A", "-I")]


def resolv(tmp_path, *lines):
    path = tmp_path / "resolv.conf"
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_the_chain_and_its_jump_are_made_once(tmp_path):
    conf = resolv(tmp_path, "nameserver 10.255.255.53", "search lab")
    fake = FakeIptables()
    notes = lab.keep_offline(run=fake, resolv_conf=conf)
    assert len(notes) == 2 and "SLIPWAY-LAB" in notes[0]
    assert fake.chains["FORWARD"][0] == ["-j", "SLIPWAY-LAB"], "the lab's chain comes first in FORWARD"
    assert fake.chains["SLIPWAY-LAB"] == lab.firewall_rules(["10.255.255.53"])
    again = FakeIptables(fake.chains)
    assert lab.keep_offline(run=again, resolv_conf=conf) == []
    assert again.changes() == []


def test_the_resolvers_pass_before_anything_is_refused(tmp_path):
    conf = resolv(tmp_path, "# a comment", "nameserver 10.255.255.53", "nameserver fd00::53", "nameserver 192.168.1.1")
    assert lab.nameservers(conf) == ["10.255.255.53", "192.168.1.1"]
    rules = lab.firewall_rules(lab.nameservers(conf))
    first_refusal = next(index for index, rule in enumerate(rules) if "REJECT" in rule)
    passing = rules[:first_refusal]
    assert ["-s", lab.LAB_CIDR, "-d", "10.255.255.53/32", "-j", "RETURN"] in passing
    assert ["-s", lab.LAB_CIDR, "-d", "192.168.1.1/32", "-j", "RETURN"] in passing
    assert lab.nameservers(tmp_path / "missing") == []


def test_a_chain_with_other_rules_or_order_is_rewritten_in_order(tmp_path):
    """An older chain refused the resolver (its pass came after the refusals): it is flushed and written again."""
    conf = resolv(tmp_path, "nameserver 10.255.255.53")
    old = lab.firewall_rules() + [["-s", lab.LAB_CIDR, "-d", "10.255.255.53/32", "-j", "RETURN"]]
    fake = FakeIptables({"FORWARD": [["-j", "SLIPWAY-LAB"]], "SLIPWAY-LAB": old})
    assert lab.keep_offline(run=fake, resolv_conf=conf) == ["rewrote the rules of SLIPWAY-LAB on this machine"]
    assert fake.chains["SLIPWAY-LAB"] == lab.firewall_rules(["10.255.255.53"])
    assert fake.chains["FORWARD"] == [["-j", "SLIPWAY-LAB"]]


def test_the_lab_passes_and_the_cluster_networks_are_refused():
    first, *refused = lab.firewall_rules()
    assert first == ["-s", lab.LAB_CIDR, "-d", lab.LAB_CIDR, "-j", "RETURN"]
    assert all(rule[-4:] == ["-j", "REJECT", "--reject-with", "icmp-net-unreachable"] for rule in refused)
    lab_net = ipaddress.ip_network(lab.LAB_CIDR)
    assert all(subnet.subnet_of(lab_net) for subnet in lab.SUBNETS)
    # The collection's default Service and pod networks are inside the refused ranges.
    private = [ipaddress.ip_network(cidr) for cidr in lab.PRIVATE_CIDRS]
    for cidr in ("10.233.0.0/18", "10.233.64.0/18"):
        assert any(ipaddress.ip_network(cidr).subnet_of(net) for net in private)


def test_a_machine_without_iptables_rights_is_told_what_the_lab_needs(tmp_path):
    def refuse(argv, check, capture_output, text):
        return subprocess.CompletedProcess(argv, 1, "", "denied")

    with pytest.raises(lab.LabError, match="the lab needs root and iptables"):
        lab.keep_offline(run=refuse, resolv_conf=resolv(tmp_path))
