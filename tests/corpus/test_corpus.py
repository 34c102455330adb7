"""Every kind of bad record in the corpus gets its reason from every decoding path."""

import pytest

from consumer.records import REASONS
from tests.corpus.corpus import CLASSES, FEATURES, LABELS
from tests.verdicts import feature_verdicts, label_verdicts, one_verdict


def test_corpus_kinds_cover_every_reason_and_are_many():
    assert len(FEATURES) + len(LABELS) >= 60
    assert {k.reason for k in FEATURES} | {k.reason for k in LABELS} == set(REASONS)
    assert len({k.kind for k in FEATURES}) == len(FEATURES) and len({k.kind for k in LABELS}) == len(LABELS)


@pytest.mark.parametrize("kind", FEATURES, ids=[k.kind for k in FEATURES])
def test_corpus_feature_kind_rejected_with_its_reason_on_every_path(kind):
    assert one_verdict(feature_verdicts(kind.value)) == kind.reason


@pytest.mark.parametrize("kind", LABELS, ids=[k.kind for k in LABELS])
def test_corpus_label_kind_rejected_with_its_reason_on_every_path(kind):
    assert one_verdict(label_verdicts(kind.value, CLASSES)) == kind.reason
