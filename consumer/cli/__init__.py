"""The ``activestream`` command line.

* ``activestream run``: the service, configured by ``ACTIVESTREAM_*`` environment variables.
* ``activestream replay``: a dataset through a learner offline (a backtest, or a paper's protocol),
  printing prequential metrics as a table or one JSON object (``--json``).
* ``activestream demo``: the whole loop on this machine (embedded broker, a simulated annotator).
* ``activestream annotate label-studio``: label requests to Label Studio tasks, annotations to labels.
* ``activestream checkpoint inspect PATH``: what a checkpoint file (or the newest in a directory) holds.
* ``activestream healthcheck [--ready]``: exit 0 if the local service's ``/healthz`` (``/readyz``) answers
  200: a container health check that needs no curl in the image.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from consumer.cli.parser import build_parser

# NumPy, orjson and the learners are imported by the commands that use them: `--help` and the
# service's other commands do not pay for them.

__all__ = ["build_parser", "main", "writable_numba_cache"]


def writable_numba_cache() -> None:
    """Before numba is imported: when ``$NUMBA_CACHE_DIR`` cannot be written (the image's cache on a
    read-only root file system), copy it into the temporary folder and point numba there.

    numba writes a probe file into its cache folder before it reads a kernel from it, and fails
    ("no locator available") where it cannot; from the copy it loads the image's kernels, and
    compiles and saves there those it lacks (another learner, another CPU model)."""
    cache = os.environ.get("NUMBA_CACHE_DIR")
    if not cache or "numba" in sys.modules or not os.path.isdir(cache) or os.access(cache, os.W_OK):
        return
    import shutil
    import tempfile

    copy = Path(tempfile.gettempdir()) / f"activestream-numba-{os.getuid()}"
    if not copy.is_dir():  # the first command in the container copies; a copy in progress is not seen
        staging = Path(tempfile.mkdtemp(prefix=f"{copy.name}."))
        shutil.copytree(cache, staging, dirs_exist_ok=True)
        try:
            staging.rename(copy)
        except OSError:  # another command made it meanwhile
            shutil.rmtree(staging, ignore_errors=True)
    os.environ["NUMBA_CACHE_DIR"] = str(copy)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    writable_numba_cache()
    try:
        code = args.func(args)
    except ValueError as exc:
        print(f"activestream {args.command}: {exc}", file=sys.stderr)
        code = 2
    if argv is None and args.command == "replay":
        # The process ends here and a replay holds nothing to close or flush but the output, while
        # finalising an interpreter with numba's compiled code loaded costs a few tenths of a second.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code

