"""Files and folders: writing so that a crash leaves the old file or the new one, never half
of one; making a folder so that a bad path is one clear error."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

from localeval.errors import InputError


def write_text_atomically(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file in the same folder.

    The file keeps its permissions when it is replaced, and a new one gets 0644
    (a temporary file starts private). Raises ``OSError``; the temporary file is
    removed whatever goes wrong.
    """
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = 0o644
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)  # atomic within one file system, hence the same folder
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def make_folder(path: Path, what: str) -> Path:
    """Create folder ``path`` and its parents if missing, and check that files can be made in it.

    Raises ``InputError`` naming the path, ``what`` it is for ("the cache folder")
    and the system's reason, e.g. ``x/cache: cannot create the cache folder (Not a
    directory)`` when ``x`` is a file.
    """
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(f"{path}: cannot create {what} ({err.strerror})") from err
    if not os.access(path, os.W_OK | os.X_OK):
        raise InputError(f"{path}: cannot write in {what} ({os.strerror(errno.EACCES)})")
    return path
