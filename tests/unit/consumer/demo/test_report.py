"""The demo's HTML report: inline SVG charts, no external asset."""

from __future__ import annotations

import math
import re
from html.parser import HTMLParser

import numpy as np
import pytest

from consumer.demo.report import RunningF1, Sample, Series, _rolling, line_chart, render_report
from learners.evaluation import binary_metrics, multiclass_metrics

REPORT = {"data": "synthetic drifting stream (400 records)", "learner": "paa-1", "records": 400, "predictions": 400,
          "label_requests": 120, "labels_applied": 110, "labels_expired": 4, "query_ratio": 0.3,
          "query_rate_target": 0.1, "labelling_cost": 55.0, "accuracy": 0.8125, "f1": 0.7, "estimated_accuracy": 0.79,
          "dead_letters": 2, "seconds": 4.0, "records_per_second": 100.0, "label_delay_s": 0.5}


def samples(n: int = 9) -> list[Sample]:
    return [Sample(0.5 * k, 50 * k, 40 * k, 0.6 + 0.01 * k, 50 * k, 15 * k, 13 * k, k // 4, 6.5 * k, 40.0 * k,
                   8.0 * k) for k in range(n)]


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_line_chart_breaks_lines_at_nan_and_keeps_points_inside_the_frame():
    svg = line_chart("t", [Series("a", [0, 1, 2, 3, 4], [0.1, 0.5, math.nan, 0.7, 2.0])], "x", "y", y_range=(0, 1))
    lines = re.findall(r'<polyline points="([^"]+)"', svg)
    assert len(lines) == 2
    frame = re.search(r'<rect x="(\d+)" y="(\d+)" width="(\d+)" height="(\d+)"', svg).groups()
    x0, y0, w, h = map(float, frame)
    for line in lines:
        for point in line.split():
            x, y = map(float, point.split(","))
            assert x0 <= x <= x0 + w and y0 <= y <= y0 + h  # 2.0 is clipped to the top


def test_rolling_ratio_covers_the_last_window_of_records():
    s = samples()
    got = _rolling(s, lambda x: x.correct, lambda x: x.predicted, window=100)
    assert math.isnan(got[0])  # nothing predicted yet
    # at sample 6 (300 predicted) the first sample inside the window is 4 (200 predicted): the ratio runs
    # from the sample before it, 3
    assert got[6] == (s[6].correct - s[3].correct) / (s[6].predicted - s[3].predicted)


def test_report_is_one_self_contained_page_with_the_summary_and_its_charts():
    page = render_report(REPORT, samples())
    parser = Tags()
    parser.feed(page)
    tags = [t for t, _ in parser.tags]
    assert tags.count("svg") == 5 and tags.count("polyline") >= 7
    assert "F-measure against query ratio" in page
    assert not [a for _, a in parser.tags if "src" in a or "href" in a], "an external reference"
    assert set(re.findall(r"https?://[^\"' ]+", page)) == {"http://www.w3.org/2000/svg"}  # the SVG namespace only
    assert "<script" not in page
    for shown in ("0.8125 / 0.7000", "120 (30.0%, target 10%)", "110 / 4", "0.7900", "paa-1"):
        assert shown in page


def query_ratio_chart(page: str) -> str:
    chart = page[page.index('aria-label="Query ratio over time"'):]
    return chart[: chart.index("</svg>")]


def test_the_query_ratio_chart_draws_the_target_as_a_dashed_line_at_its_height():
    chart = query_ratio_chart(render_report(REPORT, samples()))
    line = re.search(r'<line x1="[\d.]+" x2="[\d.]+" y1="(?P<y1>[\d.]+)" y2="(?P<y2>[\d.]+)" class="target"/>', chart)
    assert line and line["y1"] == line["y2"] and "target 10%" in chart
    # the axis through the grid lines' heights and their tick labels: the line sits at 10 %
    grid = [float(y) for y in re.findall(r'y1="([\d.]+)" y2="[\d.]+" class="grid"', chart)]
    ticks = [float(t) / 100 for t in re.findall(r'class="tick" text-anchor="end">([\d.]+)%<', chart)]
    slope, offset = np.polyfit(grid, ticks, 1)
    assert slope * float(line["y1"]) + offset == pytest.approx(0.1, abs=1e-3)
    assert chart.index('class="target"') < chart.index("<polyline")  # under the series


def test_without_a_target_the_report_says_so_and_draws_no_target_line():
    page = render_report({**REPORT, "query_rate_target": None}, samples())
    assert "120 (30.0%, no target)" in page and 'class="target"' not in page


def test_a_demo_too_short_to_plot_still_reports():
    page = render_report(REPORT, samples(1))
    assert "<svg" not in page and "Too short to plot" in page


@pytest.mark.parametrize("classes", [("ham", "spam"), (0, 1, 2, 3)])
def test_running_f1_is_the_f1_of_the_final_report_at_every_point(classes):
    rng = np.random.default_rng(3)
    truth = rng.integers(0, len(classes), 500)
    guess = np.where(rng.random(500) < 0.7, truth, rng.integers(0, len(classes), 500))
    running = RunningF1(classes)
    assert running.value() == 0.0
    none = np.zeros(500, dtype=bool)
    for k in range(500):
        running.add(classes[truth[k]], classes[guess[k]])
        if k % 50 == 0 or k == 499:
            if len(classes) == 2:
                want = binary_metrics(2 * truth[: k + 1] - 1, 2 * guess[: k + 1] - 1, none[: k + 1]).f1
            else:
                want = multiclass_metrics(truth[: k + 1], guess[: k + 1], none[: k + 1], len(classes)).f1
            assert running.value() == pytest.approx(want, abs=1e-12)


def test_recovery_measures_the_accuracy_around_the_change_and_when_it_came_back():
    from consumer.demo.report import recovery

    # right 90 % before record 1,000, 40 % for the next 600, then 90 % again
    pattern = lambda n, share: [k % 10 < share * 10 for k in range(n)]  # noqa: E731
    hits = pattern(1000, 0.9) + pattern(600, 0.4) + pattern(1400, 0.9)
    got = recovery(hits, 1000, window=500, within=0.05)
    assert got["before"] == pytest.approx(0.9) and got["lowest_after"] == pytest.approx(0.4)
    # a window is within 0.05 of 0.9 once at most 50 of its 500 records are from the bad stretch
    # [1,000, 1,600): it ends near 1,550 + 500, 1,050 records after the change (the pattern's tens aside)
    assert 1040 <= got["recovered_after"] <= 1050
    never = recovery(pattern(1000, 0.9) + pattern(2000, 0.4), 1000)
    assert never["recovered_after"] is None


def test_the_summary_names_the_change_or_its_absence():
    from consumer.demo.report import drift_summary

    assert drift_summary({}) == "none in this stream"
    text = drift_summary({"drift": {"change_at": 6666, "window": 500, "before": 0.9, "lowest_after": 0.6,
                                    "recovered_after": 1200}})
    assert text == "at record 6,666: 90.0% before, lowest 60.0% after; back within 5% 1,200 records after it"
    short = recovery_of_a_short_stream()
    assert short["lowest_after"] is None and short["recovered_after"] is None
    assert drift_summary({"drift": short}).endswith("too few records after it to tell")


def recovery_of_a_short_stream():
    from consumer.demo.report import recovery

    return recovery([True] * 1000, 666)  # the demo's jump of 1,000 records: no window of 500 after it
