"""How fast the outputs are written in each ``ACTIVESTREAM_OUTPUT_FORMAT``: the service's writing path
for one batch, from the decided columns to the values the producer sends, without a broker.

One command writes ``benchmarks/results/output_formats.md``::

    python -m benchmarks.output_formats            # --repeats 5 by default

Each format writes batches of 2,000 predictions and of 2,000 label requests (sparse features of 3
non-zeros, as received) with the compiled writer (:mod:`consumer.fastwrite`), then frames them
(:mod:`consumer.output_formats`; json: nothing to do), the schemas registered in confluent-kafka's
in-memory registry. The best of ``--repeats`` timings of many batches is reported, in rows per
second (the formats timed in turn).
"""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable
from datetime import UTC, datetime

import numpy as np

from benchmarks.throughput import RESULTS

ROWS = 2000  # the service's default batch size


def _best(run: Callable[[], object], batches: int, repeats: int) -> float:
    """Seconds per batch: the best of ``repeats`` timings of ``batches`` batches."""
    run()  # compiled kernels loaded, schemas parsed
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(batches):
            run()
        times.append((time.perf_counter() - started) / batches)
    return min(times)


def measure(fmt: str, repeats: int) -> tuple[float, float]:
    """(predictions, label requests) written per second in ``fmt``."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    from consumer.config import load_settings
    from consumer.fastwrite import pack, write_label_requests, write_predictions
    from consumer.output_formats import register_outputs

    rng = np.random.default_rng(0)
    ids = [f"record-{i}" for i in range(ROWS)]
    labels = rng.choice([-1, 1], ROWS).tolist()
    scores, probs, ts = rng.standard_normal(ROWS), rng.random(ROWS), 1.7e9 + rng.random(ROWS)
    asked = rng.random(ROWS) < 0.1
    partitions, offsets = np.zeros(ROWS, dtype=np.int64), np.arange(ROWS, dtype=np.int64)
    features = pack([b'{"indices":[1,5,9],"values":[0.5,1.0,2.0]}'] * ROWS)
    framing = None
    if fmt != "json":
        settings = load_settings(output_format=fmt, schema_registry={"url": "http://registry.invalid"})
        client = SchemaRegistryClient.new_client({"url": "mock://output-formats"})
        framing = register_outputs(settings, client, lambda seconds: True)

    def predictions() -> object:
        values = write_predictions(ids, labels, scores, probs, asked, ts, 3, 1.7e9, "features", partitions, offsets,
                                   b"" if framing is None else framing.prefix("predictions"))
        return values if framing is None else framing.frame("predictions", values)

    def requests() -> object:
        values = write_label_requests(ids, features, labels, scores, probs, probs, probs, 1.7e9, 1.7e9 + 60, 3,
                                      "features", partitions, offsets,
                                      b"" if framing is None else framing.prefix("label-requests"))
        return values if framing is None else framing.frame("label-requests", values)

    batches = 10 if fmt == "avro" else 200
    return ROWS / _best(predictions, batches, repeats), ROWS / _best(requests, batches, repeats)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    from consumer.registry_formats import registry_module

    # the registry's modules loaded before any timing: a process that has loaded them writes every
    # format more slowly, which would favour the formats timed before they are loaded
    registry_module()
    formats = ("json", "json-schema", "avro")
    best = {fmt: (0.0, 0.0) for fmt in formats}
    for _ in range(args.repeats):  # the formats in turn, so that a busy moment of the machine hits each alike
        for fmt in formats:
            best[fmt] = tuple(map(max, best[fmt], measure(fmt, 1)))
    rows = [(fmt, *best[fmt]) for fmt in formats]
    lines = ["# Output formats: writing speed", "",
             f"Made {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {platform.machine()}, Python "
             f"{platform.python_version()}, by `python -m benchmarks.output_formats --repeats {args.repeats}`: batches "
             f"of {ROWS:,} rows, the best of {args.repeats} timings, the formats in turn, from the decided columns "
             "to the values the producer sends.", "",
             "| ACTIVESTREAM_OUTPUT_FORMAT | predictions / s | label requests / s |", "|---|---:|---:|"]
    lines += [f"| {fmt} | {p:,.0f} | {r:,.0f} |" for fmt, p, r in rows]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "output_formats.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
