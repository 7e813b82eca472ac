# Which kubelets serve a certificate the cluster CA signed for their address: one line per address given, "verified"
# or "ADDRESS: why not". The metrics_server role runs it with python3 -c on a control plane (tasks/kubelet_tls.yml),
# where the cluster CA is /etc/kubernetes/pki/ca.crt and every kubelet serves on port 10250. Standard library only:
# it runs on the node's python3.
from __future__ import annotations

import socket
import ssl
import sys

CA = "/etc/kubernetes/pki/ca.crt"
KUBELET_PORT = 10250


def verdict(address: str, context: ssl.SSLContext, port: int = KUBELET_PORT, timeout: float = 5) -> str:
    """``verified`` when ``address``:``port`` completes a TLS handshake verified by ``context`` for that address."""
    try:
        with socket.create_connection((address, port), timeout=timeout) as sock:
            with context.wrap_socket(sock, server_hostname=address):
                return "verified"
    except (OSError, ssl.SSLError) as error:
        return "%s: %s" % (address, error)


def main(addresses: list[str], cafile: str = CA, port: int = KUBELET_PORT) -> None:
    context = ssl.create_default_context(cafile=cafile)
    for address in addresses:
        print(verdict(address, context, port))


if __name__ == "__main__":
    main(sys.argv[1:])
