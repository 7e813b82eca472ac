"""Open KubeSphere's console in headless Chromium as a person would, through the Chrome DevTools protocol.

Loads the login page, types admin's user name and password into its form and submits it, waits until the
console has left the login page, opens the cluster's overview and then its node list, and keeps a screenshot
of each (PNG). Exits 0 when every step showed what it should, else 1 with the step that did not and a
screenshot of where it stopped. Chromium reaches nothing but the console's address: every other host name
resolves to nothing (--host-resolver-rules) and its background services are off.

Over TLS (an https:// URL), Chromium accepts the console's certificate only when its public key is the one given
with --spki (the base64 of the sha256 of its SubjectPublicKeyInfo, Chromium's --ignore-certificate-errors-spki-list),
or when a CA it trusts signed it for the host, and every page must stay on https://.

    CONSOLE_PASSWORD=... console_browser.py --url https://NODE:30880 --spki BASE64 --node cp1 --out DIR
"""

import argparse
import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import websocket

CHROMIUM = ("chromium", "chromium-browser", "google-chrome")


class BrowserError(Exception):
    pass


class Page:
    """One tab of a Chromium started here, driven over its DevTools websocket."""

    def __init__(self, url, allowed_host, profile, timeout, spki=None):
        program = next((shutil.which(name) for name in CHROMIUM if shutil.which(name)), None)
        if program is None:
            raise BrowserError("no Chromium found (Debian's package: apt-get install chromium)")
        self.timeout = timeout
        self.process = subprocess.Popen(  # pylint: disable=consider-using-with
            [program, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--disable-extensions", "--disable-default-apps",
             "--metrics-recording-only", "--window-size=1440,900", "--user-data-dir=" + profile,
             "--remote-debugging-port=0", "--remote-allow-origins=*",
             "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE %s, EXCLUDE 127.0.0.1" % allowed_host]
            + (["--ignore-certificate-errors-spki-list=" + spki] if spki else []) + ["about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port = self._port(profile)
        with urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port, timeout=10) as answer:
            targets = [target for target in json.load(answer) if target.get("type") == "page"]
        if not targets:
            raise BrowserError("Chromium opened no page")
        self.socket = websocket.create_connection(targets[0]["webSocketDebuggerUrl"], timeout=timeout)
        self.next_id = 0
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.url = url

    def _port(self, profile):
        path = os.path.join(profile, "DevToolsActivePort")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise BrowserError("Chromium exited with %d at start" % self.process.returncode)
            if os.path.exists(path):
                with open(path, encoding="utf-8") as handle:
                    first = handle.readline().strip()
                if first.isdigit():
                    return int(first)
            time.sleep(0.2)
        raise BrowserError("Chromium did not open its DevTools port within 30 s")

    def call(self, method, **params):
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise BrowserError("%s: %s" % (method, message["error"].get("message")))
                return message.get("result", {})

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise BrowserError("script failed: %s" % result["exceptionDetails"].get("text"))
        return result.get("result", {}).get("value")

    def wait_for(self, expression, what):
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.evaluate(expression):
                return
            time.sleep(0.5)
        raise BrowserError("%s: not seen within %d s (page %s)" % (what, self.timeout, self.evaluate("location.href")))

    def go(self, path):
        self.call("Page.navigate", url=urllib.parse.urljoin(self.url, path))

    def type_into(self, selector, text):
        """Focus the input and type as a keyboard would (React's controlled inputs see real input events)."""
        if not self.evaluate("(() => { const e = document.querySelector(%s); if (!e) return false; e.focus(); "
                             "return true })()" % json.dumps(selector)):
            raise BrowserError("no %s on the page" % selector)
        self.call("Input.insertText", text=text)

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as handle:
            handle.write(base64.b64decode(data))

    def close(self):
        try:
            self.socket.close()
        finally:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def body_has(text):
    return "document.body && document.body.innerText.includes(%s)" % json.dumps(text)


def run(args, password):
    os.makedirs(args.out, exist_ok=True)
    host = urllib.parse.urlparse(args.url).hostname
    profile = tempfile.mkdtemp(prefix="console-browser-")
    page = None
    step = "start Chromium"
    try:
        page = Page(args.url, host, profile, args.timeout, args.spki)
        scheme = urllib.parse.urlparse(args.url).scheme + ":"
        step = "load the login page"
        page.go("/login")
        page.wait_for("!!document.querySelector('input[name=username]') && "
                      "!!document.querySelector('input[name=password]')", "the login form")
        page.screenshot(os.path.join(args.out, "console-login.png"))
        step = "log in as admin"
        page.type_into("input[name=username]", "admin")
        page.type_into("input[name=password]", password)
        page.evaluate("document.querySelector('button[type=submit]').click()")
        page.wait_for("!location.pathname.startsWith('/login')", "the console after logging in")
        if page.evaluate("location.protocol") != scheme:
            raise BrowserError("the console left %s for %s" % (scheme, page.evaluate("location.href")))
        step = "open the cluster overview"
        page.go("/clusters/default/overview")
        page.wait_for(body_has("System Components") + " && " + body_has("Kubernetes Status"),
                      "the cluster overview")
        page.screenshot(os.path.join(args.out, "console-overview.png"))
        step = "open the node list"
        page.go("/clusters/default/nodes")
        page.wait_for(body_has(args.node), "node %s in the node list" % args.node)
        page.screenshot(os.path.join(args.out, "console-nodes.png"))
        print("console: logged in as admin at %s, cluster overview and node %s shown; screenshots in %s"
              % (args.url, args.node, args.out))
        return 0
    except (BrowserError, OSError, websocket.WebSocketException) as exc:
        if page is not None:
            try:
                page.screenshot(os.path.join(args.out, "console-failed.png"))
            except (BrowserError, OSError, websocket.WebSocketException):
                pass
        print("console: could not %s: %s" % (step, exc), file=sys.stderr)
        return 1
    finally:
        if page is not None:
            page.close()
        shutil.rmtree(profile, ignore_errors=True)


def spki_of(path):
    """The base64 sha256 of the SubjectPublicKeyInfo of the PEM certificate at ``path`` (Chromium's form)."""
    # Imported here: only --cert needs it (the cryptography package, which community.crypto needs too).
    from cryptography import x509  # pylint: disable=import-outside-toplevel
    from cryptography.hazmat.primitives import serialization  # pylint: disable=import-outside-toplevel
    with open(path, "rb") as handle:
        cert = x509.load_pem_x509_certificate(handle.read())
    der = cert.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(hashlib.sha256(der).digest()).decode()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="the console, https://NODE:PORT (or http://)")
    parser.add_argument("--spki", help="base64 sha256 of the console certificate's public key, accepted for it")
    parser.add_argument("--cert", help="the console's certificate (PEM file): its public key is accepted, as --spki")
    parser.add_argument("--node", required=True, help="a node name the node list must show")
    parser.add_argument("--out", required=True, help="directory for the screenshots")
    parser.add_argument("--timeout", type=int, default=120, help="seconds to wait for each page")
    args = parser.parse_args(argv)
    if args.cert and not args.spki:
        args.spki = spki_of(args.cert)
    password = os.environ.get("CONSOLE_PASSWORD", "")
    if not password:
        parser.error("give admin's password in CONSOLE_PASSWORD")
    return run(args, password)


if __name__ == "__main__":
    sys.exit(main())
