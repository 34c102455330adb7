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
  const charts = [...document.querySelectorAll("svg[role=img]")].map((svg) => ({
    title: svg.getAttribute("aria-label"), box: box(svg), viewBox: svg.viewBox.baseVal.width,
    legend: [...svg.querySelectorAll("text.legend")].map((t) => ({
      name: t.textContent, stroke: getComputedStyle(t.previousElementSibling).stroke})),
    lines: [...svg.querySelectorAll("polyline")].map((p) => ({
      stroke: getComputedStyle(p).stroke, length: p.getTotalLength(), points: p.points.numberOfItems,
      visible: getComputedStyle(p).visibility === "visible" && getComputedStyle(p).display !== "none"}))}));
  const images = [...document.querySelectorAll("article img")].map((img) => ({
    src: img.getAttribute("src"), complete: img.complete, natural: img.naturalWidth, box: box(img)}));
  const out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({charts, images, height: document.documentElement.scrollHeight});
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
    """A report written by a short demo run: the service, the broker and the annotator all real."""
    page = tmp_path_factory.mktemp("report") / "report.html"
    out = subprocess.run([sys.executable, "-m", "consumer", "demo", "--records", "3000", "--rate", "1500",
                          "--label-delay", "0.5", "--report", str(page), "--json"],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    return page


def test_the_demo_report_draws_every_series_of_every_chart(demo_report, tmp_path):
    probe, shot = render(demo_report, tmp_path)
    charts = probe["charts"]
    assert [c["title"].split(" (")[0] for c in charts] == [
        "Accuracy over time", "Query ratio over time", "F-measure against query ratio, as the run goes", "Labels",
        "Labelling cost"]
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
