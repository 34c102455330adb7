"""The reference pages in docs/reference/ are what docs/gen.py makes from the code, and cover all of it."""

from __future__ import annotations

import pytest
from pydantic import Field
from pydantic.fields import FieldInfo

from consumer.config import ENV_PREFIX, Settings
from consumer.metrics import Metrics
from learners.registry import ALGORITHMS


@pytest.mark.parametrize("page", ["configuration.md", "metrics.md", "registry.md"])
def test_committed_reference_page_equals_the_generated_one(gen, page):
    committed = (gen.REFERENCE / page).read_text(encoding="utf-8")
    assert committed == gen.PAGES[page](), f"docs/reference/{page} is stale: run python docs/gen.py"


def test_check_mode_exits_zero_on_the_committed_pages(gen):
    assert gen.main(["--check"]) == 0


def _leaf_env_vars() -> set[str]:
    out = set()
    for name, info in Settings.model_fields.items():
        sub = getattr(info.annotation, "model_fields", None)
        if sub is None:
            out.add(ENV_PREFIX + name.upper())
        else:
            out |= {f"{ENV_PREFIX}{name.upper()}__{leaf.upper()}" for leaf in sub}
    return out


def test_configuration_reference_lists_every_setting_by_its_env_var(gen):
    listed = {row[0].strip("`") for row in gen.setting_rows()}
    assert listed == _leaf_env_vars()
    assert {"ACTIVESTREAM_BOOTSTRAP_SERVERS", "ACTIVESTREAM_LEARNER", "ACTIVESTREAM_CHECKPOINT_DIR",
            "ACTIVESTREAM_METRICS_PORT", "ACTIVESTREAM_CHECKPOINT__EVERY_S"} <= listed


def test_configuration_reference_shows_the_model_defaults(gen):
    rows = {row[0].strip("`"): row for row in gen.setting_rows()}
    assert rows["ACTIVESTREAM_BATCH_SIZE"][2] == f"`{Settings.model_fields['batch_size'].default}`"
    assert rows["ACTIVESTREAM_LABELS__BUDGET"][2] == "not set"


def test_a_setting_without_a_description_is_refused(gen):
    info: FieldInfo = Field(3)  # type: ignore[assignment]
    info.annotation = int
    with pytest.raises(ValueError, match="ACTIVESTREAM_X has no description"):
        gen._setting_row("ACTIVESTREAM_X", info)


def test_metrics_reference_lists_every_exported_activestream_metric(gen):
    exported = {family.name + ("_total" if family.type == "counter" else "")
                for family in Metrics().registry.collect() if family.name.startswith("activestream_")}
    rows = gen.metric_rows()
    assert {row[0] for row in rows} == exported
    assert all(row[3] for row in rows)
    labels = {row[0]: row[2] for row in rows}
    assert labels["activestream_dead_letters_total"] == "`reason`, `topic`"


def test_registry_reference_has_a_row_per_algorithm_and_its_citation(gen):
    page = gen.registry()
    for name, spec in ALGORITHMS.items():
        assert f"| `{name}`" in page
        assert gen._cell(spec.cite) in page
