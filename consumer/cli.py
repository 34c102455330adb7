"""The ``activestream`` command line.

``activestream replay`` runs a dataset through a learner offline (a backtest, or a paper's
protocol) and prints the prequential metrics, as a table or as one JSON object (``--json``).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from typing import Any

import numpy as np
import orjson

__all__ = ["main"]


def _value(text: str) -> Any:
    """A --param value: JSON (numbers, true/false, lists) or else the plain string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
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
    from learners import make
    from learners.datasets import concat, resolve
    from learners.registry import PAPER_PROTOCOL
    from learners.replay import find_budget, run

    started = time.perf_counter()
    data = concat([resolve(spec, zero_based=args.zero_based) for spec in args.data])
    read_seconds = time.perf_counter() - started
    params = {**(PAPER_PROTOCOL if args.paper_protocol else {}), **_params(args.param)}
    params.setdefault("n_features", data.rows.n_features)
    probe = make(args.learner, **params)
    if probe.multiclass:
        params.setdefault("classes", data.classes())
    else:
        params.setdefault("classes", list(data.binary_classes(_value(args.positive) if args.positive else None)))
    learner = make(args.learner, **params)
    costs = _metric_weights(learner, args)
    options = dict(permutations=args.permutations, seed=args.seed, delay=args.delay, shuffle=not args.in_order,
                   costs=costs)
    if args.query_rate is not None:
        budget = learner.query.budget_param
        if budget in params:
            raise SystemExit(f"--query-rate sets {budget}; do not pass --param {budget}= as well")
        learner, result = find_budget(learner, data, args.query_rate, **options)
    else:
        result = run(learner, data, **options)
    total_seconds = time.perf_counter() - started

    keys = ("f1", "accuracy", "mistake_rate", "query_ratio", "precision", "recall", "sensitivity",
            "specificity", "weighted_sum", "cost", "mistakes", "queries", "auc_roc")
    report: dict[str, Any] = {"learner": learner.name, "data": [d for d in args.data], "examples": data.n,
                              "permutations": args.permutations}
    for key in keys:
        report[key] = result.mean(key)
        report[f"{key}_std"] = result.std(key)
    seconds = np.asarray(result.seconds)
    speed = data.n / seconds
    report.update(
        seconds=float(seconds.mean()), seconds_std=float(seconds.std()),
        examples_per_second=float(speed.mean()), examples_per_second_std=float(speed.std()),
        read_seconds=read_seconds, total_seconds=total_seconds, peak_memory_mb=_peak_rss_mb(),
        params={k: v for k, v in learner.get_params().items() if k != "classes"},
        classes=list(learner.classes), metric_weights=costs,
    )
    if args.json:
        sys.stdout.buffer.write(orjson.dumps(report, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n")
    else:
        _print_report(report)
    return 0


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
    print(f"  {'speed':<20} {r['examples_per_second']:,.0f} examples/s (replay), read {r['read_seconds']:.3f} s, "
          f"total {r['total_seconds']:.3f} s, peak RSS {r['peak_memory_mb']:.0f} MB")
    shown = {k: v for k, v in r["params"].items() if k not in ("n_features", "seed")}
    print("  params " + ", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in shown.items()))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="activestream", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    rp = sub.add_parser("replay", help="run a dataset through a learner offline and report prequential metrics")
    rp.add_argument("--learner", required=True, help="registry name, e.g. paa-1, pea, rpa-2 (see learners.ALGORITHMS)")
    rp.add_argument("--data", action="append", required=True,
                    help="LIBSVM file (plain/.xz/.gz/.bz2) or synthetic:KIND?k=v; repeat to concatenate in order")
    budget = rp.add_mutually_exclusive_group()
    budget.add_argument("--query-rate", type=float, help="search the query budget (δ) to land this mean query ratio")
    rp.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                    help="a learner hyper-parameter, e.g. delta=0.5, C=0.25, bias=0, normalize=true")
    rp.add_argument("--paper-protocol", action="store_true",
                    help="the papers' data model: no intercept, raw features (same as --param bias=0)")
    rp.add_argument("--permutations", type=int, default=1, help="runs, each over a random permutation (default 1)")
    rp.add_argument("--in-order", action="store_true", help="replay in file order instead of shuffling")
    rp.add_argument("--seed", type=int, default=0, help="seed of the permutations (run k uses seed+k)")
    rp.add_argument("--delay", type=int, default=0, help="labels arrive K records after their query (default 0)")
    rp.add_argument("--positive", help="the positive label of a binary dataset (default: 1)")
    rp.add_argument("--eta-p", type=float, help="η_p of the weighted sum η_p·sensitivity + η_n·specificity, "
                    "η_n = 1 - η_p (default: the learner's own, else 0.5)")
    rp.add_argument("--cost-p", type=float, help="c_p, cost of a false negative in c_p·M_p + c_n·M_n, "
                    "c_n = 1 - c_p (default: the learner's own, else 0.5)")
    rp.add_argument("--zero-based", action="store_true", help="LIBSVM indices start at 0")
    rp.add_argument("--json", action="store_true", help="print one JSON object")
    rp.set_defaults(func=_replay)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ValueError as exc:
        print(f"activestream {args.command}: {exc}", file=sys.stderr)
        return 2
