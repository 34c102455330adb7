"""Label requests into task data, annotations into label records."""

from __future__ import annotations

import pytest

from consumer.annotate.mapping import (
    ID_FIELD,
    BadRequest,
    annotation_label,
    choices_of,
    feature_table,
    label_config,
    label_record,
    parse_request,
    task_data,
)

REQUEST = {"v": 1, "id": "order-17", "features": {"indices": [3, 17], "values": [1.0, 0.5]}, "prediction": 1,
           "score": 0.42, "probability": 0.7, "uncertainty": 0.704, "cost": 1.0, "requested_at": 1700000000.31,
           "expires_at": 1700003600.31, "model_version": 1302, "source": "features:0:4711"}


def _annotation(choice: str, **extra) -> dict:
    return {"id": 5, "result": [{"from_name": "label", "to_name": "summary", "type": "choices",
                                 "value": {"choices": [choice]}}], **extra}


def test_task_data_sparse_request_carries_id_table_prediction_uncertainty_expiry() -> None:
    data = task_data(parse_request(REQUEST))
    assert data[ID_FIELD] == "order-17"
    assert data["features"] == {"3": 1.0, "17": 0.5}
    assert (data["prediction"], data["uncertainty"], data["expires_at"]) == (1, 0.704, 1700003600.31)
    assert "prediction 1" in data["summary"] and "uncertainty 0.704" in data["summary"]
    assert "expires 2023-11-14T23:13:20+00:00" in data["summary"]


@pytest.mark.parametrize(("features", "table"), [
    ([0.5, 0.0, 2.0], {"0": 0.5, "1": 0.0, "2": 2.0}),
    ({"country": "FR", "amount": 12.5}, {"country": "FR", "amount": 12.5}),
    ({"indices": [4], "values": [1.5]}, {"4": 1.5}),
])
def test_feature_table_each_kind_shown_by_name_or_position(features, table) -> None:
    assert feature_table(features) == table


@pytest.mark.parametrize(("value", "why"), [
    ([1, 2], "not a JSON object"), ({"features": [1]}, "missing id"), ({"id": "a"}, "missing features"),
    ({"id": "a", "features": [1], "expires_at": "soon"}, "expires_at is not a number"),
])
def test_parse_request_malformed_raises_with_reason(value, why) -> None:
    with pytest.raises(BadRequest, match=why):
        parse_request(value)


def test_label_config_lists_every_class_and_is_read_back() -> None:
    config = label_config(["spam", "ham", 'a "quoted" <one>'])
    assert choices_of(config) == ["spam", "ham", 'a "quoted" <one>']
    assert choices_of("<View><Choices name='other' toName='x'/></View>") is None
    assert choices_of("not xml") is None


def test_annotation_label_maps_choice_text_back_to_the_class_value() -> None:
    assert annotation_label(_annotation("-1"), [-1, 1]) == -1
    assert annotation_label(_annotation("1"), [-1, 1]) == 1
    assert annotation_label(_annotation("spam"), ["ham", "spam"]) == "spam"


def test_annotation_label_skipped_or_foreign_choice_gives_none() -> None:
    assert annotation_label(_annotation("1", was_cancelled=True), [-1, 1]) is None
    assert annotation_label(_annotation("2"), [-1, 1]) is None
    assert annotation_label({"id": 1, "result": []}, [-1, 1]) is None


def test_label_record_cost_fixed_or_lead_time() -> None:
    ann = _annotation("1", lead_time=12.5)
    assert label_record("a", 1, ann, "fixed", 0.8, 2.0) == {"id": "a", "label": 1, "cost": 0.8}
    assert label_record("a", 1, ann, "lead_time", 0.8, 2.0) == {"id": "a", "label": 1, "cost": 25.0}
    assert label_record("a", 1, {"id": 1}, "lead_time", 0.8, 2.0)["cost"] == 0.0
