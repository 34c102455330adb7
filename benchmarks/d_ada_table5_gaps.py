"""Why Table 5 of the high-dimensional paper lands lower on our data: two measured causes.

Every algorithm, MPAA-II included, is 4-10 points under the paper on 20newsgroups, Letter and Mnist,
while the ranking mostly holds. A shortfall shared by every update and query points at the data,
so this checks the two ways our files differ from what the paper downloaded:

A. Stream length (Mnist). Ours is the 10,000-row test set; LIBSVM's mnist has 60,000 training rows.
   Online accuracy counts every round, so it rises with the stream: each algorithm is replayed with
   its Table 5 setting (from benchmarks/results/d_ada_table5/Mnist.json) and its accuracy is split
   into the first and the second half of the stream.
B. Row scaling (20newsgroups, Letter). Ours are raw term counts and svm-scaled letters; LIBSVM's
   news20.scale has every row at unit length. The Table 5 protocol is run again at ≈10 % with
   ``normalize=True`` (every row scaled to unit length) and put beside the raw result.
C. Row norm and the discrimination query's floor (Letter). q_t = p_t − (η/2)·a_t·v_t, where p_t grows
   with ‖x‖² and a_t·v_t does not, so small rows raise the smallest reachable query ratio. The floor
   (b = 2^-24) of MD-AMD over a small (δ, η) grid on raw letter (features 0..15) and svm-scaled letter,
   then the Table 5 protocol at ≈10 % on the raw rows.

    python -m benchmarks.d_ada_table5_gaps [--perms 5]

Writes benchmarks/results/d_ada_table5_gaps.md.
"""

from __future__ import annotations

import argparse

import numpy as np

from benchmarks.d_ada_table2 import DATA
from benchmarks.d_ada_table5 import GRIDS, OUT, load_dataset, outcome_for
from benchmarks.grid_protocol import RESULTS, Clock, learner, load, tune
from learners.data_spec import resolve
from learners.replay import replay, run

HALVES_ALGOS = ("mpaa-2", "mr-amd", "mm-amd", "md-amd", "mmd")
SCALING_ALGOS = ("mpaa-2", "mm-amd", "md-amd")
TARGET = 0.1


def halves(perms: int) -> list[str]:
    data, classes = load_dataset("Mnist")
    saved = load(OUT / "Mnist.json")
    lines = ["## A. Mnist: online accuracy by half of the stream", "",
             f"The Table 5 setting of each algorithm at ≈10 % (MMD: every label), {perms} permutations.", "",
             "| algorithm | rounds 1-5,000 | rounds 5,001-10,000 | all 10,000 (Table 5) | query ratio |",
             "|---|---|---|---|---|"]
    half = data.n // 2
    for algo in HALVES_ALGOS:
        o = outcome_for(saved, algo, None if algo == "mmd" else TARGET)
        first, second, total, query = [], [], [], []
        for k in range(perms):
            model = learner(algo, data, classes, o["params"]).clone(seed=k)
            trace = replay(model, data, order=np.random.default_rng(k).permutation(data.n))
            right = trace.y_true == trace.y_pred
            first.append(right[:half].mean())
            second.append(right[half:].mean())
            total.append(right.mean())
            query.append(trace.queried.mean())
        lines.append(f"| `{algo}` | {100 * np.mean(first):.2f} | {100 * np.mean(second):.2f} | "
                     f"{100 * np.mean(total):.2f} | {100 * np.mean(query):.1f} % |")
    return lines


