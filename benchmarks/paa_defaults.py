"""What the registry defaults give with no tuning at all, on the PAA paper's datasets.

``python -m benchmarks.paa_defaults`` replays ``make(name)`` — no C search, no budget search —
for PAA, PAA-I, PAA-II, PEA and SEL-ada over the evaluation permutations (seeds 0..19) of each
dataset of Tables 2-3 (prepared as :mod:`benchmarks.paa_data` does), and writes the query ratio
and F1 of each to ``benchmarks/results/paa_defaults.md``: how sensible a default budget is across
datasets, and what a user gets from ``activestream replay --learner NAME`` with no ``--param``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.paa_data import DATASETS
from learners import make
from learners.replay import run

__all__ = ["main"]

RESULTS = Path(__file__).resolve().parent / "results"
LEARNERS = ("paa", "paa-1", "paa-2", "pea", "sel-ada")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.paa_defaults", description=__doc__.splitlines()[0])
    parser.add_argument("--permutations", type=int, default=20)
    parser.add_argument("--out", type=Path, default=RESULTS / "paa_defaults.md")
    args = parser.parse_args(argv)
    command = "python -m benchmarks.paa_defaults " + " ".join(sys.argv[1:] if argv is None else argv)
    probe = {name: make(name).get_params() for name in LEARNERS}
    shown = ", ".join(f"{name}: " + ", ".join(f"{k}={v:g}" for k, v in p.items() if k in ("C", "delta"))
                      for name, p in probe.items())
    lines = ["# The registry defaults with no tuning", "",
             f"Command: `{command.strip()}`; mean ± std over {args.permutations} permutations. Defaults: "
             f"bias={probe['paa-1']['bias']:g}, normalize={probe['paa-1']['normalize']}, "
             f"tie={probe['paa-1']['tie']}; {shown}.", "",
             "| dataset | " + " | ".join(f"{n} query % | {n} F1" for n in LEARNERS) + " |",
             "|---|" + "---|---|" * len(LEARNERS)]
    for name, spec in DATASETS.items():
        data = spec.load()
        cells = []
        for learner_name in LEARNERS:
            learner = make(learner_name, n_features=data.rows.n_features, classes=list(spec.classes(data)))
            result = run(learner, data, permutations=args.permutations)
            cells.append(f"{result.mean('query_ratio') * 100:.1f} | {result.mean('f1'):.3f} ± {result.std('f1'):.3f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
        print(lines[-1], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
