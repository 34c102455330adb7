"""The pages a person looks at, rendered in a real browser (Debian's headless Chromium).

The demo's HTML report (inline SVG charts) and a page of the built docs site (figures from
``benchmarks/results``) are each opened twice: once with a probe script injected that measures, in the
browser, what the page drew (``--dump-dom``), once as a screenshot whose pixels must show each series
in its colour inside its chart. A chart whose series did not draw fails, however well-formed its file.

Without ``chromium`` on the PATH the tests fail, unless ``ACTIVESTREAM_SKIP_BROWSER=1`` asks to skip
them on purpose (``.ci/run`` installs it).
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from consumer.demo.report import Sample, write_report

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
         "--allow-file-access-from-files"]
WIDTH = 1280

if CHROMIUM is None:
    if os.environ.get("ACTIVESTREAM_SKIP_BROWSER") == "1":
        pytest.skip("ACTIVESTREAM_SKIP_BROWSER=1: no browser checks", allow_module_level=True)
    pytest.fail("chromium is not installed (apt-get install chromium; .ci/run does), "
                "or set ACTIVESTREAM_SKIP_BROWSER=1 to skip the browser checks", pytrace=False)

# Runs in the page once it has loaded; writes what the browser laid out and drew into <pre id="probe">.
PROBE = """
<script>
window.addEventListener("load", () => {
  const box = (el) => { const r = el.getBoundingClientRect();
                        return {x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height}; };
  // a point of an element's user space on the page, through the transform the browser drew it with
  const onPage = (el, x, y) => { const m = el.getScreenCTM();
                                 return {x: m.a * x + m.c * y + m.e + scrollX, y: m.b * x + m.d * y + m.f + scrollY}; };
  const charts = [...document.querySelectorAll("svg[role=img]")].map((svg) => ({
    title: svg.getAttribute("aria-label"), box: box(svg), viewBox: svg.viewBox.baseVal.width,
    legend: [...svg.querySelectorAll("text.legend")].map((t) => ({
      name: t.textContent, stroke: getComputedStyle(t.previousElementSibling).stroke})),
    ticks: [...svg.querySelectorAll("text.tick")].map((t) => { const b = t.getBBox();
      return {text: t.textContent, anchor: t.getAttribute("text-anchor"),
              at: onPage(t, b.x + b.width / 2, b.y + b.height / 2)}; }),
    grid: [...svg.querySelectorAll("line.grid")].map((l) => onPage(l, l.x1.baseVal.value, l.y1.baseVal.value)),
    targets: [...svg.querySelectorAll("line.target")].map((l) => ({
      from: onPage(l, l.x1.baseVal.value, l.y1.baseVal.value), to: onPage(l, l.x2.baseVal.value, l.y2.baseVal.value),
      stroke: getComputedStyle(l).stroke})),
    marks: [...svg.querySelectorAll("line.mark")].map((l) => ({
      from: onPage(l, l.x1.baseVal.value, l.y1.baseVal.value), to: onPage(l, l.x2.baseVal.value, l.y2.baseVal.value),
      stroke: getComputedStyle(l).stroke, label: l.nextElementSibling.textContent})),
    lines: [...svg.querySelectorAll("polyline")].map((p) => ({
      stroke: getComputedStyle(p).stroke, length: p.getTotalLength(), points: p.points.numberOfItems,
      drawn: Array.from({length: p.points.numberOfItems}, (_, k) => onPage(p, p.points.getItem(k).x,
                                                                            p.points.getItem(k).y)),
      visible: getComputedStyle(p).visibility === "visible" && getComputedStyle(p).display !== "none"}))}));
  const images = [...document.querySelectorAll("article img")].map((img) => ({
    src: img.getAttribute("src"), complete: img.complete, natural: img.naturalWidth, box: box(img)}));
  const rows = [...document.querySelectorAll("table.labels tr")].map((tr) => ({
    cells: [...tr.cells].map((c) => c.textContent), box: box(tr),
    visible: getComputedStyle(tr).visibility === "visible" && getComputedStyle(tr).display !== "none"}));
  const code = [...document.querySelectorAll("article pre > code")].map((c) => ({
    box: box(c.parentElement), scroll: c.parentElement.scrollWidth, client: c.parentElement.clientWidth,
    text: c.textContent}));
  const tables = [...document.querySelectorAll("article table")].map((t) => ({box: box(t), rows: t.rows.length}));
  const title = (document.querySelector("article h1") || {}).textContent || "";
  const sections = [...document.querySelectorAll(".md-nav--primary .md-nav__item--section > label")]
    .map((l) => l.textContent.trim());
  const out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({charts, images, rows, code, tables, title, sections,
                                    height: document.documentElement.scrollHeight});
  document.body.appendChild(out);
});
</script>
"""


def chromium(url: str, tmp: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp / 'profile'}", *args, url],
                          capture_output=True, text=True, timeout=120, check=True)


def render(page: Path, tmp: Path) -> tuple[dict, np.ndarray]:
    """What the probe measured in ``page``, and a screenshot of the whole page (height × width × RGB)."""
    probed = page.with_name(page.stem + ".probed.html")
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = chromium(probed.as_uri(), tmp, f"--window-size={WIDTH},900", "--virtual-time-budget=5000",
                   "--dump-dom").stdout
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert found, "the probe did not run: " + dom[-500:]
    probe = json.loads(found.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
                       .replace("&amp;", "&"))
    shot = tmp / (page.stem + ".png")
    height = min(int(probe["height"]) + 20, 12000)
    chromium(page.as_uri(), tmp, f"--window-size={WIDTH},{height}", "--force-device-scale-factor=1",
             "--virtual-time-budget=5000", f"--screenshot={shot}")
    return probe, read_png(shot.read_bytes())


def read_png(data: bytes) -> np.ndarray:
    """A PNG as height × width × 3 (RGB) integers."""
    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert("RGB"), dtype=np.int32)


def pixels_near(region: np.ndarray, rgb: tuple[int, int, int], tolerance: int = 40) -> int:
    """How many pixels of ``region`` are within ``tolerance`` of ``rgb`` on every channel."""
    return int((np.abs(region - np.array(rgb)).max(axis=2) <= tolerance).sum())


def css_rgb(value: str) -> tuple[int, int, int]:
    r, g, b = (int(v) for v in re.findall(r"\d+", value)[:3])
    return r, g, b


# ---------------------------------------------------------------------------------------------
# the demo's report

# The plot area of report.line_chart in its viewBox (720 × 300): left 64, right 16, top 52, bottom 42.
PLOT_X, PLOT_Y, PLOT_W, PLOT_H = 64, 52, 720 - 64 - 16, 300 - 52 - 42


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory) -> Path:
    """A report written by a short demo run without a query-rate target: the service, the broker and
    the annotator all real. Its learner, PAA-I, asks about every record of a fresh model and then
    about fewer as its margins grow: the run whose query ratio the flatness check must find uneven
    (the default learners forget, and keep asking)."""
    page = tmp_path_factory.mktemp("report") / "report.html"
    out = subprocess.run([sys.executable, "-m", "consumer", "demo", "--records", "3000", "--rate", "1500",
                          "--label-delay", "0.5", "--query-rate-target", "none", "--learner", "paa-1",
                          "--report", str(page), "--json"],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    page.with_suffix(".json").write_text(out.stdout)
    return page


def test_the_demo_report_draws_every_series_of_every_chart(demo_report, tmp_path):
    probe, shot = render(demo_report, tmp_path)
    charts = probe["charts"]
    assert [c["title"].split(" (")[0] for c in charts] == [
        "Accuracy over time", "Query ratio over time", "F-measure against query ratio, as the run goes", "Labels",
        "Labelling cost", "Accuracy around the change of concept"]
    for chart in charts:
        assert chart["legend"], chart["title"]
        scale = chart["box"]["w"] / chart["viewBox"]
        x0 = int(chart["box"]["x"] + PLOT_X * scale) - 2
        y0 = int(chart["box"]["y"] + PLOT_Y * scale) - 2
        plot = shot[y0:y0 + int(PLOT_H * scale) + 5, x0:x0 + int(PLOT_W * scale) + 5]
        for series in chart["legend"]:
            drawn = [line for line in chart["lines"] if line["stroke"] == series["stroke"] and line["visible"]]
            what = f"{chart['title']}: {series['name']}"
            # laid out by the browser: a visible path of several points, of non-zero length
            assert drawn and max(line["points"] for line in drawn) >= 2, f"{what} drew no line"
            assert sum(line["length"] for line in drawn) > 50, f"{what} drew a line of no length"
            # painted: its colour inside the plot area (the legend's sample lies above it)
            assert pixels_near(plot, css_rgb(series["stroke"])) >= 30, f"{what} is not visible in the screenshot"


def test_the_labels_people_gave_are_a_table_the_browser_lays_out_row_by_row(tmp_path):
    """With --annotator label-studio the report lists the labels people gave beside the truth."""
    given = [{"id": f"r{k}", "label": 1 if k % 3 else -1, "truth": 1, "cost": 1.0} for k in range(12)]
    report = {"data": "drifting", "learner": "paa-1", "records": 400, "predictions": 400, "label_requests": 12,
              "labels_applied": 12, "labels_expired": 0, "query_ratio": 0.03, "labelling_cost": 12.0,
              "accuracy": 0.8, "f1": 0.8, "estimated_accuracy": 0.8, "dead_letters": 0, "seconds": 30.0,
              "records_per_second": 13.3, "label_delay_s": 1.0,
              "people": {"project_url": "http://127.0.0.1:8080/projects/3/data", "labels": given, "agreeing": 8 / 12}}
    samples = [Sample(t, 200 * t, 150 * t, 0.7, 200 * t, 6 * t, 6 * t, 0, 6 * t, 10 * t, 2 * t) for t in (1.0, 2.0)]
    page = tmp_path / "people.html"
    write_report(page, report, samples)
    probe, _ = render(page, tmp_path)
    header, *rows = probe["rows"]
    assert header["cells"] == ["record", "label given", "truth", "cost"]
    assert [r["cells"] for r in rows] == [[g["id"], str(g["label"]), "1", "1"] for g in given]
    tops = [r["box"]["y"] for r in [header, *rows]]
    assert all(r["visible"] and r["box"]["h"] > 0 and r["box"]["w"] > 0 for r in rows)
    assert tops == sorted(tops) and len(set(tops)) == len(tops)  # one row under the other, none hidden


def test_the_pixel_check_fails_when_a_series_is_not_painted(demo_report, tmp_path):
    """The screenshot check is not vacuous: hide one series' lines and its colour leaves the plot area."""
    text = demo_report.read_text(encoding="utf-8")
    hidden = tmp_path / "hidden.html"
    hidden.write_text(text.replace("</style>", "polyline[stroke='#d62728'] { visibility: hidden; }</style>", 1),
                      encoding="utf-8")
    probe, shot = render(hidden, tmp_path)
    chart = probe["charts"][0]
    scale = chart["box"]["w"] / chart["viewBox"]
    x0, y0 = int(chart["box"]["x"] + PLOT_X * scale), int(chart["box"]["y"] + PLOT_Y * scale)
    plot = shot[y0:y0 + int(PLOT_H * scale), x0:x0 + int(PLOT_W * scale)]
    assert pixels_near(plot, (0xD6, 0x27, 0x28)) < 5
    assert pixels_near(plot, (0x1F, 0x77, 0xB4)) >= 30


