"""Per-update cost of the diagonal drift learners is O(nnz): flat from d = 10⁴ to d = 10⁷.

LASEC-diag adds the drift c⁻¹ to every coordinate of Σ on every update and the Shifting Perceptron
shrinks every weight on every mistake; both keep that lazily (a per-coordinate "last update" row,
a scalar scale), so an update touches only the row's non-zeros. This benchmark feeds each learner
the same kind of stream — rows of ``nnz`` uniformly drawn coordinates, random ±1 labels (so about
half the rows, and in high dimension nearly all, are mistakes and update) — at dimensions 10⁴ to
10⁷ and reports the time per labelled record of a prequential pass (score, then update) and per
update alone. For scale it also times one eager O(d) drift pass (``sigma += 1/c`` over d floats),
what every update would cost without the closed form.

    python benchmarks/update_cost_drift.py          # ~2 min, ~1 GB of memory at d = 10⁷
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from learners import make
from learners.datasets import Dataset
from learners.drivers import plain
from learners.inputs import Rows
from learners.replay import replay

ROOT = Path(__file__).resolve().parents[1]
DIMENSIONS = (10**4, 10**5, 10**6, 10**7)
# The Modified Perceptron is O(nnz) too but cannot move on such a stream: a row on fresh
# coordinates has wᵀx = 0, and the reflection of w through x's hyperplane is then w itself.
LEARNERS = ("lasec-diag", "shifting-perceptron", "pe")


def stream(n: int, d: int, nnz: int, seed: int) -> Dataset:
    rng = np.random.default_rng(seed)
    indices = np.sort(rng.integers(0, d, size=(n, nnz)), axis=1)
    keep = np.ones_like(indices, dtype=bool)
    keep[:, 1:] = indices[:, 1:] != indices[:, :-1]
    data = rng.standard_normal((n, nnz))[keep]
    indptr = np.concatenate([[0], np.cumsum(keep.sum(axis=1))])
    return Dataset(Rows.from_arrays(indptr, indices[keep], data, d), rng.choice([-1, 1], size=n))


def measure(name: str, data: Dataset, repeats: int) -> tuple[float, float, float]:
    """(µs per record of a prequential pass, µs per update alone, fraction of rows that updated)."""
    best_pass, best_update, fraction = np.inf, np.inf, 0.0
    for _ in range(repeats):
        learner = make(name, n_features=data.rows.n_features, bias=0.0)
        trace = replay(learner, data)
        best_pass = min(best_pass, trace.seconds / data.n)
        fraction = trace.updates / data.n
        fresh = make(name, n_features=data.rows.n_features, bias=0.0)
        rows, codes = data.rows, np.ascontiguousarray(data.labels, dtype=np.int64)
        order = np.arange(data.n, dtype=np.int64)
        started = time.perf_counter()
        changed = plain.learn_rows(rows.indptr, rows.indices, rows.data, order, codes,
                                     np.zeros(data.n, dtype=np.bool_), np.ones(data.n), *fresh.rule.kernel_state(),
                                     fresh.rule.update_fn, *fresh.query.kernel_state(), fresh.query.kernels[2])
        best_update = min(best_update, (time.perf_counter() - started) / max(changed, 1))
    return best_pass * 1e6, best_update * 1e6, fraction


def eager_drift_us(d: int) -> float:
    sigma = np.ones(d)
    started = time.perf_counter()
    for _ in range(5):
        sigma += 1e-3
    return (time.perf_counter() - started) / 5 * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--nnz", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    measure(LEARNERS[0], stream(1000, 100, 5, 0), 1)  # compile outside the timings
    started = time.perf_counter()
    table: dict[str, dict[int, tuple[float, float, float]]] = {name: {} for name in LEARNERS}
    eager = {}
    for d in DIMENSIONS:
        data = stream(args.rows, d, args.nnz, seed=1)
        for name in LEARNERS:
            table[name][d] = measure(name, data, args.repeats)
            print(name, d, table[name][d], flush=True)
        eager[d] = eager_drift_us(d)
    head = " | ".join(f"d = 10^{int(np.log10(d))}" for d in DIMENSIONS)
    lines = ["# Per-update cost of the diagonal drift learners against the dimension", "",
             f"Command: `python benchmarks/update_cost_drift.py` ({(time.perf_counter() - started) / 60:.1f} min). "
             f"{args.rows:,} rows of {args.nnz} uniformly drawn coordinates, random ±1 labels, no intercept; "
             f"best of {args.repeats}. Time per labelled record of a prequential pass (score + update), "
             "then per update alone; the last column is the ratio between d = 10⁷ and d = 10⁴.", "",
             f"| learner | {head} | 10⁷ / 10⁴ |", "|---|" + "---|" * (len(DIMENSIONS) + 1)]
    for name in LEARNERS:
        cells = [f"{v[0]:.3f} µs ({v[2]:.0%} upd.)" for v in table[name].values()]
        lines.append(f"| {name}: record | " + " | ".join(cells) +
                     f" | {table[name][DIMENSIONS[-1]][0] / table[name][DIMENSIONS[0]][0]:.2f} |")
        cells = [f"{v[1]:.3f} µs" for v in table[name].values()]
        lines.append(f"| {name}: update | " + " | ".join(cells) +
                     f" | {table[name][DIMENSIONS[-1]][1] / table[name][DIMENSIONS[0]][1]:.2f} |")
    lines.append("| eager drift pass, O(d) | " + " | ".join(f"{eager[d]:,.1f} µs" for d in DIMENSIONS) +
                 f" | {eager[DIMENSIONS[-1]] / eager[DIMENSIONS[0]]:.0f} |")
    lines += ["", "Random coordinates in a 10⁷-float model miss the CPU caches on nearly every access, so some "
              "growth with d is memory latency, not work: compare the Perceptron (`pe`), whose update is "
              "the textbook O(nnz) one.", ""]
    text = "\n".join(lines)
    (args.out / "update_cost_drift.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
