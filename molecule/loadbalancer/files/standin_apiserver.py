"""A stand-in for kube-apiserver in the load balancer scenarios: HTTPS on ADDRESS:PORT.

Answers GET /readyz, /livez and /healthz with 200 and a body naming this host, so a test can
see which API server a request through the load balancer reached. Anything else gets 404.
The process names itself kube-apiserver, so the preflight host checks of a converge find the
port held by the cluster's own API server, as on a rerun over a running cluster.

Usage: standin_apiserver.py ADDRESS PORT CERTFILE KEYFILE
"""

from __future__ import annotations

import ctypes
import http.server
import socket
import ssl
import sys

HEALTH_PATHS = ("/readyz", "/livez", "/healthz")
PR_SET_NAME = 15


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # the name http.server calls
        if self.path.split("?", 1)[0] in HEALTH_PATHS:
            body = f"ok from {socket.gethostname()}\n".encode()
            self.send_response(200)
        else:
            body = b"not found\n"
            self.send_response(404)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # the base class's name
        """Health checks arrive every two seconds: keep the journal quiet."""


class Server(http.server.ThreadingHTTPServer):
    """TLS handshakes happen in each connection's thread, so a silent client blocks no one."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], context: ssl.SSLContext) -> None:
        super().__init__(address, Handler)
        self.context = context

    def finish_request(self, request, client_address) -> None:
        request.settimeout(10)
        try:
            tls = self.context.wrap_socket(request, server_side=True)
        except OSError:  # a plain TCP probe, or a client that went away
            return
        self.RequestHandlerClass(tls, client_address, self)


def main() -> None:
    address, port, certfile, keyfile = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certfile, keyfile)
    ctypes.CDLL(None).prctl(PR_SET_NAME, b"kube-apiserver", 0, 0, 0)
    Server((address, port), context).serve_forever()


if __name__ == "__main__":
    main()