# ---------------------------------------------------------------------------------------------
# the query ratio as drawn, read back through the chart's axes

TARGET = 0.1
# "No window of 1,000 records after the first above 1.5 × target" (the label budget's goal): the
# rolling series of the 10,000-record run is over windows of 1,000 records (records / 10), so a
# point above 1.5 × target is such a window. Below, the mirror bound: a window at half the target
# is as far off as one at 1.5 ×, and is what a controller starved by stale scores draws.
FLAT = (0.5, 1.5)
AFTER = 1_000  # records predicted: the first window, where a run without a target asks for nearly all


@pytest.fixture(scope="module")
def budget_report(tmp_path_factory) -> Path:
    """A report of the demo with a query-rate target, 10,000 records: windows of 1,000 in its chart.
    The target is the demo's default, so this is the demo run with no option."""
    page = tmp_path_factory.mktemp("budget") / "report.html"
    out = subprocess.run([sys.executable, "-m", "consumer", "demo", "--records", "10000", "--query-rate-target",
                          str(TARGET), "--report", str(page), "--json"],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    page.with_suffix(".json").write_text(out.stdout)
    return page


def tick_value(text: str) -> float:
    return float(text.rstrip("%").replace(",", "")) / (100 if text.endswith("%") else 1)


def axis(positions: list[float], labels: list[str]) -> np.poly1d:
    """Value at a page coordinate, from where the browser drew the ticks and what they read; the ticks
    must lie on one straight line (a mislabelled tick would not)."""
    values = [tick_value(text) for text in labels]
    assert len(values) >= 2, labels
    fit = np.poly1d(np.polyfit(positions, values, 1))
    step = (max(values) - min(values)) / (len(values) - 1)
    assert max(abs(fit(p) - v) for p, v in zip(positions, values, strict=True)) < 0.01 * step, labels
    return fit


def y_axis(chart: dict) -> np.poly1d:
    """Value at a page height, from the chart's grid lines and their tick labels."""
    y_ticks = [t for t in chart["ticks"] if t["anchor"] == "end"]  # one per grid line, in the same order
    return axis([g["y"] for g in chart["grid"]], [t["text"] for t in y_ticks])


def drawn_series(chart: dict, name: str) -> list[tuple[float, float, dict]]:
    """(records, value, the point on the page) of each point of series ``name`` as the browser drew it."""
    x_ticks = [t for t in chart["ticks"] if t["anchor"] == "middle"]
    x_of = axis([t["at"]["x"] for t in x_ticks], [t["text"] for t in x_ticks])
    y_of = y_axis(chart)
    stroke = next(s["stroke"] for s in chart["legend"] if s["name"] == name)
    return [(float(x_of(p["x"])), float(y_of(p["y"])), p) for line in chart["lines"]
            if line["stroke"] == stroke for p in line["drawn"]]


def off_band(points: list[tuple[float, float, dict]], target: float) -> list[tuple[float, float]]:
    """The points after the first ``AFTER`` records outside ``FLAT`` × target."""
    low, high = FLAT[0] * target, FLAT[1] * target
    return [(x, y) for x, y, _ in points if x > AFTER and not low <= y <= high]


def query_ratio_chart(page: Path, tmp: Path) -> tuple[dict, np.ndarray]:
    """The query-ratio chart as probed, and a screenshot of the page with only its rolling series
    painted (the overall ratio, drawn over it, is hidden: where the two meet, the rolling one shows)."""
    hidden = tmp / "rolling-only.html"
    hidden.write_text(page.read_text(encoding="utf-8").replace(
        "</style>", "polyline[stroke='#d62728'] { visibility: hidden; }</style>", 1), encoding="utf-8")
    probe, shot = render(hidden, tmp)
    return next(c for c in probe["charts"] if c["title"] == "Query ratio over time"), shot


def test_with_a_target_the_drawn_query_ratio_is_flat_after_the_first_1000_records(budget_report, tmp_path):
    chart, shot = query_ratio_chart(budget_report, tmp_path)
    rolling = drawn_series(chart, "last 1,000 records")
    after = [(x, y) for x, y, _ in rolling if x > AFTER]
    assert len(after) >= 10, rolling  # a curve, not two points
    assert off_band(rolling, TARGET) == [], f"outside {FLAT} x {TARGET}: {after}"
    overall = drawn_series(chart, "since the start")
    assert abs(overall[-1][1] - TARGET) <= 0.01 and overall[-1][0] == pytest.approx(10_000, rel=0.01)
    # each point read back is painted there: the rolling series' colour within 3 px of it
    for x, y, at in rolling:
        near = shot[int(at["y"]) - 3:int(at["y"]) + 4, int(at["x"]) - 3:int(at["x"]) + 4]
        assert pixels_near(near, (0x1F, 0x77, 0xB4)) >= 1, f"({x:.0f}, {y:.3f}) not painted at {at}"


def test_the_query_ratio_chart_shows_the_target_as_a_line_at_its_height(budget_report, tmp_path):
    # the series hidden: a ratio held at the target is drawn over the target's line, and covers it
    bare = tmp_path / "no-series.html"
    bare.write_text(budget_report.read_text(encoding="utf-8").replace(
        "</style>", "polyline { visibility: hidden; }</style>", 1), encoding="utf-8")
    probe, shot = render(bare, tmp_path)
    chart = next(c for c in probe["charts"] if c["title"] == "Query ratio over time")
    (target,) = chart["targets"]
    start, end = target["from"], target["to"]
    assert start["y"] == pytest.approx(end["y"]) and end["x"] - start["x"] > 0.8 * chart["box"]["w"]
    assert y_axis(chart)(start["y"]) == pytest.approx(TARGET, abs=0.002)  # read back through the axis
    # painted across the plot, dashed: its colour on a good part of the row it lies on
    row = shot[int(start["y"]) - 2:int(start["y"]) + 3, int(start["x"]):int(end["x"])]
    assert pixels_near(row, css_rgb(target["stroke"]), tolerance=30) >= 0.3 * (end["x"] - start["x"])


def test_a_run_without_a_target_draws_no_target_line(demo_report, tmp_path):
    chart, _ = query_ratio_chart(demo_report, tmp_path)
    assert chart["targets"] == []


def test_the_flatness_check_fails_for_a_run_without_a_target(demo_report, tmp_path):
    """The same check on the no-target run: a fresh model asks for almost every label, then few, so
    its rolling ratio leaves the band around its own final ratio."""
    chart, _ = query_ratio_chart(demo_report, tmp_path)
    rolling = drawn_series(chart, next(s["name"] for s in chart["legend"] if s["name"].startswith("last ")))
    final = drawn_series(chart, "since the start")[-1][1]
    assert off_band(rolling, final), rolling


# ---------------------------------------------------------------------------------------------
# a page of the docs site


def series_colours(png: np.ndarray, least: int = 200) -> list[tuple[int, int, int]]:
    """The saturated colours a figure is drawn with (its series), each covering at least ``least`` pixels."""
    flat = png.reshape(-1, 3)
    saturated = flat[(flat.max(axis=1) - flat.min(axis=1)) > 60]
    colours, counts = np.unique(saturated, axis=0, return_counts=True)
    return [tuple(int(v) for v in c) for c, n in zip(colours, counts, strict=True) if n >= least]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out)],
                   cwd=ROOT, check=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    return out


