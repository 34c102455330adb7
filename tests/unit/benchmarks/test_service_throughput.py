import queue

import numpy as np
import orjson
import pytest

from benchmarks.service_throughput import BrokerRequests


def stats(fetch: int, produce: int) -> bytes:
    return orjson.dumps({"brokers": {"a": {"req": {"Fetch": fetch, "Produce": produce}},
                                     "b": {"req": {"Fetch": 1}}}})


def test_requests_per_second_over_the_window_from_the_samples_around_it():
    r = BrokerRequests()
    r.samples["c"] = [(0.0, (0, 0)), (1.0, (10, 4)), (2.0, stats(29, 8)), (3.0, stats(69, 8)), (4.0, (71, 8))]
    r.window = (1.5, 2.5)
    rates = r.per_second()
    assert np.allclose(rates["c"], [(70 - 10) / 2, (8 - 4) / 2])  # counts at 1.0, a report (read now) at 3.0
    r.window = (2.5, 3.5)
    assert np.allclose(r.per_second()["c"], [(71 - 30) / 2, 0])  # a report at 2.0, counts at 4.0


def test_a_client_without_a_sample_on_both_sides_is_left_out_and_the_count_is_incomplete():
    r = BrokerRequests()
    r.samples["early"] = [(0.0, (0, 0)), (1.0, (5, 0))]
    r.samples["late"] = [(0.2, (0, 0)), (3.0, (9, 1))]
    r.window = (0.5, 2.0)
    assert set(r.per_second()) == {"late"}
    assert not r.complete()
    r.samples["early"].append((2.5, (6, 0)))
    assert r.complete()


def test_samples_from_another_process_arrive_through_the_queue_with_every_broker_summed():
    q: queue.Queue = queue.Queue()
    BrokerRequests.report(q, "annotator", stats(3, 2))
    r = BrokerRequests()
    r.take(q)
    (sample,) = r.samples["annotator"]
    assert sample[1] == (4, 2)


def test_take_waits_for_a_sample_that_is_on_its_way():
    import threading

    q: queue.Queue = queue.Queue()
    threading.Timer(0.05, BrokerRequests.report, (q, "annotator", stats(1, 0))).start()
    r = BrokerRequests()
    r.take(q, wait_s=5.0)
    assert [s[1] for s in r.samples["annotator"]] == [(2, 0)]


def test_finish_waits_until_every_client_has_reported_after_the_window():
    import threading

    q: queue.Queue = queue.Queue()
    r = BrokerRequests(q)
    r.record("service: features", stats(1, 0))
    BrokerRequests.report(q, "annotator: consumer", stats(1, 0))
    r.begin()
    # one client reports after the window from this process, the other through the queue a little later
    threading.Timer(0.15, BrokerRequests.report, (q, "annotator: consumer", stats(5, 0))).start()
    polled = []

    class Client:  # a client of this process: polling it makes it report
        def poll(self, timeout: float) -> None:
            polled.append(timeout)
            r.record("service: features", stats(3, 0))

    r.finish(Client())
    assert r.complete() and polled
    assert set(r.per_second()) == {"service: features", "annotator: consumer"}


@pytest.mark.parametrize("fresh_first", [False, True])
def test_one_repetition_drains_the_backlog_with_each_pipe_and_the_restored_service_resumes_after_the_warmup(
        tmp_path, fresh_first):
    from confluent_kafka.admin import AdminClient

    from benchmarks.service_throughput import STAGES, Model, drain_backlog, make_records, stream
    from consumer.demo.broker import Broker

    values, truth = make_records(stream(21_000))  # a backlog long enough to outlast the 20 ms polls that time it
    with Broker() as broker:
        run = drain_backlog(broker.bootstrap, values[:1_000], values[1_000:], truth, Model("paa-1", {"delta": 0.1}),
                            tmp_path, broker.pid,
                            batch_size=500, fresh_first=fresh_first)
        # every drain's topics are gone once it is measured (the broker keeps records in memory)
        left = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10).topics
        assert not [t for t in left if t.split("-")[0] in ("src", "dst", "features", "predictions", "labels")]
    assert min(run.null, run.batched, run.service, run.cold) > 0
    # counted over the backlog only: a restored model that had asked again for the warm-up records, or
    # a restart that scored them again, would show here (and output_rate would find too many outputs)
    assert 0 < run.queries < run.cold_queries <= 1
    assert run.cpu.shape == (3, 6) and np.isfinite(run.cpu).all()  # /proc ticks: 10 ms, too coarse for more
    assert set(run.stages) <= {stage for _, _, stage in STAGES} and run.stages
    assert {"service: features", "service: predictions"} <= set(run.requests[2])


