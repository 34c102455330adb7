"""``activestream demo --report report.html``: one self-contained HTML page with the demo's curves.

The charts are inline SVG written here: no JavaScript, no external assets, no plotting library in
the service image (matplotlib stays a benchmark-only dependency). The page opens offline.
"""

from __future__ import annotations

import html
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["RunningF1", "Sample", "Series", "line_chart", "ratio_and_target", "render_report", "write_report"]

_WIDTH, _HEIGHT = 720, 300
_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 16, 52, 42
_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e")
_SVG_STYLE = (
    "text { font-family: system-ui, sans-serif; fill: #444; } .title { font-size: 15px; font-weight: 600; "
    "fill: #222; } .tick, .legend { font-size: 11px; } .axis { font-size: 12px; } "
    ".frame { fill: none; stroke: #999; } .grid { stroke: #e4e4e4; } .line { fill: none; stroke-width: 1.8; } "
    ".target { stroke: #555; stroke-width: 1.2; stroke-dasharray: 6 4; shape-rendering: crispEdges; } "
    ".target-label { font-size: 11px; } "
    ".mark { stroke: #b33; stroke-width: 2; stroke-dasharray: 5 3; }"
)
# The accuracy around a change of concept: windows of this many records, and how close to the
# accuracy before the change a window after it must come to count as recovered
CHANGE_WINDOW, RECOVERED_WITHIN = 500, 0.05


@dataclass(frozen=True, slots=True)
class Sample:
    """Running totals at one moment of the demo."""

    seconds: float
    predicted: int  # predictions seen by the scoreboard
    correct: int  # ... that matched the ground truth
    f1: float  # online F1 of those predictions (positive class, or macro when multiclass)
    scored: float  # records the service scored
    requests: float
    applied: float
    late: float  # labels that arrived after their request expired
    cost: float
    weighted_labels: float  # Σ 1/q over applied labels
    weighted_mistakes: float


class RunningF1:
    """Online F1 as predictions arrive, as the final report computes it (:mod:`learners.evaluation`):
    of the second class when there are two, else macro-F1 over the classes seen in the truth."""

    def __init__(self, classes: Sequence[Any]) -> None:
        self._binary = len(classes) == 2
        self._classes = [classes[1]] if self._binary else list(classes)
        self._support: Counter = Counter()  # records of each true class
        self._guessed: Counter = Counter()  # predictions of each class
        self._hits: Counter = Counter()  # right predictions of each class

    def add(self, actual: Any, predicted: Any) -> None:
        self._support[actual] += 1
        self._guessed[predicted] += 1
        self._hits[actual] += actual == predicted

    def value(self) -> float:
        """2·TP / (support + predicted) per class, which is 2PR/(P+R); 0 where undefined."""
        per_class = [2 * self._hits[c] / (self._support[c] + self._guessed[c]) if self._support[c] + self._guessed[c]
                     else 0.0 for c in self._classes if self._binary or self._support[c] > 0]
        return sum(per_class) / len(per_class) if per_class else 0.0


