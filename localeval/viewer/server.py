"""The viewer's HTTP server: the standard library's threaded server, GET only, bound to 127.0.0.1 unless
told otherwise.

Every answer carries a Content-Security-Policy that loads nothing (``default-src 'none'``): styles inline,
images only as ``data:``, and no script but the page's own, allowed by its sha256 (the list's poll may
fetch this server's ``/api/version``). A script that got into a page from a run's text would not run, and
nothing on a page can reach the network. Bound to a loopback address, the server answers only requests
addressed to a loopback name (the ``Host`` header), so a web page cannot read the runs through a name of
its own that it points at 127.0.0.1 (DNS rebinding).

A request that fails unexpectedly is a 500 page with one line; the server goes on serving.
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import socket
import sys
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from localeval.errors import InputError
from localeval.viewer.pages import Page, error_page
from localeval.viewer.routes import Viewer

log = logging.getLogger(__name__)

#: The address the viewer binds unless told otherwise, and the port.
DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8421
#: The names of this machine a request to a loopback-bound viewer may be addressed to.
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the viewer to this machine: ``localhost`` or a loopback address."""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name: it may stand for any address
        return False


def policy(page: Page) -> str:
    """The Content-Security-Policy of ``page``: nothing from anywhere but its own inline styles, ``data:``
    images and the scripts it names by hash."""
    scripts = " ".join(page.scripts) or "'none'"
    return "; ".join([
        "default-src 'none'",
        "style-src 'unsafe-inline'",
        "img-src data:",
        f"script-src {scripts}",
        "connect-src 'self'" if page.polls else "connect-src 'none'",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ])


class ViewerServer(ThreadingHTTPServer):
    """The viewer on ``host:port`` (port 0: any free one); :attr:`url` is where it answers."""

    daemon_threads = True

    def __init__(self, viewer: Viewer, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
                 on_unexpected: Callable[[BaseException], str] | None = None) -> None:
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.viewer = viewer
        self.on_unexpected = on_unexpected or _unexpected
        #: the names a request may be addressed to; None: any (bound beyond this machine, the user was warned)
        self.names = LOOPBACK_NAMES | {host.lower()} if is_loopback(host) else None
        try:
            super().__init__((host, port), ViewerHandler)
        except OSError as err:
            raise InputError(_cannot_bind(host, port, err)) from err

    @property
    def url(self) -> str:
        host, port = self.socket.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/"

    def addressed_here(self, host_header: str | None) -> bool:
        """Whether a request with this ``Host`` header may be answered: any, unless bound to loopback."""
        if self.names is None or host_header is None:
            return True
        name = host_header if host_header.endswith("]") else host_header.rsplit(":", 1)[0]  # the port cut off
        return name.strip("[]").lower() in self.names

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A request that failed while its answer was being sent: the browser went away (a reload), which
        needs no word, or a bug, said by :attr:`on_unexpected`."""
        error = sys.exc_info()[1]
        if error is None or isinstance(error, ConnectionError):
            log.debug("request from %s ended early", client_address)
        else:
            self.on_unexpected(error)


class ViewerHandler(BaseHTTPRequestHandler):
    """One request: GET answered by the viewer, anything else refused."""

    server: ViewerServer
    server_version = "localeval-view"
    sys_version = ""

    def do_GET(self) -> None:  # noqa: N802 -- the name http.server calls
        if not self.server.addressed_here(self.headers.get("Host")):
            self._send(error_page(403, "this viewer answers requests to 127.0.0.1 or localhost only"))
            return
        try:
            page = self.server.viewer.respond(self.path)
        except Exception as error:  # noqa: BLE001 -- a request that fails is one page; the server goes on
            page = error_page(500, self.server.on_unexpected(error))
        self._send(page)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (a method other than GET, a malformed request) as the viewer's pages."""
        if code == HTTPStatus.NOT_IMPLEMENTED:
            code, message = HTTPStatus.METHOD_NOT_ALLOWED, f"only GET is answered here, not {self.command}"
        self.close_connection = True
        self._send(error_page(code, message or HTTPStatus(code).phrase))

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 -- http.server's signature
        log.debug("%s %s", self.address_string(), format % args)

    def _send(self, page: Page) -> None:
        body = page.body.encode("utf-8", "replace")  # a folder's name may not be UTF-8
        self.send_response(page.status)
        self.send_header("Content-Type", page.content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", policy(page))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        if page.status == HTTPStatus.METHOD_NOT_ALLOWED:
            self.send_header("Allow", "GET")
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


def _unexpected(error: BaseException) -> str:
    said = next((line for line in str(error).splitlines() if line.strip()), "")
    return f"unexpected {type(error).__name__}{': ' + said if said else ''} (a bug in localeval)"


def _cannot_bind(host: str, port: int, err: OSError) -> str:
    if isinstance(err, socket.gaierror):
        return f"--host {host}: not an address of this machine ({err.strerror})"
    if err.errno == errno.EADDRINUSE:
        return f"port {port} on {host} is in use (another viewer?): pick another with --port, or --port 0 for any"
    return f"cannot serve on {host}:{port} ({err.strerror or err})"
