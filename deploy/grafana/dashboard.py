"""The activestream Grafana dashboard, generated with grafana-foundation-sdk (Grafana 11.6 types).

    python deploy/grafana/dashboard.py > deploy/grafana/dashboards/activestream.json

The JSON in ``dashboards/`` is what Grafana provisions; ``tests/deploy/test_grafana_dashboard.py``
regenerates it and fails when the two differ, and ``tests/deploy/test_observability_e2e.py``
evaluates every target below against a real Prometheus scraping a running service.

Why generated: the SDK's builders are typed from Grafana's own dashboard schema, so a misspelt
option or a panel of the wrong shape fails here rather than in a browser, and each panel is a few
lines of PromQL instead of ~60 lines of hand-kept JSON.

The "Scale-out" row reads the metrics of the scorer/trainer split (docs/scale-out.md); on a single
process (``ACTIVESTREAM_ROLE=all``) its model panels stay empty. The "Labelling in Label Studio"
row reads the connector (``activestream annotate label-studio``, docs/label-studio.md), scraped as
the job ``$annotate_job``; empty when it does not run.

Template variables: ``datasource``, ``job`` (default ``activestream``), ``instance`` (one, several
or all replicas), ``window`` (how far back accuracy, F1 and stat totals look), ``annotate_job``
(the connector's job, default ``activestream-annotate``).
"""

from __future__ import annotations

import sys

from grafana_foundation_sdk.builders import dashboard as dash
from grafana_foundation_sdk.builders import prometheus, stat, timeseries
from grafana_foundation_sdk.builders.common import ReduceDataOptions, VizLegendOptions
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.common import (
    BigValueColorMode,
    BigValueGraphMode,
    LegendDisplayMode,
    LegendPlacement,
)
from grafana_foundation_sdk.models.dashboard import (
    DashboardCursorSync,
    DataSourceRef,
    VariableOption,
    VariableRefresh,
    VariableSort,
)

UID = "activestream"
DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
RATE = "$__rate_interval"
CORRECT, APPLIED, NOT_APPLIED = 'correct="true"', 'outcome="applied"', 'outcome!="applied"'


def m(name: str, *matchers: str) -> str:
    """A selector of ``name`` restricted to the dashboard's job and instances."""
    return name + "{" + ", ".join(['job="$job"', 'instance=~"$instance"', *matchers]) + "}"


def rate(name: str, *matchers: str, window: str = RATE) -> str:
    return f"rate({m(name, *matchers)}[{window}])"


def query(expr: str, legend: str) -> prometheus.Dataquery:
    return prometheus.Dataquery().expr(expr).legend_format(legend).datasource(DATASOURCE)


def graph(title: str, description: str, unit: str, *targets: prometheus.Dataquery, width: int = 12,
          minimum: float | None = 0) -> timeseries.Panel:
    panel = (timeseries.Panel().title(title).description(description).unit(unit).datasource(DATASOURCE)
             .span(width).height(8).fill_opacity(10).line_width(1)
             .legend(VizLegendOptions().display_mode(LegendDisplayMode.LIST).placement(LegendPlacement.BOTTOM)
                     .show_legend(True)))
    if minimum is not None:
        panel = panel.min(minimum)
    for ref, target in zip("ABCDEFGH", targets, strict=False):
        panel = panel.with_target(target.ref_id(ref).range())
    return panel


def single(title: str, description: str, unit: str, expr: str, decimals: int | None = None) -> stat.Panel:
    panel = (stat.Panel().title(title).description(description).unit(unit).datasource(DATASOURCE).span(4)
             .height(4).graph_mode(BigValueGraphMode.NONE).color_mode(BigValueColorMode.NONE)
             .reduce_options(ReduceDataOptions().calcs(["lastNotNull"]).values(False))
             .with_target(query(expr, title).ref_id("A").instant()))
    return panel.decimals(decimals) if decimals is not None else panel


# -- the panels ------------------------------------------------------------------------------------
QUERY_RATE = (f"sum by (instance) ({rate('activestream_label_requests_total')})"
              f" / sum by (instance) ({rate('activestream_records_scored_total')})")