@dataclass(frozen=True, slots=True)
class Series:
    name: str
    x: Sequence[float]
    y: Sequence[float]


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high]."""
    if high <= low:
        high = low + 1.0
    raw = (high - low) / count
    step = 10 ** math.floor(math.log10(raw))
    step *= next(m for m in (1, 2, 2.5, 5, 10) if raw <= m * step)
    first = math.ceil(low / step - 1e-9) * step
    return [first + k * step for k in range(int((high - first) / step + 1e-9) + 1)]


def _label(value: float) -> str:
    if value != 0 and (abs(value) >= 1e7 or abs(value) < 1e-3):
        return f"{value:.1e}"
    if value == round(value):
        return f"{value:,.0f}"
    return f"{value:,.4g}"


def line_chart(title: str, series: Sequence[Series], x_label: str, y_label: str,
               y_range: tuple[float, float] | None = None, percent: bool = False, target: float | None = None,
               marks: Sequence[tuple[float, str]] = ()) -> str:
    """An SVG line chart; NaN points break a line rather than drawing it to zero. ``target``: a
    dashed horizontal line at that value, labelled, under the series; ``marks``: (x, label) vertical
    lines, labelled, under the series."""
    xs = [x for s in series for x in s.x if math.isfinite(x)]
    ys = [y for s in series for y in s.y if math.isfinite(y)] + ([] if target is None else [target])
    x0, x1 = (min(xs), max(xs)) if xs else (0.0, 1.0)
    y0, y1 = y_range or ((min(ys), max(ys)) if ys else (0.0, 1.0))
    if y_range is None and y0 > 0 and y0 < 0.5 * y1:
        y0 = 0.0
    x1, y1 = (x1 if x1 > x0 else x0 + 1), (y1 if y1 > y0 else y0 + 1)
    plot_w, plot_h = _WIDTH - _LEFT - _RIGHT, _HEIGHT - _TOP - _BOTTOM

    def px(x: float) -> float:
        return _LEFT + (x - x0) / (x1 - x0) * plot_w

    def py(y: float) -> float:
        return _TOP + plot_h - (y - y0) / (y1 - y0) * plot_h

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_WIDTH} {_HEIGHT}" role="img" '
           f'aria-label="{html.escape(title)}">',
           f"<style>{_SVG_STYLE}</style>",  # inside the SVG: a chart saved on its own keeps its look
           f'<text x="{_LEFT}" y="20" class="title">{html.escape(title)}</text>',
           f'<rect x="{_LEFT}" y="{_TOP}" width="{plot_w}" height="{plot_h}" class="frame"/>']
    for t in _ticks(y0, y1):
        if y0 <= t <= y1:
            out.append(f'<line x1="{_LEFT}" x2="{_LEFT + plot_w}" y1="{py(t):.1f}" y2="{py(t):.1f}" class="grid"/>')
            # every digit a tick needs: a rounded "2%" at 2.5 % would misplace the axis for a reader
            text = f"{100 * t:.6g}%" if percent else _label(t)
            out.append(f'<text x="{_LEFT - 6}" y="{py(t) + 4:.1f}" class="tick" text-anchor="end">{text}</text>')
    for t in _ticks(x0, x1, 6):
        if x0 <= t <= x1:
            out.append(f'<text x="{px(t):.1f}" y="{_TOP + plot_h + 16}" class="tick" '
                       f'text-anchor="middle">{_label(t)}</text>')
    out.append(f'<text x="{_LEFT + plot_w / 2}" y="{_HEIGHT - 6}" class="axis" text-anchor="middle">'
               f'{html.escape(x_label)}</text>')
    out.append(f'<text x="14" y="{_TOP + plot_h / 2}" class="axis" text-anchor="middle" '
               f'transform="rotate(-90 14 {_TOP + plot_h / 2})">{html.escape(y_label)}</text>')
    if target is not None and y0 <= target <= y1:
        text = f"{100 * target:.6g}%" if percent else _label(target)
        out.append(f'<line x1="{_LEFT}" x2="{_LEFT + plot_w}" y1="{py(target):.1f}" y2="{py(target):.1f}" '
                   f'class="target"/><text x="{_LEFT + plot_w - 4}" y="{py(target) - 5:.1f}" class="target-label" '
                   f'text-anchor="end">target {text}</text>')
    for k, (x, text) in enumerate(marks):
        if x0 <= x <= x1:
            # the label beside its line, on the side with room, each a line above the one before
            right = px(x) < _LEFT + 0.6 * plot_w
            out.append(f'<line x1="{px(x):.1f}" x2="{px(x):.1f}" y1="{_TOP}" y2="{_TOP + plot_h}" class="mark"/>'
                       f'<text x="{px(x) + (4 if right else -4):.1f}" y="{_TOP + plot_h - 6 - 14 * k}" '
                       f'class="target-label" text-anchor="{"start" if right else "end"}">{html.escape(text)}</text>')
    legend_x = float(_LEFT)
    for k, s in enumerate(series):
        color = _COLORS[k % len(_COLORS)]
        run: list[str] = []
        for x, y in [*zip(s.x, s.y, strict=True), (math.nan, math.nan)]:
            if math.isfinite(y) and math.isfinite(x):
                run.append(f"{px(x):.1f},{py(min(max(y, y0), y1)):.1f}")
            elif run:
                out.append(f'<polyline points="{" ".join(run)}" stroke="{color}" class="line"/>')
                run = []
        out.append(f'<line x1="{legend_x}" x2="{legend_x + 18}" y1="36" y2="36" stroke="{color}" class="line"/>'
                   f'<text x="{legend_x + 22}" y="40" class="legend">{html.escape(s.name)}</text>')
        legend_x += 40 + 6.2 * len(s.name)  # about the width of an 11 px label
    out.append("</svg>")
    return "\n".join(out)


def recovery(hits: Sequence[bool], change_at: int, window: int = CHANGE_WINDOW,
             within: float = RECOVERED_WITHIN) -> dict[str, Any]:
    """How the predictions in stream order (``hits``: right or not) fared around the change of concept
    at record ``change_at``: accuracy over the ``window`` records before it, the lowest over a window
    after it, and ``recovered_after``: the records after the change at which the first window wholly
    after it is back within ``within`` of the accuracy before (None: never, in the stream)."""
    right = np.asarray(hits, dtype=np.float64)
    run = np.concatenate([[0.0], np.cumsum(right)])
    before = (run[change_at] - run[max(change_at - window, 0)]) / min(window, change_at)
    ends = np.arange(change_at + window, right.size + 1)
    after = (run[ends] - run[ends - window]) / window
    back = np.flatnonzero(after >= before - within)
    return {"change_at": change_at, "window": window, "before": float(before),
            "lowest_after": float(after.min()) if after.size else None,
            "recovered_after": int(ends[back[0]] - change_at) if back.size else None}


def _rolling(samples: Sequence[Sample], numerator, denominator, window: float) -> list[float]:
    """numerator / denominator over the last ``window`` records predicted, at each sample."""
    out, start = [], 0
    for s in samples:
        while samples[start].predicted < s.predicted - window:
            start += 1
        base = samples[max(start - 1, 0)] if start else None
        num = numerator(s) - (numerator(base) if base else 0.0)
        den = denominator(s) - (denominator(base) if base else 0.0)
        out.append(num / den if den > 0 else math.nan)
    return out


def _drift_chart(hits: Sequence[bool], drift: dict[str, Any]) -> str:
    """Accuracy over each window of records in stream order, the change of concept marked."""
    window = drift["window"]
    right = np.asarray(hits, dtype=np.float64)
    run = np.concatenate([[0.0], np.cumsum(right)])
    ends = np.arange(window, right.size + 1, max(1, window // 10))
    back = drift["recovered_after"]
    marks = [(float(drift["change_at"]), "the concept changes")]
    if back is not None:
        marks.append((drift["change_at"] + back, f"back within {RECOVERED_WITHIN:.0%} (+{back:,})"))
    return line_chart(f"Accuracy around the change of concept (each {window:,} records, in stream order)",
                      [Series("against the ground truth", [float(e) for e in ends],
                              list((run[ends] - run[ends - window]) / window))],
                      "record", "accuracy", y_range=(0.0, 1.0), percent=True, marks=marks)


def charts(samples: Sequence[Sample], records: int, target: float | None = None,
           hits: Sequence[bool] | None = None, drift: dict[str, Any] | None = None) -> list[str]:
    window = max(200.0, records / 10)
    x = [float(s.predicted) for s in samples]
    accuracy = _rolling(samples, lambda s: s.correct, lambda s: s.predicted, window)
    estimated = _rolling(samples, lambda s: s.weighted_labels - s.weighted_mistakes, lambda s: s.weighted_labels,
                         window)
    query_ratio = _rolling(samples, lambda s: s.requests, lambda s: s.scored, window)
    overall = [s.requests / s.scored if s.scored else math.nan for s in samples]
    w = f"last {window:,.0f} records"
    return [
        line_chart(f"Accuracy over time ({w})", [Series("against the ground truth", x, accuracy),
                                                  Series("service's importance-weighted estimate", x, estimated)],
                   "records predicted", "accuracy", y_range=(0.0, 1.0), percent=True),
        line_chart("Query ratio over time", [Series(w, x, query_ratio), Series("since the start", x, overall)],
                   "records predicted", "label requests / records", percent=True, target=target),
        line_chart("F-measure against query ratio, as the run goes", [Series("online F1 so far", overall,
                                                                             [s.f1 for s in samples])],
                   "label requests / records so far", "F1", y_range=(0.0, 1.0), percent=True),
        line_chart("Labels", [Series("requested", x, [s.requests for s in samples]),
                              Series("applied", x, [s.applied for s in samples]),
                              Series("arrived after expiry", x, [s.late for s in samples])],
                   "records predicted", "labels (cumulative)"),
        line_chart("Labelling cost", [Series("cost of labels applied", x, [s.cost for s in samples])],
                   "records predicted", "cost (cumulative)"),
    ] + ([_drift_chart(hits, drift)] if hits is not None and drift and drift["lowest_after"] is not None else [])


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 760px; color: #222; }
h1 { font-size: 1.4em; } table { border-collapse: collapse; margin: 1em 0; }
td, th { padding: 0.2em 0.8em; border-bottom: 1px solid #ddd; text-align: left; } td.n { text-align: right; }
svg { width: 100%; height: auto; margin: 0.8em 0; } p.note { color: #555; font-size: 0.9em; }
"""


