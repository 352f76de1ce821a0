"""Importing localeval has no side effects: no files, no threads, no llama.cpp."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Runs in a fresh interpreter: imports localeval, then every submodule by name.
# localeval.__main__ is left out: it is the `python -m localeval` script, and
# importing it runs the command line by design.
SCRIPT = """
import importlib, json, pkgutil, sys, threading
import localeval
root = {"llama_cpp": "llama_cpp" in sys.modules, "threads": threading.active_count()}
imported = []
for info in pkgutil.walk_packages(localeval.__path__, "localeval."):
    if info.name != "localeval.__main__":
        importlib.import_module(info.name)
        imported.append(info.name)
print(json.dumps({
    "root": root,
    "imported": imported,
    "llama_cpp": "llama_cpp" in sys.modules,
    "threads": threading.active_count(),
}))
"""


def contents(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def run_imports(home: Path, cwd: Path) -> dict[str, object]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("XDG_", "LOCALEVAL_")) and k != "PYTHONDONTWRITEBYTECODE"
    }
    env["HOME"] = str(home)
    # Python's own bytecode cache is not localeval's doing; keep it out of the picture.
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("layout", ["cwd-apart-from-home", "cwd-is-home"])
def test_importing_localeval_has_no_side_effects(tmp_path: Path, layout: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    cwd = home if layout == "cwd-is-home" else tmp_path / "work"
    cwd.mkdir(exist_ok=True)

    report = run_imports(home, cwd)

    assert contents(home) == []
    assert contents(cwd) == []
    assert report["root"] == {"llama_cpp": False, "threads": 1}
    assert report["llama_cpp"] is False  # no module imports llama.cpp until a backend is made
    assert report["threads"] == 1
    imported = report["imported"]
    assert isinstance(imported, list)
    # The walk really reached the submodules (a broken walk would pass vacuously).
    for name in ("localeval.cli", "localeval.config", "localeval.backends.llamacpp", "localeval.metrics.geval"):
        assert name in imported


def test_the_two_lists_of_public_names_agree() -> None:
    """localeval/__init__.py names each public name twice: imported for type checkers, and in
    _EXPORTS for the lazy import at run time. Both must list the same names from the same modules."""
    import ast

    import localeval

    tree = ast.parse(Path(localeval.__file__).read_text(encoding="utf-8"))
    [checking] = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]
    imported = {
        alias.asname or alias.name: node.module
        for node in checking.body if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert imported == localeval._EXPORTS
    assert localeval.__all__ == sorted(imported)
    for name, module in imported.items():  # and each really is there
        assert getattr(importlib.import_module(module), name) is getattr(localeval, name)
