"""The reference pages in docs/reference/ are what docs/gen.py makes from the code, and cover all of it."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest
from pydantic import Field
from pydantic.fields import FieldInfo

from consumer.annotate.config import AnnotateSettings
from consumer.cli import build_parser
from consumer.config import ENV_PREFIX, Settings
from consumer.metrics import Metrics
from learners.registry import ALGORITHMS

ROOT = Path(__file__).resolve().parents[2]
# Where an ACTIVESTREAM_* name in the sources must be a variable the configuration page lists.
MENTIONING = {"consumer": "*.py", "learners": "*.py", "benchmarks": "*.py", "deploy": "*"}
NAME = re.compile(r"ACTIVESTREAM_\w*")


@pytest.mark.parametrize("page", ["configuration.md", "cli.md", "metrics.md", "registry.md"])
def test_committed_reference_page_equals_the_generated_one(gen, page):
    committed = (gen.REFERENCE / page).read_text(encoding="utf-8")
    assert committed == gen.PAGES[page](), f"docs/reference/{page} is stale: run python docs/gen.py"


def test_every_page_is_checked(gen):
    assert set(gen.PAGES) == {"configuration.md", "cli.md", "metrics.md", "registry.md"}


def test_check_mode_exits_zero_on_the_committed_pages(gen):
    assert gen.main(["--check"]) == 0


# ---------------------------------------------------------------------------------------------
# configuration


def _leaf_env_vars() -> set[str]:
    out = set()
    for model in (Settings, AnnotateSettings):
        for name, info in model.model_fields.items():
            sub = getattr(info.annotation, "model_fields", None)
            if sub is None:
                out.add(ENV_PREFIX + name.upper())
            else:
                out |= {f"{ENV_PREFIX}{name.upper()}__{leaf.upper()}" for leaf in sub}
    return out


def _listed(gen) -> set[str]:
    """Every variable the configuration page has a row for."""
    return {cell.strip("`") for cell in re.findall(r"^\| (`ACTIVESTREAM_\w+`) \|", gen.configuration(), re.M)}


def test_configuration_reference_lists_every_setting_by_its_env_var(gen):
    listed = {row[0].strip("`") for row in gen.setting_rows()}
    assert listed == _leaf_env_vars()
    assert {"ACTIVESTREAM_BOOTSTRAP_SERVERS", "ACTIVESTREAM_LEARNER", "ACTIVESTREAM_CHECKPOINT_DIR",
            "ACTIVESTREAM_METRICS_PORT", "ACTIVESTREAM_CHECKPOINT__EVERY_S", "ACTIVESTREAM_ANNOTATE__URL",
            "ACTIVESTREAM_ANNOTATE__TOKEN", "ACTIVESTREAM_ANNOTATE__WEBHOOK_URL"} <= listed
    assert len(listed) == len(gen.setting_rows()), "a variable is listed twice"


def test_configuration_reference_shows_the_model_defaults(gen):
    rows = {row[0].strip("`"): row for row in gen.setting_rows()}
    assert rows["ACTIVESTREAM_BATCH_SIZE"][2] == f"`{Settings.model_fields['batch_size'].default}`"
    assert rows["ACTIVESTREAM_LABELS__BUDGET"][2] == "not set"
    assert rows["ACTIVESTREAM_ANNOTATE__PORT"][2] == "`9109`"
    assert rows["ACTIVESTREAM_ANNOTATE__TOKEN"][2] == "empty"  # a secret's value is never shown


def test_a_setting_without_a_description_is_refused(gen):
    info: FieldInfo = Field(3)  # type: ignore[assignment]
    info.annotation = int
    with pytest.raises(ValueError, match="ACTIVESTREAM_X has no description"):
        gen._setting_row("ACTIVESTREAM_X", info)


def test_every_variable_read_from_the_environment_is_on_the_configuration_page(gen):
    reads = gen.environment_reads()
    assert {"ACTIVESTREAM_AOT", "ACTIVESTREAM_TANSU", "ACTIVESTREAM_DATASETS"} <= set(reads)
    assert "learners/compiled.py" in reads["ACTIVESTREAM_AOT"]
    assert "consumer/demo/broker.py" in reads["ACTIVESTREAM_TANSU"]
    assert "benchmarks/reproduce.py" in reads["ACTIVESTREAM_DATASETS"]
    assert set(reads) <= _listed(gen)


def _covered(name: str, listed: set[str], mappings: set[str]) -> bool:
    """Whether a name found in the sources is a listed variable, a prefix of some (``ACTIVESTREAM_``,
    ``ACTIVESTREAM_TOPICS__``, ``ACTIVESTREAM_KAFKA__``), a section (``ACTIVESTREAM_TOPICS``) or one key of a mapping
    (``ACTIVESTREAM_KAFKA__SASL_MECHANISM``)."""
    if name in listed:
        return True
    if name.endswith("_"):  # a prefix, as in ACTIVESTREAM_KAFKA__<PROPERTY>
        return any(var.startswith(name) for var in listed | {mapping + "__" for mapping in mappings})
    if any(var.startswith(name + "__") for var in listed):
        return True
    return any(name.startswith(mapping + "__") for mapping in mappings)


def test_every_activestream_name_in_the_sources_is_on_the_configuration_page(gen):
    listed = _listed(gen)
    mappings = {row[0].strip("`") for row in gen.setting_rows() if "one variable per key" in row[1]}
    found: dict[str, set[str]] = {}
    for top, pattern in MENTIONING.items():
        for path in (ROOT / top).rglob(pattern):
            if path.is_file() and "__pycache__" not in path.parts and "results" not in path.parts:
                for name in NAME.findall(path.read_text(encoding="utf-8", errors="replace")):
                    found.setdefault(name, set()).add(path.relative_to(ROOT).as_posix())
    assert {"ACTIVESTREAM_AOT", "ACTIVESTREAM_TANSU", "ACTIVESTREAM_DATASETS", "ACTIVESTREAM_ROLE"} <= set(found)
    missing = {name: sorted(files) for name, files in found.items() if not _covered(name, listed, mappings)}
    assert not missing, f"not on docs/reference/configuration.md (add them to ENVIRONMENT in docs/gen.py): {missing}"


def test_a_read_of_an_undescribed_variable_is_refused(gen, monkeypatch):
    reads = gen.environment_reads()
    monkeypatch.setattr(gen, "environment_reads", lambda: {**reads, "ACTIVESTREAM_NEW": {"learners/x.py": [None]}})
    with pytest.raises(ValueError, match=r"ACTIVESTREAM_NEW in learners/x\.py"):
        gen.configuration()


def test_an_entry_nothing_reads_or_with_another_default_than_the_code_is_refused(gen, monkeypatch):
    monkeypatch.setitem(gen.ENVIRONMENT, "ACTIVESTREAM_GONE", (gen._OUTSIDE, "not set", "nothing reads it"))
    with pytest.raises(ValueError, match="ACTIVESTREAM_GONE is in ENVIRONMENT"):
        gen.environment_rows()
    monkeypatch.delitem(gen.ENVIRONMENT, "ACTIVESTREAM_GONE")
    section, _, description = gen.ENVIRONMENT["ACTIVESTREAM_AOT"]
    monkeypatch.setitem(gen.ENVIRONMENT, "ACTIVESTREAM_AOT", (section, "`0`", description))
    with pytest.raises(ValueError, match="ACTIVESTREAM_AOT: the code falls back to '1'"):
        gen.environment_rows()


# The sources below name "{P}A" rather than the variable, or the scan of tests/ would read them as reads.
@pytest.mark.parametrize(("source", "read"), [
    ('os.environ.get("{P}A", "1")', ("A", "1")),
    ("os.getenv('{P}B')", ("B", None)),
    ('os.environ.get(\n    "{P}C", ROOT / "x")', ("C", None)),
    ('os.environ["{P}D"]', ("D", None)),
    ('if os.environ["{P}E"] == "1":', ("E", None)),
    ('os.environ["{P}F"] = "1"', None),
    ('env = {{**os.environ, "{P}G": "1"}}', None),
])
def test_what_counts_as_a_read_of_the_environment(gen, source, read):
    found = [(m.group(2) or m.group(6), m.group(4)) for m in gen._ENV_READ.finditer(source.format(P=ENV_PREFIX))]
    assert found == ([(ENV_PREFIX + read[0], read[1])] if read else [])


def test_the_documented_defaults_of_the_variables_outside_the_settings(gen, monkeypatch):
    from benchmarks.reproduce import data_dir
    from learners import compiled

    rows = {row[1].strip("`"): row for row in gen.environment_rows()}
    monkeypatch.delenv("ACTIVESTREAM_AOT", raising=False)
    assert rows["ACTIVESTREAM_AOT"][3] == "`1`" and compiled.enabled()
    monkeypatch.setenv("ACTIVESTREAM_AOT", "0")
    assert not compiled.enabled()
    monkeypatch.delenv("ACTIVESTREAM_DATASETS", raising=False)
    assert rows["ACTIVESTREAM_DATASETS"][3].startswith("`../shared/datasets`")
    assert data_dir() == ROOT.parent / "shared" / "datasets"


def test_code_spans_in_cells_are_not_escaped_and_keep_their_pipes(gen):
    assert gen._cell("`A__<KEY>` and <b>") == "`A__<KEY>` and &lt;b>"
    assert gen._cell("a | `N|auto`") == "a \\| <code>N&#124;auto</code>"


# ---------------------------------------------------------------------------------------------
# command line


def _parsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Every command's parser by its prog (``activestream replay``), subcommands included."""
    out = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out[sub.prog] = sub
                out |= _parsers(sub)
    return out


