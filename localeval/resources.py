"""Where the data files that ship with localeval (prompts, the model manifest) are.

In a wheel they are inside the package, under ``localeval/_data`` (mapped there
by pyproject.toml); in a source checkout or an editable install they are the
top-level ``prompts/`` and ``models/`` folders beside the package.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def data_path(*parts: str) -> Path:
    """The path of a shipped data file, e.g. ``data_path("prompts", "geval", "score.txt")``."""
    packaged = Path(str(files("localeval"))) / "_data"
    root = packaged if packaged.is_dir() else Path(__file__).resolve().parent.parent
    return root.joinpath(*parts)