LABELLED_ACCURACY = (f"sum({rate('activestream_labelled_records_total', CORRECT, window='$window')})"
                     f" / sum({rate('activestream_labelled_records_total', window='$window')})")
ESTIMATED_ACCURACY = (f"1 - sum({rate('activestream_importance_weighted_mistakes_total', window='$window')})"
                      f" / sum({rate('activestream_importance_weighted_labels_total', window='$window')})")
_LABELLED = rate("activestream_labelled_records_total", window="$window")
# F1 of class c = 2 TP / (records of class c + records predicted c), over the labelled records;
# a class never predicted right scores 0 rather than vanishing.
F1_PER_CLASS = (
    f"2 * (sum by (class) ({rate('activestream_labelled_records_total', CORRECT, window='$window')})"
    f" or sum by (class) ({_LABELLED}) * 0)"
    f" / on (class) (sum by (class) ({_LABELLED}) + on (class) ("
    f'sum by (class) (label_replace(sum by (predicted) ({_LABELLED}), "class", "$1", "predicted", "(.*)"))'
    f" or sum by (class) ({_LABELLED}) * 0))"
)
CHECKPOINT_AGE = (f"time() - ({m('activestream_checkpoint_last_success_timestamp_seconds')} > 0"
                  f" or {m('process_start_time_seconds')})")


def overview() -> list:
    return [
        single("Replicas ready", "Replicas with partitions assigned and their checkpoint restored", "none",
               f"sum({m('activestream_ready')})"),
        single("Records / s", "Feature records scored per second, all selected replicas", "short",
               f"sum({rate('activestream_records_scored_total')})", decimals=1),
        single("Query rate", "Label requests per record scored", "percentunit",
               f"sum({rate('activestream_label_requests_total')}) / sum({rate('activestream_records_scored_total')})",
               decimals=1),
        single("Estimated accuracy", "Importance-weighted accuracy over all records in $window", "percentunit",
               ESTIMATED_ACCURACY, decimals=1),
        single("Pending labels", "Label requests waiting for their label", "short",
               f"sum({m('activestream_pending_label_requests')})"),
        single("Dead letters in $window", "Records sent to the dead-letter topic", "short",
               f"sum(increase({m('activestream_dead_letters_total')}[$window]))", decimals=0),
    ]


def throughput() -> list:
    return [
        graph("Throughput", "Feature records scored per second, per replica and in total", "short",
              query(f"sum by (instance) ({rate('activestream_records_scored_total')})", "{{instance}}"),
              query(f"sum({rate('activestream_records_scored_total')})", "all replicas")),
        graph("Query rate against its target",
              "Label requests / records scored; the target is ACTIVESTREAM_QUERY_RATE_TARGET (absent when unset)",
              "percentunit",
              query(QUERY_RATE, "{{instance}}"),
              query(f"max by (instance) ({m('activestream_query_rate_target')})", "{{instance}} target")),
        graph("Budget controller",
              "What the budget controller aims at (the target, or a label budget paced over its window), what it "
              "realised over its last 500 records, and the target; empty without a controller", "percentunit",
              query(f"max by (instance) ({m('activestream_query_rate_aimed')})", "{{instance}} aimed"),
              query(f"max by (instance) ({m('activestream_query_rate_recent')})", "{{instance}} last 500 records"),
              query(f"max by (instance) ({m('activestream_query_rate_target')})", "{{instance}} target")),
        graph("Query knob and refusals",
              "The query strategy's knob as the controller moves it (δ, b, rate or κ), and label "
              "requests per second the hard cap refused", "short",
              query(f"max by (instance) ({m('activestream_query_knob')})", "{{instance}} knob"),
              query(f"sum by (instance) ({rate('activestream_label_requests_refused_total')})",
                    "{{instance}} refused / s"), minimum=None),
    ]


