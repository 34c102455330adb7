"""What the input schemas accept, the decoders accept: records generated from consumer/schemas with
hypothesis-jsonschema get one verdict from every decoding path (tests/verdicts.py), an acceptance
unless they break one of the rules each schema's description names as beyond JSON Schema (checked
here without the decoders' code), and the service's outputs for them validate.

The generating schemas are the shipped ones fitted to the model under test (its dimension, its
classes): only narrowed, and every generated record is checked against the shipped schema too.
The example count follows the hypothesis profile (tests/conftest.py)."""

from __future__ import annotations

import copy
import json
import math
import tempfile
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

from consumer.records import MAX_TS
from learners.hashing import hash_features
from tests.unit.consumer.conftest import Harness
from tests.unit.consumer.test_schemas import outputs_validate, schema, validator
from tests.verdicts import CLASSES, N_FEATURES, check_feature, feature_verdicts, label_verdicts, one_verdict

_SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
# FORMATS below replaces hypothesis-jsonschema's own date-times, on purpose
pytestmark = pytest.mark.filterwarnings("ignore:Overriding standard format 'date-time'")

# RFC 3339 date-times around the schemas' range, with what RFC 3339 allows and the pattern refuses
# (t and z in lower case, a leap second): hypothesis-jsonschema's own draws years 0 to 9999, of which
# the pattern would keep too few
_DATE_TIMES = st.builds(
    lambda moment, t, second, fraction, offset: f"{moment:%Y-%m-%d}{t}{moment:%H:%M}:{second}{fraction}{offset}",
    st.datetimes(datetime(1969, 12, 30), datetime(2200, 1, 2, 23, 59, 59)), st.sampled_from("TTTt"),
    st.integers(0, 60).map("{:02d}".format), st.one_of(st.just(""), st.from_regex(r"\A\.[0-9]{1,12}\Z")),
    st.one_of(st.sampled_from(["Z", "Z", "z"]), st.builds("{}{:02d}:{:02d}".format, st.sampled_from("+-"),
                                                          st.integers(0, 23), st.integers(0, 59))))
FORMATS = {"date-time": _DATE_TIMES}


def fitted_features(n_features: int, largest: float | None = None) -> dict:
    """feature.v1.json for a model of ``n_features``: dense lists of that length, indices below it;
    feature values within +-``largest`` if given."""
    fitted = copy.deepcopy(schema("feature.v1.json"))
    dense, sparse, named = fitted["properties"]["features"]["oneOf"]
    assert dense["type"] == "array" and "indices" in sparse["properties"]
    dense["minItems"] = dense["maxItems"] = n_features
    sparse["properties"]["indices"]["items"]["maximum"] = n_features - 1
    if largest is not None:
        for values in (dense["items"], sparse["properties"]["values"]["items"], named["additionalProperties"]):
            values.update(minimum=-largest, maximum=largest)  # on numbers only: named features' strings stay
    return fitted


def fitted_labels(classes: list) -> dict:
    """label.v1.json with the model's classes drawn as often as any other label."""
    fitted = copy.deepcopy(schema("label.v1.json"))
    fitted["properties"]["label"] = {"anyOf": [{"enum": classes}, fitted["properties"]["label"]]}
    return fitted


def _text(obj: dict, ascii_only: bool) -> bytes:
    # json, not orjson: numbers beyond 64 bits in unknown keys; \u escapes or raw UTF-8
    return json.dumps(obj, ensure_ascii=ascii_only).encode()


def _overflows(indices, values) -> bool:
    """Whether the values summed into one coordinate, in the order they come, leave a float64."""
    sums: dict[int, float] = {}
    for i, x in zip(indices, values, strict=True):
        sums[i] = sums.get(i, 0.0) + float(x)
    return not all(map(math.isfinite, sums.values()))


def _time_beyond(obj: dict) -> bool:
    """An ISO time the pattern lets through whose offset moves it out of [0, MAX_TS) UTC."""
    ts = obj.get("ts")
    if not isinstance(ts, str):
        return False
    seconds = datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()  # the pattern's times all parse
    return not 0 <= seconds < MAX_TS


