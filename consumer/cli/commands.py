"""The commands but replay: ``run`` (the service), ``checkpoint inspect``, ``healthcheck``, ``demo`` and
``annotate``."""

from __future__ import annotations

import argparse
import faulthandler
import json
import logging
import re
import signal
import sys
from pathlib import Path

from consumer.cli.params import parse_params, parse_value

__all__ = ["annotate", "demo", "healthcheck", "inspect_checkpoint", "run"]


def run(args: argparse.Namespace) -> int:
    from consumer import logs
    from consumer.config import load_settings
    from consumer.errors import ConfigError
    from consumer.roles import service_for

    settings = None
    try:
        settings = load_settings()
        logs.configure(settings.log_level, settings.log_format)
        service = service_for(settings)
    except ConfigError as exc:
        logs.print_error(f"activestream run: {exc}", logs.requested_format(settings and settings.log_format))
        return 2
    signal.signal(signal.SIGTERM, service.request_stop)
    signal.signal(signal.SIGINT, service.request_stop)
    # `kill -USR1` writes every thread's stack to stderr: what a process that does not stop is waiting on
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    return service.run()  # 0 clean stop, 2 configuration or checkpoint refused, 1 failure


def inspect_checkpoint(args: argparse.Namespace) -> int:
    from consumer.checkpoint import CheckpointStore, part_paths, read_checkpoint
    from consumer.state import part_of, unpack_offsets, upgrade

    path = Path(args.path)
    if path.is_dir():
        paths = CheckpointStore(path, keep=1).paths()
        if not paths:
            print(f"activestream checkpoint inspect: no checkpoint in {path}", file=sys.stderr)
            return 2
        path = paths[0]
    try:
        state, parts = upgrade(read_checkpoint(path), str(path)), part_paths(path)
    except Exception as exc:
        print(f"activestream checkpoint inspect: {exc}", file=sys.stderr)
        return 2
    learner_meta = json.loads(str(state["learner.meta"]))
    offsets = unpack_offsets(part_of(state, "offsets"))
    report = {
        "path": str(path),
        "bytes": path.stat().st_size,
        "parts_bytes": sum(p.stat().st_size for p in parts),  # written once each, shared with later checkpoints
        "remembered": {name: sum(v.size for k, v in state.items()
                                 if re.fullmatch(rf"pending\.{name}\.\d+\.at", k)) for name in ("applied", "expired")},
        "service": json.loads(str(state["service.meta"])),
        "learner": learner_meta,
        "learner_format_version": int(state["learner.format_version"]),
        "counters": dict(zip(("rounds", "labels", "updates"), state["learner.counters"].tolist(), strict=True)),
        "pending": int(state["pending.ids_offsets"].size - 1),
        "offsets": [{"topic": t, "partition": p, "next_offset": o} for (t, p), o in sorted(offsets.items())],
        "totals": json.loads(str(state["totals.counts"])),
        "arrays": {k: list(v.shape) for k, v in state.items() if k.startswith("learner.rule.")},
    }
    print(json.dumps(report, indent=2, sort_keys=True))
    return 0


def healthcheck(args: argparse.Namespace) -> int:
    import urllib.error
    import urllib.request

    from consumer.config import load_settings
    from consumer.errors import ConfigError

    try:
        port = args.port or load_settings().metrics_port
    except ConfigError as exc:
        print(f"activestream healthcheck: {exc}", file=sys.stderr)
        return 2
    url = f"http://127.0.0.1:{port}/{'readyz' if args.ready else 'healthz'}"
    try:
        with urllib.request.urlopen(url, timeout=args.timeout) as response:
            print(response.read().decode().strip())
            return 0
    except urllib.error.HTTPError as err:  # 503: the probe's reason is in the body
        print(f"{url}: {err.code} {err.read().decode().strip()}", file=sys.stderr)
    except OSError as exc:
        print(f"{url}: {exc}", file=sys.stderr)
    return 1


def demo(args: argparse.Namespace) -> int:
    import orjson

    from consumer.demo.report import drift_summary, ratio_and_target
    from consumer.demo.run import DemoOptions, run_demo
    from consumer.errors import ConfigError

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    opts = DemoOptions(
        data=args.data or [], learner=args.learner, records=args.records, label_delay_s=args.label_delay,
        label_cost=args.label_cost, rate=args.rate, params=parse_params(args.param), port=args.port,
        metrics_port=args.metrics_port, positive=parse_value(args.positive) if args.positive else None,
        report=args.report, bootstrap=args.bootstrap, service_url=args.service, timeout_s=args.timeout,
        query_rate_target=args.query_rate_target, annotator=args.annotator,
    )
    try:
        report = run_demo(opts)
    except ConfigError as exc:  # the connector's settings: ACTIVESTREAM_ANNOTATE__*
        print(f"activestream demo: {exc}", file=sys.stderr)
        return 2
    if args.json:
        sys.stdout.buffer.write(orjson.dumps(report) + b"\n")
        return 0
    print(f"activestream demo: {report['learner']} on {report['data']}")
    rows = [
        ("records / predictions", f"{report['records']} / {report['predictions']}"),
        ("label requests (query ratio)", f"{report['label_requests']} ({ratio_and_target(report)})"),
        ("labels applied / late (expired)", f"{report['labels_applied']} / {report['labels_expired']}"),
        ("labelling cost", f"{report['labelling_cost']:.1f}"),
        ("online accuracy / F1 vs truth", f"{report['accuracy']:.4f} / {report['f1']:.4f}"),
        ("estimated accuracy (service)", f"{report['estimated_accuracy']:.4f}"),
        ("the change of concept", drift_summary(report)),
        ("dead letters", str(report["dead_letters"])),
        ("time", f"{report['seconds']:.1f} s ({report['records_per_second']:,.0f} records/s)"),
    ]
    for name, value in rows:
        print(f"  {name:<34} {value}")
    if people := report.get("people"):
        agreeing = "" if people["agreeing"] is None else f", {people['agreeing']:.1%} agreeing with the truth"
        print(f"  {'labels given in Label Studio':<34} {len(people['labels'])}{agreeing} ({people['project_url']})")
    return 0


def annotate(args: argparse.Namespace) -> int:
    from consumer.annotate.label_studio import main as label_studio

    return label_studio()