def ratio_and_target(report: dict[str, Any]) -> str:
    """The realised query ratio beside the service's query-rate target, as the summaries show them."""
    target = report.get("query_rate_target")
    return f"{report['query_ratio']:.1%}, " + ("no target" if target is None else f"target {100 * target:.6g}%")


_ROWS = (
    ("records / predictions", lambda r: f"{r['records']:,} / {r['predictions']:,}"),
    ("label requests (query ratio)", lambda r: f"{r['label_requests']:,} ({ratio_and_target(r)})"),
    ("labels applied / late (expired)", lambda r: f"{r['labels_applied']:,} / {r['labels_expired']:,}"),
    ("labelling cost", lambda r: f"{r['labelling_cost']:,.1f}"),
    ("online accuracy / F1 against the truth", lambda r: f"{r['accuracy']:.4f} / {r['f1']:.4f}"),
    ("estimated accuracy (service)", lambda r: f"{r['estimated_accuracy']:.4f}"),
    ("dead letters", lambda r: f"{r['dead_letters']:,}"),
    ("the change of concept", lambda r: drift_summary(r)),
    ("time", lambda r: f"{r['seconds']:.1f} s ({r['records_per_second']:,.0f} records/s)"),
)


def drift_summary(report: dict[str, Any]) -> str:
    """The accuracy before the change of concept and how soon it came back, as the summaries show it."""
    drift = report.get("drift")
    if drift is None:
        return "none in this stream"
    if drift["lowest_after"] is None:
        return f"at record {drift['change_at']:,}: {drift['before']:.1%} before; too few records after it to tell"
    back = drift["recovered_after"]
    when = "not within the stream" if back is None else f"{back:,} records after it"
    return (f"at record {drift['change_at']:,}: {drift['before']:.1%} before, lowest {drift['lowest_after']:.1%} "
            f"after; back within {RECOVERED_WITHIN:.0%} {when}")


