"""``localeval view``: a browser over the runs folder, served on this machine.

The list of runs with filters (it reloads itself when a run starts or finishes), a run's HTML report,
each metric's trend over the runs of a dataset, and the comparison of any two runs: HTML drawn on the
server, with no asset from the network and no script but the pages' own (docs/viewer.md).

- :class:`RunCatalog` (``catalog.py``): the runs folder, listed again only when it changes;
- :class:`Viewer` (``routes.py``): an address → a :class:`Page` (``pages.py``, ``runs_page.py``, ``trends.py``);
- :class:`ViewerServer` (``server.py``): HTTP on the standard library, 127.0.0.1 by default, GET only,
  a strict Content-Security-Policy on every answer.
"""

from localeval.viewer.catalog import RunCatalog
from localeval.viewer.pages import Page
from localeval.viewer.routes import Viewer
from localeval.viewer.server import DEFAULT_HOST, DEFAULT_PORT, ViewerServer, is_loopback

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "Page", "RunCatalog", "Viewer", "ViewerServer", "is_loopback"]
