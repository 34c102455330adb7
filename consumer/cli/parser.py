"""The ``activestream`` argument parser: its commands, their options, and the options' types."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from consumer.cli import commands
from consumer.cli.replay import replay
from consumer.demo import QUERY_RATE_TARGET

__all__ = ["build_parser"]


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="activestream", description="The ``activestream`` command line.")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run the service (configured by ACTIVESTREAM_* environment variables)")
    run.set_defaults(func=commands.run)

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
    demo.set_defaults(func=commands.demo)

    health = sub.add_parser("healthcheck", help="exit 0 when the local service's /healthz (or /readyz) answers 200")
    health.add_argument("--ready", action="store_true", help="check /readyz instead of /healthz")
    health.add_argument("--port", type=int, help="the metrics port (default: ACTIVESTREAM_METRICS_PORT, 9108)")
    health.add_argument("--timeout", type=float, default=4.0, help="seconds to wait for the answer (4)")
    health.set_defaults(func=commands.healthcheck)

    annotate = sub.add_parser("annotate", help="connect the label requests to an annotation tool")
    annotate_sub = annotate.add_subparsers(dest="tool", required=True)
    annotate_sub.add_parser("label-studio", help="label requests become Label Studio tasks, annotations labels "
                            "(configured by ACTIVESTREAM_* variables)").set_defaults(func=commands.annotate)

    ck = sub.add_parser("checkpoint", help="work with checkpoint files")
    ck_sub = ck.add_subparsers(dest="action", required=True)
    inspect = ck_sub.add_parser("inspect", help="print what a checkpoint holds, as JSON")
    inspect.add_argument("path", help="a checkpoint file, or a directory (its newest checkpoint)")
    inspect.set_defaults(func=commands.inspect_checkpoint)

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
    rp.set_defaults(func=replay)
    return parser

