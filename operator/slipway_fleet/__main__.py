"""python -m slipway_fleet: the fleet controller (in a pod of the management cluster, or locally with --kubeconfig).

One HTTP port serves /healthz, /readyz and /metrics from the start; the replica that holds the Lease
(slipway-operator's election) watches with kopf and reconciles, and exits when it loses the Lease.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import socket
import sys

# One HTTP server, one kopf login and one way to run and stop the leader's tasks for both controllers.
from slipway_operator import collection
from slipway_operator.__main__ import login_info, run_until_one_stops, serve_and_lead

from . import controller, jobs


def galaxy_version(collections_path: str) -> str:
    try:
        with open(collection.root(collections_path) / "galaxy.yml", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("version:"):
                    return line.split(":", 1)[1].strip().strip("'\"")
    except OSError:
        pass
    return "latest"


def parse(argv: list[str]) -> controller.Options:
    parser = argparse.ArgumentParser(prog="slipway_fleet", description=__doc__.split("\n", 1)[0])
    parser.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG") or None,
                        help="kubeconfig of the management cluster (default: the pod's service account)")
    parser.add_argument("--namespace", action="append", default=[],
                        help="watch only this namespace (repeatable; default: every namespace, which needs the rights of "
                             "operator/rbac/slipway-fleet-every-namespace.yml)")
    collection.add_option(parser, "where ansible_collections/slipway/cluster is (its model checks each spec)")
    parser.add_argument("--max-parallel", type=int, default=5, help="operations running at once in the management cluster")
    parser.add_argument("--max-parallel-per-namespace", type=int, default=2,
                        help="operations of one namespace (one tenant) running at once")
    parser.add_argument("--image", help="the Jobs' image (default: localhost/slipway/operator:<collection version>)")
    parser.add_argument("--image-pull-policy", default="IfNotPresent", choices=["Always", "IfNotPresent", "Never"])
    parser.add_argument("--python", default="/usr/bin/python3.11", help="the image's Python, which runs slipway_fleet.runner")
    parser.add_argument("--backoff-limit", type=int, default=3, help="runs of a playbook again after its pod died")
    parser.add_argument("--active-deadline", type=int, default=4 * 3600, help="seconds an operation may take")
    parser.add_argument("--bundle-claim", default="", help="the PersistentVolumeClaim, in each watched namespace, that "
                        "holds the bundle, mounted read-only into the Jobs at --bundle-mount")
    parser.add_argument("--bundle-mount", default="/bundle", help="where the Jobs see the bundle, and where the "
                        "controller reads its own copy (its model checks each spec against the manifest)")
    parser.add_argument("--backup-claim", default="", help="the PersistentVolumeClaim, in each watched namespace, where "
                        "etcd-backup operations keep their snapshots (each Job mounts only its cluster's directory)")
    parser.add_argument("--job-requests", default="cpu=100m,memory=256Mi", help="each Job pod's resource requests")
    parser.add_argument("--job-limits", default="cpu=2,memory=2Gi", help="each Job pod's resource limits")
    parser.add_argument("--resync", type=float, default=60.0, help="seconds between reads of every cluster and its nodes")
    parser.add_argument("--port", type=int, default=8080, help="port of /healthz, /readyz and /metrics")
    parser.add_argument("--lease-namespace", default=os.environ.get("POD_NAMESPACE", "slipway-fleet"))
    parser.add_argument("--lease-name", default="slipway-fleet")
    parser.add_argument("--identity", default=os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}")
    args = parser.parse_args(argv)
    if args.max_parallel < 1:
        parser.error("--max-parallel must be 1 or more")
    if args.max_parallel_per_namespace < 1:
        parser.error("--max-parallel-per-namespace must be 1 or more")
    resources = {}
    for option, text in (("requests", args.job_requests), ("limits", args.job_limits)):
        pairs = [part.split("=", 1) for part in text.split(",") if part]
        if any(len(pair) != 2 or pair[0] not in ("cpu", "memory") or not pair[1] for pair in pairs):
            parser.error(f"--job-{option}: {text!r} is not like cpu=100m,memory=256Mi")
        resources[option] = dict(pairs)
    settings = jobs.JobSettings(image=args.image or f"localhost/slipway/operator:{galaxy_version(args.collections_path)}",
                                python=args.python, image_pull_policy=args.image_pull_policy,
                                backoff_limit=args.backoff_limit, active_deadline=args.active_deadline,
                                bundle_claim=args.bundle_claim, bundle_mount=args.bundle_mount,
                                backup_claim=args.backup_claim, resources=resources)
    return controller.Options(kubeconfig=args.kubeconfig, jobs=settings, collections_path=args.collections_path,
                              namespaces=args.namespace, max_parallel=args.max_parallel,
                              max_parallel_per_namespace=args.max_parallel_per_namespace, resync=args.resync, port=args.port,
                              lease_namespace=args.lease_namespace, lease_name=args.lease_name, identity=args.identity)


def register_handlers(options: controller.Options, ctl: controller.Controller, api_client) -> None:
    """kopf watches only: every event names the cluster to reconcile (async handlers: they run in the loop)."""
    import kopf  # pylint: disable=import-outside-toplevel
    from . import spec as fleet  # pylint: disable=import-outside-toplevel

    @kopf.on.login()
    def login(**kwargs):
        return login_info(options.kubeconfig, api_client, **kwargs)

    @kopf.on.startup()
    def configure(settings: kopf.OperatorSettings, **_):
        settings.posting.enabled = False  # the controller posts its own Events
        settings.watching.server_timeout = 300

    managed = {"app.kubernetes.io/managed-by": jobs.MANAGED_BY}

    @kopf.on.event(fleet.GROUP, fleet.VERSION, fleet.CLUSTERS)
    async def on_cluster(name, namespace, **_):
        ctl.trigger(namespace, name)

    @kopf.on.event(fleet.GROUP, fleet.VERSION, fleet.OPERATIONS)
    async def on_operation(spec, namespace, **_):
        if spec.get("cluster"):
            ctl.trigger(namespace, spec["cluster"])

    @kopf.on.event("batch", "v1", "jobs", labels=managed)
    @kopf.on.event("", "v1", "pods", labels=managed)
    async def on_job(labels, namespace, **_):
        if labels.get(jobs.LABEL_CLUSTER):
            ctl.trigger(namespace, labels[jobs.LABEL_CLUSTER])


async def lead(options: controller.Options, metrics: controller.Metrics, state: dict, stop: asyncio.Event) -> int:
    from kubernetes import client, config  # pylint: disable=import-outside-toplevel
    import kopf  # pylint: disable=import-outside-toplevel
    from slipway_operator.election import LeaseElector  # pylint: disable=import-outside-toplevel  # one election for both
    if options.kubeconfig:
        api_client = config.new_client_from_config(config_file=options.kubeconfig)
    else:
        config.load_incluster_config()
        api_client = client.ApiClient()
    elector = LeaseElector(client.CoordinationV1Api(api_client), options.lease_namespace, options.lease_name, options.identity)
    state["ready"] = True
    acquiring = asyncio.ensure_future(elector.acquire())
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait([acquiring, stopping], return_when=asyncio.FIRST_COMPLETED)
    if stop.is_set():
        acquiring.cancel()
        return 0
    state["leader"] = True
    metrics.leader.set(1)
    ctl = controller.Controller(options, metrics, api_client)
    register_handlers(options, ctl, api_client)
    kopf_stop = asyncio.Event()
    scope = {"namespaces": options.namespaces} if options.namespaces else {"clusterwide": True}
    tasks = {
        # kopf types identity as its Identity, a NewType of str that it does not export.
        asyncio.ensure_future(kopf.operator(standalone=True, stop_flag=kopf_stop, identity=options.identity,  # type: ignore[arg-type]
                                            **scope)): "kopf",
        asyncio.ensure_future(ctl.run()): "reconciler",
        asyncio.ensure_future(ctl.resync()): "resync",
        asyncio.ensure_future(elector.keep()): "lease",
        stopping: "stop",
    }
    return await run_until_one_stops(tasks, kopf_stop, metrics, state, elector)


async def main_async(options: controller.Options) -> int:
    return await serve_and_lead(options, controller.Metrics(), lead)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # kopf's handlers only queue a reconcile: one line per watch event would bury the controller's own.
    logging.getLogger("kopf.objects").setLevel(logging.WARNING)
    return asyncio.run(main_async(parse(sys.argv[1:] if argv is None else argv)))


if __name__ == "__main__":
    sys.exit(main())