def test_a_docs_page_shows_its_figures_with_every_series(site, tmp_path):
    page = site / "reproductions" / "soal.html"
    probe, shot = render(page, tmp_path)
    images = probe["images"]
    assert [image["src"] for image in images] == ["../results/soal_fig1.png", "../results/soal_fig2.png"]
    for image in images:
        assert image["complete"] and image["natural"] > 0, f"{image['src']} did not load"
        source = read_png((page.parent / image["src"]).read_bytes())
        colours = series_colours(source)
        assert len(colours) >= 6, f"{image['src']}: expected several series, found {colours}"
        box = image["box"]
        assert box["w"] > 300 and box["h"] > 50, f"{image['src']} is laid out at {box}"
        shown = shot[int(box["y"]):int(box["y"] + box["h"]), int(box["x"]):int(box["x"] + box["w"])]
        for colour in colours:
            assert pixels_near(shown, colour, tolerance=60) >= 10, f"{image['src']}: series {colour} not painted"


def test_the_change_of_concept_is_marked_where_it_happens_on_the_accuracy_around_it(demo_report, tmp_path):
    """The bundled stream's concept jumps at two thirds of it (record 2,000 of 3,000): a vertical line
    there, read back through the chart's x axis, painted over the plot's height."""
    report = json.loads(demo_report.with_suffix(".json").read_text())
    probe, shot = render(demo_report, tmp_path)
    chart = next(c for c in probe["charts"] if c["title"].startswith("Accuracy around the change"))
    change = next(m for m in chart["marks"] if m["label"] == "the concept changes")
    start, end = change["from"], change["to"]
    assert start["x"] == pytest.approx(end["x"]) and end["y"] - start["y"] > 0.5 * chart["box"]["h"]
    x_ticks = [t for t in chart["ticks"] if t["anchor"] == "middle"]
    x_of = axis([t["at"]["x"] for t in x_ticks], [t["text"] for t in x_ticks])
    assert x_of(start["x"]) == pytest.approx(report["drift"]["change_at"], abs=15)
    column = shot[int(start["y"]):int(end["y"]), int(start["x"]) - 1:int(start["x"]) + 2]
    assert pixels_near(column, css_rgb(change["stroke"]), tolerance=40) >= 0.3 * (end["y"] - start["y"])
    back = report["drift"]["recovered_after"]
    assert len(chart["marks"]) == (1 if back is None else 2)
    assert drawn_series(chart, "against the ground truth"), "the accuracy is not drawn"


