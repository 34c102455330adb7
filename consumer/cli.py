"""The ``activestream`` command line.

* ``activestream run``: the service, configured by ``ACTIVESTREAM_*`` environment variables.
* ``activestream replay``: a dataset through a learner offline (a backtest, or a paper's protocol),
  printing prequential metrics as a table or one JSON object (``--json``).
* ``activestream demo``: the whole loop on this machine (embedded broker, a simulated annotator).
* ``activestream annotate label-studio``: label requests to Label Studio tasks, annotations to labels.
* ``activestream checkpoint inspect PATH``: what a checkpoint file (or the newest in a directory) holds.
* ``activestream healthcheck [--ready]``: exit 0 if the local service's ``/healthz`` (``/readyz``) answers
  200: a container health check that needs no curl in the image.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import logging
import os
import re
import resource
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from consumer.demo import QUERY_RATE_TARGET

# NumPy, orjson and the learners are imported by the commands that use them: `--help` and the
# service's other commands do not pay for them.

__all__ = ["main"]


def _value(text: str) -> Any:
    """A --param value: JSON (numbers, true/false, lists) or else the plain string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _warmup(text: str) -> int | str:
    """``--budget-warmup``: a count of requests, or auto."""
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a number of requests or auto, got {text!r}") from None


def _number_or_word(text: str, word: str, ok: Callable[[float], bool], what: str) -> float | None:
    """A number that ``ok`` accepts, or None for ``word``; anything else is refused naming ``what``."""
    if text == word:
        return None
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not ok(value):
        raise argparse.ArgumentTypeError(f"{what}, or {word}; got {text!r}")
    return value


def _boost(text: str) -> float | str:
    """``--budget-warmup-boost``: a multiple of the rate ≥ 1, or every."""
    value = _number_or_word(text, "every", lambda v: v >= 1, "a multiple of the rate of at least 1")
    return "every" if value is None else value


def _target(text: str) -> float | None:
    """``demo --query-rate-target``: a share of the records in (0, 1], or none."""
    return _number_or_word(text, "none", lambda v: 0 < v <= 1, "a share of the records in (0, 1]")


# Where a help text names the registry's default learners; filled in when the help is shown.
_DEFAULT_LEARNERS = "{default learners}"