def _who(report: dict[str, Any]) -> str:
    people = report.get("people")
    if people is None:
        return f"Labels came back {report['label_delay_s']:g} s after each request."
    url = html.escape(people["project_url"])
    return f'People labelled in Label Studio (<a href="{url}">{url}</a>).'


def _people(report: dict[str, Any]) -> str:
    """The labels people gave, beside the truth: what the service learnt from."""
    people = report.get("people")
    if people is None:
        return ""
    given = people["labels"]
    if not given:
        return "<h2>Labels given in Label Studio</h2>\n<p>No label was given.</p>"
    rows = "\n".join(_given_row(g) for g in given)
    return (f"<h2>Labels given in Label Studio</h2>\n<p>{len(given)} labels, {people['agreeing']:.1%} agreeing "
            f"with the ground truth.</p>\n<table class=labels><tr><th>record</th><th>label given</th><th>truth</th>"
            f"<th>cost</th></tr>\n{rows}</table>")


def _given_row(given: dict[str, Any]) -> str:
    cost = "" if given["cost"] is None else f"{given['cost']:g}"
    cells = [html.escape(str(given[k])) for k in ("id", "label", "truth")]
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + f"<td class=n>{cost}</td></tr>"


def render_report(report: dict[str, Any], samples: Sequence[Sample], hits: Sequence[bool] | None = None) -> str:
    rows = "\n".join(f"<tr><th>{html.escape(name)}</th><td class=n>{html.escape(show(report))}</td></tr>"
                     for name, show in _ROWS)
    if len(samples) >= 2:
        body = "\n".join(charts(samples, report["records"], report.get("query_rate_target"), hits,
                                report.get("drift")))
    else:
        body = "<p>Too short to plot.</p>"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>activestream demo: {html.escape(report['learner'])}</title>
<style>{_STYLE}</style></head>
<body>
<h1>activestream demo: {html.escape(report['learner'])} on {html.escape(report['data'])}</h1>
<p>{_who(report)}</p>
<table>{rows}</table>
{body}
{_people(report)}
<p class="note">Accuracy against the ground truth uses every prediction; the service's estimate knows
only the labels it asked for, each weighted by 1/(its query probability).</p>
</body></html>
"""


def write_report(path: str | Path, report: dict[str, Any], samples: Sequence[Sample],
                 hits: Sequence[bool] | None = None) -> Path:
    path = Path(path)
    path.write_text(render_report(report, samples, hits), encoding="utf-8")
    return path