def feature_beyond_schema(obj: dict, n_features: int) -> set[str]:
    """The reasons the decoders may give a record the fitted schema accepts: the rules beyond JSON
    Schema that feature.v1.json's description names (none: the record must be accepted)."""
    reasons = set()
    features = obj["features"]
    if isinstance(features, dict) and set(features) == {"indices", "values"}:
        if len(features["indices"]) != len(features["values"]):
            reasons.add("bad_features")
        elif _overflows(features["indices"], features["values"]):
            reasons.add("bad_value")
    elif isinstance(features, dict) and _overflows(*hash_features(features, n_features)):  # named, hashed together
        reasons.add("bad_value")
    if _time_beyond(obj):
        reasons.add("bad_timestamp")
    return reasons


FEATURE_SCHEMA = fitted_features(N_FEATURES)
LABEL_SCHEMA = fitted_labels(list(CLASSES))


@_SETTINGS
@given(from_schema(FEATURE_SCHEMA, custom_formats=FORMATS), st.booleans())
def test_schemas_generated_feature_records_pass_every_decoder(obj, ascii_only):
    validator("feature.v1.json").validate(obj)
    value = _text(obj, ascii_only)
    verdict = one_verdict(feature_verdicts(value))
    beyond = feature_beyond_schema(obj, N_FEATURES)
    event(f"rejected: {verdict}" if isinstance(verdict, str) else "accepted")
    if beyond:
        assert verdict in beyond, (value, verdict)
        return
    assert not isinstance(verdict, str), (value, verdict)
    assert verdict[0] == str(obj["id"])
    check_feature(value)  # the numbers are orjson's, bit for bit, on every path


@_SETTINGS
@given(from_schema(LABEL_SCHEMA, custom_formats=FORMATS), st.booleans())
def test_schemas_generated_label_records_pass_every_decoder(obj, ascii_only):
    validator("label.v1.json").validate(obj)
    value = _text(obj, ascii_only)
    verdict = one_verdict(label_verdicts(value))
    event(f"rejected: {verdict}" if isinstance(verdict, str) else "accepted")
    beyond = set()
    if obj["label"] not in CLASSES:  # 1.0 is the class 1, "1" is not
        beyond.add("unknown_class")
    if _time_beyond(obj):
        beyond.add("bad_timestamp")
    if beyond:
        assert verdict in beyond, (value, verdict)
        return
    assert not isinstance(verdict, str), (value, verdict)
    rid, _, label, cost, ts = verdict
    assert rid == str(obj["id"]) and label == obj["label"]
    assert cost == (None if obj.get("cost") is None else np.float64(obj["cost"]).tobytes())
    if type(obj.get("ts")) in (int, float):
        assert ts == np.float64(obj["ts"]).tobytes()


# a service per example (about 0.1 s to make): a quarter of the profile's examples. Feature values
# stay below 1e300: from 2**1023 on, the learner's standard scaling makes a score NaN, written as null
# (test_schemas.py::test_schemas_prediction_of_a_value_near_the_float64_limit, a known failure)
@settings(_SETTINGS, max_examples=max(10, settings.default.max_examples // 4))
@given(records=st.lists(from_schema(fitted_features(4, largest=1e300), custom_formats=FORMATS), min_size=1, max_size=8),
       answers=st.lists(st.sampled_from(["ham", "spam"]), min_size=1, max_size=8))
def test_schemas_generated_records_outputs_validate(records, answers):
    """Records generated from the feature schema (some of them dead letters) through the service loop,
    whose model learns its classes from the answers: predictions of no class, then of string ones;
    every output validates."""
    with tempfile.TemporaryDirectory() as tmp:
        h = Harness(Path(tmp), classes=None, learner="lr-ada-entropy", learner_params={})
        h.service.start()
        for obj in records:
            h.broker.append("features", _text(obj, False), b"key")
        h.service.run_once()
        for rid, label in zip(h.requested_ids(), answers, strict=False):
            h.label(rid, label)
        h.service.run_once()
        for obj in records:  # again, to a model that may know its classes now
            h.broker.append("features", _text(obj, True), b"key")
        h.service.run_once()
        counts = outputs_validate(h)
        assert counts["predictions"] + counts["dead-letters"] == 2 * len(records)
