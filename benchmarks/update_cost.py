"""Per-update and per-score cost of every diagonal second-order learner, d = 10⁴ … 10⁷ at fixed nnz.

The claim under test: a diagonal rule's update touches only the non-zeros of x, so its cost does
not grow with the dimension d. Each learner gets the same stream of rows with ``nnz`` non-zeros
and random ±1 labels (so most labels change the model). Coordinates are drawn uniformly (the
worst case for the caches: every non-zero is a cache miss once the state outgrows them) or
Zipf-like as in text (``--ids zipf``: frequent coordinates stay cached). Timed: the compiled update
loop alone (drivers.plain.learn_rows) and the compiled scoring loop alone (drivers.plain.score_rows), best of
``--repeats`` runs, in ns per row. For scale, the last row times one O(d) pass over a d-vector,
what a rule that touched every coordinate (eager drift shrinkage) would pay per update.

    python -m benchmarks.update_cost [--rows 200000] [--nnz 20] [--repeats 3] [--ids uniform|zipf]

Writes benchmarks/results/update_cost_{uniform,zipf}.md and .png.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from numba import njit

from learners import make
from learners.drivers.plain import learn_rows, score_rows

RESULTS = Path(__file__).resolve().parent / "results"
DIMENSIONS = (10**4, 10**5, 10**6, 10**7)
# one entry per diagonal rule (the registry's ablations share these rules and kernels)
LEARNERS = ("sop-diag", "sol-diag", "arow-diag", "cw-diag", "da", "md", "mda", "mmd")
CLASSES = 3  # multiclass rules keep one row per class: 2 × 3 × 10⁷ float64 = 480 MB at d = 10⁷


@njit(cache=True)
def _touch_every_coordinate(w):
    for i in range(w.size):
        w[i] *= 0.999999


def dense_pass_ns(d: int, repeats: int) -> float:
    """ns for one O(d) pass over a float64 d-vector (best of ``repeats``)."""
    w = np.ones(d)
    _touch_every_coordinate(w)
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        _touch_every_coordinate(w)
        best = min(best, time.perf_counter() - start)
    return best * 1e9


def rows(n: int, d: int, nnz: int, seed: int = 0, ids: str = "uniform"):
    rng = np.random.default_rng(seed)
    if ids == "zipf":  # a random permutation of Zipf ranks, as learners.synthetic.synthetic_sparse
        ranks = (rng.zipf(1.3, size=(n, nnz)) - 1) % d
        indices = np.sort(rng.permutation(d)[ranks], axis=1)
    else:
        indices = np.sort(rng.choice(d, size=(n, nnz)), axis=1)
    # duplicates within a row are rare at d ≥ 10⁴ but must not reach the kernels
    keep = np.ones_like(indices, dtype=bool)
    keep[:, 1:] = indices[:, 1:] != indices[:, :-1]
    counts = keep.sum(axis=1)
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    data = rng.standard_normal(int(counts.sum())) / np.sqrt(nnz)
    return indptr, indices[keep].astype(np.int32), data


def measure(name: str, d: int, batch, repeats: int) -> tuple[float, float, float]:
    indptr, indices, data = batch
    n = indptr.size - 1
    multiclass = name in ("mda", "mmd")
    labels = np.random.default_rng(1).integers(CLASSES, size=n) if multiclass else \
        np.random.default_rng(1).choice([-1, 1], size=n)
    best_update, best_score, changed = np.inf, np.inf, 0
    for _ in range(repeats):
        learner = make(name, n_features=d, bias=0.0, **({"classes": list(range(CLASSES))} if multiclass else {}))
        rule, query = learner.rule, learner.query
        S, a, P = rule.kernel_state()
        qp, qs = query.kernel_state()
        order = np.arange(n, dtype=np.int64)
        y = np.ascontiguousarray(labels, dtype=np.int64)
        mistakes = np.zeros(n, dtype=np.bool_)
        start = time.perf_counter()
        changed = learn_rows(indptr, indices, data, order, y, mistakes, np.ones(n), S, a, P, rule.update_fn, qp, qs,
                             query.kernels[2])
        best_update = min(best_update, time.perf_counter() - start)
        out = [np.empty(n), np.empty(n), np.empty(n), np.empty(n, dtype=np.int64)]
        start = time.perf_counter()
        score_rows(indptr, indices, data, S, a, P, rule.score_fn, *out)
        best_score = min(best_score, time.perf_counter() - start)
        del learner, rule, S
    return best_update / n * 1e9, best_score / n * 1e9, changed / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--nnz", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ids", choices=("uniform", "zipf"), default="uniform")
    args = parser.parse_args()

    # compile every kernel on a small model first, so no timing includes compilation
    warm = rows(1000, 10**4, args.nnz)
    for name in LEARNERS:
        measure(name, 10**4, warm, 1)

    results: dict[str, list[tuple[float, float, float]]] = {}
    for d in DIMENSIONS:
        batch = rows(args.rows, d, args.nnz, seed=d, ids=args.ids)
        for name in LEARNERS:
            results.setdefault(name, []).append(measure(name, d, batch, args.repeats))
            print(f"{name:10s} d={d:>10,}  update {results[name][-1][0]:7.1f} ns  "
                  f"score {results[name][-1][1]:7.1f} ns  changed {results[name][-1][2]:.2f}", flush=True)
    dense = [dense_pass_ns(d, args.repeats) for d in DIMENSIONS]
    write(results, dense, args)


def write(results, dense, args) -> None:
    RESULTS.mkdir(exist_ok=True)
    head = "| learner | " + " | ".join(f"d = 10^{int(np.log10(d))}" for d in DIMENSIONS) + " | 10⁷ / 10⁴ |"
    lines = [
        "# Update cost of the diagonal second-order learners",
        "",
        f"`python -m benchmarks.update_cost --rows {args.rows} --nnz {args.nnz} --repeats {args.repeats} "
        f"--ids {args.ids}`: {args.rows:,} rows of {args.nnz} non-zeros at {args.ids} random coordinates, "
        "random labels; "
        f"best of {args.repeats}; multiclass rules with {CLASSES} classes. ns per row.",
        "",
        "## Update (compiled learn loop; the share of labels that changed the model in brackets)",
        "",
        head,
        "|" + "---|" * (len(DIMENSIONS) + 2),
    ]
    for name, cells in results.items():
        ratio = cells[-1][0] / cells[0][0]
        lines.append(f"| `{name}` | " + " | ".join(f"{u:.0f} ({c:.2f})" for u, _, c in cells) + f" | {ratio:.2f}× |")
    lines.append("| one O(d) pass, for scale | " + " | ".join(f"{x:,.0f}" for x in dense)
                 + f" | {dense[-1] / dense[0]:.0f}× |")
    lines += ["", "## Score (compiled scoring loop)", "", head, "|" + "---|" * (len(DIMENSIONS) + 2)]
    for name, cells in results.items():
        ratio = cells[-1][1] / cells[0][1]
        lines.append(f"| `{name}` | " + " | ".join(f"{s:.0f}" for _, s, _ in cells) + f" | {ratio:.2f}× |")
    (RESULTS / f"update_cost_{args.ids}.md").write_text("\n".join(lines) + "\n")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, cells in results.items():
        ax.plot(DIMENSIONS, [u for u, _, _ in cells], marker="o", label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("dimension d")
    ax.set_ylabel("ns per update")
    ax.plot(DIMENSIONS, dense, color="black", linestyle="--", label="one O(d) pass")
    ax.set_title(f"Diagonal second-order updates, nnz = {args.nnz}, {args.ids} ids")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(RESULTS / f"update_cost_{args.ids}.png", dpi=110)


if __name__ == "__main__":
    main()