@pytest.mark.parametrize("batched", [False, True])
def test_each_null_pipe_copies_every_record_key_and_value_unchanged(batched):
    import threading

    from benchmarks.service_throughput import feed, make_records, null_pipe, stream
    from consumer.demo.broker import Broker, create_topics
    from tests.kafka_helpers import read_all

    values, _ = make_records(stream(3_000))
    with Broker() as broker:
        create_topics(broker.bootstrap, ["src", "dst"])
        feed(broker.bootstrap, "src", values)
        ready = threading.Event()
        null_pipe(broker.bootstrap, "src", "dst", len(values), ready, batched=batched, batch_size=500)
        copied = read_all(broker.bootstrap, "dst", expect=len(values))
        source = read_all(broker.bootstrap, "src", expect=len(values))
    assert ready.is_set() and len(copied) == len(values)
    assert sorted((m.key(), m.value()) for m in copied) == sorted((m.key(), m.value()) for m in source)


def test_a_backlog_too_short_to_time_is_refused_naming_the_flag():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "benchmarks.service_throughput", "--records", "5000"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "--records must be at least 10 batches (20,000" in out.stderr


def test_the_latency_reader_times_each_output_from_its_record_to_its_timestamp_and_to_its_arrival():
    import time

    from confluent_kafka import Producer

    from benchmarks.service_throughput import tailing
    from consumer.demo.broker import Broker, create_topics

    with Broker() as broker:
        create_topics(broker.bootstrap, ["outputs"])
        with tailing(broker.bootstrap, "outputs", 200, timeout_s=30) as latencies:
            p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 50})
            for _ in range(200):  # records 1 s old: every latency is at least that
                p.produce("outputs", value=b'{"ts":%r}' % (time.time() - 1.0))
            while len(p):  # not flush(): it would send at once, without the linger
                p.poll(0.01)
            stamped, received = latencies()
    assert len(stamped) == len(received) == 200
    assert (stamped > 0.998).all() and (stamped < 5).all()  # Kafka timestamps are whole milliseconds
    # received only once the 50 ms linger, the produce request and a fetch are over
    assert (received > stamped).all() and np.median(received - stamped) >= 0.045


def test_the_annotator_answers_each_request_with_its_ground_truth_and_skips_tombstones(kafka_bootstrap):
    from confluent_kafka import Producer

    from benchmarks.service_throughput import annotator_running, new_topics
    from tests.kafka_helpers import read_all

    topics = new_topics(kafka_bootstrap)
    truth = {f"r{i}": i % 3 for i in range(3_000)}
    with annotator_running(kafka_bootstrap, topics, truth):
        p = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 5})
        # a retracted request first: answered, it would take the place of the last answer read below
        p.produce(topics["label_requests"], key=b"r7", value=b"")
        for rid in truth:
            p.produce(topics["label_requests"], key=rid.encode(), value=b'{"id": "%s"}' % rid.encode())
        p.flush(10)
        answers = read_all(kafka_bootstrap, topics["labels"], expect=len(truth))
    got = {m.key().decode(): orjson.loads(m.value()) for m in answers}
    assert len(answers) == len(truth)
    assert got == {rid: {"id": rid, "label": label} for rid, label in truth.items()}


def test_the_learner_is_any_spelling_of_a_learner_with_a_query_knob_or_the_default():
    from benchmarks.service_throughput import service_learner

    assert service_learner("PAA_I") == "paa-1"
    assert service_learner("default") == "lr-ada-entropy"  # the service's records are 2²⁰ wide
    with pytest.raises(ValueError, match="unknown learner"):
        service_learner("paa-9")
    with pytest.raises(ValueError, match="no query knob"):
        service_learner("perceptron")
