import orjson

from consumer.recovery import Recovery
from tests.fakes import FakeMessage


def output(offset, value, headers=None):
    return FakeMessage("predictions", 0, offset, b"k", orjson.dumps(value), headers)


def test_outputs_are_matched_to_their_record_by_the_source_field():
    recovery = Recovery()
    recovery.add_outputs([output(0, {"id": "a", "label": 1, "source": "features:2:41"})], "prediction")
    recovery.add_outputs([output(0, {"id": "a", "prediction": 1, "source": "features:2:41"})], "request")
    assert recovery.expects("a")
    recorded = recovery.take(("features", 2, 41))
    assert recorded.prediction["label"] == 1 and recorded.request["prediction"] == 1
    assert not recovery.expects("a")


def test_outputs_written_before_the_source_field_are_read_by_their_header():
    recovery = Recovery()
    recovery.add_outputs([output(3, {"id": "b", "label": -1}, [("activestream.source", b"features:0:7")])],
                         "prediction")
    assert recovery.take(("features", 0, 7)).prediction["id"] == "b"


def test_outputs_without_a_source_and_retractions_are_skipped():
    recovery = Recovery()
    retraction = FakeMessage("label-requests", 0, 1, b"c", None)
    recovery.add_outputs([output(0, {"id": "c"}), output(1, [1, 2]), retraction], "request")
    assert len(recovery) == 0 and not recovery.expects("c")
