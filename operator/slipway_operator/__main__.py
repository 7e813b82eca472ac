"""python -m slipway_operator: run the operator (in a pod, or locally with --kubeconfig).

One HTTP port serves /healthz (liveness), /readyz (readiness) and /metrics (Prometheus) from
the start, on the leader and on the standby replica alike; kopf and the reconciler start only
once this replica holds the Lease, and the process exits when it loses it.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any, Protocol

import yaml

from . import app, collection, election

LOGGER = logging.getLogger("slipway_operator")


def parse(argv: list[str]) -> app.Options:
    parser = argparse.ArgumentParser(prog="slipway_operator", description=__doc__)
    parser.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG") or None,
                        help="kubeconfig to use (default: the pod's service account)")
    parser.add_argument("--namespace", default="kubesphere-system")
    parser.add_argument("--name", default="ks-installer", help="the ClusterConfiguration to reconcile")
    collection.add_option(parser)
    parser.add_argument("--playbook", help="default: playbooks/kubesphere.yml of the collection")
    parser.add_argument("--extra-vars", type=Path, help="a YAML file of variables for the playbook (kubesphere_* settings)")
    parser.add_argument("--port", type=int, default=8080, help="port of /healthz, /readyz and /metrics")
    parser.add_argument("--debounce", type=float, default=2.0, help="quiet seconds that end a burst of edits")
    parser.add_argument("--max-wait", type=float, default=30.0, help="longest a stream of edits can delay a reconcile")
    parser.add_argument("--resync", type=float, default=300.0, help="seconds between periodic reconciles (drift repair)")
    parser.add_argument("--backoff-base", type=float, default=10.0, help="first retry delay of a failed component")
    parser.add_argument("--backoff-max", type=float, default=300.0)
    parser.add_argument("--lease-name", default="slipway-operator")
    parser.add_argument("--identity", default=os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}")
    parser.add_argument("--workdir", default="", help="ansible-runner's directory (default: a new temporary one)")
    args = parser.parse_args(argv)
    root = collection.root(args.collections_path)
    extra = yaml.safe_load(args.extra_vars.read_text()) if args.extra_vars else {}
    return app.Options(kubeconfig=args.kubeconfig, namespace=args.namespace, name=args.name,
                       collections_path=args.collections_path,
                       playbook=args.playbook or str(root / "playbooks" / "kubesphere.yml"),
                       extra_vars=extra or {}, port=args.port, debounce=args.debounce, max_wait=args.max_wait,
                       resync=args.resync, backoff_base=args.backoff_base, backoff_max=args.backoff_max,
                       lease_name=args.lease_name, identity=args.identity, workdir=args.workdir)


class ServedOptions(Protocol):
    """What serve_http reads of the options (slipway-operator's and slipway-fleet's)."""

    port: int


class ServedMetrics(Protocol):
    """What serve_http reads of the metrics: their Prometheus registry."""

    registry: Any


async def serve_http(options: ServedOptions, metrics: ServedMetrics, state: dict):
    """/healthz: the event loop answers; /readyz: started (leader or standby); /metrics."""
    from aiohttp import web  # pylint: disable=import-outside-toplevel  # kopf's own dependency
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest  # pylint: disable=import-outside-toplevel

    async def healthz(_request):
        return web.Response(text="ok")

    async def readyz(_request):
        return web.Response(text="leader" if state.get("leader") else "standby") if state.get("ready") \
            else web.Response(status=503, text="starting")

    async def metrics_page(_request):
        return web.Response(body=generate_latest(metrics.registry), headers={"Content-Type": CONTENT_TYPE_LATEST})

    web_app = web.Application()
    web_app.router.add_get("/healthz", healthz)
    web_app.router.add_get("/readyz", readyz)
    web_app.router.add_get("/metrics", metrics_page)
    runner = web.AppRunner(web_app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "0.0.0.0", options.port).start()  # nosec B104 # probes and scrapes come from outside the pod
    return runner


def login_info(kubeconfig: str | None, api_client, **kwargs):
    """kopf's credentials, the same as the client's: the given kubeconfig or the service account (slipway-fleet too)."""
    import kopf  # pylint: disable=import-outside-toplevel
    if not kubeconfig:
        return kopf.login_with_service_account(**kwargs)
    conf = api_client.configuration
    header = conf.get_api_key_with_prefix("BearerToken") or conf.get_api_key_with_prefix("authorization") or ""
    scheme, _space, token = header.partition(" ")
    return kopf.ConnectionInfo(server=conf.host, ca_path=conf.ssl_ca_cert, insecure=not conf.verify_ssl,
                               certificate_path=conf.cert_file or None, private_key_path=conf.key_file or None,
                               scheme=scheme or None, token=token or None)


def register_handlers(options: app.Options, reconciler: app.Reconciler, api_client) -> None:
    """kopf handlers: login, .spec of the one ClusterConfiguration, and the resync timer."""
    import kopf  # pylint: disable=import-outside-toplevel

    @kopf.on.login()
    def login(**kwargs):
        return login_info(options.kubeconfig, api_client, **kwargs)

    def ours(name, namespace, **_):
        return name == options.name and namespace == options.namespace

    @kopf.on.startup()
    def configure(settings: kopf.OperatorSettings, **_):
        # kopf's own records go to annotations under our prefix, never into status (ks-installer's format).
        settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="operator.slipway.io")
        settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
            prefix="operator.slipway.io", key="last-handled-spec")
        settings.posting.enabled = False  # Events are posted by the reconciler, one per component
        settings.watching.server_timeout = 300

    # field="spec": kopf compares only .spec with the last handled one, so status writes (ours after
    # every component, or anyone's) and metadata changes never trigger a reconcile.
    @kopf.on.resume(app.GROUP, app.VERSION, app.PLURAL, field="spec", when=ours)
    @kopf.on.create(app.GROUP, app.VERSION, app.PLURAL, field="spec", when=ours)
    @kopf.on.update(app.GROUP, app.VERSION, app.PLURAL, field="spec", when=ours)
    def on_spec(**_):
        reconciler.trigger("spec")

    @kopf.timer(app.GROUP, app.VERSION, app.PLURAL, interval=options.resync, initial_delay=options.resync, when=ours)
    def on_resync(**_):
        reconciler.trigger("resync")


async def run_until_one_stops(tasks: dict, kopf_stop: asyncio.Event, metrics, state: dict, elector) -> int:
    """Run the leader's tasks ({future: name}; "kopf" is kopf's operator, "stop" the stop signal) until one ends,
    then stop them all, give up the lease and say whether one failed (1) or the stop was asked for (0). The fleet
    controller runs its own tasks the same way."""
    done, _pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    code = 0
    for task in done:
        if tasks[task] != "stop" and task.exception() is not None:
            LOGGER.error("%s stopped: %s", tasks[task], task.exception())
            code = 1
    kopf_stop.set()
    for task, name in tasks.items():
        if name != "kopf":
            task.cancel()
    kopf_task = next(task for task, name in tasks.items() if name == "kopf")
    await asyncio.wait([kopf_task], timeout=10)
    metrics.leader.set(0)
    state["leader"] = False
    await asyncio.to_thread(elector.release)
    return code


async def lead(options: app.Options, metrics: app.Metrics, state: dict, stop: asyncio.Event) -> int:
    from kubernetes import client, config  # pylint: disable=import-outside-toplevel
    import kopf  # pylint: disable=import-outside-toplevel
    if options.kubeconfig:
        api_client = config.new_client_from_config(config_file=options.kubeconfig)
    else:
        config.load_incluster_config()
        api_client = client.ApiClient()
    planner = collection.planner(options.collections_path)
    elector = election.LeaseElector(client.CoordinationV1Api(api_client), options.namespace, options.lease_name, options.identity)
    state["ready"] = True
    acquiring = asyncio.ensure_future(elector.acquire())
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait([acquiring, stopping], return_when=asyncio.FIRST_COMPLETED)
    if stop.is_set():
        acquiring.cancel()
        return 0
    state["leader"] = True
    metrics.leader.set(1)
    reconciler = app.Reconciler(options, metrics, planner.CATALOGUE, api_client, planner=planner)
    register_handlers(options, reconciler, api_client)
    kopf_stop = asyncio.Event()
    tasks = {
        # kopf types identity as its Identity, a NewType of str that it does not export.
        asyncio.ensure_future(kopf.operator(namespaces=[options.namespace], standalone=True, stop_flag=kopf_stop,
                                            identity=options.identity)): "kopf",  # type: ignore[arg-type]
        asyncio.ensure_future(reconciler.run()): "reconciler",
        asyncio.ensure_future(elector.keep()): "lease",
        stopping: "stop",
    }
    return await run_until_one_stops(tasks, kopf_stop, metrics, state, elector)


async def serve_and_lead(options: Any, metrics: Any, leader: Any) -> int:
    """The HTTP port from the start, then `leader(options, metrics, state, stop)` until SIGTERM or SIGINT sets stop
    (both controllers: the operator's lead and the fleet's)."""
    state: dict = {}
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    runner = await serve_http(options, metrics, state)
    try:
        return await leader(options, metrics, state, stop)
    finally:
        await runner.cleanup()


async def main_async(options: app.Options) -> int:
    return await serve_and_lead(options, app.Metrics(), lead)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    options = parse(sys.argv[1:] if argv is None else argv)
    return asyncio.run(main_async(options))


if __name__ == "__main__":
    sys.exit(main())
