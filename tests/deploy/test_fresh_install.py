"""The README's first command, run as a newcomer pastes it, on a copy of the repository.

The command of "## The two commands" makes its own virtualenv, installs the project with a plain
``pip install .`` (no extras, no apt, no sudo) and runs the demo. Here it runs with bash in a
temporary copy of the working tree (the files a clone has, plus new ones not yet committed), with
this interpreter's virtualenv, numba's cache directory and any ``ACTIVESTREAM_*`` variable taken out
of the environment, and the machine's pip configuration as it is. The demo must reach its summary
and write its report. The copy takes pip's build/ and *.egg-info, and is deleted after.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.deploy.conftest import ROOT

SECTION = "## The two commands"


def readme_commands() -> list[str]:
    """The commands of the section's first code block, in order (comments and blank lines dropped)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert SECTION in readme, f"README.md has no {SECTION!r} section"
    section = readme.split(SECTION, 1)[1].split("\n## ", 1)[0]
    block = re.search(r"^```(?:bash|sh|shell)?\n(.*?)^```", section, re.M | re.S)
    assert block, f"no code block in README.md's {SECTION!r}"
    text = block.group(1).replace("\\\n", " ")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]


def copy_of_the_working_tree(dest: Path) -> None:
    """What a clone holds, with the working tree's changes and new files; ignored files stay out."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, timeout=60)
    if listed.returncode == 0:
        for name in filter(None, listed.stdout.decode().split("\0")):
            src = ROOT / name
            if src.is_file():  # a tracked file deleted in the working tree is listed too
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest / name)
    else:  # not a git checkout
        shutil.copytree(ROOT, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns(
            ".git", ".venv", ".ls-venv", "build", "dist", "site", "*.egg-info", "__pycache__", ".*_cache",
            ".hypothesis", "_compiled*"))


def newcomer_environment() -> dict[str, str]:
    """This process's environment without its virtualenv: PATH finds the machine's python3."""
    venv_bin = {str(Path(sys.prefix) / "bin"), str(Path(os.environ.get("VIRTUAL_ENV", sys.prefix)) / "bin")}
    env = {k: v for k, v in os.environ.items()
           if k not in {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "NUMBA_CACHE_DIR"}
           and not k.startswith("ACTIVESTREAM_")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p and p not in venv_bin)
    return env


def test_the_readmes_first_command_installs_the_project_and_runs_the_demo_to_its_summary():
    commands = readme_commands()
    assert len(commands) == 2 and commands[1] == "bash .ci/run", commands
    line = commands[0]
    assert "pip install ." in line and "activestream demo" in line, line
    assert not re.search(r"\bsudo\b|\bapt(-get)?\b|\.ci/run|pip install [^&|;]*\[", line), \
        f"the first command must need no root, no Debian packages and no extras: {line}"
    report = re.search(r"--report[ =](\S+)", line)
    assert report, f"the first command writes no HTML report: {line}"

    with tempfile.TemporaryDirectory(prefix="activestream-fresh-") as tmp:
        work = Path(tmp) / "activestream"
        work.mkdir()
        copy_of_the_working_tree(work)
        # A virtualenv of its own for the demo: if the line makes none, pip installs into this one.
        if "-m venv" not in line and "virtualenv" not in line:
            subprocess.run([sys.executable, "-m", "venv", str(work / ".venv")], check=True, timeout=300)
            line = f". .venv/bin/activate && {line}"
        out = subprocess.run(["bash", "-c", line], cwd=work, env=newcomer_environment(),
                             capture_output=True, text=True, timeout=600)
        log = f"$ {line}\n{out.stdout[-4000:]}\n{out.stderr[-4000:]}"
        assert out.returncode == 0, log
        # the summary
        assert "activestream demo:" in out.stdout, log
        counts = re.search(r"records / predictions\s+(\d+) / (\d+)", out.stdout)
        assert counts and int(counts[1]) == int(counts[2]) > 0, log
        assert re.search(r"label requests \(query ratio\)\s+[1-9]\d* \(", out.stdout), log
        accuracy = re.search(r"online accuracy / F1 vs truth\s+(0\.\d{4}) / ", out.stdout)
        assert accuracy and "estimated accuracy (service)" in out.stdout, log
        assert re.search(r"dead letters\s+0\b", out.stdout), log
        # the report: one page with the run's curves and its figures
        page = work / report[1]
        assert page.is_file(), f"no {report[1]} written\n{log}"
        html = page.read_text(encoding="utf-8")
        assert len(html) > 5000 and html.count("<svg") >= 4 and "<polyline" in html, html[:2000]
        assert accuracy[1] in html, f"the report does not show the summary's accuracy {accuracy[1]}"
        # the project was installed, not run from the source tree
        installed = list(work.glob("*/lib/python3*/site-packages/consumer/__init__.py"))
        assert installed, f"consumer is not in the new virtualenv's site-packages\n{log}"