def _section(page: str, prog: str) -> str:
    start = page.index(f"\n## {prog}\n")
    end = page.find("\n## ", start + 1)
    return page[start:end if end > 0 else None]


def test_cli_reference_has_a_section_per_command_with_every_option(gen):
    page = gen.cli()
    parsers = _parsers(build_parser())
    assert {"activestream run", "activestream replay", "activestream demo", "activestream healthcheck",
            "activestream annotate label-studio", "activestream checkpoint inspect"} <= set(parsers)
    for prog, parser in parsers.items():
        section = _section(page, prog)
        assert f"({'#' + prog.replace(' ', '-')})" in page  # the summary links to it
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            name = ", ".join(action.option_strings) or action.dest
            assert f"| `{name}` |" in section, f"{prog} {name}"


def test_cli_reference_shows_the_parser_defaults_choices_and_help(gen):
    parsers = _parsers(build_parser())
    demo = {row[0].strip("`"): row for row in gen.option_rows(parsers["activestream demo"])}
    assert demo["--records"][2] == "`10000`"
    assert demo["--annotator"][1] == "one of `simulated`, `label-studio`"
    assert demo["--json"][1:3] == ("flag", "off")
    assert "(binary)" in demo["--learner"][3]  # the help as --help shows it, default learners named
    replay = {row[0].strip("`"): row for row in gen.option_rows(parsers["activestream replay"])}
    assert replay["--param"][1] == "`KEY=VALUE`, repeatable"
    assert replay["--budget-warmup"][2] == "`auto`"
    inspect = gen.option_rows(parsers["activestream checkpoint inspect"])
    assert inspect == [("`path`", "text; required", "—", "a checkpoint file, or a directory (its newest checkpoint)")]
    section = _section(gen.cli(), "activestream replay")
    assert "Exactly one of `--data`, `--from-kafka`." in section


def test_an_option_or_command_without_help_is_refused(gen):
    parser = argparse.ArgumentParser(prog="activestream")
    sub = parser.add_subparsers().add_parser("x", help="x")
    sub.add_argument("--quiet", action="store_true")
    with pytest.raises(ValueError, match="activestream x --quiet has no help"):
        gen.option_rows(sub)
    bare = argparse.ArgumentParser(prog="activestream")
    bare.add_subparsers().add_parser("y")
    with pytest.raises(ValueError, match="activestream y has no help"):
        gen._commands(bare)


# ---------------------------------------------------------------------------------------------
# metrics and registry


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
        assert gen._cell(gen._short_cite(spec.cite)) in page
        for full, short in gen.PAPERS.items():  # a paper named shortly in a row is named in full below
            if full in spec.cite:
                assert f"- {short}: " in page and full in page


def test_the_variables_outside_the_settings_are_the_ones_the_service_does_not_refuse(gen):
    """The service stops on an ACTIVESTREAM_* variable that is not a setting (a misspelt one) unless
    it is one of those read elsewhere, which the configuration page lists."""
    from consumer.config import NOT_SETTINGS

    assert set(gen.ENVIRONMENT) == set(NOT_SETTINGS)
