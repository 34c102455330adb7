"""Settings from the environment; bad values fail at start-up naming the variable."""

import pytest

from consumer.config import load_settings, unknown_variables
from consumer.errors import ConfigError
from consumer.learner import build_learner


def test_pinned_variable_names_are_read(monkeypatch, tmp_path):
    monkeypatch.setenv("ACTIVESTREAM_BOOTSTRAP_SERVERS", "kafka-1:9092,kafka-2:9092")
    monkeypatch.setenv("ACTIVESTREAM_LEARNER", "PAA-II")
    monkeypatch.setenv("ACTIVESTREAM_CHECKPOINT_DIR", str(tmp_path))
    monkeypatch.setenv("ACTIVESTREAM_METRICS_PORT", "9200")
    s = load_settings()
    assert s.bootstrap_servers == "kafka-1:9092,kafka-2:9092" and s.learner == "PAA-II"
    assert s.checkpoint_dir == tmp_path and s.metrics_port == 9200


def test_nested_variables_and_kafka_passthrough(monkeypatch):
    monkeypatch.setenv("ACTIVESTREAM_CHECKPOINT__EVERY_S", "5")
    monkeypatch.setenv("ACTIVESTREAM_TOPICS__FEATURES", "clicks")
    monkeypatch.setenv("ACTIVESTREAM_KAFKA__SASL_MECHANISM", "SCRAM-SHA-512")
    monkeypatch.setenv("ACTIVESTREAM_KAFKA", '{"security.protocol": "SASL_SSL"}')
    monkeypatch.setenv("ACTIVESTREAM_KAFKA_CONSUMER__FETCH_WAIT_MAX_MS", "20")
    s = load_settings()
    assert s.checkpoint.every_s == 5 and s.topics.features == "clicks"
    assert s.kafka_consumer == {"fetch.wait.max.ms": "20"}


def test_the_labels_consumer_takes_its_own_properties_over_the_consumers(monkeypatch):
    from consumer.kafka import consumer_config

    monkeypatch.setenv("ACTIVESTREAM_KAFKA_CONSUMER__FETCH_WAIT_MAX_MS", "10")
    monkeypatch.setenv("ACTIVESTREAM_KAFKA_LABELS_CONSUMER__FETCH_WAIT_MAX_MS", "100")
    s = load_settings()
    assert consumer_config(s, "labels")["fetch.wait.max.ms"] == "100"
    assert consumer_config(s, "features")["fetch.wait.max.ms"] == "10"
    assert consumer_config(s, "recovery")["fetch.wait.max.ms"] == "10"


def test_kafka_json_mapping(monkeypatch):
    monkeypatch.setenv("ACTIVESTREAM_KAFKA", '{"security.protocol": "SASL_SSL", "sasl.username": "u"}')
    assert load_settings().kafka == {"security.protocol": "SASL_SSL", "sasl.username": "u"}


@pytest.mark.parametrize("name, value", [
    ("ACTIVESTREAM_BATCH_SIZE", "-5"),
    ("ACTIVESTREAM_METRICS_PORT", "99999"),
    ("ACTIVESTREAM_CHECKPOINT__EVERY_S", "soon"),
    ("ACTIVESTREAM_LABELS__DUPLICATES", "sometimes"),
    ("ACTIVESTREAM_LABELS__TTL_S", "0"),
    ("ACTIVESTREAM_N_FEATURES", "0"),
    ("ACTIVESTREAM_QUERY_RATE_TARGET", "1.5"),
    ("ACTIVESTREAM_BUDGET_WARMUP", "-1"),
    ("ACTIVESTREAM_ROLE", "leader"),
    ("ACTIVESTREAM_MODEL__PUBLISH_EVERY_S", "0"),
    ("ACTIVESTREAM_MODEL__CHUNK_BYTES", "2000000000"),
])
def test_a_bad_value_names_its_variable(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=name):
        load_settings()


@pytest.mark.parametrize("variable", ["ACTIVESTREAM_KAFKA", "ACTIVESTREAM_KAFKA_CONSUMER",
                                      "ACTIVESTREAM_KAFKA_LABELS_CONSUMER"])
@pytest.mark.parametrize(("props", "why"), [
    ('{"enable.auto.commit": "true"}', "enable.auto.commit must stay false"),
    ('{"partition.assignment.strategy": "cooperative-sticky"}', "cooperative rebalancing is not supported"),
])
def test_consumer_properties_that_would_break_the_guarantees_are_refused(monkeypatch, variable, props, why):
    monkeypatch.setenv(variable, props)
    with pytest.raises(ConfigError, match=f"{variable}: .*{why}"):
        load_settings()