class _HelpFormatter(argparse.HelpFormatter):
    """Names the registry's default learners in a help text when that help is shown, so that building
    the parser imports no learner (``activestream --help``'s start-up: benchmarks.startup)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = super()._get_help_string(action)
        if text and _DEFAULT_LEARNERS in text:
            from learners.defaults import DEFAULT_LEARNERS

            text = text.replace(_DEFAULT_LEARNERS, ", ".join(f"{name} ({kind})" for kind, name in
                                                             DEFAULT_LEARNERS.items()))
        return text


def _params(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"--param takes KEY=VALUE, got {pair!r}")
        out[key.strip()] = _value(text.strip())
    return out


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _replay(args: argparse.Namespace) -> int:
    # OpenBLAS starts a worker per core with NumPy, and each spins before it sleeps: a tenth of a
    # second of CPU taken from the start-up and the reader, for BLAS calls a replay does not make.
    # A user's own setting stands.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # NumPy asks the kernel for 2 MB pages for every array of 4 MB or more, and the first write to
    # each such page zeroes 2 MB at once, compacting memory first when 2 MB blocks are scarce: a
    # stream's margins (8 bytes a row, written once) paid for it in the learner's thread, and the
    # time it took varied most from run to run. A user's own setting stands.
    os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
    import numpy as np
    import orjson

    from consumer import progress
    from learners import make
    from learners.budget import BACKTEST_WARMUP_BOOST, backtest_controller
    from learners.data_spec import is_libsvm_file, resolve
    from learners.datasets import LibsvmStream, StreamSummary, concat, scan_libsvm
    from learners.registry import default_learner, paper_protocol
    from learners.replay import find_budget, run, run_stream

    started = time.perf_counter()
    params = _params(args.param)
    # In file order, LIBSVM files are replayed as a stream, chunk by chunk; a permutation or a budget
    # search needs every row at hand. The model's dimension and classes come from a first pass over
    # the stream, unless both are given.
    if args.from_kafka is None and (args.topic or args.labels_topic or args.since or args.until):
        raise ValueError("--topic, --labels-topic, --since and --until go with --from-kafka")
    stream: LibsvmStream | None = None
    source: dict[str, Any] | None = None
    show = progress.wanted(json=args.json, quiet=args.quiet)
    if args.from_kafka is not None:
        data, source = _topic_data(args, params, show)
    elif args.in_order and args.query_rate is None and all(is_libsvm_file(spec) for spec in args.data):
        if "n_features" in params and "classes" in params:
            summary = StreamSummary(0, int(params["n_features"]), np.asarray(params["classes"]), "")  # no pass
            integral = None
        else:
            summary = scan_libsvm(args.data, zero_based=args.zero_based)
            integral = summary.integral_labels
        data = summary.as_dataset()
        stream = LibsvmStream(args.data, zero_based=args.zero_based,
                              n_features=params.get("n_features", summary.n_features), integral_labels=integral)
    else:
        data = concat([resolve(spec, zero_based=args.zero_based) for spec in args.data])
        if "n_features" in params:  # a model wider than the file's largest index
            data = data.with_features(int(params["n_features"]))
    read_seconds = time.perf_counter() - started
    # without --learner, the default for the number of classes the data (or --param classes) has, and its width
    name = args.learner or default_learner(len(params.get("classes") or data.classes()),
                                           int(params.get("n_features", data.rows.n_features)))
    if args.paper_protocol:
        params = {**paper_protocol(name), **params}
    params.setdefault("n_features", data.rows.n_features)
    probe = make(name, **params)
    if "classes" not in params:  # given, the data's labels are not read (a streamed file has none yet)
        params["classes"] = data.classes() if probe.multiclass else list(
            data.binary_classes(_value(args.positive) if args.positive else None))
    learner = make(name, **params)
    costs = _metric_weights(learner, args)
    options = dict(permutations=args.permutations, seed=args.seed, delay=args.delay, shuffle=not args.in_order,
                   costs=costs, warmup=args.warmup)
    if args.budget_rate is not None:
        records = data.n if stream is None else summary.n  # the pass's length (0: not known ahead)
        warmup = None if args.budget_warmup == "auto" else args.budget_warmup
        boost = {None: BACKTEST_WARMUP_BOOST, "every": None}.get(args.budget_warmup_boost, args.budget_warmup_boost)
        try:
            learner.budget = backtest_controller(args.budget_rate, records, warmup=warmup, boost=boost)
        except ValueError as exc:
            raise SystemExit(f"--budget-rate: {exc}") from None
    elif args.budget_warmup not in (0, "auto") or args.budget_warmup_boost is not None:
        raise SystemExit("--budget-warmup needs --budget-rate: the requests it makes are paid back out of that rate")
    if args.query_rate is not None:
        budget = learner.query.budget_param
        if budget in params:
            raise SystemExit(f"--query-rate sets {budget}; do not pass --param {budget}= as well")
        learner, result = find_budget(learner, data, args.query_rate, **options)
    else:
        rows = (data.n or None) if stream is None else (summary.n or None)  # 0: a stream not scanned ahead
        bar = progress.ReplayProgress(rows, args.permutations) if show else None
        try:
            if stream is not None:
                result = run_stream(learner, stream, permutations=args.permutations, delay=args.delay, costs=costs,
                                    warmup=args.warmup, progress=bar)
                read_seconds += stream.read_seconds
            else:
                result = run(learner, data, **options, progress=bar)
        finally:
            if bar is not None:
                bar.close()
    examples = data.n if stream is None else stream.rows
    total_seconds = time.perf_counter() - started

    keys = ("f1", "accuracy", "mistake_rate", "query_ratio", "precision", "recall", "sensitivity",
            "specificity", "weighted_sum", "cost", "mistakes", "queries", "auc_roc")
    shown = [data.name] if args.from_kafka is not None else list(args.data)
    report: dict[str, Any] = {"learner": learner.name, "data": shown, "examples": examples,
                              "permutations": args.permutations, "warmup": args.warmup}
    if source is not None:
        report["kafka"] = source
    for key in keys:
        report[key] = result.mean(key)
        report[f"{key}_std"] = result.std(key)
    seconds = np.asarray(result.seconds)
    speed = examples / seconds
    report.update(
        seconds=float(seconds.mean()), seconds_std=float(seconds.std()),
        examples_per_second=float(speed.mean()), examples_per_second_std=float(speed.std()),
        read_seconds=read_seconds, total_seconds=total_seconds, peak_memory_mb=_peak_rss_mb(),
        params={k: v for k, v in learner.get_params().items() if k != "classes"},
        classes=list(learner.classes), metric_weights=costs,
        max_window_query_ratio=_largest(result.window_ratios), budget_rate=args.budget_rate,
        budget_warmup=0 if learner.budget is None else learner.budget.warmup,
        budget_warmup_boost=None if learner.budget is None else learner.budget.warmup_boost or "every",
    )
    if args.json:
        sys.stdout.buffer.write(orjson.dumps(report, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n")
    else:
        _print_report(report)
    return 0


def _topic_data(args: argparse.Namespace, params: dict[str, Any], show: bool) -> tuple[Any, dict[str, Any]]:
    """The dataset of ``--from-kafka BOOTSTRAP --topic T [--labels-topic L]`` and what the read found.
    Client properties come from ACTIVESTREAM_KAFKA / ACTIVESTREAM_KAFKA_CONSUMER, as the service's."""
    from consumer import progress
    from consumer.config import load_settings
    from consumer.kafka import consumer_config
    from consumer.topic_replay import parse_time, read_topic_dataset, used_width

    if args.topic is None:
        raise ValueError("--from-kafka needs --topic (the recorded features topic)")
    settings = load_settings(bootstrap_servers=args.from_kafka)
    # the service's client properties; the reader assigns partitions itself, in a group of its own
    conf = {k: v for k, v in consumer_config(settings, "replay").items() if k != "group.instance.id"}
    since = None if args.since is None else parse_time(args.since, "--since")
    until = None if args.until is None else parse_time(args.until, "--until")
    # The model's dimension: --param n_features, else ACTIVESTREAM_N_FEATURES if set; otherwise the
    # records are read into the service's default space and the model spans the coordinates used,
    # as a LIBSVM file's width is its largest index.
    if "n_features" in params:
        n_features, width = int(params["n_features"]), None
    elif "n_features" in settings.model_fields_set:
        n_features, width = settings.n_features, None
    else:
        n_features, width = settings.n_features, used_width
    bar = progress.reading() if show else None
    try:
        read = read_topic_dataset(conf, args.topic, n_features=n_features, labels_topic=args.labels_topic,
                                  classes=params.get("classes"), since_s=since, until_s=until, width=width,
                                  progress=None if bar is None else (lambda n: bar.update(n - bar.n)))
    finally:
        if bar is not None:
            bar.close()
    return read.data, {"bootstrap": args.from_kafka, "topic": args.topic, "labels_topic": args.labels_topic,
                       "since": since, "until": until, **read.summary()}


