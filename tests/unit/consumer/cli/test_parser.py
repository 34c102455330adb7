"""The argument parser: the demo's options, the learners named in the help, and what building it imports."""

import subprocess
import sys

import pytest

from consumer.cli import build_parser, main


def test_demo_without_a_target_flag_holds_a_tenth_of_the_records():
    from consumer.demo import QUERY_RATE_TARGET
    from consumer.demo.run import DemoOptions

    parse = build_parser().parse_args
    assert parse(["demo"]).query_rate_target == QUERY_RATE_TARGET == DemoOptions().query_rate_target == 0.1
    assert parse(["demo", "--query-rate-target", "0.05"]).query_rate_target == 0.05
    assert parse(["demo", "--query-rate-target", "none"]).query_rate_target is None  # the learner's own query


@pytest.mark.parametrize("bad", ["0", "1.5", "nan", "off"])
def test_demo_query_rate_target_outside_the_unit_interval_is_refused(bad, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["demo", "--query-rate-target", bad])
    assert "a share of the records in (0, 1], or none" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["demo", "replay"])
def test_learner_help_names_the_registrys_default_learners(command, capsys, monkeypatch):
    from learners.defaults import DEFAULT_LEARNERS

    monkeypatch.setenv("COLUMNS", "1000")  # an option's help on one line: no name broken at a hyphen
    with pytest.raises(SystemExit):
        main([command, "--help"])
    shown = capsys.readouterr().out
    learner = next(line for line in shown.splitlines() if line.strip().startswith("--learner"))
    for kind, name in DEFAULT_LEARNERS.items():
        assert f"{name} ({kind})" in learner
    assert "for two classes" not in shown


def test_building_the_parser_imports_no_learner():
    code = ("import sys; from consumer.cli import build_parser; build_parser(); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'learners', 'numpy'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr

