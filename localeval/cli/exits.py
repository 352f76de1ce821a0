"""The exit codes of every command, in one place: scripts and CI read them; and what an unexpected
exit leaves behind.

0 done (every metric passed); 1 some metric failed, or a comparison found a
regression (``compare --fail-on-regression``); 2 bad usage or input (or a system that refuses: a full disk, a
read-only cache), before any judge call; 3 some result could not be computed
(listed), or the run stopped before it finished (its journal kept what did, and the
message says how to resume); 4 an unexpected error, a bug: one line, the traceback
saved to a file it names; 130 interrupted, what was computed is saved; 141 the reader of the output
went away (``localeval … | head``), silently, as other Unix programs do (128 + SIGPIPE).
"""

from __future__ import annotations

import os
import platform
import stat
import sys
import tempfile
import traceback
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

EXIT_OK, EXIT_FAILED, EXIT_INPUT, EXIT_ERRORED, EXIT_UNEXPECTED, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130
EXIT_PIPE_CLOSED = 141


def output_to_pipe() -> bool:
    """Whether standard output is a pipe, where a broken pipe is its reader gone (``head`` read its fill)
    rather than a bug; if so, standard output is pointed at the null device, so that Python's own flush at
    exit says nothing more. (The judges' connections never raise a broken pipe this far: a backend turns
    it into its own error.)"""
    try:
        if not stat.S_ISFIFO(os.fstat(sys.stdout.fileno()).st_mode):
            return False
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        return False
    return True


def save_traceback(error: BaseException) -> Path | None:
    """Write ``error``'s traceback, with the command line and the versions, to a new file in the
    temporary folder (not under the runs or the cache: those may be what failed); its path, or None
    when nothing can be written there."""
    try:
        text = "".join([
            f"localeval {version('localeval')}, Python {platform.python_version()}, {platform.platform()}\n",
            f"{datetime.now(UTC).isoformat(timespec='seconds')}: localeval {' '.join(sys.argv[1:])}\n",
            f"in {os.getcwd()}\n\n",
            *traceback.format_exception(error),
        ])
        fd, name = tempfile.mkstemp(prefix="localeval-traceback-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
    except OSError:
        return None
    return Path(name)


def unexpected(error: BaseException) -> str:
    """One line for an exception nobody expected: what it was, and the file that keeps its traceback."""
    said = next((line for line in str(error).splitlines() if line.strip()), "")
    saved = save_traceback(error)
    where = f"the traceback is in {saved}" if saved else "its traceback could not be saved in the temporary folder"
    return f"unexpected {type(error).__name__}{': ' + said if said else ''}. A bug in localeval; {where}"
