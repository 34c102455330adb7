"""``--param KEY=VALUE``: JSON values, or the plain string."""

import pytest

from consumer.cli.params import parse_params


def test_param_values_are_json_or_else_strings():
    assert parse_params(["delta=0.5", "bias = true", "classes=[1, 2]", "variant=I"]) == {
        "delta": 0.5, "bias": True, "classes": [1, 2], "variant": "I"}


@pytest.mark.parametrize("pair", ["delta", "=1"])
def test_a_param_without_key_or_value_sign_is_refused(pair):
    with pytest.raises(SystemExit, match="KEY=VALUE"):
        parse_params([pair])
