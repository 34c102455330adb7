"""``activestream replay --from-kafka``: a recorded features topic replayed through a learner against
the embedded broker gives what the same records give replayed from a file."""

from __future__ import annotations

import contextlib
import io
import json
import random
import sys
import uuid
from pathlib import Path

import orjson
import pytest
from confluent_kafka import Producer

from consumer.cli import main
from consumer.demo.broker import create_topics
from learners.datasets import read_libsvm
from tests.terminal import run_on_a_terminal

ROWS = 3000
T0 = 1_750_000_000.0  # the records' times: one second apart, in file order


def _replay(*args: str) -> tuple[int, dict | None, str]:
    """``activestream replay --json ARGS`` in this process (the kernels are loaded once): exit code,
    the report, what went to stderr."""
    out, err = io.BytesIO(), io.StringIO()
    stdout = io.TextIOWrapper(out, encoding="utf-8")  # the report is written to sys.stdout.buffer
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(err):
        code = main(["replay", "--json", *args])
        stdout.flush()
    return code, json.loads(out.getvalue()) if code == 0 else None, err.getvalue()


@pytest.fixture(scope="module")
def a8a_rows(datasets_dir: Path, tmp_path_factory) -> tuple[Path, list]:
    """The first ROWS rows of a8a as a LIBSVM file, and as (id, label, indices, values)."""
    data = read_libsvm(datasets_dir / "a8a.xz")
    path = tmp_path_factory.mktemp("a8a") / "a8a-head.txt"
    lines, rows = [], []
    for i in range(ROWS):
        idx, val = data.rows.row(i)
        label = int(data.labels[i])
        lines.append(f"{label} " + " ".join(f"{j + 1}:{v:g}" for j, v in zip(idx.tolist(), val.tolist(), strict=True)))
        rows.append((f"a8a-{i}", label, idx.tolist(), val.tolist()))
    path.write_text("\n".join(lines) + "\n")
    return path, rows


def _produce(bootstrap: str, topic: str, messages: list[tuple[str, bytes, float]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for key, value, ts in messages:
        producer.produce(topic, key=key.encode(), value=value, timestamp=int(ts * 1000))
    assert producer.flush(30) == 0


def _inline_topic(bootstrap: str, prefix: str, rows: list) -> str:
    """A new one-partition topic holding ``rows`` with their labels inline, one second apart."""
    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    create_topics(bootstrap, [topic], 1)
    _produce(bootstrap, topic, [
        (rid, orjson.dumps({"id": rid, "features": {"indices": idx, "values": val}, "label": label}), T0 + i)
        for i, (rid, label, idx, val) in enumerate(rows)])
    return topic


def _same(kafka: dict, file: dict) -> None:
    for key in ("examples", "f1", "accuracy", "query_ratio", "queries", "mistakes", "auc_roc", "classes"):
        assert kafka[key] == file[key], (key, kafka.get("kafka"))
    assert kafka["params"] == file["params"]


def test_a_topic_across_partitions_with_a_labels_topic_replays_as_its_file(kafka_bootstrap, a8a_rows):
    path, rows = a8a_rows
    tag = uuid.uuid4().hex[:8]
    features, labels = f"replay-features-{tag}", f"replay-labels-{tag}"
    create_topics(kafka_bootstrap, [features], 3)
    create_topics(kafka_bootstrap, [labels], 2)
    records = [(rid, orjson.dumps({"id": rid, "features": {"indices": idx, "values": val}, "ts": T0 + i}), T0 + i)
               for i, (rid, _, idx, val) in enumerate(rows)]
    # what the service would refuse, and a record nobody labelled: both counted and left out
    poison = [("bad-1", b"{not json", T0 + 0.5), ("bad-2", orjson.dumps({"id": "bad-2"}), T0 + 1.5)]
    unlabelled = [("nobody", orjson.dumps({"id": "nobody", "features": {"indices": [3], "values": [1.0]}}), T0 + 2.5)]
    _produce(kafka_bootstrap, features, records + poison + unlabelled)
    answers = [(rid, orjson.dumps({"id": rid, "label": label}), T0) for rid, label, _, _ in rows]
    random.Random(7).shuffle(answers)  # labels come back in any order
    # a second, different answer for some ids, later: the first label counts, as the service's default applies it
    flipped = [(rid, orjson.dumps({"id": rid, "label": -label}), T0 + 1) for rid, label, _, _ in rows[:300]]
    _produce(kafka_bootstrap, labels, answers + flipped + [("x", b"[]", T0)])

    flags = ["--learner", "paa-1", "--in-order", "--param", "delta=0.25"]
    code, kafka, err = _replay("--from-kafka", kafka_bootstrap, "--topic", features, "--labels-topic", labels, *flags)
    assert code == 0, err
    code, file, err = _replay("--data", str(path), *flags)
    assert code == 0, err
    _same(kafka, file)
    assert kafka["data"] == [f"kafka:{features}"]
    source = kafka["kafka"]
    assert (source["records"], source["replayed"], source["unlabelled"]) == (ROWS + 3, ROWS, 1)
    assert source["rejected"] == {"malformed_json": 1, "missing_features": 1}
    assert source["labels_read"] == ROWS + 301
    assert source["labels_rejected"] == {"not_an_object": 1}
    assert 0.0 < kafka["query_ratio"] < 1.0 and kafka["f1"] > 0.5  # a run that learnt, not an empty one


def test_inline_labels_with_permutations_and_a_start_time(kafka_bootstrap, a8a_rows):
    path, rows = a8a_rows
    topic = _inline_topic(kafka_bootstrap, "replay-inline", rows)

    flags = ["--learner", "soal", "--permutations", "3", "--param", "n_features=123"]
    code, kafka, err = _replay("--from-kafka", kafka_bootstrap, "--topic", topic, *flags)
    assert code == 0, err
    code, file, err = _replay("--data", str(path), *flags)
    assert code == 0, err
    _same(kafka, file)
    assert kafka["kafka"]["unlabelled"] == 0 and kafka["kafka"]["labels_read"] == 0

    # from a time on: the messages stamped at or after it, by the broker's index
    half = ROWS // 2
    code, later, err = _replay("--from-kafka", kafka_bootstrap, "--topic", topic, "--since", str(T0 + half),
                               "--learner", "paa-1", "--in-order")
    assert code == 0, err
    assert later["examples"] == ROWS - half and later["kafka"]["records"] == ROWS - half
    code, window, err = _replay("--from-kafka", kafka_bootstrap, "--topic", topic, "--since", str(T0 + 100),
                                "--until", "2025-06-15T15:16:40Z", "--learner", "paa-1", "--in-order")
    assert code == 0, err
    assert window["examples"] == 500  # stamped T0 + 100 s up to T0 + 600 s (15:16:40 UTC)


def test_refusals_name_what_is_missing(kafka_bootstrap):
    topic = f"replay-nolabels-{uuid.uuid4().hex[:8]}"
    create_topics(kafka_bootstrap, [topic], 1)
    _produce(kafka_bootstrap, topic, [(f"r{i}", orjson.dumps({"id": f"r{i}", "features": [1.0, 2.0]}), T0 + i)
                                      for i in range(5)])
    code, _, err = _replay("--from-kafka", kafka_bootstrap, "--topic", topic, "--learner", "paa-1")
    # dense records need the model's dimension, as the service does
    assert code == 2 and "no usable record" in err and "'dimension_mismatch': 5" in err
    code, _, err = _replay("--from-kafka", kafka_bootstrap, "--topic", topic, "--learner", "paa-1",
                           "--param", "n_features=2")
    assert code == 2 and "no usable record" in err and "5 unlabelled" in err and "labels topic" in err

    code, _, err = _replay("--from-kafka", kafka_bootstrap, "--learner", "paa-1")
    assert code == 2 and "--from-kafka needs --topic" in err

    code, _, err = _replay("--data", "synthetic:sparse?n=10", "--topic", topic, "--learner", "paa-1")
    assert code == 2 and "go with --from-kafka" in err


def test_a_topic_replay_on_a_terminal_draws_the_reading_and_the_replay(kafka_bootstrap, a8a_rows):
    topic = _inline_topic(kafka_bootstrap, "replay-bar", a8a_rows[1])
    code, drawn = run_on_a_terminal([sys.executable, "-m", "consumer", "replay", "--from-kafka", kafka_bootstrap,
                                     "--topic", topic, "--learner", "paa-1"], Path(__file__).resolve().parents[2])
    assert code == 0, drawn[-2000:]
    assert "reading" in drawn and "records/s" in drawn, drawn[-2000:]  # the topic's records, as they are read
    assert "rows/s" in drawn and "accuracy=" in drawn, drawn[-2000:]  # then the replay
