"""The ``localeval`` command: the layer that reads options, files and the environment.

Everything under this package is glue between the user and the library: the
typer commands (:mod:`localeval.cli.app`), merging options into a run
configuration (:mod:`~localeval.cli.settings`), a run (:mod:`~localeval.cli.session`),
what the terminal shows
(:mod:`~localeval.cli.console`), run folders (:mod:`~localeval.cli.runs`) and
``backends check`` (:mod:`~localeval.cli.probe`). The library never imports it.
"""

from localeval.cli.app import app, main

__all__ = ["app", "main"]