def labels() -> list:
    return [
        graph("Labels: requested, applied, expired",
              "Per second: label requests made, labels applied, requests that expired unanswered, labels that "
              "came too late or were not used, and queries suppressed (budget spent, id pending)", "short",
              query(f"sum({rate('activestream_label_requests_total')})", "requested"),
              query(f"sum({rate('activestream_labels_total', APPLIED)})", "applied"),
              query(f"sum({rate('activestream_label_requests_expired_total')})", "requests expired"),
              query(f"sum by (outcome) ({rate('activestream_labels_total', NOT_APPLIED)})",
                    "labels {{outcome}}"),
              query(f"sum({rate('activestream_label_requests_suppressed_total')})", "suppressed")),
        graph("Pending label requests", "Requests waiting for their label, per replica", "short",
              query(f"sum by (instance) ({m('activestream_pending_label_requests')})", "{{instance}}")),
        graph("Label delay", "From a label request to its label being applied", "s",
              *(query(f"histogram_quantile({q}, sum by (le) ({rate('activestream_label_delay_seconds_bucket')}))",
                      f"p{round(q * 100)}") for q in (0.5, 0.9, 0.99))),
        graph("Labelling cost rate", "Cost of the labels applied, per second", "short",
              query(f"sum by (instance) ({rate('activestream_labelling_cost_total')})", "{{instance}}")),
        graph("Cumulative labelling cost", "Cost of every label applied since the model was created", "short",
              query(f"sum by (instance) ({m('activestream_labelling_cost_total')})", "{{instance}}")),
        graph("Label budget in the current window",
              "Label requests used in the current budget window against ACTIVESTREAM_LABELS__BUDGET "
              "(empty without a budget)", "short",
              query(f"sum by (instance) ({m('activestream_label_budget_requests')}"
                    f" - {m('activestream_label_budget_remaining')})", "{{instance}} used"),
              query(f"sum by (instance) ({m('activestream_label_budget_requests')})", "{{instance}} budget")),
    ]


def quality() -> list:
    return [
        graph("Online accuracy over $window",
              "Accuracy of the predictions made for the records whose labels came back (biased towards hard "
              "records: those are the ones queried), beside the importance-weighted estimate over all records",
              "percentunit",
              query(LABELLED_ACCURACY, "labelled records"),
              query(ESTIMATED_ACCURACY, "all records (importance-weighted estimate)"), minimum=None),
        graph("F1 per class over $window", "F1 of each class on the labelled records (binary: the positive "
              "class is the one that matters)", "percentunit", query(F1_PER_CLASS, "{{class}}"), minimum=None),
        graph("Model version", "Labels learnt by the model of each replica", "short",
              query(f"max by (instance) ({m('activestream_model_version')})", "{{instance}}")),
        graph("Query probability", "Mean query probability of the records scored", "percentunit",
              query(f"sum({rate('activestream_query_probability_sum')})"
                    f" / sum({rate('activestream_query_probability_count')})", "mean")),
    ]


def latency() -> list:
    def quantiles(metric: str) -> list[prometheus.Dataquery]:
        return [query(f"histogram_quantile({q}, sum by (le) ({rate(metric)}))", f"p{round(q * 100)}")
                for q in (0.5, 0.99)]

    return [
        graph("Processing latency", "From a record's timestamp to its prediction being produced", "s",
              *quantiles("activestream_processing_latency_seconds_bucket")),
        graph("Batch duration", "Decode, score and emit one batch", "s",
              *quantiles("activestream_batch_duration_seconds_bucket")),
    ]


def kafka() -> list:
    return [
        graph("Consumer lag per partition", "Records behind the end of each consumed partition", "short",
              query(f"max by (instance, topic, partition) ({m('activestream_consumer_lag_records')})",
                    "{{topic}}[{{partition}}] {{instance}}")),
        graph("Checkpoint age", "Time since the last durable checkpoint (since the process start before its "
              "first one), and the alert threshold of 3 checkpoint intervals", "s",
              query(CHECKPOINT_AGE, "{{instance}}"),
              query(f"3 * {m('activestream_checkpoint_interval_seconds')}", "{{instance}} alert threshold")),
        graph("Dead letters by reason", "Records sent to the dead-letter topic per second", "short",
              query(f"sum by (topic, reason) ({rate('activestream_dead_letters_total')})", "{{topic}}: {{reason}}")),
        graph("Rebalances, produce errors, backpressure", "Per second", "short",
              query(f"sum by (topic) ({rate('activestream_rebalances_total')})", "assignments {{topic}}"),
              query(f"sum({rate('activestream_produce_errors_total')})", "produce errors"),
              query(f"sum({rate('activestream_backpressure_events_total')})", "backpressure")),
        graph("Memory", "Resident memory of each replica", "bytes",
              query(f"max by (instance) ({m('process_resident_memory_bytes')})", "{{instance}}")),
        graph("CPU", "CPU seconds per second of each replica", "short",
              query(f"max by (instance) ({rate('process_cpu_seconds_total')})", "{{instance}}")),
    ]


