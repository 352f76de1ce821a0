"""``localeval`` for a fast-tier test: ``python tests/guarded_cli.py BLOCKED ARGS...`` runs
``python -m localeval ARGS...`` with the packages in BLOCKED refused at import, so that a command
that would load a model or start a Ray runtime fails loudly instead. BLOCKED is
``PACKAGE=MARKER,...`` (``llama_cpp=model,ray=ray``): each package and the test marker that would
allow it (tests/tiers.py; tests/command_line.py writes it from the running test's markers).
"""

from __future__ import annotations

import importlib.abc
import os
import runpy
import sys
from types import ModuleType


class Refusal(importlib.abc.MetaPathFinder):
    """Makes ``import NAME`` (and its submodules) fail for each package in ``blocked``, whose
    value is the test marker that would allow it."""

    def __init__(self, blocked: dict[str, str]) -> None:
        self.blocked = blocked

    def find_spec(self, fullname: str, path: object = None, target: ModuleType | None = None) -> None:
        top = fullname.partition(".")[0]
        if top in self.blocked:
            raise ImportError(f"{top} may not be imported by a test without the '{self.blocked[top]}' marker "
                              "(tests/tiers.py: the fast tier loads no model and starts no Ray runtime)",
                              name=fullname)


def main() -> None:
    blocked = dict(pair.split("=", 1) for pair in sys.argv[1].split(","))
    sys.meta_path.insert(0, Refusal(blocked))
    del sys.argv[1]
    # As `python -m localeval` does: the current folder first on the path (not tests/), and the
    # command's name in its messages the same.
    sys.path[0] = os.getcwd()
    runpy.run_module("localeval", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
