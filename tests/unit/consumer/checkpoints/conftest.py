"""make.py regenerates the fixtures with an older commit's code on PYTHONPATH: not a test module
(pytest runs with --doctest-modules, which would import it)."""

collect_ignore = ["make.py"]