# The scale-out topology (docs/scale-out.md): how far each scorer's model is behind the trainer's last
# publication, in versions; max() over the trainers, as only the active one publishes.
MODEL_VERSION_LAG = (f"scalar(max({m('activestream_model_published_version')}))"
                     f" - max by (instance) ({m('activestream_model_version_in_use')})")
UNKNOWN, CONSUMED = 'outcome="unknown"', 'outcome!="defaulted"'  # defaulted: requests expired, no label came
UNKNOWN_SHARE = (f"sum({rate('activestream_labels_total', UNKNOWN)})"
                 f" / sum({rate('activestream_labels_total', CONSUMED)})")


def scale_out() -> list:
    return [
        graph("Model version lag per scorer", "Versions between the trainer's last publication and the model each "
              "scorer scores with (empty on a single process)", "short",
              query(MODEL_VERSION_LAG, "{{instance}}")),
        graph("Model age per scorer", "Time since the model each scorer scores with was published; "
              "ActivestreamModelStale fires above 5 minutes while labels are applied", "s",
              query(f"max by (instance) ({m('activestream_model_age_seconds')})", "{{instance}}")),
        graph("Model publications per kind", "Publications per second of the trainer: full snapshots, deltas, "
              "checkpoints", "short",
              query(f"sum by (kind) ({rate('activestream_model_publications_total')})", "{{kind}}")),
        graph("Model bytes published", "Bytes per second the trainer writes to the model topic, and the p99 size "
              "of one publication", "bytes",
              query(f"sum({rate('activestream_model_published_bytes_sum')})", "bytes / s"),
              query(f"histogram_quantile(0.99, sum by (le) ({rate('activestream_model_published_bytes_bucket')}))",
                    "p99 publication")),
        graph("Trainer active per instance", "1 on the process holding the trainer lease, 0 on a standby; "
              "ActivestreamNoActiveTrainer fires when none is 1", "short",
              query(f"max by (instance) ({m('activestream_trainer_active')})", "{{instance}}")),
        graph("Model swap delay", "From a model's publication to a scorer scoring with it", "s",
              *(query(f"histogram_quantile({q}, sum by (le) ({rate('activestream_model_swap_delay_seconds_bucket')}))",
                      f"p{round(q * 100)}") for q in (0.5, 0.99))),
        graph("Labels matching no request", "Share of the labels consumed that answer no known label request "
              "(ActivestreamLabelsUnknown fires above 1 %)", "percentunit",
              query(UNKNOWN_SHARE, "unknown share")),
    ]


# The Label Studio connector (docs/label-studio.md) is a process of its own, scraped as its own job:
# it has no replicas to pick, and its series must not count as the service's (up, the alerts).
def a(name: str, *matchers: str) -> str:
    """A selector of the connector's ``name`` restricted to its job."""
    return name + "{" + ", ".join(['job="$annotate_job"', *matchers]) + "}"


def a_rate(name: str, *matchers: str) -> str:
    return f"rate({a(name, *matchers)}[{RATE}])"


