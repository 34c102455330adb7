import json

from benchmarks import chaos
from benchmarks.reproduce import RESULTS


def test_a_cheap_scenario_counts_its_four_figures_and_the_files_record_them(tmp_path):
    outcome = chaos.run_scenarios(["request_errors"], quick=True, workdir=tmp_path, command="test",
                                  sizes={"request_errors": {"records": 400, "rounds": 2}})[0]
    assert outcome.records == 400 and outcome.injected == "12 failed requests in 2 rounds"
    assert (outcome.missing, outcome.changed, outcome.lost, outcome.doubled) == (0, 0, 0, 0), outcome.note
    assert outcome.details["predictions"] >= 400
    results = tmp_path / "results"
    results.mkdir()
    chaos.write([outcome], results)
    saved = json.loads((results / "chaos.json").read_text())["scenarios"]["request_errors/quick"]
    assert saved["missing"] == 0 and saved["command"] == "test"
    assert "| request_errors | quick | 400 |" in (results / "chaos.md").read_text()


def test_every_scenario_is_registered_and_the_results_files_are_listed_unchecked():
    assert list(chaos.SCENARIOS) == ["sigkill", "outage", "data_loss", "request_errors", "revocation", "unwritable",
                                     "corrupt", "clock_skew", "properties"]
    [entry] = [e for e in RESULTS if e.name == "chaos"]
    assert entry.files == ("chaos.md", "chaos.json") and entry.timing and entry.check is None


def test_a_property_run_is_clean_when_pytest_passed_and_a_scenario_that_counted_nothing_is_not():
    def outcome(counts, details):
        return chaos.Outcome("x", "x", "full", 0, 0, "", *counts, details=details)

    assert outcome((None,) * 4, {"exit": 0}).clean  # property tests: the counts do not apply
    assert not outcome((None,) * 4, {"exit": 1}).clean  # a falsified property
    assert not outcome((None,) * 4, {"settings": {}}).clean  # a scenario that did not finish
    assert outcome((0,) * 4, {}).clean and not outcome((0, 0, 1, 0), {}).clean
