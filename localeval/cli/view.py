"""``localeval view``: the runs folder in a browser, served on this machine (:mod:`localeval.viewer`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from localeval.cli.exits import unexpected
from localeval.cli.options import say, stderr, user_paths
from localeval.reports.terminal import print_line, printable


def view(
    runs: Annotated[Path | None, typer.Option(
        "--runs", help="The runs folder (default: LOCALEVAL_RUNS_DIR, else ~/.local/share/localeval/runs).")] = None,
    host: Annotated[str, typer.Option(
        help="The address to serve on. Another than 127.0.0.1 lets anyone who can reach it read every run.")]
    = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="The port; 0: any free one.")] = 8421,
) -> None:
    """Serve a browser view of the runs at http://127.0.0.1:8421/ until Ctrl-C: the runs with filters (the
    list reloads itself when a run starts or finishes), each run's report, each metric's trend over the runs
    of a dataset, and the comparison of two runs picked in the list.

    Nothing on its pages comes from the network, and they run no script but their own. Ctrl-C stops it
    (exit code 0).
    """
    from localeval.viewer import RunCatalog, Viewer, ViewerServer, is_loopback

    folder = runs or user_paths().runs
    server = ViewerServer(Viewer(RunCatalog(folder)), host, port, on_unexpected=_saved)
    with server:
        if not is_loopback(host):
            print_line(stderr(), "[bold yellow]warning:[/] " + escape(
                f"serving on {host}: anyone who can reach this machine on port {server.server_address[1]} "
                f"can read every run in {folder}"))
        say(f"Serving the runs of {folder} at {server.url} (Ctrl-C stops it)")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            say("Stopped.")


def _saved(error: BaseException) -> str:
    """A request that failed unexpectedly, as its page's line: what it was, and the file its traceback is in."""
    line = unexpected(error)
    print_line(stderr(), f"[bold red]error:[/] {escape(printable(line))}")
    return line