def annotate() -> list:
    return [
        graph("Annotation tasks open", "Tasks in Label Studio waiting for an annotation", "short",
              query(f"sum({a('activestream_annotate_tasks_open')})", "open")),
        graph("Annotation tasks created and closed",
              "Per second: tasks created (one per label request), requests whose task existed already (a replay "
              "or a restart), open tasks removed by reason (expired, tombstone), and requests that made no task "
              "(invalid, or expired when read)", "short",
              query(f"sum({a_rate('activestream_annotate_tasks_created_total')})", "created"),
              query(f"sum({a_rate('activestream_annotate_tasks_existing_total')})", "existing"),
              query(f"sum by (reason) ({a_rate('activestream_annotate_tasks_closed_total')})", "closed: {{reason}}"),
              query(f"sum({a_rate('activestream_annotate_requests_invalid_total')})", "requests invalid"),
              query(f"sum({a_rate('activestream_annotate_requests_expired_on_arrival_total')})",
                    "requests expired on arrival")),
        graph("Annotation latency", "From a label request to its first label produced (humans: minutes to days)", "s",
              *(query(f"histogram_quantile({q}, sum by (le) "
                      f"({a_rate('activestream_annotate_annotation_latency_seconds_bucket')}))", f"p{round(q * 100)}")
                for q in (0.5, 0.9, 0.99))),
        graph("Labels from annotations",
              "Per second: label records produced from annotations, annotations that gave no label (by reason), "
              "annotations deleted in Label Studio (their labels stand) and stale annotation reads passed over",
              "short",
              query(f"sum({a_rate('activestream_annotate_labels_produced_total')})", "labels produced"),
              query(f"sum by (reason) ({a_rate('activestream_annotate_annotations_ignored_total')})",
                    "ignored: {{reason}}"),
              query(f"sum({a_rate('activestream_annotate_annotations_deleted_total')})", "deleted"),
              query(f"sum({a_rate('activestream_annotate_annotations_stale_total')})", "stale reads")),
        graph("Webhooks and Label Studio errors",
              "Per second: webhook calls by outcome, and Label Studio calls that failed (retried)", "short",
              query(f"sum by (outcome) ({a_rate('activestream_annotate_webhooks_total')})", "webhooks {{outcome}}"),
              query(f"sum({a_rate('activestream_annotate_label_studio_errors_total')})", "Label Studio errors")),
        graph("Time since the last full poll",
              "Since every task's annotations were last read (the fallback for lost webhooks; every "
              "ACTIVESTREAM_ANNOTATE__POLL_INTERVAL_S when Label Studio answers)", "s",
              query(f"time() - max({a('activestream_annotate_poll_last_success_timestamp_seconds')} > 0)",
                    "since the last poll")),
    ]


def variables() -> list:
    return [
        dash.DatasourceVariable("datasource").label("Data source").type("prometheus")
        .current(VariableOption(text="Prometheus", value="prometheus")),
        dash.QueryVariable("job").label("Job").datasource(DATASOURCE)
        .query("label_values(activestream_ready, job)").refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
        .current(VariableOption(text="activestream", value="activestream")).sort(VariableSort.ALPHABETICAL_ASC),
        dash.QueryVariable("instance").label("Instance").datasource(DATASOURCE)
        .query('label_values(activestream_ready{job="$job"}, instance)').refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
        .multi(True).include_all(True).all_value(".*")
        .current(VariableOption(text="All", value="$__all")).sort(VariableSort.ALPHABETICAL_ASC),
        dash.CustomVariable("window").label("Window").values("15m,1h,6h,1d")
        .current(VariableOption(text="1h", value="1h")),
        dash.CustomVariable("annotate_job").label("Connector job").values("activestream-annotate")
        .current(VariableOption(text="activestream-annotate", value="activestream-annotate")),
    ]


def build() -> dash.Dashboard:
    board = (dash.Dashboard("activestream").uid(UID).tags(["activestream", "kafka", "active-learning"])
             .description("Online active learning on Kafka: throughput, queries, labels and cost, quality, "
                          "latency, Kafka and checkpoints, for one or many replicas")
             .refresh("30s").time("now-3h", "now").timezone("browser").tooltip(DashboardCursorSync.CROSSHAIR)
             .editable())
    for variable in variables():
        board = board.with_variable(variable)
    ids = iter(range(1, 1000))  # stable panel ids: links to a panel survive regeneration
    for title, panels in (("Overview", overview()), ("Throughput and queries", throughput()),
                          ("Labels and cost", labels()), ("Quality", quality()), ("Latency", latency()),
                          ("Kafka, checkpoints and process", kafka()), ("Scale-out", scale_out()),
                          ("Labelling in Label Studio", annotate())):
        board = board.with_row(dash.Row(title).id(next(ids)))
        for panel in panels:
            board = board.with_panel(panel.id(next(ids)))
    return board


def render() -> str:
    return JSONEncoder(sort_keys=True, indent=2).encode(build().build()) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