def _largest(values: list[float]) -> float | None:
    """The largest of the values that are not NaN; None if there is none (a stream too short)."""
    kept = [v for v in values if v == v]
    return max(kept) if kept else None


def _metric_weights(learner: Any, args: argparse.Namespace) -> dict[str, float]:
    """η_p, η_n (weighted sum) and c_p, c_n (cost) of the binary metrics: --eta-p / --cost-p, else
    those a cost-sensitive learner optimises, else 1/2 each."""
    own = getattr(learner.rule, "metric_weights", None)
    weights = own() if own else {"eta_p": 0.5, "eta_n": 0.5, "c_p": 0.5, "c_n": 0.5}
    for flag, key in ((args.eta_p, "eta"), (args.cost_p, "c")):
        if flag is not None:
            if not 0.0 <= flag <= 1.0:
                raise ValueError(f"--{'eta-p' if key == 'eta' else 'cost-p'} must be in [0, 1], got {flag}")
            weights[f"{key}_p"], weights[f"{key}_n"] = flag, 1.0 - flag
    return weights


def _print_report(r: dict[str, Any]) -> None:
    print(f"{r['learner']} on {' + '.join(r['data'])}: {r['examples']} examples × {r['permutations']} runs")
    for key in ("f1", "accuracy", "mistake_rate", "query_ratio", "sensitivity", "specificity", "weighted_sum",
                "cost", "auc_roc"):
        if r[key] == r[key]:  # NaN for a multiclass learner
            print(f"  {key:<20} {r[key]:.4f} ± {r[key + '_std']:.4f}")
    if r["max_window_query_ratio"] is not None:
        print(f"  {'max window ratio':<20} {r['max_window_query_ratio']:.4f} "
              "(windows of 1,000 records after the first)")
    print(f"  {'speed':<20} {r['examples_per_second']:,.0f} examples/s (replay), read {r['read_seconds']:.3f} s, "
          f"total {r['total_seconds']:.3f} s, peak RSS {r['peak_memory_mb']:.0f} MB")
    shown = {k: v for k, v in r["params"].items() if k not in ("n_features", "seed")}
    print("  params " + ", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in shown.items()))


def _run(args: argparse.Namespace) -> int:
    from consumer import logs
    from consumer.config import load_settings
    from consumer.errors import ConfigError
    from consumer.service import service_for

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


def _inspect(args: argparse.Namespace) -> int:
    from consumer.checkpoint import CheckpointStore, part_paths, read_checkpoint
    from consumer.pending import unpack_strings

    path = Path(args.path)
    if path.is_dir():
        paths = CheckpointStore(path, keep=1).paths()
        if not paths:
            print(f"activestream checkpoint inspect: no checkpoint in {path}", file=sys.stderr)
            return 2
        path = paths[0]
    try:
        state, parts = read_checkpoint(path), part_paths(path)
    except Exception as exc:
        print(f"activestream checkpoint inspect: {exc}", file=sys.stderr)
        return 2
    learner_meta = json.loads(str(state["learner.meta"]))
    topics = unpack_strings(state["offsets.topics"], state["offsets.topics_offsets"])
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
        "offsets": [{"topic": t, "partition": int(p), "next_offset": int(o)}
                    for t, p, o in zip(topics, state["offsets.partitions"], state["offsets.next"], strict=True)],
        "totals": json.loads(str(state["service.totals"])),
        "arrays": {k: list(v.shape) for k, v in state.items() if k.startswith("learner.rule.")},
    }
    print(json.dumps(report, indent=2, sort_keys=True))
    return 0


