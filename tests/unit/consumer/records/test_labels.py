"""The careful label decoder: every rejection reason."""

import pytest

from consumer.errors import InvalidRecord
from consumer.records import decode_label


@pytest.mark.parametrize("value, reason", [
    (b'{"id": "a"}', "missing_label"), (b'{"id": "a", "label": 3}', "unknown_class"),
    (b'{"id": "a", "label": [1]}', "unknown_class"), (b'{"id": "a", "label": 1, "cost": -1}', "bad_cost"),
    (b'{"label": 1}', "missing_id"),
])
def test_bad_labels_are_rejected_with_their_reason(value, reason):
    with pytest.raises(InvalidRecord) as err:
        decode_label(value, {-1: -1, 1: 1}, 0.0)
    assert err.value.reason == reason


def test_label_with_cost():
    lab = decode_label(b'{"id": "a", "label": "spam", "cost": 2.5}', {"ham": -1, "spam": 1}, 0.0)
    assert (lab.id, lab.label, lab.cost) == ("a", "spam", 2.5)
