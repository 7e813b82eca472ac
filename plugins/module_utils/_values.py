# Private to the slipway.cluster collection: no compatibility promise outside it.
"""Single values of the inventory and settings: IP addresses, DNS names, endpoints, URLs, bounded integers, with
the message that says what to write instead; and what the model reads on the controller (BundleReader).
Shared by the model (_model.py) and the checks of the role variables (_role_settings.py). Pure Python.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any, Mapping, Protocol

from ansible_collections.slipway.cluster.plugins.module_utils._problems import Collector


def as_ip(value: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The IP address a value is, or None."""
    try:
        return as_address(value)
    except ValueError:
        return None


def as_address(value: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An address checked already (the nodes' addresses): raises ValueError when it is none."""
    return ipaddress.ip_address(str(value).strip())


# One DNS label (RFC 1123), lowercase: what Kubernetes and certificates take.
LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


# A DNS name is at most 253 characters (RFC 1035, without the final dot), each label at most 63.
DNS_NAME_MAX = 253
DNS_LABEL_MAX = 63


# A path written into a configuration file or a command line: no blank, quote or shell character.
SAFE_PATH = re.compile(r"^/[A-Za-z0-9._/@%+=,:-]*$")


SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def dns_name_problem(name: Any, max_length: int = DNS_NAME_MAX, wildcard: bool = False) -> str | None:
    """Why ``name`` is not a DNS name (RFC 1123 labels, lowercase or not), or None when it is one.
    ``wildcard``: a leading ``*.`` is allowed (a certificate's SAN)."""
    text = name.lower() if isinstance(name, str) else ""
    if not text:
        return "is empty" if isinstance(name, str) else f"is a {type(name).__name__}, not a name"
    if len(text) > max_length:
        return f"is {len(text)} characters long, more than the {max_length} allowed"
    if wildcard and text.startswith("*."):
        text = text[2:]
    for label in text.split("."):
        if len(label) > DNS_LABEL_MAX:
            return f"has a label of {len(label)} characters ('{label[:16]}...'), more than DNS's {DNS_LABEL_MAX}"
        if not LABEL.match(label):
            return "is not a DNS name (letters, digits and '-' in labels separated by '.')"
    return None


def address_problem(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why an address cannot be a node's (or a virtual IP): no host is reached at it. None when it can."""
    if address.is_unspecified:
        return "is the unspecified address, which means 'any' and is no host's own"
    if address.is_multicast:
        return "is a multicast address, which is a group's and no host's own"
    if address.version == 4 and address == ipaddress.IPv4Address("255.255.255.255"):
        return "is the broadcast address, which reaches every host and is no host's own"
    if address.version == 4 and address in ipaddress.ip_network("240.0.0.0/4"):
        return "is in 240.0.0.0/4, reserved and not routed"
    return None


def bad_values(values: list[Any]) -> str:
    return ", ".join(repr(str(value)) if isinstance(value, str) else repr(value) for value in values)


def parse_endpoint(text: str, default_port: int) -> tuple[str, int | None]:
    """Split ``host[:port]`` (IPv6 as ``[addr]:port``); port None when it is not a number."""
    text = text.strip()
    if text.startswith("["):
        host, dummy, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:
        host, dummy, port_text = text.partition(":")
    else:
        host, port_text = text, ""
    if not port_text:
        return host, default_port
    if port_text.isdigit() and 0 < int(port_text) < 65536:
        return host, int(port_text)
    return host, None


class BundleReader(Protocol):
    """How the model reads a bundle directory; the action plugin gives a real one, tests a fake."""

    def manifest(self, bundle_dir: str) -> Mapping[str, Any] | None:
        """The parsed manifest.yml of the bundle, or None when there is none."""

    def checksum(self, path: str) -> str | None:
        """The sha256 of a file, or None when it does not exist."""

    def yaml_file(self, path: str) -> tuple[Any, str | None]:
        """A YAML file on the controller, found where lookup('file') finds it: (its data, None), or
        (None, why it cannot be read)."""

    # Optional: ``url_exists(url)``, True or False when the controller reached the URL's server, None when it
    # did not. With it the model asks a mirror whether it has the release (slipway_artifacts_source mirror).


_TRUE = ("yes", "on", "true", "1", "y", "t")
_FALSE = ("no", "off", "false", "0", "n", "f")


def boolean(col: Collector, var: str, value: Any) -> bool | None:
    """A boolean as Ansible reads one (true/false, yes/no, on/off, 1/0), or None with the problem said."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    col.error(var, f"'{value}' is not a boolean; set true or false")
    return None


def integer(col: Collector, var: str, value: Any, low: int, high: int, expected: str) -> int | None:
    """A whole number from low to high; a number written as a string (-e, INI files) is a number."""
    if isinstance(value, bool):
        value = None
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        number = None
    if number is None or not low <= number <= high:
        col.error(var, f"'{value}' is not {expected}")
        return None
    return number


# A host name or IPv4 address, an optional port and a path of the characters RFC 3986 allows, without quotes (the
# URLs are written into containerd's hosts.toml and the artifacts' download tasks).
URL = re.compile(r"^https?://[A-Za-z0-9.-]+(:\d{1,5})?(/[A-Za-z0-9._~!$&()*+,;=:@%/-]*)?$")


def check_url(col: Collector, var: str, value: Any, example: str) -> None:
    if not isinstance(value, str) or not URL.match(value.strip()):
        col.error(var, f"'{value}' is not an http:// or https:// URL; set it like {example}")