def _healthcheck(args: argparse.Namespace) -> int:
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


def _demo(args: argparse.Namespace) -> int:
    import orjson

    from consumer.demo.report import drift_summary, ratio_and_target
    from consumer.demo.run import DemoOptions, run_demo
    from consumer.errors import ConfigError

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    opts = DemoOptions(
        data=args.data or [], learner=args.learner, records=args.records, label_delay_s=args.label_delay,
        label_cost=args.label_cost, rate=args.rate, params=_params(args.param), port=args.port,
        metrics_port=args.metrics_port, positive=_value(args.positive) if args.positive else None,
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


def _annotate(args: argparse.Namespace) -> int:
    from consumer.annotate.label_studio import main as label_studio

    return label_studio()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="activestream", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run the service (configured by ACTIVESTREAM_* environment variables)")
    run.set_defaults(func=_run)

    demo = sub.add_parser("demo", help="run the whole loop locally: embedded broker, service, simulated annotator",
                          formatter_class=_HelpFormatter)
    demo.add_argument("--data", action="append", help="LIBSVM file(s) to stream (default: a synthetic drifting stream)")
    demo.add_argument("--learner", help=f"registry name; default: the registry's for the stream: {_DEFAULT_LEARNERS}")
    demo.add_argument("--records", type=int, default=10_000, help="records to stream (default 10000)")
    demo.add_argument("--annotator", choices=("simulated", "label-studio"), default="simulated",
                      help="who answers the label requests: the simulated annotator (the truth after --label-delay), "
                           "or people in Label Studio (ACTIVESTREAM_ANNOTATE__URL and __TOKEN; docs: Label Studio)")
    demo.add_argument("--label-delay", type=float, default=0.1,
                      help="seconds before the annotator answers (0.1: at the default rate, 100 records are scored "
                           "before a label can help, a tenth of a percent of the stream as in a long-running service "
                           "whose labels come back in minutes)")
    demo.add_argument("--label-cost", type=float, default=1.0, help="cost of one label (1)")
    demo.add_argument("--rate", type=float, default=1000.0,
                      help="records per second fed (default 1000; 0: all at once). Labels come back after "
                           "--label-delay, so rate × delay records are scored before their labels can help")
    demo.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="a learner hyper-parameter")
    demo.add_argument("--query-rate-target", type=_target, default=QUERY_RATE_TARGET, metavar="R|none",
                      help="the service's ACTIVESTREAM_QUERY_RATE_TARGET: ask for labels on this fraction of records, "
                           f"from the first record on (default {QUERY_RATE_TARGET:g}; none: no target, the learner's "
                           "own query decides; with --service, the running service's own target holds)")
    demo.add_argument("--positive", help="the positive label of a binary dataset (default: 1)")
    demo.add_argument("--port", type=int, help="embedded broker port (default: a free one)")
    demo.add_argument("--bootstrap", metavar="HOST:PORT", help="use this Kafka instead of the embedded broker")
    demo.add_argument("--service", metavar="URL",
                      help="feed a service that already runs (e.g. http://activestream:9108) instead of starting "
                           "one; its totals are read from URL/metrics")
    demo.add_argument("--metrics-port", type=int, default=0, help="/metrics port (default: a free one)")
    demo.add_argument("--timeout", type=float, default=600.0, help="give up after this many seconds (600)")
    demo.add_argument("--json", action="store_true", help="print the final report as one JSON object")
    demo.add_argument("--report", metavar="FILE.html",
                      help="also write a self-contained HTML report with the demo's curves (accuracy against the "
                           "truth and the service's estimate, query ratio, labels, cost)")
    demo.set_defaults(func=_demo)

    health = sub.add_parser("healthcheck", help="exit 0 when the local service's /healthz (or /readyz) answers 200")
    health.add_argument("--ready", action="store_true", help="check /readyz instead of /healthz")
    health.add_argument("--port", type=int, help="the metrics port (default: ACTIVESTREAM_METRICS_PORT, 9108)")
    health.add_argument("--timeout", type=float, default=4.0, help="seconds to wait for the answer (4)")
    health.set_defaults(func=_healthcheck)

    annotate = sub.add_parser("annotate", help="connect the label requests to an annotation tool")
    annotate_sub = annotate.add_subparsers(dest="tool", required=True)
    annotate_sub.add_parser("label-studio", help="label requests become Label Studio tasks, annotations labels "
                            "(configured by ACTIVESTREAM_* variables)").set_defaults(func=_annotate)

    ck = sub.add_parser("checkpoint", help="work with checkpoint files")
    ck_sub = ck.add_subparsers(dest="action", required=True)
    inspect = ck_sub.add_parser("inspect", help="print what a checkpoint holds, as JSON")
    inspect.add_argument("path", help="a checkpoint file, or a directory (its newest checkpoint)")
    inspect.set_defaults(func=_inspect)

    rp = sub.add_parser("replay", help="run a dataset through a learner offline and report prequential metrics",
                        formatter_class=_HelpFormatter)
    rp.add_argument("--learner", help="registry name, e.g. paa-1, pea, rpa-2 (see learners.ALGORITHMS); default: "
                    f"the registry's for the data's classes and width, which --json names: {_DEFAULT_LEARNERS}")
    source = rp.add_mutually_exclusive_group(required=True)
    source.add_argument("--data", action="append",
                        help="LIBSVM file (plain/.xz/.gz/.bz2) or synthetic:KIND?k=v; repeat to concatenate in order")
    source.add_argument("--from-kafka", metavar="BOOTSTRAP",
                        help="replay a recorded features topic (--topic) from this Kafka cluster")
    rp.add_argument("--topic", help="with --from-kafka: the features topic, read from its start to its end")
    rp.add_argument("--labels-topic", help="with --from-kafka: join each record's label by id from this topic "
                    "(default: the records' own \"label\" field)")
    rp.add_argument("--since", help="with --from-kafka: the messages stamped at or after this time "
                    "(epoch seconds or ISO 8601)")
    rp.add_argument("--until", help="with --from-kafka: the messages stamped before this time")
    budget = rp.add_mutually_exclusive_group()
    budget.add_argument("--query-rate", type=float,
                        help="search the query budget (δ; the entropy query's discount) offline, over the whole "
                             "stream, to land this mean query ratio")
    budget.add_argument("--budget-rate", type=float,
                        help="hold this query ratio with the online budget controller (no look-ahead)")
    rp.add_argument("--budget-warmup", type=_warmup, default="auto", metavar="N|auto",
                    help="with --budget-rate: spend the first N requests faster (--budget-warmup-boost), then "
                         "repay them at half the rate until the total is back on it (a fresh model learns from "
                         "its first labels fastest); auto (default): half the pass's budget; 0: off")
    rp.add_argument("--budget-warmup-boost", type=_boost, metavar="K|every",
                    help="during the warm-up, aim at K ≥ 1 times the rate through the query strategy (default 4, "
                         "learners.budget.BACKTEST_WARMUP_BOOST); every: ask about every record")
    rp.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                    help="a learner hyper-parameter, e.g. delta=0.5, C=0.25, bias=0, normalize=true")
    rp.add_argument("--paper-protocol", action="store_true",
                    help="the papers' data model and query rule: no intercept, unit-norm rows, sign(0) = -1, "
                         "δ/(δ+|p|)")
    rp.add_argument("--permutations", type=int, default=1, help="runs, each over a random permutation (default 1)")
    rp.add_argument("--in-order", action="store_true", help="replay in file order instead of shuffling")
    rp.add_argument("--seed", type=int, default=0, help="seed of the permutations (run k uses seed+k)")
    rp.add_argument("--delay", type=int, default=0, help="labels arrive K records after their query (default 0)")
    rp.add_argument("--warmup", type=int, default=0,
                    help="leave each pass's first N records out of the metrics; the model still learns from them")
    rp.add_argument("--positive", help="the positive label of a binary dataset (default: 1)")
    rp.add_argument("--eta-p", type=float, help="η_p of the weighted sum η_p·sensitivity + η_n·specificity, "
                    "η_n = 1 - η_p (default: the learner's own, else 0.5)")
    rp.add_argument("--cost-p", type=float, help="c_p, cost of a false negative in c_p·M_p + c_n·M_n, "
                    "c_n = 1 - c_p (default: the learner's own, else 0.5)")
    rp.add_argument("--zero-based", action="store_true", help="LIBSVM indices start at 0")
    rp.add_argument("--json", action="store_true", help="print one JSON object")
    rp.add_argument("--quiet", action="store_true", help="no progress bar (drawn only on a terminal, and never "
                    "with --json)")
    rp.set_defaults(func=_replay)
    return parser