def test_an_eager_assignment_strategy_passes_through(monkeypatch):
    monkeypatch.setenv("ACTIVESTREAM_KAFKA_CONSUMER", '{"partition.assignment.strategy": "roundrobin"}')
    assert load_settings().kafka_consumer == {"partition.assignment.strategy": "roundrobin"}


def test_unknown_variable_is_refused(monkeypatch):
    monkeypatch.setenv("ACTIVESTREAM_LABELS__TTL", "10")
    with pytest.raises(ConfigError, match="ACTIVESTREAM_LABELS__TTL"):
        load_settings()


def test_a_budget_warmup_needs_a_rate_and_reaches_the_controller(monkeypatch):
    from consumer.budget import controller_for

    monkeypatch.setenv("ACTIVESTREAM_BUDGET_WARMUP", "200")
    with pytest.raises(ConfigError, match="ACTIVESTREAM_BUDGET_WARMUP needs ACTIVESTREAM_QUERY_RATE_TARGET"):
        load_settings()
    monkeypatch.setenv("ACTIVESTREAM_QUERY_RATE_TARGET", "0.05")
    settings = load_settings()
    assert settings.budget_warmup == 200 and controller_for(settings, [-1, 1]).warmup == 200
    assert controller_for(settings, [-1, 1]).warmup_boost is None  # unset: every record
    monkeypatch.setenv("ACTIVESTREAM_BUDGET_WARMUP_BOOST", "4")
    assert controller_for(load_settings(), [-1, 1]).warmup_boost == 4.0
    monkeypatch.setenv("ACTIVESTREAM_BUDGET_WARMUP_BOOST", "0.5")
    with pytest.raises(ConfigError, match="BUDGET_WARMUP_BOOST"):
        load_settings()


def test_expiry_default_needs_a_label(monkeypatch):
    monkeypatch.setenv("ACTIVESTREAM_LABELS__ON_EXPIRY", "default")
    with pytest.raises(ConfigError, match="expiry_label"):
        load_settings()


def test_a_clock_tolerance_longer_than_the_budget_window_names_both(monkeypatch):
    monkeypatch.setenv("ACTIVESTREAM_LABELS__BUDGET_WINDOW_S", "10")
    with pytest.raises(ConfigError, match=r"CLOCK_TOLERANCE_S \(300 s\) is longer than .*BUDGET_WINDOW_S \(10 s\)"):
        load_settings()  # the default tolerance, 300 s
    monkeypatch.setenv("ACTIVESTREAM_LABELS__CLOCK_TOLERANCE_S", "10")
    assert load_settings().labels.clock_tolerance_s == 10.0


@pytest.mark.parametrize(("variable", "name"), [("FEATURES", "^orders.*"), ("PREDICTIONS", "a b"),
                                                ("LABELS", ""), ("DEAD_LETTERS", "x" * 250), ("LABEL_REQUESTS", "..")])
def test_topic_names_must_be_legal_kafka_names(monkeypatch, variable, name):
    monkeypatch.setenv(f"ACTIVESTREAM_TOPICS__{variable}", name)
    with pytest.raises(ConfigError, match=f"ACTIVESTREAM_TOPICS__{variable}: .*not a Kafka topic name"):
        load_settings()


def test_topics_must_be_distinct(monkeypatch):
    monkeypatch.setenv("ACTIVESTREAM_TOPICS__LABELS", "features")
    with pytest.raises(ConfigError, match="ACTIVESTREAM_TOPICS"):
        load_settings()


def test_the_model_and_lease_topics_are_distinct_from_the_others(monkeypatch):
    monkeypatch.setenv("ACTIVESTREAM_TOPICS__MODEL", "predictions")
    with pytest.raises(ConfigError, match=r"ACTIVESTREAM_TOPICS.*distinct"):
        load_settings()


def test_the_scale_out_settings_are_read(monkeypatch):
    monkeypatch.setenv("ACTIVESTREAM_ROLE", "scorer")
    monkeypatch.setenv("ACTIVESTREAM_TOPICS__MODEL", "fraud-model")
    monkeypatch.setenv("ACTIVESTREAM_MODEL__PUBLISH_EVERY_S", "0.5")
    monkeypatch.setenv("ACTIVESTREAM_MODEL__PUBLISH_EVERY_LABELS", "200")
    s = load_settings()
    assert (s.role, s.topics.model, s.topics.lease) == ("scorer", "fraud-model", "trainer-lease")
    assert (s.model.publish_every_s, s.model.publish_every_labels, s.model.full_every) == (0.5, 200, 50)
    assert load_settings(role="all").role == "all"


