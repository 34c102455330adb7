"""Online per-feature scaling against offline preparation (:mod:`learners.scaling`).

Three parts, one results page (``benchmarks/results/scaling.md`` and ``.json``)::

    python -m benchmarks.scaling                                   # all three parts
    python -m benchmarks.scaling --parts synthetic --synthetic-permutations 3  # a quick look

* ``paper``: PAA-I on the six binary sets of the PAA paper's Tables 2-3 with the protocol of
  :mod:`benchmarks.paa_protocol` (C tuned on a separate permutation, δ bisected until the mean
  query ratio is within 0.5 % of 10 % and 20 %), under the paper's data model (no intercept,
  unit-norm rows) and the registry defaults (intercept 1, raw rows). svmguide1 and spambase as
  distributed (raw) with ``scale`` none / maxabs / rms (and rms learnt from every scored row) /
  standard, against the offline-standardised files; every set as prepared for the paper with
  scaling off and on: the cost of making scaling the default.
* ``synthetic``: a stream whose features span 10⁻³ to 10⁶, and the same stream with half of its
  features jumping 100× mid-stream; PAA-I, SOAL and D-AMD (registry defaults) at 10 % labels, raw
  with online scaling against the stream standardised offline (per regime for the jump).
* ``table``: every binary and multiclass file in the datasets directory (train parts), raw and
  prepared, scaling off and on: PAA-I (binary, F1) or MPAA-I (multiclass, accuracy) with registry
  defaults, δ landed on 10 % labels.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from benchmarks.paa_data import DATASETS, datasets_dir, standardize
from benchmarks.paa_protocol import evaluate
from learners import make
from learners.datasets import Dataset, read_libsvm
from learners.inputs import as_rows
from learners.registry import paper_protocol
from learners.replay import find_budget

__all__ = ["main", "prepared", "synthetic_stream"]

RESULTS = Path(__file__).resolve().parent / "results"
RATES = (0.1, 0.2)
RAW_SETS = ("svmguide1", "spambase")  # the paper's sets distributed with raw columns
# variants of the paper part: (name, scale, scale_from, raw file?)
PAPER_VARIANTS = (
    ("prepared", "none", "labelled", False),
    ("prepared + rms", "rms", "labelled", False),
    ("prepared + rms (scored)", "rms", "scored", False),
    ("prepared + standard", "standard", "scored", False),
    ("raw", "none", "labelled", True),
    ("raw + maxabs", "maxabs", "labelled", True),
    ("raw + rms", "rms", "labelled", True),
    ("raw + rms (scored)", "rms", "scored", True),
    ("raw + standard", "standard", "scored", True),  # "standard" always learns from scored rows
)
# (name, scale, scale_from, which form of the stream)
SYNTHETIC_VARIANTS = (
    ("standardised offline", "none", "labelled", "standardised offline"),
    ("standardised per regime", "none", "labelled", "standardised per regime"),
    ("raw", "none", "labelled", "raw"),
    ("raw + maxabs", "maxabs", "labelled", "raw"),
    ("raw + rms", "rms", "labelled", "raw"),
    ("raw + rms (scored)", "rms", "scored", "raw"),
    ("raw + standard", "standard", "scored", "raw"),
)
DENSE_LIMIT = 1000  # prepared = columns standardised up to this width, rows to unit norm above it


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, cwd=Path(__file__).parent).stdout.strip()


# -- data --------------------------------------------------------------------------------------------
def synthetic_stream(n: int = 10_000, d: int = 20, *, jump: bool = False, positive: bool = False,
                     seed: int = 0) -> dict[str, Dataset]:
    """A stream whose features span 10⁻³ to 10⁶: {"raw", "standardised offline"} and, with
    ``jump``, "standardised per regime".

    Columns are Gaussian (``positive``: half of them log-normal, like amounts), column j multiplied
    by 10^(−3 + 9j/(d−1)) in a random order. Labels: the sign of a random linear function of the
    standardised columns plus an offset, 10 % of them flipped. ``jump``: every other column ×100
    from the middle of the stream on; the stream is then ordered (replayed unshuffled). "Standardised
    offline" is the whole stream standardised per column, as a file would be; "per regime" knows the
    jump and standardises each half on its own (an oracle).
    """
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, d))
    if positive:
        z[:, d // 2:] = np.exp(0.75 * z[:, d // 2:])
    zs = (z - z.mean(axis=0)) / z.std(axis=0)
    y = np.where(zs @ rng.standard_normal(d) + 0.3 > 0, 1, -1)
    flip = rng.random(n) < 0.1
    y[flip] = -y[flip]
    X = z * 10.0 ** np.linspace(-3, 6, d)[rng.permutation(d)]
    standard = lambda A: (A - A.mean(axis=0)) / A.std(axis=0)  # noqa: E731
    name = ("mixed" if positive else "gaussian") + (", jump ×100" if jump else "")
    as_set = lambda A: Dataset(as_rows(sp.csr_matrix(A), d), y, name, ordered=jump)  # noqa: E731
    if jump:
        X[n // 2:, ::2] *= 100.0
    out = {"raw": as_set(X), "standardised offline": as_set(standard(X))}
    if jump:
        out["standardised per regime"] = as_set(np.vstack([standard(X[: n // 2]), standard(X[n // 2:])]))
    return out


def prepared(data: Dataset) -> Dataset:
    """Columns standardised (whole file) up to :data:`DENSE_LIMIT` features, else rows to unit norm."""
    if data.rows.n_features <= DENSE_LIMIT:
        return standardize(data)
    X = data.rows.to_csr()
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1))).ravel()
    X = sp.diags(1.0 / np.where(norms > 0, norms, 1.0)) @ X
    return Dataset(as_rows(sp.csr_matrix(X), data.rows.n_features), data.labels, data.name)


def _table_files(root: Path) -> list[Path]:
    """One file per dataset: the train part, or the test part of a set staged without one (mnist.t)."""
    files = sorted(root.glob("*.xz"))
    names = {p.name for p in files}
    return [p for p in files if not (p.name.endswith(".t.xz") and p.name.replace(".t.xz", ".xz") in names)]


# -- the parts -----------------------------------------------------------------------------------
def part_paper(permutations: int, log) -> list[dict[str, Any]]:
    rows = []
    for config in ("paper", "defaults"):
        for ds in DATASETS.values():
            raw = ds.load(raw=True)
            ready = ds.load()
            classes = ds.classes(raw)
            for variant, scale, scale_from, use_raw in PAPER_VARIANTS:
                if use_raw and ds.name not in RAW_SETS:
                    continue
                data = raw if use_raw else ready
                params = {**(paper_protocol("paa-1") if config == "paper" else {}), "scale": scale,
                          "scale_from": scale_from}
                for rate in RATES:
                    start = time.perf_counter()
                    cell = evaluate("paa-1", data, classes, rate, config=params, permutations=permutations)
                    rows.append({"config": config, "dataset": ds.name, "variant": variant, "rate": rate,
                                 "f1": cell.f1, "f1_std": cell.f1_std, "query": cell.query, "C": cell.params["C"],
                                 "delta": cell.params["delta"], "landed": cell.landed})
                    log(f"paper {config} {ds.name} {variant} {rate}: F1 {cell.f1:.3f} ± {cell.f1_std:.3f} "
                        f"query {cell.query:.3f} ({time.perf_counter() - start:.0f} s)")
    return rows


def _landed(algorithm: str, data: Dataset, rate: float, permutations: int, **params: Any):
    classes = sorted(set(np.asarray(data.labels).tolist()))
    learner = make(algorithm, n_features=data.rows.n_features, classes=classes, **params)
    return find_budget(learner, data, rate, permutations=permutations, seed=0, tol=0.005)


def part_synthetic(permutations: int, log) -> list[dict[str, Any]]:
    rows = []
    for positive in (False, True):
        for jump in (False, True):
            streams = synthetic_stream(jump=jump, positive=positive)
            for algorithm in ("paa-1", "soal", "d-amd"):
                for variant, scale, scale_from, form in SYNTHETIC_VARIANTS:
                    if form not in streams:
                        continue
                    _, result = _landed(algorithm, streams[form], 0.1, permutations, scale=scale,
                                        scale_from=scale_from)
                    rows.append({"stream": streams["raw"].name, "algorithm": algorithm, "variant": variant,
                                 "accuracy": result.mean("accuracy"), "accuracy_std": result.std("accuracy"),
                                 "f1": result.mean("f1"), "query": result.mean("query_ratio")})
                    log(f"synthetic {rows[-1]['stream']} {algorithm} {variant}: accuracy "
                        f"{rows[-1]['accuracy']:.3f} query {rows[-1]['query']:.3f}")
    return rows


def part_table(permutations: int, log, root: Path) -> list[dict[str, Any]]:
    rows = []
    for path in _table_files(root):
        raw = read_libsvm(path, name=path.name.removesuffix(".xz"))
        classes = sorted(set(np.asarray(raw.labels).tolist()))
        multiclass = len(classes) > 2
        algorithm = "mpaa-1" if multiclass else "paa-1"
        ready = prepared(raw)
        for form, data in (("raw", raw), ("prepared", ready)):
            for scale in ("none", "rms"):
                start = time.perf_counter()
                _, result = _landed(algorithm, data, 0.1, permutations, scale=scale)
                metric = "accuracy" if multiclass else "f1"
                rows.append({"dataset": raw.name, "task": f"{len(classes)} classes" if multiclass else "binary",
                             "rows": raw.n, "features": raw.rows.n_features, "algorithm": algorithm,
                             "form": form, "scale": scale, "metric": metric, "value": result.mean(metric),
                             "std": result.std(metric), "query": result.mean("query_ratio")})
                log(f"table {raw.name} {form} {scale}: {metric} {rows[-1]['value']:.3f} query "
                    f"{rows[-1]['query']:.3f} ({time.perf_counter() - start:.0f} s)")
    return rows


# -- the page ------------------------------------------------------------------------------------
def _paper_md(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    for config, title in (("defaults", "registry defaults (intercept 1, raw rows)"),
                          ("paper", "the paper's data model (no intercept, unit-norm rows)")):
        out += [f"### PAA-I, {title}", "",
                "| dataset | labels | variant | F1 | Δ vs prepared, no scaling | query % | C |",
                "|---|---|---|---|---|---|---|"]
        base = {(r["dataset"], r["rate"]): r["f1"] for r in rows
                if r["config"] == config and r["variant"] == "prepared"}
        for r in rows:
            if r["config"] != config:
                continue
            delta = r["f1"] - base[(r["dataset"], r["rate"])]
            out.append(f"| {r['dataset']} | {r['rate']:.0%} | {r['variant']} | {r['f1']:.3f} ± {r['f1_std']:.3f} "
                       f"| {delta:+.3f} | {100 * r['query']:.1f} | {r['C']:g} |")
        out.append("")
    return out


def _synthetic_md(rows: list[dict[str, Any]]) -> list[str]:
    out = ["| stream | algorithm | variant | accuracy | Δ vs standardised offline | query % |",
           "|---|---|---|---|---|---|"]
    base = {(r["stream"], r["algorithm"]): r["accuracy"] for r in rows if r["variant"] == "standardised offline"}
    for r in rows:
        delta = r["accuracy"] - base[(r["stream"], r["algorithm"])]
        out.append(f"| {r['stream']} | {r['algorithm']} | {r['variant']} | {r['accuracy']:.3f} ± "
                   f"{r['accuracy_std']:.3f} | {delta:+.3f} | {100 * r['query']:.1f} |")
    return [*out, ""]


def _table_md(rows: list[dict[str, Any]]) -> list[str]:
    out = ["| dataset | task | rows | features | learner | metric | raw | raw + rms | prepared | prepared + rms |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    cells: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
    for r in rows:
        cells.setdefault(r["dataset"], {})[(r["form"], r["scale"])] = r
    for name, c in cells.items():
        first = next(iter(c.values()))
        vals = [f"{c[k]['value']:.3f} ± {c[k]['std']:.3f}" for k in
                (("raw", "none"), ("raw", "rms"), ("prepared", "none"), ("prepared", "rms"))]
        out.append(f"| {name} | {first['task']} | {first['rows']:,} | {first['features']:,} | {first['algorithm']} | "
                   f"{first['metric']} | " + " | ".join(vals) + " |")
    return [*out, ""]


def write(results: dict[str, Any]) -> None:
    """The page from every part in ``results`` (each with the date, commit and command it ran with)."""
    lines = ["# Online per-feature scaling: raw features against offline preparation", "",
             "Each part below names the command, commit and date that produced it (docs: feeding raw features).",
             ""]

    def provenance(part: dict[str, Any]) -> str:
        return (f"Generated {part['date']} on commit `{part['commit']}` by `{part['command']}`; "
                f"{part['permutations']} permutations per cell.")

    if "paper" in results:
        part = results["paper"]
        lines += ["## The PAA paper's sets: raw files, prepared files, scaling off and on", "", provenance(part),
                  "C tuned on a separate permutation, δ bisected to land the query ratio (Sect. 6.1 protocol). "
                  "\"prepared\" = the files as the paper used them (svmguide1 and spambase standardised per "
                  "column, the others as distributed); \"raw\" = svmguide1 and spambase as distributed. "
                  "Scales learnt from labelled rows (the default); \"(scored)\": from every scored row.", ""]
        lines += _paper_md(part["rows"])
    if "synthetic" in results:
        part = results["synthetic"]
        lines += ["## Synthetic streams, 10 % labels (accuracy)", "", provenance(part),
                  "10,000 rows, 20 features multiplied by 10⁻³ … 10⁶ (\"gaussian\": zero-mean columns; "
                  "\"mixed\": half of them log-normal, positive); \"jump ×100\": every other feature ×100 "
                  "from row 5,001 on, replayed in order, \"standardised per regime\" being an oracle that "
                  "knows the jump. Registry defaults, the query's budget landed on 10 % labels.", ""]
        lines += _synthetic_md(part["rows"])
    if "table" in results:
        part = results["table"]
        lines += ["## Every staged dataset (train part; mnist: its staged test part), 10 % labels", "",
                  provenance(part),
                  f"Prepared = columns standardised over the file (≤ {DENSE_LIMIT} features) or rows scaled "
                  "to unit norm (wider, sparse text); registry defaults, δ landed on 10 % labels; "
                  "F1 (binary) or accuracy (multiclass), mean ± std over the permutations.", ""]
        lines += _table_md(part["rows"])
    (RESULTS / "scaling.md").write_text("\n".join(lines))
    (RESULTS / "scaling.json").write_text(json.dumps(results, indent=1))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", default=["paper", "synthetic", "table"],
                        choices=["paper", "synthetic", "table"])
    parser.add_argument("--permutations", type=int, default=20, help="per cell of the paper part")
    parser.add_argument("--small-permutations", type=int, default=3, help="per cell of the dataset table")
    # the synthetic streams are short (10,000 rows) and their cells' spread is wide: more permutations
    # cost little and keep a 0.01 gap from resting on the noise of three
    parser.add_argument("--synthetic-permutations", type=int, default=10, help="per cell of the synthetic part")
    args = parser.parse_args(argv)
    command = "python -m benchmarks.scaling " + " ".join(argv if argv is not None else sys.argv[1:])
    log = lambda msg: print(msg, flush=True)  # noqa: E731
    path = RESULTS / "scaling.json"
    results: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    stamp = {"date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
             "commit": _git("rev-parse", "--short", "HEAD"), "command": command.strip()}
    runs = {"paper": lambda: part_paper(args.permutations, log),
            "synthetic": lambda: part_synthetic(args.synthetic_permutations, log),
            "table": lambda: part_table(args.small_permutations, log, datasets_dir())}
    for name in ("paper", "synthetic", "table"):
        if name in args.parts:
            count = {"paper": args.permutations, "synthetic": args.synthetic_permutations}.get(name,
                                                                                                args.small_permutations)
            results[name] = {**stamp, "permutations": count, "rows": runs[name]()}
            write(results)  # each finished part is on the page at once
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