def scaling(perms: int, clock: Clock) -> list[str]:
    lines = ["## B. Rows scaled to unit length (as LIBSVM's news20.scale) against the rows as they are", "",
             f"The Table 5 protocol at ≈10 %, {perms} permutations for the unit-length runs (the raw runs are "
             "Table 5's, 20 permutations).", "",
             "| dataset | algorithm | raw rows | unit-length rows | paper |", "|---|---|---|---|---|"]
    paper = {("20newsgroups", "mpaa-2"): 64.71, ("20newsgroups", "mm-amd"): 66.67, ("20newsgroups", "md-amd"): 68.57,
             ("Letter", "mpaa-2"): 48.21, ("Letter", "mm-amd"): 53.85, ("Letter", "md-amd"): 58.48}
    for dname in ("20newsgroups", "Letter"):
        data, classes = load_dataset(dname)
        saved = load(OUT / f"{dname}.json")
        for algo in SCALING_ALGOS:
            raw = outcome_for(saved, algo, TARGET)
            unit = tune(algo, data, classes, GRIDS[algo], TARGET, metric="accuracy", fixed={"normalize": True},
                        perms=perms)
            print(f"[{clock}] {dname} {algo}: raw {raw['mean']:.4f} unit {unit.mean:.4f} (q {unit.query:.3f})",
                  flush=True)

            def cell(mean: float, std: float, query: float, landed: bool) -> str:
                return f"{100 * mean:.2f} ± {100 * std:.2f} ({100 * query:.1f} %{'' if landed else ' ✗'})"

            lines.append(f"| {dname} | `{algo}` | {cell(raw['mean'], raw['std'], raw['query'], raw['landed'])} | "
                         f"{cell(unit.mean, unit.std, unit.query, unit.landed)} | {paper[(dname, algo)]:.2f} |")
    return lines


def letter_norms(perms: int, clock: Clock) -> list[str]:
    raw = resolve(str(DATA / "letter.xz"))
    scaled, classes = load_dataset("Letter")
    lines = ["## C. Letter: row norm and the smallest reachable query ratio of MD-AMD", "",
             "| rows | mean ‖x‖² | MD-AMD's smallest query ratio (b = 2^-24, δ ∈ {0.01, 1, 100}, η ∈ {0.01, 1}) |",
             "|---|---|---|"]
    for label, data in (("raw (0..15)", raw), ("svm-scaled [−1, 1] (Table 5)", scaled)):
        floor = min(run(learner("md-amd", data, classes, {"delta": delta, "eta": eta, "b": 2.0**-24}), data,
                        permutations=2).mean("query_ratio") for delta in (0.01, 1.0, 100.0) for eta in (0.01, 1.0))
        row_of = np.repeat(np.arange(data.n), np.diff(data.rows.indptr))
        sq = np.bincount(row_of, weights=data.rows.data**2, minlength=data.n)  # ‖x‖² per row
        lines.append(f"| {label} | {sq.mean():.1f} | {100 * floor:.2f} % |")
    lines += ["", f"On the raw rows, the Table 5 protocol at ≈10 % ({perms} permutations):", "",
              "| algorithm | raw rows | svm-scaled (Table 5) | paper |", "|---|---|---|---|"]
    saved = load(OUT / "Letter.json")
    paper = {"mpaa-2": 48.21, "mm-amd": 53.85, "md-amd": 58.48}
    for algo in SCALING_ALGOS:
        o = tune(algo, raw, classes, GRIDS[algo], TARGET, metric="accuracy", perms=perms)
        s = outcome_for(saved, algo, TARGET)
        print(f"[{clock}] raw Letter {algo}: {o.mean:.4f} (q {o.query:.3f})", flush=True)
        lines.append(f"| `{algo}` | {100 * o.mean:.2f} ± {100 * o.std:.2f} ({100 * o.query:.1f} %"
                     f"{'' if o.landed else ' ✗'}) | {100 * s['mean']:.2f} ({100 * s['query']:.1f} %"
                     f"{'' if s['landed'] else ' ✗'}) | {paper[algo]:.2f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--perms", type=int, default=5)
    args = parser.parse_args()
    clock = Clock()
    lines = ["# Table 5 gaps: stream length and row scaling", "",
             f"`python -m benchmarks.d_ada_table5_gaps --perms {args.perms}`. Online accuracy (%).", ""]
    lines += [*halves(args.perms), ""]
    print(f"[{clock}] halves done", flush=True)
    lines += [*scaling(args.perms, clock), ""]
    lines += [*letter_norms(args.perms, clock), ""]
    (RESULTS / "d_ada_table5_gaps.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