def test_without_a_learner_the_service_takes_the_default_for_its_classes(tmp_path):
    # classes unset: -1 and 1
    # N_FEATURES unset: hashed names, 2^20 wide, past what the kernel learner maps
    assert build_learner(load_settings(checkpoint_dir=tmp_path)).name == "lr-ada-entropy"
    assert build_learner(load_settings(checkpoint_dir=tmp_path, classes=["ham", "spam"])).name == "lr-ada-entropy"
    assert build_learner(load_settings(checkpoint_dir=tmp_path, n_features=30)).name == "lr-ada-entropy-rff"
    three = build_learner(load_settings(checkpoint_dir=tmp_path, classes=["a", "b", "c"]))
    assert three.name == "mlr-factored-entropy" and three.multiclass and list(three.classes) == ["a", "b", "c"]


def test_learner_errors_name_their_variable():
    with pytest.raises(ConfigError, match="ACTIVESTREAM_LEARNER: unknown learner 'paa-9'"):
        build_learner(load_settings(learner="paa-9"))
    with pytest.raises(ConfigError, match=r"ACTIVESTREAM_LEARNER_PARAMS: .*gamma"):
        build_learner(load_settings(learner="paa-1", learner_params={"gamma": 1}))
    with pytest.raises(ConfigError, match=r"ACTIVESTREAM_LEARNER_PARAMS: .*C must be"):
        build_learner(load_settings(learner="paa-1", learner_params={"C": -1}))
    with pytest.raises(ConfigError, match="ACTIVESTREAM_CLASSES"):
        build_learner(load_settings(learner="paa-1", classes=[1, 2, 3]))  # a binary learner, three classes
    with pytest.raises(ConfigError, match="ACTIVESTREAM_N_FEATURES"):
        build_learner(load_settings(learner_params={"n_features": 3}))


def test_learner_params_are_case_insensitive_and_json_typed(monkeypatch):
    monkeypatch.setenv("ACTIVESTREAM_LEARNER", "paa-1")
    monkeypatch.setenv("ACTIVESTREAM_LEARNER_PARAMS__C", "0.25")
    monkeypatch.setenv("ACTIVESTREAM_LEARNER_PARAMS__DELTA", "0.5")
    learner = build_learner(load_settings())
    assert learner.rule.C == 0.25 and learner.query.delta == 0.5


def test_cli_run_reports_config_errors_and_exits_2(monkeypatch, capsys):
    from consumer.cli import main

    monkeypatch.setenv("ACTIVESTREAM_BATCH_SIZE", "zero")
    assert main(["run"]) == 2
    assert "ACTIVESTREAM_BATCH_SIZE" in capsys.readouterr().err


def test_a_batch_holds_up_to_2000_records_unless_told_otherwise(monkeypatch):
    # fewer, larger batches under a backlog: one produce request per topic and batch (docs/internals.md)
    assert load_settings().batch_size == 2000
    monkeypatch.setenv("ACTIVESTREAM_BATCH_SIZE", "300")
    assert load_settings().batch_size == 300


def test_a_misspelt_setting_stops_start_up_naming_it_and_the_closest_setting(monkeypatch):
    monkeypatch.setenv("ACTIVESTREAM_QUERY_RATE", "0.1")
    monkeypatch.setenv("ACTIVESTREAM_CHECKPOINT__EVRY_S", "5")
    with pytest.raises(ConfigError) as info:
        load_settings()
    message = str(info.value)
    assert "ACTIVESTREAM_QUERY_RATE: no such setting (did you mean ACTIVESTREAM_QUERY_RATE_TARGET?)" in message
    assert ("ACTIVESTREAM_CHECKPOINT__EVRY_S: no such setting (did you mean ACTIVESTREAM_CHECKPOINT__EVERY_S?)"
            in message)


def test_the_variables_that_are_not_settings_and_the_mappings_keys_are_known():
    environ = {"ACTIVESTREAM_KAFKA__SASL_MECHANISM": "PLAIN", "ACTIVESTREAM_LABELS__BUDGET": "5",
               "ACTIVESTREAM_LABELS": "{}", "ACTIVESTREAM_ANNOTATE__URL": "http://ls", "ACTIVESTREAM_AOT": "0",
               "ACTIVESTREAM_DATASETS": "/d", "OTHER": "x"}
    assert unknown_variables(environ) == []
    assert unknown_variables({"ACTIVESTREAM_LABEL__BUDGET": "5"}) == ["ACTIVESTREAM_LABEL__BUDGET"]
