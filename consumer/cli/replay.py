"""``activestream replay``: a dataset (a LIBSVM file, a synthetic stream or a recorded topic) through a
learner offline, and its prequential metrics as a table or one JSON object."""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from typing import Any

from consumer.cli.params import parse_params, parse_value

__all__ = ["replay"]


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def replay(args: argparse.Namespace) -> int:
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
    params = parse_params(args.param)
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
            data.binary_classes(parse_value(args.positive) if args.positive else None))
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

