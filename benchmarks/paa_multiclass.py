"""Sect. 6.2 of Lu, Zhao & Hoi (2016): MPAA against MPEA, MRPE and MRPA on multiclass streams.

    python benchmarks/paa_multiclass.py                  # all seven sets, 20 permutations
    python benchmarks/paa_multiclass.py --datasets dna   # one set

Protocol (Sect. 6.1.1 / 6.2.1): a linear multi-prototype model without intercept, every round
predicted before its label is used (online accuracy over all rounds), 20 random permutations.
C of MPA-I / MPA-II is picked from 2^[-5:5] by the online accuracy of the fully supervised
learner on 3 other permutations, then shared by the random and active variants. The table lands
each learner at 10 % and 20 % queried labels (δ bisected for the gap query, the rate set for the
random ones); the figure sweeps δ over 2^[-10:10] like Fig. 4-5.

Data are the LIBSVM versions of Table 4 rebuilt from ../shared/datasets (see ``DATASETS``).
Fig. 4-5 print no numbers, so the paper's side of the comparison is its claims (Sect. 6.2.2-6.2.3),
checked at the end of the report.

Writes benchmarks/results/paa_multiclass.{json,md,png}.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from learners import PAPER_PROTOCOL, make
from learners.datasets import Dataset, read_libsvm
from learners.inputs import as_rows
from learners.replay import Run, find_budget, run

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("ACTIVESTREAM_DATASETS", ROOT.parent / "shared" / "datasets"))
RESULTS = ROOT / "benchmarks" / "results"

ACTIVE = ("mpea", "mpaa", "mpaa-1", "mpaa-2")
RANDOM = ("mrpe", "mrpa", "mrpa-1", "mrpa-2")
SUPERVISED = ("mpe", "mpa", "mpa-1")
C_GRID = 2.0 ** np.arange(-5, 6)
DELTA_GRID = 2.0 ** np.arange(-10, 11)
RATE_GRID = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0)
TARGETS = (0.1, 0.2)


def svm_scale(data: Dataset, lower: float = -1.0, upper: float = 1.0) -> Dataset:
    """Each feature mapped linearly onto [lower, upper] by its min and max, as LIBSVM's svm-scale
    made the ``*.scale`` files; constant features are dropped."""
    X = data.rows.to_csr().toarray()
    lo, hi = X.min(axis=0), X.max(axis=0)
    keep = hi > lo
    Z = np.zeros_like(X)
    Z[:, keep] = lower + (upper - lower) * (X[:, keep] - lo[keep]) / (hi - lo)[keep]
    return Dataset(as_rows(sp.csr_matrix(Z)), data.labels, data.name)


def unit_rows(data: Dataset) -> Dataset:
    """Every row scaled to unit L2 norm (LIBSVM's news20.scale)."""
    X = data.rows.to_csr()
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    return Dataset(as_rows(sp.diags(1.0 / norms) @ X), data.labels, data.name)


def divide(data: Dataset, by: float) -> Dataset:
    return Dataset(as_rows(data.rows.to_csr() / by), data.labels, data.name)


def head(data: Dataset, n: int) -> Dataset:
    return Dataset(as_rows(data.rows.to_csr()[:n]), data.labels[:n], data.name)


# name → (how it is rebuilt, what it stands for)
DATASETS: dict[str, tuple[Callable[[], Dataset], str]] = {
    "dna": (lambda: read_libsvm(DATA / "dna.scale.xz"), "dna.scale train (2000 × 180), as LIBSVM ships it"),
    "satimage": (lambda: svm_scale(read_libsvm(DATA / "satimage.xz")),
                 "UCI sat.trn (4435 × 36) svm-scaled to [-1, 1] = LIBSVM satimage.scale"),
    "usps": (lambda: read_libsvm(DATA / "usps.xz"), "usps train (7291 × 256), values in [-1, 1] as LIBSVM's"),
    "mnist": (lambda: divide(read_libsvm(DATA / "mnist.t.xz"), 255.0),
              "mnist.t (10000 × 778) / 255 = LIBSVM mnist.scale.t (the paper's 10,000 rows)"),
    "letter": (lambda: svm_scale(head(read_libsvm(DATA / "letter.xz"), 15000)),
               "UCI letter rows 1-15000 svm-scaled to [-1, 1] = LIBSVM letter.scale train"),
    "shuttle": (lambda: svm_scale(read_libsvm(DATA / "shuttle.xz")),
                "UCI shuttle.trn (43500 × 9) svm-scaled to [-1, 1] = LIBSVM shuttle.scale"),
    "news20": (lambda: unit_rows(read_libsvm(DATA / "news20.xz")),
               "news20 train (15935 × 62061) raw counts, rows scaled to unit length = LIBSVM news20.scale"),
}


def learner(name: str, data: Dataset, **params):
    return make(name, classes=data.classes(), n_features=data.rows.n_features, **PAPER_PROTOCOL, **params)


def summary(result: Run, **extra) -> dict:
    return {"accuracy": result.mean("accuracy"), "accuracy_std": result.std("accuracy"),
            "query": result.mean("query_ratio"), "query_std": result.std("query_ratio"),
            "seconds": float(np.mean(result.seconds)), **extra}


def pick_c(data: Dataset, mode: int) -> float:
    """C of 2^[-5:5] with the best online accuracy of the supervised MPA-I/-II (3 other permutations)."""
    scores = [run(learner(f"mpa-{mode}", data, C=float(C)), data, permutations=3, seed=1000).mean("accuracy")
              for C in C_GRID]
    return float(C_GRID[int(np.argmax(scores))])


def study(name: str, permutations: int) -> dict:
    build, description = DATASETS[name]
    data = build()
    started = time.perf_counter()
    C = {"1": pick_c(data, 1), "2": pick_c(data, 2)}
    params = {n: ({"C": C[n[-1]]} if n[-1] in C else {}) for n in ACTIVE + RANDOM + SUPERVISED}
    out: dict = {"description": description, "rows": data.n, "features": data.rows.n_features,
                 "classes": len(data.classes()), "C": C, "table": {}, "curves": {}}
    for algo in SUPERVISED:
        out["table"][f"{algo}@1.0"] = summary(run(learner(algo, data, **params[algo]), data,
                                                  permutations=permutations))
    for target in TARGETS:
        for algo in ACTIVE + RANDOM:
            tuned, result = find_budget(learner(algo, data, **params[algo]), data, target, permutations=permutations)
            budget = tuned.query.budget_param
            out["table"][f"{algo}@{target}"] = summary(result, **{budget: getattr(tuned.query, budget)})
    for algo in ACTIVE:
        out["curves"][algo] = [summary(run(learner(algo, data, delta=float(d), **params[algo]), data,
                                           permutations=permutations), delta=float(d)) for d in DELTA_GRID]
    for algo in RANDOM:
        out["curves"][algo] = [summary(run(learner(algo, data, rate=r, **params[algo]), data,
                                           permutations=permutations), rate=r) for r in RATE_GRID]
    out["minutes"] = (time.perf_counter() - started) / 60
    return out


def claims(res: dict) -> list[tuple[str, str, bool]]:
    """The paper's claims of Sect. 6.2.2-6.2.3 at each query ratio: (claim, numbers, holds)."""
    rows = []
    for name, r in res.items():
        t = r["table"]
        for target in TARGETS:
            acc = {a: t[f"{a}@{target}"]["accuracy"] for a in ACTIVE + RANDOM}
            for v in ("", "-1", "-2"):
                rows.append((f"{name} @{target:.0%}: {LABELS['mpaa' + v]} > MPEA",
                             f"{acc['mpaa' + v]:.3f} vs {acc['mpea']:.3f}", acc["mpaa" + v] > acc["mpea"]))
                rows.append((f"{name} @{target:.0%}: {LABELS['mpaa' + v]} > {LABELS['mrpa' + v]}",
                             f"{acc['mpaa' + v]:.3f} vs {acc['mrpa' + v]:.3f}", acc["mpaa" + v] > acc["mrpa" + v]))
            rows.append((f"{name} @{target:.0%}: MPEA > MRPE", f"{acc['mpea']:.3f} vs {acc['mrpe']:.3f}",
                         acc["mpea"] > acc["mrpe"]))
    return rows


LABELS = {"mpea": "MPEA", "mpaa": "MPAA", "mpaa-1": "MPAA-I", "mpaa-2": "MPAA-II", "mrpe": "MRPE",
          "mrpa": "MRPA", "mrpa-1": "MRPA-I", "mrpa-2": "MRPA-II", "mpe": "MPE (all labels)",
          "mpa": "MPA (all labels)", "mpa-1": "MPA-I (all labels)"}


def markdown(res: dict, permutations: int) -> str:
    lines = ["# Sect. 6.2 of Lu, Zhao & Hoi (2016): multiclass online active learning", "",
             "Produced by `python benchmarks/paa_multiclass.py`. Online accuracy over all rounds, mean ± std over "
             f"{permutations} permutations; query = fraction of labels requested. The paper shows these results "
             "only as curves (Fig. 4-5, no numbers printed), so the right-hand check is its claims.", ""]
    for name, r in res.items():
        lines += [f"## {name}: {r['rows']} × {r['features']}, {r['classes']} classes",
                  "", f"{r['description']}. C (2^[-5:5], picked on 3 other permutations): MPA-I {r['C']['1']:g}, "
                  f"MPA-II {r['C']['2']:g}.", "",
                  "| algorithm | accuracy @10 % | query % | accuracy @20 % | query % |", "|---|---|---|---|---|"]
        for algo in ACTIVE + RANDOM:
            cells = []
            for target in TARGETS:
                s = r["table"][f"{algo}@{target}"]
                cells += [f"{s['accuracy']:.3f} ± {s['accuracy_std']:.3f}",
                          f"{100 * s['query']:.2f} ± {100 * s['query_std']:.2f}"]
            lines.append(f"| {LABELS[algo]} | " + " | ".join(cells) + " |")
        for algo in SUPERVISED:
            if f"{algo}@1.0" not in r["table"]:
                continue
            s = r["table"][f"{algo}@1.0"]
            lines.append(f"| {LABELS[algo]} | {s['accuracy']:.3f} ± {s['accuracy_std']:.3f} | 100 | | |")
        lines.append("")
    checked = claims(res)
    lines += ["## The paper's claims on our data", "",
              "Sect. 6.2.2-6.2.3: the PA-based learners beat the Perceptron-based ones, and the active (gap) query "
              "beats uniform random querying at the same query ratio.", "",
              f"Holds in {sum(ok for *_, ok in checked)} of {len(checked)} comparisons.", "",
              "| comparison | accuracy | holds |", "|---|---|---|"]
    lines += [f"| {c} | {n} | {'yes' if ok else '**no**'} |" for c, n, ok in checked]
    return "\n".join(lines) + "\n"


def figure(res: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 4, figsize=(17, 8))
    for ax, (name, r) in zip(axes.flat, res.items(), strict=False):
        for algo, curve in r["curves"].items():
            pts = sorted((c["query"], c["accuracy"]) for c in curve if 0.005 <= c["query"] <= 1.0)
            ax.plot(*zip(*pts, strict=True), marker="o" if algo in ACTIVE else "x", ms=3,
                    ls="-" if algo in ACTIVE else "--", label=LABELS[algo])
        ax.set_xscale("log")
        ax.set_title(f"{name} ({r['rows']} × {r['features']}, {r['classes']} classes)")
        ax.set_xlabel("fraction of queried labels")
        ax.set_ylabel("online accuracy")
        ax.grid(alpha=0.3)
    axes.flat[0].legend(fontsize=8)
    for ax in list(axes.flat)[len(res):]:
        ax.axis("off")
    fig.suptitle("Accuracy against the fraction of queried labels (cf. Lu, Zhao & Hoi 2016, Fig. 4-5)")
    fig.tight_layout()
    fig.savefig(path, dpi=80)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument("--permutations", type=int, default=20)
    parser.add_argument("--report-only", action="store_true", help="rewrite the .md and .png from the .json")
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    raw = RESULTS / "paa_multiclass.json"
    res = json.loads(raw.read_text()) if raw.exists() else {}
    for name in [] if args.report_only else args.datasets:
        res[name] = study(name, args.permutations)
        raw.write_text(json.dumps(res, indent=1))
        t = res[name]["table"]
        print(f"{name}: " + ", ".join(f"{a} {t[a + '@0.1']['accuracy']:.3f}/{t[a + '@0.2']['accuracy']:.3f}"
                                      for a in ACTIVE + RANDOM) + f" ({res[name]['minutes']:.1f} min)", flush=True)
    res = {name: res[name] for name in DATASETS if name in res}
    (RESULTS / "paa_multiclass.md").write_text(markdown(res, args.permutations))
    figure(res, RESULTS / "paa_multiclass.png")


if __name__ == "__main__":
    main()
