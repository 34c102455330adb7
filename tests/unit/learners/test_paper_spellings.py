"""Every algorithm name as the five papers spell it resolves to the registry entry it means there."""

import json
import os
from pathlib import Path

import pytest

from learners import make
from learners.registry import PAPER_SPELLINGS, canonical_name

# paper (the reproductions' page name) -> {spelling in the paper's tables or text: registry entry}
SPELLINGS: dict[str, dict[str, str]] = {
    "paa": {  # Lu, Zhao & Hoi 2016: Tables 2-3, 6-8 and Sects. 4-6
        "PE": "pe", "PA": "pa", "PA-I": "pa-1", "PA-II": "pa-2", "RPE": "rpe", "RPA": "rpa", "RPA-I": "rpa-1",
        "RPA-II": "rpa-2", "PEA": "pea", "LEPE": "pea", "SELada": "sel-ada", "SEL-ada": "sel-ada",
        "SEL2nd": "sop-ss", "SEL-2nd": "sop-ss", "PAA": "paa", "PAA-I": "paa-1", "PAA-II": "paa-2",
        "MPA": "mpa", "MPA-I": "mpa-1", "MPA-II": "mpa-2", "MRPA": "mrpa", "MPAA": "mpaa", "MPAA-I": "mpaa-1",
        "MPAA-II": "mpaa-2", "MPEA": "mpea", "MRPE": "mrpe", "PAUM": "paum", "CPA": "cpa", "CSRND": "csrnd",
        "CSPAA": "cspaa-sum", "CSPAA_sum": "cspaa-sum", "CSPAA_cos": "cspaa-cost", "CSPAA(a)": "cspaa-a",
        "CW-diag": "cw-diag",
    },
    "ezukwoke-zareian": {"PA": "pa", "APA": "paa", "PA-I": "pa-1", "PA-II": "pa-2", "APA-I": "paa-1",
                         "APA-II": "paa-2"},
    "high-dimensional": {  # Table 2, Table 5, Sect. 5: SOP and SOAL are run with diagonal matrices
        "PAA-II": "paa-2", "SOP": "sop-ss-diag", "SOAL": "soal-diag", "DA": "da", "MD": "md",
        "R-ADA": "r-ada", "M-ADA": "m-ada", "D-ADA": "d-ada", "D-ADA-I": "d-ada-i", "R-AMD": "r-amd",
        "M-AMD": "m-amd", "D-AMD": "d-amd", "D-AMD-I": "d-amd-i", "MPAA-II": "mpaa-2", "MR-ADA": "mr-ada",
        "MM-ADA": "mm-ada", "MD-ADA": "md-ada", "MD-ADA-I": "md-ada-i", "MR-AMD": "mr-amd", "MM-AMD": "mm-amd",
        "MD-AMD": "md-amd", "MD-AMD-I": "md-amd-i",
    },
    "soal": {"APE": "pea", "APAI": "paa-1", "APAII": "paa-2", "ASOP": "sop-ss", "SOL": "sol", "SORL": "sorl",
             "SOAL-M": "soal-m", "SOAL": "soal", "AROW": "arow"},
    "drift": {"LASEC": "lasec", "LASEC-SS": "lasec-ss", "SOP": "sop", "SOP-SS": "sop-ss", "Perceptron": "pe",
              "Perceptron-SS": "pea", "Shifting Perceptron": "shifting-perceptron",
              "Modified Perceptron": "modified-perceptron",
              "Randomized Budget Perceptron": "randomized-budget-perceptron", "BBQ": "bbq", "BBQ-I": "bbq-i"},
}
# tables.json's paper ids -> page names; "SVM" (Ezukwoke & Zareian's batch baseline) is not an online learner
PAPER_IDS = {"000": "paa", "001": "ezukwoke-zareian", "002": "high-dimensional", "003": "soal", "004": "drift"}
NOT_LEARNERS = {"SVM"}
TABLES = Path(os.environ.get("ACTIVESTREAM_DATASETS", Path(__file__).resolve().parents[4] / "shared" / "datasets")
              ).parent / "papers" / "tables.json"


def _paper(page: str) -> str | None:
    return page if page in PAPER_SPELLINGS else None


@pytest.mark.parametrize("page, spelling, entry",
                         [(page, s, e) for page, names in SPELLINGS.items() for s, e in names.items()])
def test_paper_spelling_resolves_to_its_entry(page, spelling, entry):
    assert canonical_name(spelling, paper=_paper(page)) == entry
    assert make(spelling, paper=_paper(page)).name == entry


def test_sop_means_the_supervised_perceptron_unless_the_high_dimensional_paper_says_it():
    assert make("SOP").name == "sop"
    assert make("SOP", paper="high-dimensional").name == "sop-ss-diag"
    assert make("SOAL", paper="high-dimensional").name == "soal-diag"


def test_every_spelling_in_the_published_tables_is_listed():
    if not TABLES.exists():
        pytest.skip(f"{TABLES} not found")
    tables = json.loads(TABLES.read_text())
    missing = []
    for paper_id, paper in tables.items():
        page = PAPER_IDS[paper_id[:3]]
        for table in paper.values():
            rows = table.get("rows", []) if isinstance(table, dict) else []
            for row in rows:
                # Table 3 of the high-dimensional paper lists parameters of pairs ("D-ADA / D-AMD")
                for spelling in str(row.get("algorithm", "")).split(" / "):
                    if spelling and spelling not in NOT_LEARNERS and spelling not in SPELLINGS[page]:
                        missing.append((page, spelling))
    assert not missing
