"""`activestream replay`: its report, its options, its errors."""

import json
import subprocess
import sys

import pytest

REQUIRED = {"f1", "accuracy", "mistake_rate", "query_ratio", "examples", "seconds", "examples_per_second",
            "f1_std", "accuracy_std", "mistake_rate_std", "query_ratio_std", "seconds_std", "examples_per_second_std"}



def replay(*args):
    return subprocess.run([sys.executable, "-m", "consumer", "replay", *args], capture_output=True, text=True)


def test_replay_json_has_the_pinned_keys():
    out = replay("--learner", "paa-1", "--data", "synthetic:sparse?n=3000&d=1024", "--permutations", "2",
                 "--param", "delta=0.3", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert set(report) >= REQUIRED
    assert report["examples"] == 3000 and report["permutations"] == 2
    assert 0 < report["query_ratio"] < 1 and report["params"]["delta"] == 0.3


def test_replay_query_rate_lands_within_half_a_point():
    out = replay("--learner", "PAA-II", "--data", "synthetic:sparse?n=4000&d=1024", "--query-rate", "0.2",
                 "--permutations", "2", "--json")
    assert out.returncode == 0, out.stderr
    assert abs(json.loads(out.stdout)["query_ratio"] - 0.2) <= 0.005


def test_replay_concatenates_data_files(tmp_path):
    a, b = tmp_path / "a.svm", tmp_path / "b.svm"
    a.write_text("1 1:1\n-1 2:1\n")
    b.write_text("1 1:1\n")
    out = replay("--learner", "pa-1", "--data", str(a), "--data", str(b), "--json", "--in-order")
    assert json.loads(out.stdout)["examples"] == 3


@pytest.mark.parametrize("args, message", [
    (["--learner", "nope", "--data", "synthetic:sparse?n=10"], "unknown learner 'nope'"),
    (["--learner", "paa-1", "--data", "missing.svm"], "no such dataset file"),
    (["--learner", "paa-1", "--data", "synthetic:sparse?n=100", "--param", "gamma=1"], "takes no parameter gamma"),
    (["--learner", "pa-1", "--data", "synthetic:sparse?n=100", "--query-rate", "0.1"], "every label"),
])
def test_replay_errors_are_one_clear_line(args, message):
    out = replay(*args)
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr


def test_replay_needs_positive_label_when_it_cannot_tell(tmp_path):
    f = tmp_path / "x.svm"
    f.write_text("3 1:1\n4 2:1\n")
    assert replay("--learner", "pa-1", "--data", str(f)).returncode == 2
    out = replay("--learner", "pa-1", "--data", str(f), "--positive", "4", "--json")
    assert json.loads(out.stdout)["classes"] == [3, 4]


def test_replay_runs_the_shifting_stream_in_order_at_a_query_rate():
    out = replay("--learner", "lasec-ss", "--data", "synthetic:shift?n=2000&d=10&switch=500&seed=1",
                 "--query-rate", "0.3", "--permutations", "2", "--paper-protocol", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["examples"] == 2000 and abs(report["query_ratio"] - 0.3) <= 0.005
    assert report["accuracy"] > 0.6


def test_replay_cost_flags_weight_the_sum_and_cost(tmp_path):
    f = tmp_path / "x.svm"
    f.write_text("1 1:1\n1 1:-1\n-1 2:1\n-1 2:1\n-1 1:1 2:1\n")
    base = ["--learner", "pa-1", "--data", str(f), "--in-order", "--json"]
    plain = json.loads(replay(*base).stdout)
    weighted = json.loads(replay(*base, "--eta-p", "0.9", "--cost-p", "0.8").stdout)
    assert plain["metric_weights"] == {"eta_p": 0.5, "eta_n": 0.5, "c_p": 0.5, "c_n": 0.5}
    assert weighted["metric_weights"]["c_n"] == pytest.approx(0.2)
    sens, spec = weighted["sensitivity"], weighted["specificity"]
    assert weighted["weighted_sum"] == pytest.approx(0.9 * sens + 0.1 * spec)
    fn, fp = 2 * (1 - sens), 3 * (1 - spec)
    assert weighted["cost"] == pytest.approx(0.8 * fn + 0.2 * fp)
    assert 0.0 <= plain["auc_roc"] <= 1.0 and "auc_roc_std" in plain


def test_replay_cost_sensitive_learner_reports_its_own_weights():
    out = replay("--learner", "cspaa-cost", "--data", "synthetic:sparse?n=2000&d=512", "--param", "c_p=0.75",
                 "--param", "delta=0.5", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["metric_weights"]["c_p"] == 0.75


def test_replay_multiclass_learner_takes_the_files_classes(tmp_path):
    f = tmp_path / "m.svm"
    f.write_text("".join(f"{c} {c}:1 4:0.5\n" for c in [1, 2, 3] * 40))
    out = replay("--learner", "MPAA-II", "--data", str(f), "--query-rate", "0.5", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["classes"] == [1, 2, 3] and report["accuracy"] > 0.8
    assert report["auc_roc"] is None  # binary only: NaN is written as null


def test_replay_without_a_learner_takes_the_default_for_the_number_of_classes(tmp_path):
    multi, binary = tmp_path / "m.svm", tmp_path / "b.svm"
    multi.write_text("".join(f"{c} {c}:1 4:0.5\n" for c in [1, 2, 3] * 40))
    binary.write_text("".join(f"{c} {(c + 3) // 2}:1 4:0.5\n" for c in [1, -1] * 60))
    for path, expected in ((multi, "mlr-factored-entropy"), (binary, "lr-ada-entropy-rff")):
        for order in ([], ["--in-order"]):  # read whole, and streamed
            out = replay("--data", str(path), *order, "--json")
            assert out.returncode == 0, out.stderr
            assert json.loads(out.stdout)["learner"] == expected


def test_replay_rejects_a_weight_outside_the_unit_interval():
    out = replay("--learner", "pa-1", "--data", "synthetic:sparse?n=100", "--cost-p", "1.5")
    assert out.returncode == 2 and "--cost-p must be in [0, 1]" in out.stderr


def test_replay_warmup_measures_the_records_after_it():
    args = ("--learner", "paa-1", "--data", "synthetic:sparse?n=4000&d=1024", "--param", "delta=0.3", "--json")
    whole, warm = (json.loads(replay(*args, *extra).stdout) for extra in ((), ("--warmup", "2000")))
    assert warm["warmup"] == 2000 and warm["examples"] == 4000
    assert warm["query_ratio"] < whole["query_ratio"]  # the first records, asked most, are left out
    assert warm["queries"] < whole["queries"]
    out = replay(*args, "--warmup", "4000")
    assert out.returncode == 2 and "warmup must be in [0, 4000)" in out.stderr


def test_replay_budget_rate_holds_the_rate_online_and_reports_windows():
    out = replay("--learner", "paa-1", "--data", "synthetic:sparse?n=6000&d=1024", "--budget-rate", "0.1",
                 "--delay", "500", "--permutations", "2", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert abs(report["query_ratio"] - 0.1) <= 0.01 and report["budget_rate"] == 0.1
    assert 0.05 < report["max_window_query_ratio"] <= 0.15


def test_replay_budget_warmup_spends_its_requests_first_and_still_holds_the_rate():
    args = ("--learner", "paa-1", "--data", "synthetic:sparse?n=6000&d=1024", "--budget-rate", "0.1", "--delay",
            "100", "--json")
    plain, warm = (json.loads(replay(*args, *extra).stdout) for extra in (
        ("--budget-warmup", "0"), ("--budget-warmup", "300", "--budget-warmup-boost", "every")))
    assert warm["budget_warmup"] == 300 and warm["budget_warmup_boost"] == "every" and plain["budget_warmup"] == 0
    assert abs(warm["query_ratio"] - 0.1) <= 0.01
    assert warm["max_window_query_ratio"] < plain["max_window_query_ratio"]  # the first window is left out
    out = replay("--learner", "paa-1", "--data", "synthetic:sparse?n=100", "--budget-warmup", "10")
    assert out.returncode != 0 and "--budget-warmup needs --budget-rate" in out.stderr


def test_replay_budget_rate_warms_up_by_default_with_half_the_budget_boosted():
    from learners.budget import BACKTEST_WARMUP_BOOST, backtest_warmup

    out = replay("--learner", "paa-1", "--data", "synthetic:sparse?n=6000&d=1024", "--budget-rate", "0.1", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["budget_warmup"] == backtest_warmup(0.1, 6000) == 300
    assert report["budget_warmup_boost"] == BACKTEST_WARMUP_BOOST
    assert abs(report["query_ratio"] - 0.1) <= 0.01  # the warm-up's excess is repaid within the pass
    assert f"default {BACKTEST_WARMUP_BOOST:g}," in " ".join(replay("--help").stdout.split())


@pytest.mark.parametrize("bad", ["0.5", "x", "nan"])
def test_replay_budget_warmup_boost_below_one_is_refused(bad):
    out = replay("--learner", "paa-1", "--data", "synthetic:sparse?n=100", "--budget-rate", "0.1",
                 "--budget-warmup-boost", bad)
    assert out.returncode != 0 and "--budget-warmup-boost" in out.stderr


def test_replay_budget_rate_and_query_rate_are_exclusive():
    out = replay("--learner", "paa-1", "--data", "synthetic:sparse?n=100", "--budget-rate", "0.1",
                 "--query-rate", "0.1")
    assert out.returncode != 0 and "not allowed with" in out.stderr

