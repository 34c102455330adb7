"""The Grafana dashboard: generated from deploy/grafana/dashboard.py, read back by Grafana's own
types (grafana-foundation-sdk), reading only metrics the service exports. Its queries are evaluated
against a real Prometheus in test_observability_e2e.py."""

from __future__ import annotations

import importlib.util
import json

from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.cog.plugins import register_default_plugins
from grafana_foundation_sdk.models.dashboard import Dashboard

from consumer.annotate.metrics import AnnotateMetrics
from tests.deploy.conftest import DEPLOY, load_yaml
from tests.deploy.promql import metric_names
from tests.deploy.test_prometheus_rules import SCRAPED_BY_PROMETHEUS, exported_names

GRAFANA = DEPLOY / "grafana"
COMMITTED = GRAFANA / "dashboards" / "activestream.json"


def generator():
    spec = importlib.util.spec_from_file_location("activestream_dashboard", GRAFANA / "dashboard.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def board() -> dict:
    return json.loads(COMMITTED.read_text())


def panels() -> list[dict]:
    return [p for p in board()["panels"] if p["type"] != "row"]


def test_committed_json_is_what_the_generator_makes():
    assert COMMITTED.read_text() == generator().render(), \
        "regenerate: python deploy/grafana/dashboard.py > deploy/grafana/dashboards/activestream.json"


def test_dashboard_reads_back_through_grafanas_types_unchanged():
    """Every field of the JSON is one Grafana's dashboard model knows: none is lost on the way."""
    register_default_plugins()
    assert json.loads(JSONEncoder().encode(Dashboard.from_json(board()))) == board()


ANNOTATE = exported_names(AnnotateMetrics().registry)  # the Label Studio connector's


def reads(expr: str) -> set[str]:
    return metric_names(expr.replace("$__rate_interval", "1m").replace("$window", "1h"))


def test_every_target_reads_only_exported_metrics_for_the_selected_job_and_instances():
    exported = exported_names() | SCRAPED_BY_PROMETHEUS | {"process_start_time_seconds",
                                                           "process_resident_memory_bytes", "process_cpu_seconds_total"}
    for panel in panels():
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            expr = target["expr"]
            if reads(expr) & ANNOTATE:  # the connector: a job of its own, one process
                assert not reads(expr) - ANNOTATE, f"{panel['title']} mixes the connector's series with others"
                assert 'job="$annotate_job"' in expr and "$job" not in expr and "$instance" not in expr, expr
                continue
            unknown = reads(expr) - exported
            assert not unknown, f"{panel['title']} reads {unknown}, which the service does not export"
            assert expr.count('job="$job"') == expr.count('instance=~"$instance"') > 0, panel["title"]


def test_the_issue_s_panels_are_all_there():
    titles = {p["title"] for p in panels()}
    for wanted in ("Throughput", "Query rate against its target", "Labels: requested, applied, expired",
                   "Labelling cost rate", "Cumulative labelling cost", "Label budget in the current window",
                   "Online accuracy over $window", "F1 per class over $window", "Label delay", "Processing latency",
                   "Consumer lag per partition", "Pending label requests", "Checkpoint age", "Dead letters by reason"):
        assert wanted in titles
    assert {v["name"] for v in board()["templating"]["list"]} == {"datasource", "job", "instance", "window",
                                                                  "annotate_job"}


def test_panel_ids_are_unique_and_the_grid_has_no_overlap():
    seen, cells = set(), set()
    for panel in board()["panels"]:
        assert panel["id"] not in seen
        seen.add(panel["id"])
        g = panel["gridPos"]
        assert g["x"] + g["w"] <= 24
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not mine & cells, panel["title"]
        cells |= mine


def test_provisioning_points_at_the_dashboard_and_the_datasource_uid():
    datasources = load_yaml(GRAFANA / "provisioning" / "datasources" / "prometheus.yml")["datasources"]
    assert [d["uid"] for d in datasources] == ["prometheus"]
    current = next(v for v in board()["templating"]["list"] if v["name"] == "datasource")["current"]
    assert current["value"] == "prometheus"
    provider = load_yaml(GRAFANA / "provisioning" / "dashboards" / "activestream.yml")["providers"][0]
    assert provider["type"] == "file" and provider["options"]["path"] == "/var/lib/grafana/dashboards/activestream"


def test_the_scale_out_row_shows_the_role_split():
    """The last row follows the scorers and trainers: model version lag and age per scorer,
    publications and their bytes, which trainer is active, and the share of labels matching no request."""
    exprs = {p["title"]: [t["expr"].replace("$__rate_interval", "1m") for t in p["targets"]]
             for p in row_panels("Scale-out")}
    read = {title: set().union(*(metric_names(e) for e in targets)) for title, targets in exprs.items()}
    wanted = {
        "Model version lag per scorer": {"activestream_model_published_version", "activestream_model_version_in_use"},
        "Model age per scorer": {"activestream_model_age_seconds"},
        "Model publications per kind": {"activestream_model_publications_total"},
        "Model bytes published": {"activestream_model_published_bytes_sum",
                                  "activestream_model_published_bytes_bucket"},
        "Trainer active per instance": {"activestream_trainer_active"},
        "Labels matching no request": {"activestream_labels_total"},
    }
    for title, metrics in wanted.items():
        assert metrics <= read[title], title
    assert "by (kind)" in exprs["Model publications per kind"][0]
    assert 'outcome="unknown"' in exprs["Labels matching no request"][0]
    assert all("by (instance)" in exprs[t][0] for t in ("Model version lag per scorer", "Trainer active per instance"))


def row_panels(title: str) -> list[dict]:
    """The panels under the row ``title``, up to the next row."""
    rows = sorted((p["gridPos"]["y"], p["title"]) for p in board()["panels"] if p["type"] == "row")
    top = next(y for y, t in rows if t == title)
    bottom = min((y for y, _ in rows if y > top), default=float("inf"))
    return [p for p in panels() if top < p["gridPos"]["y"] < bottom]


def test_the_label_studio_row_reads_every_series_of_the_connector():
    """The last row follows the connector: every metric it declares is on a panel of that row."""
    rows = [p for p in board()["panels"] if p["type"] == "row"]
    assert rows[-1]["title"] == "Labelling in Label Studio"
    read = set().union(*(reads(t["expr"]) for p in row_panels(rows[-1]["title"]) for t in p["targets"]))
    families = {name.removesuffix("_total").removesuffix("_bucket") for name in ANNOTATE
                if not name.endswith(("_sum", "_count"))}
    shown = {name.removesuffix("_total").removesuffix("_bucket") for name in read}
    assert families <= shown, families - shown

