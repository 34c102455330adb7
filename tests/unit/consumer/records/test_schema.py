"""The rejection reasons: each named once, the registry's apart from the decoders'."""

from consumer.records import FRAMED_REASONS, MAX_COST, MAX_TS, REASONS


def test_every_reason_is_named_once():
    assert len(set(REASONS)) == len(REASONS) and len(set(FRAMED_REASONS)) == len(FRAMED_REASONS)
    assert not set(REASONS) & set(FRAMED_REASONS)


def test_the_limits_are_2200_in_epoch_seconds_and_a_million_per_label():
    assert MAX_TS == 7_258_118_400.0 and MAX_COST == 1e6
