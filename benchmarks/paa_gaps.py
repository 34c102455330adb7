"""Evidence for the gaps between our Tables 2-3 reproduction and the published numbers.

``python -m benchmarks.paa_gaps`` measures, on the evaluation permutations (seeds 0..19) and with
the paper's data model unless said otherwise, and writes ``benchmarks/results/paa_gaps.md``:

* **w8a**: how many rows are empty, how much of a 10 % budget PAA-I spends on them without an
  intercept, and F1 under the three readings of sign(0) (−1, +1, "neither": counted as a mistake
  for both classes) — the readings only change how a zero margin is scored, never an update, so
  one replay gives all three;
* **splice**: the staged file has 1,000 of the paper's 3,175 rows; PA-I's online F1 over three
  passes with and without an intercept, against a batch linear SVM (5-fold CV);
* **mushrooms**: the fully supervised ceiling (PA, PA-I, every label) over random permutations and
  in file order, against the paper's PAA at 10 % labels.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from benchmarks.paa_data import DATASETS
from learners import make
from learners.datasets import Dataset
from learners.registry import paper_protocol
from learners.replay import find_budget, replay, run

__all__ = ["main"]

RESULTS = Path(__file__).resolve().parent / "results"
PERMUTATIONS = 20


def _f1(tp: int, fp: int, fn: int) -> float:
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def _codes_f1(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    tp, fp = np.sum((y_true > 0) & (y_pred > 0)), np.sum((y_true < 0) & (y_pred > 0))
    return _f1(int(tp), int(fp), int(np.sum((y_true > 0) & (y_pred < 0))))


def sign_zero_readings(learner, data: Dataset, permutations: int) -> dict[str, float]:
    """Mean F1 when a zero margin is read as −1, as +1, or as neither class (a mistake either way),
    and the share of queries spent on rows whose margin was exactly 0."""
    scores = {"−1": [], "+1": [], "neither": [], "queries at p=0": []}
    for k in range(permutations):
        order = np.random.default_rng(k).permutation(data.n)
        trace = replay(learner.clone(seed=learner.seed + k), data, order=order)
        y, p, q = trace.y_true, trace.p, trace.queried
        pos, zero = y > 0, p == 0.0
        tp_strict = int(np.sum(pos & (p > 0)))
        scores["−1"].append(_f1(tp_strict, int(np.sum(~pos & (p > 0))), int(np.sum(pos & (p <= 0)))))
        scores["+1"].append(_f1(int(np.sum(pos & (p >= 0))), int(np.sum(~pos & (p >= 0))), int(np.sum(pos & (p < 0)))))
        scores["neither"].append(_f1(tp_strict, int(np.sum(~pos & (p >= 0))), int(np.sum(pos & (p <= 0)))))
        scores["queries at p=0"].append(np.sum(q & zero) / max(1, np.sum(q)))
    return {key: float(np.mean(v)) for key, v in scores.items()}


def w8a_section(permutations: int) -> list[str]:
    spec = DATASETS["w8a"]
    data = spec.load()
    classes = list(spec.classes(data))
    empty = np.diff(data.rows.indptr) == 0
    lines = ["## w8a: empty rows and sign(0)", "",
             f"{int(empty.sum()):,} of {data.n:,} rows ({empty.mean():.1%}) have no feature; "
             f"{int(np.sum(empty & (data.labels == 1)))} of them are positive. Without an intercept their margin "
             "is exactly 0, so δ/(δ+|p|) = 1 queries every one of them.", "",
             "| learner | queries | C | F1, sign(0) = −1 | F1, sign(0) = +1 | F1, sign(0) = neither | "
             "share of queries on p = 0 | paper F1 |", "|---|---|---|---|---|---|---|---|"]
    paper = {("paa-1", 0.1): 0.391, ("paa-1", 0.2): 0.461, ("pea", 0.1): 0.263, ("pea", 0.2): 0.342,
             ("rpa-1", 0.1): 0.280, ("rpa-1", 0.2): 0.370, ("rpe", 0.1): 0.188, ("rpe", 0.2): 0.225}
    for (name, rate), published in paper.items():
        C = 0.25 if name in ("paa-1", "rpa-1") else None  # 2^-2: the C the paper run chose for RPA-I/PAA-I at 20 %
        params = {**paper_protocol(name), **({"C": C} if C else {})}
        learner = make(name, n_features=data.rows.n_features, classes=classes, **params)
        learner, _ = find_budget(learner, data, rate, permutations=permutations)
        r = sign_zero_readings(learner, data, permutations)
        lines.append(f"| {name} | {rate:.0%} | {C or '—'} | {r['−1']:.3f} | {r['+1']:.3f} | {r['neither']:.3f} | "
                     f"{r['queries at p=0']:.1%} | {published:.3f} |")
        print(lines[-1], flush=True)
    return [*lines, ""]


def splice_section(permutations: int) -> list[str]:
    from sklearn.model_selection import cross_val_score
    from sklearn.svm import LinearSVC

    spec = DATASETS["splice"]
    data = spec.load()
    X, y = data.rows.to_csr(), data.labels
    lines = ["## splice: 1,000 rows and the intercept", "",
             "Online F1 of fully supervised PA-I (C = 2^-3, every label) over the 1,000 staged rows replayed three "
             "times in a row (three independent shuffles), per pass:", "",
             "| intercept | pass 1 | pass 2 | pass 3 | all 3,000 rounds |", "|---|---|---|---|---|"]
    for bias in (0.0, 1.0):
        per = []
        for k in range(permutations):
            rng = np.random.default_rng(k)
            order = np.concatenate([rng.permutation(data.n) for _ in range(3)])
            learner = make("pa-1", n_features=data.rows.n_features, C=0.125, bias=bias)
            t = replay(learner, data, order=order)
            per.append([_codes_f1(t.y_true[i * data.n:(i + 1) * data.n], t.y_pred[i * data.n:(i + 1) * data.n])
                        for i in range(3)] + [_codes_f1(t.y_true, t.y_pred)])
        m = np.mean(per, axis=0)
        lines.append(f"| {'bias = 1' if bias else 'none (paper)'} | " + " | ".join(f"{v:.3f}" for v in m) + " |")
        print(lines[-1], flush=True)
    svm = cross_val_score(LinearSVC(C=0.1), X, y, cv=5, scoring="f1").mean()
    lines += ["", f"A batch linear SVM with intercept (scikit-learn LinearSVC, C = 0.1) reaches F1 {svm:.3f} in "
              "5-fold cross-validation on the same 1,000 rows. The paper's PAA-I reaches 0.794 / 0.813 at 10 % / 20 % "
              "labels on 3,175 rows.", ""]
    return lines


def mushrooms_section(permutations: int) -> list[str]:
    spec = DATASETS["mushrooms"]
    data = spec.load()
    classes = list(spec.classes(data))
    lines = ["## mushrooms: the fully supervised ceiling", "",
             "| learner (every label, no intercept) | random permutations | file order |", "|---|---|---|"]
    for name, params in (("pa", {}), ("pa-1", {"C": 0.25})):
        learner = make(name, n_features=data.rows.n_features, classes=classes, **paper_protocol(name), **params)
        shuffled = run(learner, data, permutations=permutations).mean("f1")
        in_order = run(learner, data, permutations=1, shuffle=False).mean("f1")
        lines.append(f"| {name} {params or ''} | {shuffled:.4f} | {in_order:.4f} |")
        print(lines[-1], flush=True)
    return [*lines, "", "The paper's PAA / PAA-I / PAA-II reach 0.996 with 10 % of the labels.", ""]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.paa_gaps", description=__doc__.splitlines()[0])
    parser.add_argument("--permutations", type=int, default=PERMUTATIONS)
    parser.add_argument("--out", type=Path, default=RESULTS / "paa_gaps.md")
    args = parser.parse_args(argv)
    command = "python -m benchmarks.paa_gaps " + " ".join(sys.argv[1:] if argv is None else argv)
    lines = ["# Evidence for the gaps to the PAA paper's Tables 2-3", "",
             f"Command: `{command.strip()}`; {args.permutations} permutations (seeds 0..{args.permutations - 1}), "
             "the paper's data model (no intercept, unit-norm rows) unless a row says otherwise.", ""]
    lines += w8a_section(args.permutations)
    lines += splice_section(args.permutations)
    lines += mushrooms_section(args.permutations)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