def test_the_default_demo_marks_where_its_accuracy_is_back_after_the_change(budget_report, tmp_path):
    """The default learner's reactive twin takes over after the change: the chart marks where a window's
    accuracy is back within 5 % of before, at the record the report gives, right of the change."""
    report = json.loads(budget_report.with_suffix(".json").read_text())
    back = report["drift"]["recovered_after"]
    assert back is not None, report["drift"]
    probe, shot = render(budget_report, tmp_path)
    chart = next(c for c in probe["charts"] if c["title"].startswith("Accuracy around the change"))
    change, recovered = chart["marks"]
    assert change["label"] == "the concept changes"
    assert recovered["label"].startswith("back within 5%") and f"+{back:,}" in recovered["label"]
    x_ticks = [t for t in chart["ticks"] if t["anchor"] == "middle"]
    x_of = axis([t["at"]["x"] for t in x_ticks], [t["text"] for t in x_ticks])
    assert x_of(recovered["from"]["x"]) == pytest.approx(report["drift"]["change_at"] + back, abs=15)
    top, bottom = recovered["from"], recovered["to"]
    column = shot[int(top["y"]):int(bottom["y"]), int(top["x"]) - 1:int(top["x"]) + 2]
    assert pixels_near(column, css_rgb(recovered["stroke"]), tolerance=40) >= 0.3 * (bottom["y"] - top["y"])