def writable_numba_cache() -> None:
    """Before numba is imported: when ``$NUMBA_CACHE_DIR`` cannot be written (the image's cache on a
    read-only root file system), copy it into the temporary folder and point numba there.

    numba writes a probe file into its cache folder before it reads a kernel from it, and fails
    ("no locator available") where it cannot; from the copy it loads the image's kernels, and
    compiles and saves there those it lacks (another learner, another CPU model)."""
    cache = os.environ.get("NUMBA_CACHE_DIR")
    if not cache or "numba" in sys.modules or not os.path.isdir(cache) or os.access(cache, os.W_OK):
        return
    import shutil
    import tempfile

    copy = Path(tempfile.gettempdir()) / f"activestream-numba-{os.getuid()}"
    if not copy.is_dir():  # the first command in the container copies; a copy in progress is not seen
        staging = Path(tempfile.mkdtemp(prefix=f"{copy.name}."))
        shutil.copytree(cache, staging, dirs_exist_ok=True)
        try:
            staging.rename(copy)
        except OSError:  # another command made it meanwhile
            shutil.rmtree(staging, ignore_errors=True)
    os.environ["NUMBA_CACHE_DIR"] = str(copy)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    writable_numba_cache()
    try:
        code = args.func(args)
    except ValueError as exc:
        print(f"activestream {args.command}: {exc}", file=sys.stderr)
        code = 2
    if argv is None and args.command == "replay":
        # The process ends here and a replay holds nothing to close or flush but the output, while
        # finalising an interpreter with numba's compiled code loaded costs a few tenths of a second.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code