@pytest.mark.parametrize(("name", "title"), [("quickstart", "Quickstart"), ("tutorial", "Tutorial: your own Kafka")])
def test_a_get_started_page_lays_out_its_commands_readably_under_the_five_sections(site, tmp_path, name, title):
    """Each code block of the page is laid out in the content column without a horizontal scroll, and
    its text is painted; its tables are laid out; the navigation shows the site's five sections."""
    page = site / f"{name}.html"
    probe, shot = render(page, tmp_path)
    assert probe["title"].startswith(title), probe["title"]
    assert {"Get started", "How-to", "Reference", "Explanation", "Evidence"} <= set(probe["sections"])
    assert len(probe["code"]) >= 2
    for block in probe["code"]:
        box = block["box"]
        assert box["w"] > 300 and box["h"] > 10, f"code block laid out at {box}: {block['text'][:60]!r}"
        assert block["scroll"] <= block["client"] + 1, f"code block scrolls sideways: {block['text'][:60]!r}"
        shown = shot[int(box["y"]):int(box["y"] + box["h"]), int(box["x"]):int(box["x"] + box["w"])]
        background = np.median(shown.reshape(-1, 3), axis=0)
        ink = (np.abs(shown - background).max(axis=2) > 80).sum()
        assert ink >= 2 * len(block["text"].strip()), f"code block's text not painted: {block['text'][:60]!r}"
    for table in probe["tables"]:
        assert table["box"]["w"] > 200 and table["box"]["h"] > 20 * table["rows"] * 0.5
